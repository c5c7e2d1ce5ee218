package tokenize

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// precompiled is SentencePiece's precompiled_charsmap, the normalization
// rules (nmt_nfkc, nmt_nfkc_cf, ...) compiled into the model file and copied
// into tokenizer.json by transformers' converters.
//
// The blob is a little-endian uint32 with the byte size of a darts-clone
// double-array trie, the trie's 32-bit units (little-endian), then a pool of
// NUL-terminated UTF-8 replacement strings. Trie keys are the UTF-8 bytes of
// the text to replace; the value of a key is the offset of its replacement in
// the pool.
type precompiled struct {
	units []uint32
	pool  string
}

// parsePrecompiled decodes a charsmap blob. Lookups bounds-check every trie
// access, so a malformed blob can give odd replacements but never a panic.
func parsePrecompiled(blob []byte) (*precompiled, error) {
	if len(blob) <= 4 {
		return nil, fmt.Errorf("charsmap of %d bytes is too short", len(blob))
	}
	size := binary.LittleEndian.Uint32(blob)
	rest := blob[4:]
	if uint64(size) > uint64(len(rest)) {
		return nil, fmt.Errorf("charsmap trie size %d exceeds the %d bytes that follow", size, len(rest))
	}
	if size == 0 || size%4 != 0 {
		return nil, fmt.Errorf("charsmap trie size %d is not a positive multiple of 4", size)
	}
	units := make([]uint32, size/4)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(rest[4*i:])
	}
	pool := rest[size:]
	if !utf8.Valid(pool) {
		// As tokenizers (spm_precompiled), which rejects such a charsmap.
		return nil, errors.New("charsmap replacement strings are not valid UTF-8")
	}
	return &precompiled{units: units, pool: string(pool)}, nil
}

// Double-array unit fields, as in darts-clone (and spm_precompiled).
func dartsHasLeaf(u uint32) bool { return (u>>8)&1 == 1 }
func dartsValue(u uint32) int    { return int(u & (1<<31 - 1)) }
func dartsLabel(u uint32) uint32 { return u & (1<<31 | 0xFF) }
func dartsOffset(u uint32) int   { return int((u >> 10) << ((u & (1 << 9)) >> 6)) }

// shortestMatch returns the replacement of the shortest prefix of key that is
// a trie key: tokenizers' Precompiled::transform takes the first result of
// the common-prefix search. (SentencePiece itself takes the longest one; the
// two differ only for keys longer than one code point.)
func (p *precompiled) shortestMatch(key string) (string, bool) {
	if len(p.units) == 0 {
		return "", false
	}
	pos := dartsOffset(p.units[0])
	for i := 0; i < len(key); i++ {
		c := key[i]
		if c == 0 {
			break
		}
		pos ^= int(c)
		if pos < 0 || pos >= len(p.units) {
			return "", false
		}
		u := p.units[pos]
		if dartsLabel(u) != uint32(c) {
			return "", false
		}
		pos ^= dartsOffset(u)
		if !dartsHasLeaf(u) {
			continue
		}
		if pos < 0 || pos >= len(p.units) {
			return "", false
		}
		return p.replacement(dartsValue(p.units[pos]))
	}
	return "", false
}

// replacement is the NUL-terminated string at offset v of the pool.
func (p *precompiled) replacement(v int) (string, bool) {
	if v < 0 || v > len(p.pool) {
		return "", false
	}
	s := p.pool[v:]
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if !utf8.ValidString(s) {
		// An offset inside a multi-byte character (tokenizers would panic).
		return "", false
	}
	return s, true
}

// normalize follows tokenizers' Precompiled normalizer: the text is walked by
// extended grapheme clusters; a cluster shorter than 6 bytes is looked up as
// a whole (see shortestMatch: the rest of the cluster after the matched
// prefix is dropped); otherwise, or if nothing matched, each code point of
// the cluster is looked up on its own and kept when it has no rule.
func (p *precompiled) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	state := -1
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if r, ok := p.shortestMatch(g); ok {
				b.WriteString(r)
				continue
			}
		}
		for i := 0; i < len(g); {
			_, n := utf8.DecodeRuneInString(g[i:])
			c := g[i : i+n]
			if r, ok := p.shortestMatch(c); ok {
				b.WriteString(r)
			} else {
				b.WriteString(c)
			}
			i += n
		}
	}
	return b.String()
}

// buildPrecompiled builds the Precompiled normalizer from the base64
// precompiled_charsmap of tokenizer.json.
func buildPrecompiled(charsmap string) (normalizerFunc, error) {
	blob, err := base64.StdEncoding.DecodeString(charsmap)
	if err != nil {
		return nil, fmt.Errorf("normalizer Precompiled: base64: %w", err)
	}
	p, err := parsePrecompiled(blob)
	if err != nil {
		return nil, fmt.Errorf("normalizer Precompiled: %w", err)
	}
	return func(s string) (string, error) { return p.normalize(s), nil }, nil
}
