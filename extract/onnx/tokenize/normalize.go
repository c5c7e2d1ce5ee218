package tokenize

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizerFunc maps a text segment to its normalized form. Offsets are not
// tracked: this package only needs IDs.
type normalizerFunc func(string) (string, error)

type normalizerJSON struct {
	Type               string            `json:"type"`
	CleanText          *bool             `json:"clean_text"`
	HandleChineseChars *bool             `json:"handle_chinese_chars"`
	StripAccents       *bool             `json:"strip_accents"`
	Lowercase          *bool             `json:"lowercase"`
	StripLeft          *bool             `json:"strip_left"`
	StripRight         *bool             `json:"strip_right"`
	Pattern            *patternJSON      `json:"pattern"`
	Content            string            `json:"content"`
	Prepend            string            `json:"prepend"`
	Precompiled        *string           `json:"precompiled_charsmap"`
	Normalizers        []json.RawMessage `json:"normalizers"`
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// buildNormalizer builds a normalizer from its tokenizer.json node; a nil or
// JSON-null node yields nil (identity).
func buildNormalizer(raw json.RawMessage) (normalizerFunc, error) {
	if isNull(raw) {
		return nil, nil
	}
	var n normalizerJSON
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch n.Type {
	case "BertNormalizer":
		lower := boolOr(n.Lowercase, true)
		// HF: strip_accents null means "same as lowercase" (sugarme treats it as false).
		strip := boolOr(n.StripAccents, lower)
		clean, chinese := boolOr(n.CleanText, true), boolOr(n.HandleChineseChars, true)
		return func(s string) (string, error) {
			return bertNormalize(s, clean, chinese, strip, lower), nil
		}, nil
	case "NFC":
		return func(s string) (string, error) { return norm.NFC.String(s), nil }, nil
	case "NFD":
		return func(s string) (string, error) { return norm.NFD.String(s), nil }, nil
	case "NFKC":
		return func(s string) (string, error) { return norm.NFKC.String(s), nil }, nil
	case "NFKD":
		return func(s string) (string, error) { return norm.NFKD.String(s), nil }, nil
	case "Lowercase":
		return func(s string) (string, error) { return strings.ToLower(s), nil }, nil
	case "Strip", "StripNormalizer":
		l, r := boolOr(n.StripLeft, true), boolOr(n.StripRight, true)
		return func(s string) (string, error) {
			if l {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if r {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s, nil
		}, nil
	case "StripAccents":
		return func(s string) (string, error) {
			return strings.Map(func(r rune) rune {
				if unicode.Is(unicode.Mn, r) {
					return -1
				}
				return r
			}, s), nil
		}, nil
	case "Replace":
		if n.Pattern == nil {
			return nil, fmt.Errorf("normalizer Replace: missing pattern")
		}
		re, err := compilePattern(*n.Pattern)
		if err != nil {
			return nil, fmt.Errorf("normalizer Replace: %w", err)
		}
		content := n.Content
		return func(s string) (string, error) {
			return re.re.ReplaceAllLiteralString(s, content), nil
		}, nil
	case "Prepend":
		p := n.Prepend
		return func(s string) (string, error) {
			if s == "" {
				return s, nil
			}
			return p + s, nil
		}, nil
	case "Nmt":
		return func(s string) (string, error) { return nmtNormalize(s), nil }, nil
	case "Precompiled":
		if n.Precompiled == nil || *n.Precompiled == "" {
			// Taken as identity (tokenizers 0.23 rejects an empty charsmap;
			// transformers' converters leave the normalizer out instead).
			return nil, nil
		}
		return buildPrecompiled(*n.Precompiled)
	case "Sequence":
		var fs []normalizerFunc
		for _, sub := range n.Normalizers {
			f, err := buildNormalizer(sub)
			if err != nil {
				return nil, err
			}
			if f != nil {
				fs = append(fs, f)
			}
		}
		return func(s string) (string, error) {
			var err error
			for _, f := range fs {
				if s, err = f(s); err != nil {
					return "", err
				}
			}
			return s, nil
		}, nil
	default:
		return nil, fmt.Errorf("unsupported normalizer type %q", n.Type)
	}
}

// isBertWhitespace follows tokenizers' normalizers::bert::is_whitespace.
func isBertWhitespace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r':
		return true
	}
	return unicode.Is(unicode.White_Space, r)
}

// isOther reports Unicode category C* minus surrogates: Cc, Cf, Co or unassigned.
func isOther(r rune) bool {
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) {
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.C)
}

func isBertControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	return isOther(r)
}

// isChineseChar is the CJK block test of tokenizers' BertNormalizer.
func isChineseChar(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF,
		r >= 0x20000 && r <= 0x2A6DF, r >= 0x2A700 && r <= 0x2B73F,
		r >= 0x2B740 && r <= 0x2B81F, r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF, r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

func bertNormalize(s string, clean, chinese, strip, lower bool) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if clean {
			if r == 0 || r == 0xFFFD || isBertControl(r) {
				continue
			}
			if isBertWhitespace(r) {
				r = ' '
			}
		}
		if chinese && isChineseChar(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	s = b.String()
	if strip {
		s = strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Mn, r) {
				return -1
			}
			return r
		}, norm.NFD.String(s))
	}
	if lower {
		s = strings.ToLower(s)
	}
	return s
}

