package canonjson

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Marshal returns the canonical JSON encoding of v. v may be any value that
// encoding/json accepts; it is first reduced to the JSON data model.
func Marshal(v any) ([]byte, error) {
	generic, err := toGeneric(v)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Grow(canonicalBytes(generic) + 4096) // a document spliced from large parts grows once
	if err := encode(&buf, generic); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// canonicalBytes is the length of the Canonical parts of a generic value.
func canonicalBytes(v any) int {
	switch t := v.(type) {
	case Canonical:
		return len(t)
	case []any:
		n := 0
		for _, e := range t {
			n += canonicalBytes(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range t {
			n += canonicalBytes(e)
		}
		return n
	}
	return 0
}

// Hash returns the lowercase hex SHA-256 of Marshal(v). The encoding is
// streamed into the hash, so a large value (an ID list of a large gallery
// written by an Array) is never held as text.
func Hash(v any) (string, error) {
	h := sha256.New()
	if err := Encode(h, v); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// HashContext is Hash that stops with ctx's error once ctx is done, so a
// large value (every relevance triple of a large task) does not hold up a
// cancelled run.
func HashContext(ctx context.Context, v any) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	h := sha256.New()
	if err := Encode(ctxWriter{ctx, h}, v); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ctxWriter fails its writes once ctx is done (Encode writes 64 KiB at a
// time).
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Encode streams the canonical JSON encoding of v into w (Hash writes it
// into SHA-256; a counting writer measures how much text a value hashes).
func Encode(w io.Writer, v any) error {
	generic, err := toGeneric(v)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := encode(bw, generic); err != nil {
		return err
	}
	return bw.Flush()
}

// Array is a JSON array of N elements generated on demand: Elem(i, w)
// writes element i in canonical form; it is called once per element, in
// increasing i. It lets a caller hash a list without building it as []any
// (one interface value per element), such as the ID and label lists of a
// large gallery.
type Array struct {
	N    int
	Elem func(i int, w Writer) error
}

// Canonical is JSON text already in canonical form (as Marshal writes
// it), written as it is: a large part of a document (the per-query block
// of a score over a large gallery) encoded once, without a tree of values.
// The caller vouches for its form.
type Canonical []byte

// Float64s is the canonical JSON array of vals (each finite), written from
// the values as they are.
func Float64s(vals []float64) Array {
	return Array{N: len(vals), Elem: func(i int, w Writer) error { return EncodeFloat(w, vals[i]) }}
}

// EncodeFloat writes v as a canonical JSON number; a non-finite v is an
// error, as in Marshal.
func EncodeFloat(w Writer, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("canonjson: non-finite number %v", v)
	}
	_, err := w.WriteString(FormatNumber(v))
	return err
}

// Strings is the canonical JSON array of ss, written from the strings as
// they are: an ID list of a large gallery is hashed without building a
// []any of it (one interface value per ID).
func Strings(ss []string) Array {
	return Array{N: len(ss), Elem: func(i int, w Writer) error { return encodeString(w, ss[i]) }}
}

// EncodeString writes s as a canonical JSON string (for Array elements);
// s must be valid UTF-8.
func EncodeString(w Writer, s string) error { return encodeString(w, s) }

// EncodeStringBytes is EncodeString of the string b holds, without
// converting a string that needs no escaping (the streamed IDs of a large
// gallery).
func EncodeStringBytes(w Writer, b []byte) error {
	if !PlainString(b) {
		return encodeString(w, string(b))
	}
	_ = w.WriteByte('"')
	_, _ = w.Write(b)
	return w.WriteByte('"')
}

// Writer is where canonical text goes.
type Writer interface {
	Write(p []byte) (int, error)
	WriteByte(c byte) error
	WriteString(s string) (int, error)
	WriteRune(r rune) (int, error)
}

// toGeneric converts v to nil, bool, json.Number, string, Array, []any or
// map[string]any, rejecting non-finite floats (which encoding/json refuses).
func toGeneric(v any) (any, error) {
	switch t := v.(type) {
	case nil, bool, string, json.Number, Array, Canonical:
		return t, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("canonjson: non-finite number %v", t)
		}
		return json.Number(strconv.FormatFloat(t, 'g', -1, 64)), nil
	case int:
		return json.Number(strconv.Itoa(t)), nil
	case int64:
		return json.Number(strconv.FormatInt(t, 10)), nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			g, err := toGeneric(e)
			if err != nil {
				return nil, err
			}
			out[i] = g
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			g, err := toGeneric(e)
			if err != nil {
				return nil, err
			}
			out[k] = g
		}
		return out, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var g any
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return g, nil
}

func encode(buf Writer, v any) error {
	switch t := v.(type) {
	case Canonical:
		_, _ = buf.Write(t)
	case Array:
		buf.WriteByte('[')
		for i := 0; i < t.N; i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := t.Elem(i, buf); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case nil:
		buf.WriteString("null")
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || math.IsInf(f, 0) {
			return fmt.Errorf("canonjson: number %q is not a finite binary64 value", string(t))
		}
		buf.WriteString(FormatNumber(f))
	case string:
		return encodeString(buf, t)
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encode(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			if !utf8.ValidString(k) {
				return fmt.Errorf("canonjson: object key is not valid UTF-8")
			}
			keys = append(keys, k)
		}
		// RFC 8785 orders keys by their UTF-16 code units.
		slices.SortFunc(keys, compareUTF16)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := encodeString(buf, k); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := encode(buf, t[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("canonjson: unsupported value of type %T", v)
	}
	return nil
}

// SortKeys sorts object keys into canonical order (RFC 8785: by UTF-16
// code units), for a caller writing an object's members itself.
func SortKeys(keys []string) { slices.SortFunc(keys, compareUTF16) }

// compareUTF16 orders a and b by their UTF-16 code units. UTF-8 byte order
// is code point order, which differs from UTF-16 order only between a
// supplementary character (surrogates D800–DFFF in UTF-16) and one of
// U+E000–U+FFFF; strings without bytes ≥ 0xEE hold neither, so they are
// compared as bytes, without converting them.
func compareUTF16(a, b string) int {
	if !hasHighPlanes(a) && !hasHighPlanes(b) {
		return strings.Compare(a, b)
	}
	if lessUTF16(a, b) {
		return -1
	}
	if lessUTF16(b, a) {
		return 1
	}
	return 0
}

// hasHighPlanes reports whether s holds a byte ≥ 0xEE: the lead byte of a
// character at or above U+E000.
func hasHighPlanes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xEE {
			return true
		}
	}
	return false
}

func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

func encodeString(buf Writer, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("canonjson: string is not valid UTF-8")
	}
	buf.WriteByte('"')
	if !needsEscape(s) { // IDs and keys: written as they are, in one call
		buf.WriteString(s)
		buf.WriteByte('"')
		return nil
	}
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(buf, `\u%04x`, r)
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
	return nil
}

// needsEscape reports whether s has a byte that RFC 8785 escapes: '"',
// '\\' or a control character. Valid UTF-8 beyond ASCII is written as it is.
func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return true
		}
	}
	return false
}

