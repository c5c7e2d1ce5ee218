package tokenize

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf16"
)

// spmExpected is testdata/spm_expected.json, written by
// internal/spmref/spmref.py (SentencePiece 0.1.97: spm_ids, spm_normalized)
// and internal/spmref/hfref.mjs (Hugging Face tokenizers 0.23.2, the Rust
// crate: hf_ids, hf_pretokenized).
type spmExpected struct {
	SentencePieceVersion string `json:"sentencepiece_version"`
	TokenizersVersion    string `json:"tokenizers_version"`
	Models               []struct {
		Name  string    `json:"name"`
		File  string    `json:"file"`
		Sweep *spmSweep `json:"precompiled_sweep"`
		Cases []struct {
			Name           string  `json:"name"`
			Text           string  `json:"text"`
			SPMIDs         []int64 `json:"spm_ids"`
			SPMNormalized  string  `json:"spm_normalized"`
			HFIDs          []int64 `json:"hf_ids"`
			HFPretokenized string  `json:"hf_pretokenized"`
		} `json:"cases"`
	} `json:"models"`
}

// spmSweep holds hashes of what tokenizers' Precompiled normalizer makes of
// every code point and of base+mark sequences (see hfref.mjs).
type spmSweep struct {
	Block   int       `json:"block"`
	Bases   [][2]rune `json:"bases"`
	Marks   [][2]rune `json:"marks"`
	Singles []string  `json:"singles"`
	Pairs   []string  `json:"pairs"`
}

// hfNotSPM lists the rows where the Hugging Face pipeline of a converted
// tokenizer.json differs from SentencePiece by design; there the reference is
// what the tokenizers library produces. Every other row must give
// SentencePiece's IDs (which tokenizers also gives).
var hfNotSPM = map[string]string{
	// tokenizers' Precompiled looks a grapheme cluster shorter than 6 bytes up
	// as a whole and keeps only the replacement of the SHORTEST trie prefix
	// matched in it, dropping the rest of the cluster; SentencePiece takes the
	// longest match at each position and goes on after it.
	"nmt_nfkc/double_combining":      "e+U+0301+U+0301: tokenizers keeps é and drops the second accent",
	"nmt_nfkc_cf/double_combining":   "as in nmt_nfkc",
	"nmt_nfkc/ligature_combining":    "ﬁ+U+0301: tokenizers keeps fi and drops the accent",
	"nmt_nfkc_cf/ligature_combining": "as in nmt_nfkc",
	"nmt_nfkc_cf/A_ring_forms":       "A+U+030A: with case folding A alone has a rule (A→a), so tokenizers keeps a and drops the ring",
	// Clusters of 6 bytes or more are mapped code point by code point, so
	// rules over several code points (composition) never apply.
	"nmt_nfkc/halfwidth_katakana":    "ｶﾞ (6 bytes) is not composed to ガ by tokenizers",
	"nmt_nfkc_cf/halfwidth_katakana": "as in nmt_nfkc",
	"nmt_nfkc/hangul_jamo":           "conjoining jamo (9 bytes) are not composed to 한 by tokenizers",
	"nmt_nfkc_cf/hangul_jamo":        "as in nmt_nfkc",
	// SpmConverter's Strip(right) removes every Unicode White_Space at the
	// end; SentencePiece only trims what its charsmap maps to " " (not NEL).
	"nmt_nfkc/trailing_nel":    "trailing U+0085 is stripped by tokenizers, kept (unknown) by SentencePiece",
	"nmt_nfkc_cf/trailing_nel": "as in nmt_nfkc",
	// Control and unknown pieces are added (special) tokens in tokenizer.json
	// and match in the text; SentencePiece never matches them in input text.
	"nmt_nfkc/special_eos":    "</s> in the text is the special token for tokenizers",
	"nmt_nfkc_cf/special_eos": "as in nmt_nfkc",
	"nmt_nfkc/special_unk":    "<unk> and <pad> in the text are special tokens for tokenizers",
	"nmt_nfkc_cf/special_unk": "as in nmt_nfkc",
}

