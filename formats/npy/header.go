package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error returned by this package wraps one of them (or
// an I/O error), so callers can test with errors.Is while the rendered
// message keeps the fragments SPEC §6.4.1 asks for.
var (
	ErrMalformed = errors.New("malformed npy file")
	ErrTruncated = errors.New("truncated npy file")
	// ErrTrailing: bytes after the data the header declares (a file that
	// was appended to, or a header whose shape is too small).
	ErrTrailing         = errors.New("trailing bytes after the npy data")
	ErrUnsupportedDType = errors.New("unsupported dtype")
)

const (
	magic = "\x93NUMPY"
	// arrayAlign is numpy's ARRAY_ALIGN: the data starts at a multiple of it.
	arrayAlign = 64
	// growthAxisMaxDigits is numpy's GROWTH_AXIS_MAX_DIGITS: numpy leaves
	// room in the header for the growth axis to reach 21 digits.
	growthAxisMaxDigits = 21
	// maxDepth bounds nesting in the header literal so hostile headers
	// cannot exhaust the stack.
	maxDepth = 16
)

// Header is the parsed .npy header dictionary.
type Header struct {
	Descr   string // numpy dtype descriptor, e.g. "<f4"
	Fortran bool   // data stored in column-major (Fortran) order
	Shape   []int  // empty for a 0-d array
}

// NumElements returns the product of the dimensions (1 for a 0-d array).
func (h Header) NumElements() (int, error) {
	return numElements(h.Shape)
}

// ShapeString renders the shape as Python does: "()", "(5,)", "(3, 4)".
func (h Header) ShapeString() string {
	return shapeRepr(h.Shape)
}

// ElemType returns the parsed descriptor.
func (h Header) ElemType() (ElemType, error) {
	return ParseDescr(h.Descr)
}

// DataSize returns the number of data bytes the header describes.
func (h Header) DataSize() (int, error) {
	n, err := h.NumElements()
	if err != nil {
		return 0, err
	}
	et, err := h.ElemType()
	if err != nil {
		return 0, err
	}
	return dataSize(n, et.Size, h.Shape)
}

func dataSize(n, size int, shape []int) (int, error) {
	if size > 0 && n > math.MaxInt/size {
		return 0, fmt.Errorf("%w: shape %s is too large", ErrMalformed, shapeRepr(shape))
	}
	return n * size, nil
}

func numElements(shape []int) (int, error) {
	n := 1
	nonzero := 1 // product of the non-zero dimensions, checked for overflow
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%w: negative dimension in shape %s", ErrMalformed, shapeRepr(shape))
		}
		if d == 0 {
			n = 0
			continue
		}
		if nonzero > math.MaxInt/d {
			return 0, fmt.Errorf("%w: shape %s overflows", ErrMalformed, shapeRepr(shape))
		}
		nonzero *= d
		n *= d
	}
	return n, nil
}

func shapeRepr(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return "(" + strconv.Itoa(shape[0]) + ",)"
	}
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(')')
	return b.String()
}

// ElemType is a parsed numpy dtype descriptor.
type ElemType struct {
	// Kind is 'f' (float), 'i' (signed int), 'u' (unsigned int), 'b' (bool),
	// 'U' (UTF-32 string) or 'S' (byte string).
	Kind byte
	// Size is the element size in bytes (for 'U', four times the width).
	Size int
	// BigEndian is the byte order of multi-byte elements.
	BigEndian bool
}

// Width is the number of characters of a 'U' or 'S' element.
func (t ElemType) Width() int {
	if t.Kind == 'U' {
		return t.Size / 4
	}
	return t.Size
}

// Descr renders the descriptor as numpy writes it ("<f4", "|u1", "<U5").
func (t ElemType) Descr() string {
	order := "<"
	switch {
	case t.Size == 1 || t.Kind == 'S':
		order = "|"
	case t.BigEndian:
		order = ">"
	}
	return order + string(t.Kind) + strconv.Itoa(t.Width())
}