// FormatNumber formats f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3): shortest round-trip digits, plain notation for
// decimal exponents in [-6, 21), exponent notation otherwise.
func FormatNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expStr)
	k := len(digits)
	n := exp + 1 // position of the decimal point relative to the digits
	var out string
	switch {
	case k <= n && n <= 21:
		out = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		out = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		out = "0." + strings.Repeat("0", -n) + digits
	default:
		es := "+"
		if n-1 < 0 {
			es = "-"
		}
		ev := n - 1
		if ev < 0 {
			ev = -ev
		}
		if k == 1 {
			out = digits + "e" + es + strconv.Itoa(ev)
		} else {
			out = digits[:1] + "." + digits[1:] + "e" + es + strconv.Itoa(ev)
		}
	}
	return sign + out
}

// StringsHasher hashes a JSON array of strings added one at a time: Sum is
// Hash of the list, computed without holding it.
type StringsHasher struct {
	h   hash.Hash
	w   *bufio.Writer
	n   int
	err error
}

// NewStringsHasher starts an empty list.
func NewStringsHasher() *StringsHasher {
	h := sha256.New()
	w := bufio.NewWriterSize(h, 64<<10)
	_ = w.WriteByte('[') // a bufio.Writer over a hash cannot fail
	return &StringsHasher{h: h, w: w}
}

// Add appends the string b holds (valid UTF-8, or Sum fails); b is not
// retained.
func (l *StringsHasher) Add(b []byte) {
	if l.err != nil {
		return
	}
	if l.n > 0 {
		_ = l.w.WriteByte(',')
	}
	l.n++
	l.err = EncodeStringBytes(l.w, b)
}

// AddCanonical appends n strings given as their canonical text: each
// string's canonical encoding (EncodeStringBytes), separated by commas,
// without a leading comma. It is Add of each string, with one write for a
// run of many (a caller streaming a list of plain IDs encodes each once for
// several hashes).
func (l *StringsHasher) AddCanonical(text []byte, n int) {
	if l.err != nil || n == 0 {
		return
	}
	if l.n > 0 {
		_ = l.w.WriteByte(',')
	}
	l.n += n
	_, _ = l.w.Write(text)
}

// PlainString reports whether b's canonical encoding is b in quotes: no
// byte needs an escape (control characters, '"', '\\') and all are ASCII.
func PlainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Sum returns the lowercase hex SHA-256 of the list's canonical text.
func (l *StringsHasher) Sum() (string, error) {
	if l.err != nil {
		return "", l.err
	}
	_ = l.w.WriteByte(']')
	if err := l.w.Flush(); err != nil {
		return "", err
	}
	return hex.EncodeToString(l.h.Sum(nil)), nil
}
