package tokenize

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf8"
)

// charsmapBlob assembles a charsmap: trie units, then the string pool.
func charsmapBlob(units []uint32, pool string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		b = binary.LittleEndian.AppendUint32(b, u)
	}
	return append(b, pool...)
}

func TestParsePrecompiledErrors(t *testing.T) {
	for name, blob := range map[string][]byte{
		"empty":             nil,
		"size only":         {4, 0, 0, 0},
		"size not /4":       append([]byte{3, 0, 0, 0}, 1, 2, 3, 4),
		"size zero":         {0, 0, 0, 0, 'x'},
		"size past the end": append([]byte{8, 0, 0, 0}, 1, 2, 3, 4),
		"pool not UTF-8":    charsmapBlob([]uint32{0}, "a\xffb\x00"),
	} {
		if _, err := parsePrecompiled(blob); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := parsePrecompiled(charsmapBlob([]uint32{0}, "")); err != nil {
		t.Errorf("one unit, empty pool: %v", err)
	}
}

func TestPrecompiledMalformedTrie(t *testing.T) {
	// Offsets and values pointing outside the units or the pool must give
	// "no rule", never a panic.
	for _, units := range [][]uint32{
		{0},
		{0xFFFFFC00},                  // root offset far past the end
		{1 << 10, 'a' | 1<<8},         // leaf for "a" whose value unit is missing
		{0, 0, 0, 0},                  // labels never match
		{0, 'b', 'a' | 1<<8 | 3<<10},  // label 'a' at 'a'^0, leaf, value unit out of range
		{0, 0x7FFFFFFF, 0, 0, 0xFFFF}, // arbitrary junk
	} {
		for _, pool := range []string{"", "x\x00", "é\x00"} {
			p, err := parsePrecompiled(charsmapBlob(units, pool))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"", "a", "ab", "é", "a\u0301", "\x00a", strings.Repeat("é", 10)} {
				if got := p.normalize(s); !utf8.ValidString(got) {
					t.Errorf("units %v pool %q: normalize(%q) = %q", units, pool, s, got)
				}
			}
		}
	}
}

// TestPrecompiledTiny uses a hand-made trie with the single rule "a" → "x".
func TestPrecompiledTiny(t *testing.T) {
	units := make([]uint32, 100)
	// Root offset 0: "a" leads to unit 0^'a' = 97, labelled 'a', with a leaf
	// and offset 3, so its value sits in unit 97^3 = 98 (pool offset 2).
	units[97] = 'a' | 1<<8 | 3<<10
	units[98] = 2
	p, err := parsePrecompiled(charsmapBlob(units, "-\x00x\x00"))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                    "",
		"aba":                 "xbx",
		"b":                   "b",
		"a\u0301b":            "xb",                  // cluster < 6 bytes: rest after the match dropped
		"a\u0301\u0301\u0301": "x\u0301\u0301\u0301", // cluster of 7 bytes: code point by code point
		"\x00a":               "\x00x",
	} {
		if got := p.normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadPrecompiledErrors(t *testing.T) {
	dir := t.TempDir()
	for name, charsmap := range map[string]string{
		"bad base64": "!!!",
		"too short":  base64.StdEncoding.EncodeToString([]byte{1, 0}),
	} {
		p := writeFile(t, dir, "tokenizer.json", `{"normalizer":{"type":"Precompiled","precompiled_charsmap":"`+charsmap+`"},`+
			`"model":{"type":"WordLevel","vocab":{"a":0},"unk_token":"a"}}`)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "Precompiled") {
			t.Errorf("%s: Load error %v, want one naming Precompiled", name, err)
		}
	}
}

func FuzzPrecompiled(f *testing.F) {
	f.Add(charsmapBlob([]uint32{1 << 10, 'a' | 1<<8, 0}, "x\x00"), "aab")
	f.Add(charsmapBlob([]uint32{0}, ""), "é")
	f.Add([]byte{8, 0, 0, 0, 0, 4, 0, 0, 97, 1, 0, 0, 'z', 0}, "a\u0301b")
	f.Fuzz(func(t *testing.T, blob []byte, s string) {
		p, err := parsePrecompiled(blob)
		if err != nil {
			return
		}
		_ = p.normalize(s)
	})
}
