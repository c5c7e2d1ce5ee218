package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// metadataKey is the reserved header key holding free-form string metadata.
const metadataKey = "__metadata__"

// dtypeBits is the element width in bits of every dtype the format defines.
// Only F16, BF16, F32 and F64 can be read as matrices; the others are known
// so that their byte ranges can still be validated.
var dtypeBits = map[string]int{
	"BOOL": 8, "U8": 8, "I8": 8,
	"F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8,
	"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
	"U16": 16, "I16": 16, "F16": 16, "BF16": 16,
	"U32": 32, "I32": 32, "F32": 32,
	"U64": 64, "I64": 64, "F64": 64, "C64": 64,
}

// nativeLittle reports whether the host is little-endian, i.e. whether file
// data can be viewed in place.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

type tensorInfo struct {
	dtype      string
	shape      []int
	begin, end int // byte range in the data buffer
}

// File is a parsed safetensors file. Matrices it returns are valid until
// Close.
type File struct {
	path     string
	buf      []byte // the data buffer, after the header
	tensors  map[string]tensorInfo
	names    []string // sorted
	metadata map[string]string
	readOnly bool // buf is a read-only mapping or a private copy nobody writes
	unmap    func() error
	closed   bool
}

// Open maps path read-only (or reads it where mapping is unavailable) and
// parses its header.
func Open(path string) (*File, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Decode(path, data)
	if err != nil {
		if unmap != nil {
			_ = unmap() // the parse error is the one worth reporting
		}
		return nil, err
	}
	f.readOnly = true
	f.unmap = unmap
	return f, nil
}

// Decode parses a safetensors file held in memory; path is used only in
// messages. Matrices may alias data, so the caller must not modify it while
// the File or its matrices are in use. Close is a no-op for such a File.
func Decode(path string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, formats.Errorf(path, "truncated safetensors file: %d bytes, need at least 8 for the header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > uint64(len(data)-8) {
		return nil, formats.Errorf(path, "truncated safetensors file: header length %d exceeds the %d bytes that follow it", n, len(data)-8)
	}
	end := 8 + int(n)
	f := &File{path: path, buf: data[end:len(data):len(data)]}
	if err := f.parseHeader(data[8:end]); err != nil {
		return nil, err
	}
	return f, nil
}

// Close releases the mapping. Matrices returned by Matrix must not be used
// afterwards. Closing twice is harmless.
func (f *File) Close() error {
	f.closed = true
	f.buf = nil
	unmap := f.unmap
	f.unmap = nil
	if unmap == nil {
		return nil
	}
	if err := unmap(); err != nil {
		return &formats.Error{Path: f.path, Msg: "cannot unmap file", Err: err}
	}
	return nil
}

// Names returns the tensor names, sorted (the metadata entry excluded).
func (f *File) Names() []string { return slices.Clone(f.names) }

// Metadata returns a copy of the header's __metadata__ map (nil if absent).
func (f *File) Metadata() map[string]string { return maps.Clone(f.metadata) }

// Matrix returns the named 2-D tensor as a matrix: F16 keeps its binary16
// bits, BF16 is widened exactly to float32, F32 and F64 are kept. name ""
// selects the only tensor. When the data is aligned for its element type and
// the host is little-endian, the matrix views the file instead of copying it.
// Zero rows are allowed here; values are not checked for finiteness (the
// dataset does both, with better context).
func (f *File) Matrix(name string) (*matrix.Dense, error) {
	if f.closed {
		return nil, formats.Errorf(f.path, "safetensors file is closed")
	}
	if name == "" {
		switch len(f.names) {
		case 0:
			return nil, formats.Errorf(f.path, "safetensors file holds no tensors")
		case 1:
			name = f.names[0]
		default:
			return nil, formats.Errorf(f.path, "holds %d tensors (%s); choose one with --queries-tensor/--gallery-tensor",
				len(f.names), strings.Join(f.names, ", "))
		}
	}
	t, ok := f.tensors[name]
	if !ok {
		list := strings.Join(f.names, ", ")
		if list == "" {
			list = "none"
		}
		return nil, formats.Errorf(f.path, "has no tensor named %q (tensors: %s)", name, list)
	}
	if len(t.shape) != 2 {
		return nil, formats.Errorf(f.path, "tensor %q must be a 2D array; got shape %s", name, shapeString(t.shape))
	}
	rows, cols := t.shape[0], t.shape[1]
	n := rows * cols // cannot overflow: the size was checked against the buffer
	raw := f.buf[t.begin:t.end]
	var (
		m      *matrix.Dense
		viewed bool
		err    error
	)
	switch t.dtype {
	case "F16":
		var v []uint16
		if v, viewed = view[uint16](raw, n); !viewed {
			v = make([]uint16, n)
			for i := range v {
				v[i] = binary.LittleEndian.Uint16(raw[2*i:])
			}
		}
		m, err = matrix.NewDense16(rows, cols, v)
	case "BF16":
		// bfloat16 is the top half of a float32, so widening is exact.
		v := make([]float32, n)
		for i := range v {
			v[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(raw[2*i:])) << 16)
		}
		m, err = matrix.NewDense32(rows, cols, v)
	case "F32":
		var v []float32
		if v, viewed = view[float32](raw, n); !viewed {
			v = make([]float32, n)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		}
		m, err = matrix.NewDense32(rows, cols, v)
	case "F64":
		var v []float64
		if v, viewed = view[float64](raw, n); !viewed {
			v = make([]float64, n)
			for i := range v {
				v[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
			}
		}
		m, err = matrix.NewDense64(rows, cols, v)
	default:
		return nil, formats.Errorf(f.path, "tensor %q has unsupported dtype %s (supported: F16, BF16, F32, F64)", name, t.dtype)
	}
	if err != nil {
		return nil, &formats.Error{Path: f.path, Msg: fmt.Sprintf("tensor %q: malformed safetensors file", name), Err: err}
	}
	// Only storage nobody can write may be shared by matrix.Clone; a buffer
	// handed to Decode still belongs to its caller.
	if viewed && f.readOnly {
		m.ReadOnly()
	}
	return m, nil
}

