package admit

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"unsafe"
)

// spillDir is a private vertebrae-spill-* directory holding one endpoint's
// spill files.
type spillDir struct {
	base  string // configured parent, named in errors
	path  string
	files []*spillFile
}

func newSpillDir(base string) (*spillDir, error) {
	if base == "" {
		base = os.TempDir()
	}
	path, err := os.MkdirTemp(base, "vertebrae-spill-*")
	if err != nil {
		return nil, &SpillError{Dir: base, Err: err}
	}
	return &spillDir{base: base, path: path}, nil
}

// create opens a new spill file in the directory.
func (d *spillDir) create(name string) (*spillFile, error) {
	path := filepath.Join(d.path, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, &SpillError{Dir: d.base, Err: err}
	}
	sf := &spillFile{dir: d, f: f, path: path}
	sf.w = bufio.NewWriterSize(spillWriter(f), 256<<10)
	d.files = append(d.files, sf)
	return sf, nil
}

// remove closes any open file and deletes the directory with its contents.
func (d *spillDir) remove() error {
	var errs []error
	for _, f := range d.files {
		if f.f != nil {
			errs = append(errs, f.f.Close())
			f.f = nil
		}
	}
	if err := os.RemoveAll(d.path); err != nil {
		errs = append(errs, &SpillError{Dir: d.base, Err: err})
	}
	return errors.Join(errs...)
}

// spillWriter is where spill bytes go; tests swap it to simulate a full disk.
var spillWriter = func(f *os.File) io.Writer { return f }

// spillFile is one sequentially written little-endian array.
type spillFile struct {
	dir  *spillDir
	f    *os.File
	w    *bufio.Writer
	path string
	size int64 // bytes written so far
}

func (s *spillFile) fail(err error) error {
	return &SpillError{Dir: s.dir.base, Err: err}
}

// preallocate reserves size bytes so a full disk fails now rather than
// after most batches have been encoded.
func (s *spillFile) preallocate(size int64) error {
	if err := reserveSpace(s.f, size); err != nil {
		return s.fail(fmt.Errorf("reserving %d bytes for %s: %w", size, s.path, err))
	}
	return nil
}

// mapped flushes the file, checks its size and maps it read-only. The file
// descriptor is closed; the mapping stays valid until unmap.
func (s *spillFile) mapped(want int64) ([]byte, func() error, error) {
	if err := s.w.Flush(); err != nil {
		return nil, nil, s.fail(err)
	}
	if s.size != want {
		return nil, nil, s.fail(fmt.Errorf("%s holds %d bytes, want %d", s.path, s.size, want))
	}
	data, unmap, err := mapFile(s.f, want)
	cerr := s.f.Close()
	s.f = nil
	if err != nil {
		return nil, nil, s.fail(fmt.Errorf("mapping %s: %w", s.path, err))
	}
	if cerr != nil {
		_ = unmap()
		return nil, nil, s.fail(cerr)
	}
	return data, unmap, nil
}

// writeLE appends v to the file as little-endian bytes: on little-endian
// hosts the memory itself, elsewhere element by element.
func writeLE[T uint16 | int32 | int64 | float32 | float64](s *spillFile, v []T) error {
	if len(v) == 0 {
		return nil
	}
	size := int(unsafe.Sizeof(v[0]))
	if hostLittleEndian {
		if _, err := s.w.Write(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*size)); err != nil {
			return s.fail(err)
		}
		s.size += int64(len(v) * size)
		return nil
	}
	var buf [8]byte
	for _, x := range v {
		switch t := any(x).(type) {
		case uint16:
			binary.LittleEndian.PutUint16(buf[:], t)
		case int32:
			binary.LittleEndian.PutUint32(buf[:], uint32(t))
		case int64:
			binary.LittleEndian.PutUint64(buf[:], uint64(t))
		case float32:
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(t))
		case float64:
			binary.LittleEndian.PutUint64(buf[:], math.Float64bits(t))
		}
		if _, err := s.w.Write(buf[:size]); err != nil {
			return s.fail(err)
		}
	}
	s.size += int64(len(v) * size)
	return nil
}

// writeOffsets appends ptr[1:] + base as little-endian int64 (the global row
// pointers of a batch whose local pointers start at ptr[0]).
func writeOffsets(s *spillFile, ptr []int64, base int64) error {
	var buf [8]byte
	for _, p := range ptr[1:] {
		binary.LittleEndian.PutUint64(buf[:], uint64(base+p-ptr[0]))
		if _, err := s.w.Write(buf[:]); err != nil {
			return s.fail(err)
		}
	}
	s.size += int64(8 * (len(ptr) - 1))
	return nil
}

// viewLE returns data as a []T. On little-endian hosts it aliases the
// mapping (whose start is page-aligned); elsewhere it decodes a copy.
func viewLE[T uint16 | int32 | int64 | float32 | float64](data []byte) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := len(data) / size
	if n == 0 {
		return []T{}
	}
	if hostLittleEndian {
		return unsafe.Slice((*T)(unsafe.Pointer(&data[0])), n)
	}
	out := make([]T, n)
	for i := range out {
		b := data[i*size:]
		var v any
		switch any(zero).(type) {
		case uint16:
			v = binary.LittleEndian.Uint16(b)
		case int32:
			v = int32(binary.LittleEndian.Uint32(b))
		case int64:
			v = int64(binary.LittleEndian.Uint64(b))
		case float32:
			v = math.Float32frombits(binary.LittleEndian.Uint32(b))
		case float64:
			v = math.Float64frombits(binary.LittleEndian.Uint64(b))
		}
		out[i] = v.(T)
	}
	return out
}

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