func (t ElemType) order() binary.ByteOrder {
	if t.BigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// ParseDescr parses a simple dtype descriptor. It accepts floats of 2, 4 and
// 8 bytes, integers of 1, 2, 4 and 8 bytes, bool and fixed-width 'U' and
// 'S' strings; anything else wraps ErrUnsupportedDType.
func ParseDescr(descr string) (ElemType, error) {
	unsupported := fmt.Errorf("%w %q", ErrUnsupportedDType, descr)
	if descr == "" {
		return ElemType{}, unsupported
	}
	var t ElemType
	s := descr
	order := byte('=') // numpy never writes a bare code; treat it as native
	switch s[0] {
	case '<', '>', '=', '|':
		order = s[0]
		s = s[1:]
	}
	if len(s) < 2 {
		return ElemType{}, unsupported
	}
	t.Kind = s[0]
	n, err := strconv.Atoi(s[1:])
	if err != nil || n <= 0 || s[1] == '+' || s[1] == '-' {
		// Zero-width strings are rejected too: a huge element count would
		// then need no data bytes, defeating the size check.
		return ElemType{}, unsupported
	}
	switch t.Kind {
	case 'f':
		if n != 2 && n != 4 && n != 8 {
			return ElemType{}, unsupported
		}
		t.Size = n
	case 'i', 'u':
		if n != 1 && n != 2 && n != 4 && n != 8 {
			return ElemType{}, unsupported
		}
		t.Size = n
	case 'b':
		if n != 1 {
			return ElemType{}, unsupported
		}
		t.Size = 1
	case 'U':
		if n > math.MaxInt/4 {
			return ElemType{}, unsupported
		}
		t.Size = 4 * n
	case 'S':
		t.Size = n
	default:
		return ElemType{}, unsupported
	}
	// '|' means "byte order not applicable" and is only legal when it is.
	single := t.Size == 1 || t.Kind == 'S'
	if order == '|' && !single {
		return ElemType{}, unsupported
	}
	// '=' (native) is read as little-endian: numpy itself never writes it
	// and every platform we build for is little-endian.
	t.BigEndian = order == '>' && !single
	return t, nil
}

// ParseHeader parses the magic string, version and header dictionary at the
// start of data (format versions 1.0, 2.0 and 3.0) and returns the header
// and the offset at which the array data starts. Errors wrap ErrMalformed,
// ErrTruncated or ErrUnsupportedDType (structured dtypes).
func ParseHeader(data []byte) (Header, int, error) {
	if len(data) < len(magic)+2 {
		if bytes.HasPrefix([]byte(magic), data) {
			return Header{}, 0, fmt.Errorf("%w: %d bytes is too short for an npy header", ErrTruncated, len(data))
		}
	}
	if !bytes.HasPrefix(data, []byte(magic)) {
		return Header{}, 0, fmt.Errorf("%w: bad magic string (not an npy file)", ErrMalformed)
	}
	if len(data) < len(magic)+2 {
		return Header{}, 0, fmt.Errorf("%w: %d bytes is too short for an npy header", ErrTruncated, len(data))
	}
	major, minor := data[6], data[7]
	var lenSize int
	switch {
	case major == 1 && minor == 0:
		lenSize = 2
	case (major == 2 || major == 3) && minor == 0:
		lenSize = 4
	default:
		return Header{}, 0, fmt.Errorf("%w: unsupported format version %d.%d", ErrMalformed, major, minor)
	}
	start := len(magic) + 2 + lenSize
	if len(data) < start {
		return Header{}, 0, fmt.Errorf("%w: %d bytes is too short for an npy header", ErrTruncated, len(data))
	}
	var hlen uint64
	if lenSize == 2 {
		hlen = uint64(binary.LittleEndian.Uint16(data[8:]))
	} else {
		hlen = uint64(binary.LittleEndian.Uint32(data[8:]))
	}
	if hlen > uint64(len(data)-start) {
		return Header{}, 0, fmt.Errorf("%w: header needs %d bytes, only %d present", ErrTruncated, hlen, len(data)-start)
	}
	end := start + int(hlen)
	text := data[start:end]
	if major == 3 && !utf8.Valid(text) {
		return Header{}, 0, fmt.Errorf("%w: version 3.0 header is not valid UTF-8", ErrMalformed)
	}
	h, err := parseDict(text)
	if err != nil {
		return Header{}, 0, err
	}
	return h, end, nil
}

// parseDict interprets the header literal the way numpy's
// read_array_header does: a dict with exactly the keys descr,
// fortran_order and shape.
func parseDict(text []byte) (Header, error) {
	p := &litParser{s: text}
	v, err := p.value()
	if err != nil {
		return Header{}, err
	}
	p.skipSpace()
	if p.pos != len(p.s) {
		return Header{}, p.errorf("unexpected %q after the header dictionary", p.s[p.pos])
	}
	if v.kind != pyDict {
		return Header{}, fmt.Errorf("%w: header is not a dictionary", ErrMalformed)
	}
	var h Header
	seen := map[string]bool{}
	for i, k := range v.keys {
		val := v.items[i]
		if seen[k.s] {
			return Header{}, fmt.Errorf("%w: header repeats key %q", ErrMalformed, k.s)
		}
		seen[k.s] = true
		switch k.s {
		case "descr":
			switch val.kind {
			case pyStr:
				h.Descr = val.s
			case pyList:
				return Header{}, fmt.Errorf("%w: structured arrays are not supported", ErrUnsupportedDType)
			default:
				return Header{}, fmt.Errorf("%w: descr is not a string", ErrMalformed)
			}
		case "fortran_order":
			if val.kind != pyBool {
				return Header{}, fmt.Errorf("%w: fortran_order is not True or False", ErrMalformed)
			}
			h.Fortran = val.b
		case "shape":
			if val.kind != pyTuple {
				return Header{}, fmt.Errorf("%w: shape is not a tuple", ErrMalformed)
			}
			h.Shape = make([]int, len(val.items))
			for j, d := range val.items {
				if d.kind != pyInt {
					return Header{}, fmt.Errorf("%w: shape holds a non-integer", ErrMalformed)
				}
				if d.n < 0 {
					return Header{}, fmt.Errorf("%w: negative dimension %d in shape", ErrMalformed, d.n)
				}
				if uint64(d.n) > math.MaxInt {
					return Header{}, fmt.Errorf("%w: dimension %d is too large", ErrMalformed, d.n)
				}
				h.Shape[j] = int(d.n)
			}
		default:
			return Header{}, fmt.Errorf("%w: unexpected header key %q", ErrMalformed, k.s)
		}
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return Header{}, fmt.Errorf("%w: header lacks key %q", ErrMalformed, k)
		}
	}
	if _, err := h.NumElements(); err != nil {
		return Header{}, err
	}
	return h, nil
}