// view reinterprets raw as n little-endian elements of T in place when the
// host byte order and the alignment allow it.
func view[T uint16 | float32 | float64](raw []byte, n int) ([]T, bool) {
	var zero T
	if n == 0 || !nativeLittle || len(raw) < n*int(unsafe.Sizeof(zero)) ||
		uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%unsafe.Alignof(zero) != 0 {
		return nil, false
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(raw))), n), true
}

// parseHeader validates the JSON header and fills the tensor table.
func (f *File) parseHeader(header []byte) error {
	if !utf8.Valid(header) {
		return f.malformed("header is not valid UTF-8")
	}
	keys, vals, err := parseObject(header)
	if err != nil {
		return &formats.Error{Path: f.path, Msg: "malformed safetensors header", Err: err}
	}
	f.tensors = make(map[string]tensorInfo, len(keys))
	for i, key := range keys {
		if key == metadataKey {
			if err := f.parseMetadata(vals[i]); err != nil {
				return err
			}
			continue
		}
		t, err := f.parseEntry(key, vals[i])
		if err != nil {
			return err
		}
		f.tensors[key] = t
		f.names = append(f.names, key)
	}
	sort.Strings(f.names)
	return f.checkOverlap()
}

func (f *File) parseMetadata(raw json.RawMessage) error {
	if string(raw) == "null" {
		return nil
	}
	keys, vals, err := parseObject(raw)
	if err != nil {
		return &formats.Error{Path: f.path, Msg: "malformed safetensors header: __metadata__", Err: err}
	}
	f.metadata = make(map[string]string, len(keys))
	for i, k := range keys {
		s, err := parseString(vals[i])
		if err != nil {
			return f.malformed("__metadata__ value %q must be a string", k)
		}
		f.metadata[k] = s
	}
	return nil
}

func (f *File) parseEntry(name string, raw json.RawMessage) (tensorInfo, error) {
	var t tensorInfo
	keys, vals, err := parseObject(raw)
	if err != nil {
		return t, &formats.Error{Path: f.path, Msg: fmt.Sprintf("malformed safetensors header: tensor %q", name), Err: err}
	}
	var haveDType, haveShape, haveOffsets bool
	var offsets []uint64
	for i, k := range keys {
		switch k {
		case "dtype":
			if t.dtype, err = parseString(vals[i]); err != nil {
				return t, f.malformed("tensor %q: dtype must be a string", name)
			}
			haveDType = true
		case "shape":
			dims, err := parseUints(vals[i])
			if err != nil {
				return t, f.malformedErr(err, "tensor %q: shape", name)
			}
			t.shape = make([]int, len(dims))
			for j, d := range dims {
				if d > math.MaxInt {
					return t, f.malformed("tensor %q: shape dimension %d is too large", name, d)
				}
				t.shape[j] = int(d)
			}
			haveShape = true
		case "data_offsets":
			if offsets, err = parseUints(vals[i]); err != nil {
				return t, f.malformedErr(err, "tensor %q: data_offsets", name)
			}
			if len(offsets) != 2 {
				return t, f.malformed("tensor %q: data_offsets must be [begin, end], got %d values", name, len(offsets))
			}
			haveOffsets = true
		default:
			return t, f.malformed("tensor %q: unknown key %q", name, k)
		}
	}
	switch {
	case !haveDType:
		return t, f.malformed("tensor %q has no dtype", name)
	case !haveShape:
		return t, f.malformed("tensor %q has no shape", name)
	case !haveOffsets:
		return t, f.malformed("tensor %q has no data_offsets", name)
	}
	begin, end := offsets[0], offsets[1]
	if begin > end {
		return t, f.malformed("tensor %q: data_offsets [%d, %d] end before they begin", name, begin, end)
	}
	if end > uint64(len(f.buf)) {
		return t, formats.Errorf(f.path, "truncated safetensors file: tensor %q ends at byte %d of the data buffer, which holds %d bytes",
			name, end, len(f.buf))
	}
	t.begin, t.end = int(begin), int(end)
	// Unknown dtypes are kept (Matrix rejects them) but their size cannot be
	// checked.
	if bits, ok := dtypeBits[t.dtype]; ok {
		size, err := byteSize(t.shape, bits)
		if err != nil {
			return t, f.malformedErr(err, "tensor %q: shape %s of %s", name, shapeString(t.shape), t.dtype)
		}
		if size != t.end-t.begin {
			return t, f.malformed("tensor %q: shape %s of %s needs %d bytes, but data_offsets [%d, %d] span %d",
				name, shapeString(t.shape), t.dtype, size, begin, end, end-begin)
		}
	}
	return t, nil
}

