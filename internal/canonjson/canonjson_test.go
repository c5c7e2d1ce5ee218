package canonjson

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFormatNumber(t *testing.T) {
	// Values from RFC 8785 Appendix B and ECMAScript examples.
	cases := []struct {
		in   float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{1, "1"},
		{-1.5, "-1.5"},
		{1e21, "1e+21"},
		{1e20, "100000000000000000000"},
		{123456789012345680000, "123456789012345680000"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{4.5, "4.5"},
		{0.002, "0.002"},
		{5e-324, "5e-324"},
		{1.7976931348623157e308, "1.7976931348623157e+308"},
		{9007199254740992, "9007199254740992"},
		{333333333.3333333, "333333333.3333333"},
	}
	for _, c := range cases {
		if got := FormatNumber(c.in); got != c.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestMarshalCanonical(t *testing.T) {
	v := map[string]any{
		"b":          []any{1.0, "x\u001f\n", true, nil},
		"a":          map[string]any{"\u20ac": 1, "\r": 2, "1": 3},
		"\U0001F600": 0.5,
		"\uffff":     1,
	}
	got, err := Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	// Keys sort by UTF-16 code units: the emoji (surrogate pair D83D...)
	// sorts before U+FFFF although its UTF-8 bytes sort after.
	want := `{"a":{"\r":2,"1":3,"€":1},"b":[1,"x\u001f\n",true,null],"😀":0.5,"` + "\uffff" + `":1}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := Marshal(map[string]any{"x": math.NaN()}); err == nil {
		t.Fatal("NaN must not be hashable")
	}
	if _, err := Marshal("\xff"); err == nil {
		t.Fatal("invalid UTF-8 must not be hashable")
	}
	h, err := Hash(map[string]any{})
	if err != nil || h != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Fatalf("Hash({}) = %s, %v", h, err)
	}
}

func TestMarshalStruct(t *testing.T) {
	type s struct {
		Z int     `json:"z"`
		A *string `json:"a"`
	}
	got, err := Marshal(s{Z: 2})
	if err != nil || string(got) != `{"a":null,"z":2}` {
		t.Fatalf("got %s, %v", got, err)
	}
}

// An Array hashes exactly like the []any it generates.
func TestArrayHashesLikeSlice(t *testing.T) {
	triples := [][3]int{{0, 3, 1}, {0, 12, 1}, {7, 100000, 1}}
	var list []any
	for _, tr := range triples {
		list = append(list, []any{tr[0], tr[1], 1.0})
	}
	arr := Array{N: len(triples), Elem: func(i int, w Writer) error {
		_, err := w.WriteString(fmt.Sprintf("[%d,%d,1]", triples[i][0], triples[i][1]))
		return err
	}}
	for _, empty := range []bool{false, true} {
		a, b := map[string]any{"k": list, "x": 2}, map[string]any{"k": arr, "x": 2}
		if empty {
			a["k"], b["k"] = []any{}, Array{}
		}
		ha, err := Hash(a)
		if err != nil {
			t.Fatal(err)
		}
		hb, err := Hash(b)
		if err != nil {
			t.Fatal(err)
		}
		if ha != hb {
			t.Fatalf("empty=%v: Array hash %s, slice hash %s", empty, hb, ha)
		}
	}
}

// Encode streams the text Marshal returns and Hash hashes; Strings and
// EncodeString write what a []any of the strings would.
func TestEncodeIsMarshal(t *testing.T) {
	ids := []string{"a", "é\n\"x\"", "日本"}
	v := map[string]any{"ids": Strings(ids), "one": Array{N: 1, Elem: func(_ int, w Writer) error { return EncodeString(w, ids[1]) }}, "n": 1.5}
	want, err := Marshal(map[string]any{"ids": []any{"a", "é\n\"x\"", "日本"}, "one": []any{ids[1]}, "n": 1.5})
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := Encode(&buf, v); err != nil || buf.String() != string(want) {
		t.Fatalf("Encode %q (%v), Marshal %q", buf.String(), err, want)
	}
	h, err := Hash(v)
	sum := sha256.Sum256(want)
	if err != nil || h != hex.EncodeToString(sum[:]) {
		t.Fatalf("Hash %s (%v), SHA-256 of the text %x", h, err, sum)
	}
	if err := Encode(&buf, Strings([]string{"\xff"})); err == nil {
		t.Fatal("invalid UTF-8 encoded")
	}
}

// escapeRunes is the rune-by-rune escaping of RFC 8785 §3.2.2.2, the
// reference for encodeString's whole-string fast path.
func escapeRunes(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func FuzzEncodeString(f *testing.F) {
	for _, s := range []string{"", "id-17", "a\"b", `back\slash`, "tab\there", "\x01\x7f", "é€😀", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Marshal(s)
		if !utf8.ValidString(s) {
			if err == nil {
				t.Fatalf("invalid UTF-8 %q accepted", s)
			}
			return
		}
		if err != nil || string(got) != escapeRunes(s) {
			t.Fatalf("Marshal(%q) = %s, %v; want %s", s, got, err, escapeRunes(s))
		}
	})
}

// Strings is the same text as the []any of its strings, escapes included.
func TestStrings(t *testing.T) {
	for _, ss := range [][]string{nil, {}, {"a"}, {"0", "1", "q\"x", "tab\t", "é"}} {
		want := make([]any, len(ss))
		for i, s := range ss {
			want[i] = s
		}
		a, err := Marshal(map[string]any{"ids": Strings(ss)})
		b, err2 := Marshal(map[string]any{"ids": want})
		if err != nil || err2 != nil || string(a) != string(b) {
			t.Errorf("%q: %s (%v), want %s (%v)", ss, a, err, b, err2)
		}
	}
	if _, err := Marshal(Strings([]string{"ok", "\xff"})); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// A list hashed one string at a time equals Hash of the list, for empty,
// plain and escaped strings; invalid UTF-8 fails as Hash does.
func TestStringsHasherIsHash(t *testing.T) {
	t.Parallel()
	for _, ss := range [][]string{{}, {""}, {"a"}, {"a", "b\"c", "\\", "\u0001\t", "é🚀", "\u2028"}} {
		h := NewStringsHasher()
		l := make([]any, len(ss))
		for i, s := range ss {
			h.Add([]byte(s))
			l[i] = s
		}
		got, err := h.Sum()
		want, werr := Hash(l)
		if err != nil || werr != nil || got != want {
			t.Errorf("%q: %s %v, Hash %s %v", ss, got, err, want, werr)
		}
	}
	h := NewStringsHasher()
	h.Add([]byte("ok"))
	h.Add([]byte("\xff"))
	if _, err := h.Sum(); err == nil {
		t.Error("invalid UTF-8 hashed")
	}
}

// Runs of plain strings added as canonical text hash as Add of each, mixed
// with strings that need escapes; a PlainString encodes as itself in
// quotes, and an ASCII string that does is plain.
func TestStringsHasherAddCanonical(t *testing.T) {
	t.Parallel()
	ss := []string{"a", "b", "c\"d", "", "e f", "\\", "é", "g", "h"}
	want := NewStringsHasher()
	for _, s := range ss {
		want.Add([]byte(s))
	}
	got := NewStringsHasher()
	var run []byte
	n := 0
	for _, s := range ss {
		if PlainString([]byte(s)) {
			if n > 0 {
				run = append(run, ',')
			}
			run = append(append(append(run, '"'), s...), '"')
			n++
			continue
		}
		got.AddCanonical(run, n)
		run, n = run[:0], 0
		got.Add([]byte(s))
	}
	got.AddCanonical(run, n)
	g, gerr := got.Sum()
	w, werr := want.Sum()
	if gerr != nil || werr != nil || g != w {
		t.Errorf("AddCanonical %s %v, Add %s %v", g, gerr, w, werr)
	}
	for _, s := range ss {
		var b strings.Builder
		if err := EncodeString(&b, s); err != nil {
			t.Fatal(err)
		}
		ascii := !strings.ContainsFunc(s, func(r rune) bool { return r >= 0x80 })
		if plain, self := PlainString([]byte(s)), b.String() == `"`+s+`"`; plain && !self || ascii && self && !plain {
			t.Errorf("PlainString(%q) = %v, canonical %s", s, plain, b.String())
		}
	}
}

// compareUTF16 (byte order where it equals UTF-16 order) agrees with the
// UTF-16 definition on ASCII, BMP, private-use and supplementary strings.
func TestCompareUTF16MatchesDefinition(t *testing.T) {
	t.Parallel()
	alphabet := []string{"", "a", "b", "z", "é", "\u00ff", "\u0800", "\ud7ff", "\ue000", "\uff61", "\uffff", "😀", "\U00010000", "\U0010ffff"}
	var words []string
	for _, x := range alphabet {
		for _, y := range alphabet {
			words = append(words, x+y)
		}
	}
	for _, a := range words {
		for _, b := range words {
			want := 0
			if lessUTF16(a, b) {
				want = -1
			} else if lessUTF16(b, a) {
				want = 1
			}
			if got := compareUTF16(a, b); got != want {
				t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
	// The case byte order gets wrong: U+E000 sorts after a supplementary
	// character in UTF-16, before it in code point order.
	if compareUTF16("\ue000", "😀") != 1 {
		t.Fatal("U+E000 must sort after U+1F600 (its surrogates are below E000)")
	}
}