// loadGzipped loads a gzipped tokenizer.json (the SentencePiece charsmaps make
// the plain files ~330 KB) through Load, from a temporary copy.
func loadGzipped(t testing.TB, path string) *Tokenizer {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(p, gunzipFile(t, path), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(p)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return tk
}

func gunzipFile(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return data
}

func readSPMExpected(t testing.TB) spmExpected {
	t.Helper()
	data, err := os.ReadFile("testdata/spm_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var exp spmExpected
	if err := json.Unmarshal(data, &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Models) == 0 {
		t.Fatal("spm_expected.json has no models")
	}
	return exp
}

// TestSentencePieceIDs checks the Precompiled normalizer (SentencePiece
// charsmaps nmt_nfkc and nmt_nfkc_cf) and the rest of a T5/SigLIP-style
// pipeline against SentencePiece itself and the tokenizers library.
func TestSentencePieceIDs(t *testing.T) {
	exp := readSPMExpected(t)
	used := map[string]bool{}
	for _, m := range exp.Models {
		t.Run(m.Name, func(t *testing.T) {
			tk := loadGzipped(t, filepath.FromSlash(m.File))
			for _, c := range m.Cases {
				key := m.Name + "/" + c.Name
				t.Run(c.Name, func(t *testing.T) {
					if c.HFIDs == nil {
						t.Fatal("no hf_ids: run internal/spmref/hfref.mjs")
					}
					want := c.SPMIDs
					if reason, ok := hfNotSPM[key]; ok {
						used[key] = true
						if slices.Equal(c.HFIDs, c.SPMIDs) {
							t.Fatalf("listed as differing (%s) but tokenizers and SentencePiece agree", reason)
						}
						want = c.HFIDs
					} else if !slices.Equal(c.HFIDs, c.SPMIDs) {
						t.Fatalf("tokenizers %v and SentencePiece %v differ: list the reason in hfNotSPM", c.HFIDs, c.SPMIDs)
					}
					if got := pretokenized(t, tk, c.Text); got != c.HFPretokenized {
						t.Errorf("normalized + pre-tokenized:\n got  %q\n want %q (tokenizers)", got, c.HFPretokenized)
					}
					e, err := tk.Encode(context.Background(), []string{c.Text}, Options{MaxLength: 1 << 20, Padding: PadLongest})
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(e.IDs, want) {
						i := 0
						for i < min(len(e.IDs), len(want)) && e.IDs[i] == want[i] {
							i++
						}
						t.Errorf("ids differ from position %d (got %d ids, want %d):\n got  %v\n want %v",
							i, len(e.IDs), len(want), e.IDs[i:min(i+20, len(e.IDs))], want[i:min(i+20, len(want))])
					}
				})
			}
		})
	}
	for key := range hfNotSPM {
		if !used[key] && !t.Failed() {
			t.Errorf("hfNotSPM lists %s, which is not in spm_expected.json", key)
		}
	}
}

// pretokenized is the text after the normalizer and the pre-tokenizer, pieces
// joined (added tokens are not split out, as in hfref.mjs).
func pretokenized(t *testing.T, tk *Tokenizer, s string) string {
	t.Helper()
	s = strings.ToValidUTF8(s, "\uFFFD")
	if tk.normalize != nil {
		var err error
		if s, err = tk.normalize(s); err != nil {
			t.Fatal(err)
		}
	}
	if s == "" {
		return ""
	}
	return strings.Join(tk.preTok([]string{s}, true), "")
}

// TestPrecompiledSweep compares the Precompiled normalizer alone with
// tokenizers' on every code point and on base+mark(+mark) sequences (hashes
// from hfref.mjs), which covers the whole charsmap and the grapheme handling.
func TestPrecompiledSweep(t *testing.T) {
	exp := readSPMExpected(t)
	for _, m := range exp.Models {
		t.Run(m.Name, func(t *testing.T) {
			sw := m.Sweep
			if sw == nil || sw.Block <= 0 {
				t.Fatal("no precompiled_sweep: run internal/spmref/hfref.mjs")
			}
			p := charsmapOf(t, filepath.FromSlash(m.File))
			hash := func(s string) string {
				h := sha256.Sum256([]byte(p.normalize(s)))
				return hex.EncodeToString(h[:8])
			}
			var b strings.Builder
			i := 0
			for lo := rune(0); lo <= unicode.MaxRune; lo += rune(sw.Block) {
				b.Reset()
				for c := lo; c < lo+rune(sw.Block) && c <= unicode.MaxRune; c++ {
					if utf16.IsSurrogate(c) {
						continue
					}
					b.WriteRune(c)
					b.WriteByte('\n')
				}
				if i >= len(sw.Singles) {
					t.Fatalf("only %d single-code-point hashes", len(sw.Singles))
				}
				if got := hash(b.String()); got != sw.Singles[i] {
					t.Errorf("code points U+%04X..U+%04X: hash %s, tokenizers %s", lo, min(lo+rune(sw.Block), unicode.MaxRune+1)-1, got, sw.Singles[i])
				}
				i++
			}
			var bases []rune
			for _, r := range sw.Bases {
				for c := r[0]; c <= r[1]; c++ {
					bases = append(bases, c)
				}
			}
			i = 0
			for _, r := range sw.Marks {
				for mk := r[0]; mk <= r[1]; mk++ {
					b.Reset()
					for _, c := range bases {
						b.WriteString(string([]rune{c, mk, '\n', c, mk, mk, '\n'}))
					}
					if i >= len(sw.Pairs) {
						t.Fatalf("only %d base+mark hashes", len(sw.Pairs))
					}
					if got := hash(b.String()); got != sw.Pairs[i] {
						t.Errorf("bases + U+%04X: hash %s, tokenizers %s", mk, got, sw.Pairs[i])
					}
					i++
				}
			}
			if i != len(sw.Pairs) {
				t.Errorf("%d base+mark hashes, %d marks", len(sw.Pairs), i)
			}
		})
	}
}

// charsmapOf parses the Precompiled charsmap of a gzipped tokenizer.json.
func charsmapOf(t *testing.T, path string) *precompiled {
	t.Helper()
	var f struct {
		Normalizer struct {
			Normalizers []struct {
				Type    string `json:"type"`
				Charmap string `json:"precompiled_charsmap"`
			} `json:"normalizers"`
		} `json:"normalizer"`
	}
	if err := json.Unmarshal(gunzipFile(t, path), &f); err != nil {
		t.Fatal(err)
	}
	for _, n := range f.Normalizer.Normalizers {
		if n.Type != "Precompiled" {
			continue
		}
		blob, err := base64.StdEncoding.DecodeString(n.Charmap)
		if err != nil {
			t.Fatal(err)
		}
		p, err := parsePrecompiled(blob)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatalf("%s: no Precompiled normalizer", path)
	return nil
}