// checkOverlap rejects tensors sharing bytes, which the format forbids.
// Empty tensors occupy no bytes and cannot overlap anything.
func (f *File) checkOverlap() error {
	names := make([]string, 0, len(f.names))
	for _, n := range f.names {
		if t := f.tensors[n]; t.begin < t.end {
			names = append(names, n)
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return f.tensors[names[i]].begin < f.tensors[names[j]].begin })
	for i := 1; i < len(names); i++ {
		a, b := f.tensors[names[i-1]], f.tensors[names[i]]
		if b.begin < a.end {
			return f.malformed("tensors %q [%d, %d] and %q [%d, %d] overlap",
				names[i-1], a.begin, a.end, names[i], b.begin, b.end)
		}
	}
	return nil
}

func (f *File) malformed(format string, args ...any) error {
	return formats.Errorf(f.path, "malformed safetensors header: "+format, args...)
}

func (f *File) malformedErr(err error, format string, args ...any) error {
	return &formats.Error{Path: f.path, Msg: "malformed safetensors header: " + fmt.Sprintf(format, args...), Err: err}
}

// byteSize is the byte count of a tensor of the given shape. The product of
// the non-zero dimensions is checked for overflow even when a zero makes the
// tensor empty, as the npy reader does.
func byteSize(shape []int, bits int) (int, error) {
	n, nonzero := 1, 1
	for _, d := range shape {
		if d < 0 {
			return 0, errors.New("negative dimension")
		}
		if d == 0 {
			n = 0
			continue
		}
		if nonzero > math.MaxInt/d {
			return 0, errors.New("product overflows")
		}
		nonzero *= d
		n *= d
	}
	if n > math.MaxInt/bits {
		return 0, errors.New("product overflows")
	}
	if n*bits%8 != 0 {
		return 0, errors.New("not a whole number of bytes")
	}
	return n * bits / 8, nil
}

func shapeString(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// parseObject decodes a JSON object into its keys and raw values, in order,
// rejecting duplicate keys (encoding/json would silently keep the last one,
// making a duplicated tensor name ambiguous) and trailing data other than
// whitespace (the writer pads the header with spaces).
func parseObject(b []byte) ([]string, []json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	var vals []json.RawMessage
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, nil, errors.New("object key is not a string")
		}
		if seen[key] {
			return nil, nil, fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, key)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, nil, err
	}
	if rest := b[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) != 0 {
		return nil, nil, errors.New("trailing data after the JSON object")
	}
	return keys, vals, nil
}

// parseString accepts only a JSON string (not null, which json.Unmarshal
// would silently skip).
func parseString(raw json.RawMessage) (string, error) {
	var s string
	if len(raw) == 0 || raw[0] != '"' {
		return "", errors.New("not a string")
	}
	err := json.Unmarshal(raw, &s)
	return s, err
}

// parseUints accepts only a JSON array of non-negative integer literals
// (no fractions, exponents or quoted numbers).
func parseUints(raw json.RawMessage) ([]uint64, error) {
	var elems []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' {
		return nil, errors.New("not an array of non-negative integers")
	}
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, fmt.Errorf("not an array of non-negative integers: %w", err)
	}
	out := make([]uint64, len(elems))
	for i, e := range elems {
		s := string(bytes.TrimSpace(e))
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			if strings.HasPrefix(s, "-") {
				return nil, fmt.Errorf("negative value %s", s)
			}
			return nil, fmt.Errorf("not a non-negative integer: %s", s)
		}
		out[i] = v
	}
	return out, nil
}

// readFile reads path whole, for systems or files that cannot be mapped.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, readError(path, err)
	}
	return data, nil
}

// readError drops the *fs.PathError wrapper so the path is not printed
// twice; errors.Is(err, fs.ErrNotExist) still works through the errno.
func readError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return &formats.Error{Path: path, Msg: "cannot read file", Err: err}
}