type pyKind uint8

const (
	pyStr pyKind = iota + 1
	pyInt
	pyBool
	pyNone
	pyTuple
	pyList
	pyDict
)

// pyValue is a parsed Python literal (the subset numpy headers use).
type pyValue struct {
	kind  pyKind
	s     string
	n     int64
	b     bool
	items []pyValue // tuple/list elements, dict values
	keys  []pyValue // dict keys
}

// litParser is a small recursive-descent parser for Python literals:
// strings, integers, True/False/None, tuples, lists and dicts.
type litParser struct {
	s     []byte
	pos   int
	depth int
}

func (p *litParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: header "+format+" at offset %d", append(append([]any{ErrMalformed}, args...), p.pos)...)
}

func (p *litParser) skipSpace() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			p.pos++
		default:
			return
		}
	}
}

func (p *litParser) value() (pyValue, error) {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return pyValue{}, p.errorf("ends unexpectedly")
	}
	c := p.s[p.pos]
	switch {
	case c == '{':
		return p.dict()
	case c == '(':
		return p.seq(')', pyTuple)
	case c == '[':
		return p.seq(']', pyList)
	case c == '\'' || c == '"':
		return p.str()
	case (c == 'u' || c == 'U' || c == 'b' || c == 'B') && p.pos+1 < len(p.s) && (p.s[p.pos+1] == '\'' || p.s[p.pos+1] == '"'):
		p.pos++ // u'' (Python 2 unicode) and b'' prefixes
		return p.str()
	case c == '-' || c == '+' || isDigit(c):
		return p.integer()
	case isIdentStart(c):
		start := p.pos
		for p.pos < len(p.s) && isIdentChar(p.s[p.pos]) {
			p.pos++
		}
		switch word := string(p.s[start:p.pos]); word {
		case "True":
			return pyValue{kind: pyBool, b: true}, nil
		case "False":
			return pyValue{kind: pyBool}, nil
		case "None":
			return pyValue{kind: pyNone}, nil
		default:
			p.pos = start
			return pyValue{}, p.errorf("has unexpected name %q", word)
		}
	}
	return pyValue{}, p.errorf("has unexpected character %q", c)
}