// nmtNormalize follows tokenizers' normalizers::unicode::Nmt.
func nmtNormalize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 0x0001 && r <= 0x0008, r == 0x000B, r >= 0x000E && r <= 0x001F, r == 0x007F, r == 0x008F, r == 0x009F:
			return -1
		case r == 0x0009, r == 0x000A, r == 0x000C, r == 0x000D, r == 0x1680, r >= 0x200B && r <= 0x200F,
			r == 0x2028, r == 0x2029, r == 0x2581, r == 0xFEFF, r == 0xFFFD:
			return ' '
		}
		return r
	}, s)
}

// pattern is a compiled Split/Replace pattern. Rust's regex engine (onig /
// fancy-regex) has Unicode \s, \d, \w and supports the negative look-ahead
// `\s+(?!\S)` used by GPT-2/Llama-3 style pre-tokenizers; Go's RE2 has
// neither, so the pattern is rewritten and the look-ahead emulated.
type pattern struct {
	re *regexp.Regexp
	// lookahead: the `\s+(?!\S)` alternative was removed; a whitespace-only
	// match of more than one rune that is followed by a non-space gives its
	// last rune back.
	lookahead bool
	// newlineBranch: the pattern has a `\s*[\r\n]+` alternative before the
	// look-ahead one, so whitespace matches containing a newline come from
	// that branch and are never shortened.
	newlineBranch bool
}

const wsClass = `\t\n\v\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}`

func compilePattern(p patternJSON) (*pattern, error) {
	switch {
	case p.String != nil:
		re, err := regexp.Compile(regexp.QuoteMeta(*p.String))
		if err != nil {
			return nil, fmt.Errorf("compile string pattern: %w", err)
		}
		return &pattern{re: re}, nil
	case p.Regex != nil:
		return compileRegex(*p.Regex)
	}
	return nil, fmt.Errorf("pattern has neither String nor Regex")
}

func compileRegex(src string) (*pattern, error) {
	p := &pattern{}
	const la = `\s+(?!\S)|`
	if strings.Contains(src, la) {
		src = strings.Replace(src, la, "", 1)
		p.lookahead = true
		p.newlineBranch = strings.Contains(src, `\s*[\r\n]+`)
	}
	re, err := regexp.Compile(rewriteRegex(src))
	if err != nil {
		return nil, fmt.Errorf("compile regex %q: %w", src, err)
	}
	p.re = re
	return p, nil
}

// rewriteRegex makes \s, \S, \d, \D and \w Unicode-aware as in Rust.
func rewriteRegex(src string) string {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\\' && i+1 < len(src) {
			n := src[i+1]
			i++
			switch n {
			case 's':
				if inClass {
					b.WriteString(wsClass)
				} else {
					b.WriteString("[" + wsClass + "]")
				}
			case 'S':
				if inClass {
					b.WriteString(`\S`) // rare; keep RE2's ASCII meaning
				} else {
					b.WriteString("[^" + wsClass + "]")
				}
			case 'd':
				b.WriteString(`\p{Nd}`)
			case 'w':
				if inClass {
					b.WriteString(`\p{L}\p{M}\p{Nd}\p{Pc}`)
				} else {
					b.WriteString(`[\p{L}\p{M}\p{Nd}\p{Pc}]`)
				}
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		}
		switch c {
		case '[':
			inClass = true
		case ']':
			inClass = false
		}
		b.WriteByte(c)
	}
	return b.String()
}

// span is a half-open byte range with a match flag.
type span struct {
	start, end int
	match      bool
}

// findMatches covers s with contiguous spans, flagging pattern matches.
func (p *pattern) findMatches(s string) []span {
	var out []span
	prev, pos := 0, 0
	for pos <= len(s) {
		loc := p.re.FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		st, en := pos+loc[0], pos+loc[1]
		if st == en { // empty match: skip one rune
			_, size := utf8.DecodeRuneInString(s[en:])
			if size == 0 {
				break
			}
			pos = en + size
			continue
		}
		if p.lookahead {
			en = p.shorten(s, st, en)
		}
		if st > prev {
			out = append(out, span{prev, st, false})
		}
		out = append(out, span{st, en, true})
		prev, pos = en, en
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s), false})
	}
	return out
}

func (p *pattern) shorten(s string, st, en int) int {
	m := s[st:en]
	if en >= len(s) || strings.IndexFunc(m, func(r rune) bool { return !unicode.Is(unicode.White_Space, r) }) >= 0 {
		return en
	}
	if p.newlineBranch && strings.ContainsAny(m, "\r\n") {
		return en
	}
	next, _ := utf8.DecodeRuneInString(s[en:])
	if unicode.Is(unicode.White_Space, next) {
		return en
	}
	_, last := utf8.DecodeLastRuneInString(m)
	if last == len(m) { // single rune: matched by the plain \s+ branch
		return en
	}
	return en - last
}