func (p *litParser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf("is nested too deeply")
	}
	return nil
}

// seq parses a tuple or list. "(x)" without a comma is a parenthesised
// value, not a 1-tuple, exactly as in Python.
func (p *litParser) seq(closer byte, kind pyKind) (pyValue, error) {
	if err := p.enter(); err != nil {
		return pyValue{}, err
	}
	defer func() { p.depth-- }()
	p.pos++ // opener
	v := pyValue{kind: kind}
	comma := false
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			return pyValue{}, p.errorf("ends inside a tuple or list")
		}
		if p.s[p.pos] == closer {
			p.pos++
			break
		}
		if len(v.items) > 0 && !comma {
			return pyValue{}, p.errorf("is missing a comma")
		}
		item, err := p.value()
		if err != nil {
			return pyValue{}, err
		}
		v.items = append(v.items, item)
		p.skipSpace()
		comma = p.pos < len(p.s) && p.s[p.pos] == ','
		if comma {
			p.pos++
		}
	}
	if kind == pyTuple && len(v.items) == 1 && !comma {
		return v.items[0], nil
	}
	return v, nil
}

func (p *litParser) dict() (pyValue, error) {
	if err := p.enter(); err != nil {
		return pyValue{}, err
	}
	defer func() { p.depth-- }()
	p.pos++ // '{'
	v := pyValue{kind: pyDict}
	comma := false
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			return pyValue{}, p.errorf("ends inside a dictionary")
		}
		if p.s[p.pos] == '}' {
			p.pos++
			return v, nil
		}
		if len(v.keys) > 0 && !comma {
			return pyValue{}, p.errorf("is missing a comma")
		}
		key, err := p.value()
		if err != nil {
			return pyValue{}, err
		}
		if key.kind != pyStr {
			return pyValue{}, p.errorf("has a non-string dictionary key")
		}
		p.skipSpace()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return pyValue{}, p.errorf("is missing ':' after key %q", key.s)
		}
		p.pos++
		val, err := p.value()
		if err != nil {
			return pyValue{}, err
		}
		v.keys = append(v.keys, key)
		v.items = append(v.items, val)
		p.skipSpace()
		comma = p.pos < len(p.s) && p.s[p.pos] == ','
		if comma {
			p.pos++
		}
	}
}

func (p *litParser) str() (pyValue, error) {
	q := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch c {
		case q:
			return pyValue{kind: pyStr, s: b.String()}, nil
		case '\n':
			return pyValue{}, p.errorf("has an unterminated string")
		case '\\':
			if p.pos >= len(p.s) {
				return pyValue{}, p.errorf("has an unterminated string")
			}
			e := p.s[p.pos]
			p.pos++
			switch e {
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return pyValue{}, p.errorf("has unsupported escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
	return pyValue{}, p.errorf("has an unterminated string")
}

func (p *litParser) integer() (pyValue, error) {
	neg := false
	if c := p.s[p.pos]; c == '-' || c == '+' {
		neg = c == '-'
		p.pos++
		p.skipSpace()
	}
	if p.pos >= len(p.s) || !isDigit(p.s[p.pos]) {
		return pyValue{}, p.errorf("has a sign without a number")
	}
	var n uint64
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '_' && p.pos+1 < len(p.s) && isDigit(p.s[p.pos+1]) && isDigit(p.s[p.pos-1]) {
			p.pos++
			continue
		}
		if !isDigit(c) {
			break
		}
		d := uint64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return pyValue{}, p.errorf("has an integer that overflows")
		}
		n = n*10 + d
		p.pos++
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'L' || p.s[p.pos] == 'l') {
		p.pos++ // Python 2 long suffix, as numpy's _filter_header accepts
	}
	if p.pos < len(p.s) && (isIdentChar(p.s[p.pos]) || p.s[p.pos] == '.') {
		return pyValue{}, p.errorf("has a non-integer number")
	}
	v := int64(n)
	if neg {
		v = -v
	}
	return pyValue{kind: pyInt, n: v}, nil
}

func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// EncodeHeader renders the magic string, version and header exactly as
// numpy's np.save does: keys sorted, a trailing ", }", room for the growth
// axis, space padding and a final newline so the data starts at a multiple
// of 64 bytes. Version 1.0 is used unless the header needs more than 65535
// bytes.
func EncodeHeader(h Header) ([]byte, error) {
	if h.Descr == "" {
		return nil, errors.New("npy: empty dtype descriptor")
	}
	for i := 0; i < len(h.Descr); i++ {
		if c := h.Descr[i]; c < 0x20 || c > 0x7e || c == '\'' || c == '\\' {
			return nil, fmt.Errorf("npy: dtype descriptor %q cannot be written", h.Descr)
		}
	}
	if _, err := numElements(h.Shape); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("{'descr': '")
	b.WriteString(h.Descr)
	b.WriteString("', 'fortran_order': ")
	if h.Fortran {
		b.WriteString("True")
	} else {
		b.WriteString("False")
	}
	b.WriteString(", 'shape': ")
	b.WriteString(shapeRepr(h.Shape))
	b.WriteString(", }")
	if len(h.Shape) > 0 {
		grow := h.Shape[0]
		if h.Fortran {
			grow = h.Shape[len(h.Shape)-1]
		}
		if pad := growthAxisMaxDigits - len(strconv.Itoa(grow)); pad > 0 {
			b.WriteString(strings.Repeat(" ", pad))
		}
	}
	dict := b.String()
	hlen := len(dict) + 1 // the newline
	major, lenSize := byte(1), 2
	pad := arrayAlign - (len(magic)+2+lenSize+hlen)%arrayAlign
	if hlen+pad > math.MaxUint16 {
		major, lenSize = 2, 4
		pad = arrayAlign - (len(magic)+2+lenSize+hlen)%arrayAlign
	}
	total := hlen + pad
	if uint64(total) > math.MaxUint32 {
		return nil, errors.New("npy: header too large")
	}
	out := make([]byte, 0, len(magic)+2+lenSize+total)
	out = append(out, magic...)
	out = append(out, major, 0)
	if lenSize == 2 {
		out = binary.LittleEndian.AppendUint16(out, uint16(total))
	} else {
		out = binary.LittleEndian.AppendUint32(out, uint32(total))
	}
	out = append(out, dict...)
	out = append(out, bytes.Repeat([]byte{' '}, pad)...)
	out = append(out, '\n')
	return out, nil
}

// WriteHeader writes EncodeHeader(h) to w.
func WriteHeader(w io.Writer, h Header) error {
	b, err := EncodeHeader(h)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}
