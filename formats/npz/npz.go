package npz

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/x448/float16"
)

// Archive is an opened .npz file.
type Archive struct {
	path  string
	size  int64
	names []string // archive order, ".npy" stripped
	files map[string]*zip.File
}

// Open reads and indexes the archive at path.
func Open(path string) (*Archive, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is printed once, by formats.Error
		}
		return nil, &formats.Error{Path: path, Msg: "cannot read file", Err: err}
	}
	return Decode(path, data)
}

// Decode indexes an archive held in data. path is used only in messages.
func Decode(path string, data []byte) (*Archive, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	// Insecure member names only matter when extracting to disk.
	if err != nil && !(errors.Is(err, zip.ErrInsecurePath) && zr != nil) {
		return nil, &formats.Error{Path: path, Msg: "malformed npz archive", Err: err}
	}
	a := &Archive{path: path, size: int64(len(data)), files: map[string]*zip.File{}}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue // directory entry
		}
		// numpy's NpzFile strips ".npy" and keeps other names as they are.
		name := strings.TrimSuffix(f.Name, ".npy")
		if _, dup := a.files[name]; dup {
			return nil, formats.Errorf(path, "malformed npz archive: two members named %q", name)
		}
		a.files[name] = f
		a.names = append(a.names, name)
	}
	return a, nil
}

// Names returns the array names in archive order.
func (a *Archive) Names() []string {
	return append([]string(nil), a.names...)
}

func (a *Archive) has(name string) bool {
	_, ok := a.files[name]
	return ok
}

// IsSparse reports whether the archive holds a scipy sparse matrix. scipy
// writes format, shape and data for every sparse format (plus indices and
// indptr for CSR/CSC/BSR, row and col for COO), so keying on those three
// lets a COO or DIA archive fail with "unsupported sparse format" rather
// than be mistaken for a multi-array dense archive.
func (a *Archive) IsSparse() bool {
	return a.has("format") && a.has("shape") && a.has("data")
}

func (a *Archive) errorf(name, format string, args ...any) error {
	return formats.Errorf(a.path, "array %q: "+format, append([]any{name}, args...)...)
}

// memberErr re-labels an error from the npy decoders, which name only the
// archive path, with the array it came from.
func (a *Archive) memberErr(name string, err error) error {
	msg := fmt.Sprintf("array %q", name)
	var fe *formats.Error
	if errors.As(err, &fe) {
		if fe.Msg != "" {
			msg += ": " + fe.Msg
		}
		return &formats.Error{Path: a.path, Msg: msg, Err: fe.Err}
	}
	return &formats.Error{Path: a.path, Msg: msg, Err: err}
}

// member returns the decompressed bytes of an array.
func (a *Archive) member(name string) ([]byte, error) {
	f, ok := a.files[name]
	if !ok {
		return nil, formats.Errorf(a.path, "has no array named %q (arrays: %s)", name, strings.Join(a.names, ", "))
	}
	if f.Flags&0x1 != 0 {
		return nil, a.errorf(name, "encrypted zip members are not supported")
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, &formats.Error{Path: a.path, Msg: fmt.Sprintf("array %q: malformed npz archive", name), Err: err}
	}
	if off < 0 || f.CompressedSize64 > uint64(a.size) || uint64(off) > uint64(a.size)-f.CompressedSize64 {
		return nil, a.errorf(name, "truncated npz archive: member declares %d bytes at offset %d, archive has %d",
			f.CompressedSize64, off, a.size)
	}
	if f.Method == zip.Store && f.UncompressedSize64 != f.CompressedSize64 {
		return nil, a.errorf(name, "malformed npz archive: stored member sizes differ (%d and %d)",
			f.CompressedSize64, f.UncompressedSize64)
	}
	rc, err := f.Open()
	if err != nil {
		if errors.Is(err, zip.ErrAlgorithm) {
			return nil, a.errorf(name, "unsupported zip compression method %d", f.Method)
		}
		return nil, &formats.Error{Path: a.path, Msg: fmt.Sprintf("array %q: malformed npz archive", name), Err: err}
	}
	defer rc.Close()
	// The declared size is only a hint: a hostile header must not make us
	// allocate more than the compressed bytes could plausibly expand to.
	hint := f.UncompressedSize64
	if f.Method != zip.Store {
		hint = min(hint, 4*f.CompressedSize64+4096)
	}
	buf := bytes.NewBuffer(make([]byte, 0, int(min(hint, math.MaxInt32))))
	if _, err := buf.ReadFrom(rc); err != nil {
		switch {
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, &formats.Error{Path: a.path, Msg: fmt.Sprintf("array %q: truncated npz archive", name), Err: err}
		case errors.Is(err, zip.ErrChecksum):
			return nil, &formats.Error{Path: a.path, Msg: fmt.Sprintf("array %q: malformed npz archive (checksum mismatch)", name), Err: err}
		}
		return nil, &formats.Error{Path: a.path, Msg: fmt.Sprintf("array %q: malformed npz archive", name), Err: err}
	}
	return buf.Bytes(), nil
}

// DenseMatrix decodes a 2-D float array. member "" selects the only array;
// an archive with several arrays needs the name, and a sparse archive is
// rejected (use CSRMatrix).
func (a *Archive) DenseMatrix(member string) (*matrix.Dense, error) {
	if a.IsSparse() {
		return nil, formats.Errorf(a.path, "holds a sparse matrix (members %s), not a dense array", strings.Join(a.names, ", "))
	}
	name := member
	if name == "" {
		switch len(a.names) {
		case 0:
			return nil, formats.Errorf(a.path, "npz archive holds no arrays")
		case 1:
			name = a.names[0]
		default:
			return nil, formats.Errorf(a.path, "holds %d arrays (%s); choose one with --queries-tensor/--gallery-tensor",
				len(a.names), strings.Join(a.names, ", "))
		}
	} else if !a.has(name) && a.has(strings.TrimSuffix(name, ".npy")) {
		name = strings.TrimSuffix(name, ".npy")
	}
	raw, err := a.member(name)
	if err != nil {
		return nil, err
	}
	m, err := npy.DecodeMatrix(a.path, raw)
	if err != nil {
		return nil, a.memberErr(name, err)
	}
	return m, nil
}

// SparseFormat returns the scipy format name stored in the "format" member:
// a 0-d or 1-element array of unicode (np.array('csr'), "<U3") or bytes
// (b'csr', "|S3", what current scipy writes).
func (a *Archive) SparseFormat() (string, error) {
	const name = "format"
	raw, err := a.member(name)
	if err != nil {
		return "", err
	}
	h, off, err := npy.ParseHeader(raw)
	if err != nil {
		return "", a.memberErr(name, err)
	}
	n, err := h.NumElements()
	if err != nil {
		return "", a.memberErr(name, err)
	}
	if len(h.Shape) > 1 || n != 1 {
		return "", a.errorf(name, "malformed sparse archive: format must hold one string, got shape %s", h.ShapeString())
	}
	et, err := npy.ParseDescr(h.Descr)
	if err != nil {
		return "", a.errorf(name, "malformed sparse archive: format has dtype %q, want a string", h.Descr)
	}
	switch et.Kind {
	case 'U':
		arr, err := npy.DecodeArray(a.path, raw)
		if err != nil {
			return "", a.memberErr(name, err)
		}
		return arr.Strings[0], nil
	case 'S':
		body := raw[off:]
		if len(body) < et.Size {
			return "", a.errorf(name, "truncated: %s needs %d bytes, only %d present", h.Descr, et.Size, len(body))
		}
		return strings.TrimRight(string(body[:et.Size]), "\x00"), nil
	}
	return "", a.errorf(name, "malformed sparse archive: format has dtype %q, want a string", h.Descr)
}

// csr holds the validated structure shared by CSRMatrix and CSRRelevance.
type csr struct {
	rows, cols int
	indptr     []int64
	indices    []int64
}

// structure checks the format, shape, indptr and column indices.
func (a *Archive) structure() (*csr, error) {
	if !a.IsSparse() {
		return nil, formats.Errorf(a.path, "is not a sparse matrix archive (needs members data, indices, indptr, format and shape; has %s)",
			strings.Join(a.names, ", "))
	}
	format, err := a.SparseFormat()
	if err != nil {
		return nil, err
	}
	if format != "csr" {
		return nil, formats.Errorf(a.path, "unsupported sparse format %q (only csr is supported)", format)
	}
	for _, m := range []string{"indices", "indptr"} {
		if !a.has(m) {
			return nil, formats.Errorf(a.path, "malformed CSR archive: no %q member", m)
		}
	}
	shape, err := a.ints("shape")
	if err != nil {
		return nil, err
	}
	if len(shape) != 2 {
		return nil, a.errorf("shape", "malformed CSR archive: shape must hold 2 integers, got %d", len(shape))
	}
	if shape[0] < 0 || shape[1] < 0 || shape[0] >= math.MaxInt || shape[1] > math.MaxInt {
		return nil, a.errorf("shape", "malformed CSR archive: bad shape (%d, %d)", shape[0], shape[1])
	}
	c := &csr{rows: int(shape[0]), cols: int(shape[1])}
	if c.indptr, err = a.ints("indptr"); err != nil {
		return nil, err
	}
	if c.indices, err = a.ints("indices"); err != nil {
		return nil, err
	}
	if err := checkIndptr(c.rows, c.indptr, len(c.indices)); err != nil {
		return nil, &formats.Error{Path: a.path, Err: err}
	}
	if err := checkColumns(c.cols, c.indptr, c.indices); err != nil {
		return nil, &formats.Error{Path: a.path, Err: err}
	}
	return c, nil
}

// ints decodes a 1-D integer member.
func (a *Archive) ints(name string) ([]int64, error) {
	raw, err := a.member(name)
	if err != nil {
		return nil, err
	}
	arr, err := npy.DecodeArray(a.path, raw)
	if err != nil {
		return nil, a.memberErr(name, err)
	}
	if arr.Kind != 'i' && arr.Kind != 'u' {
		return nil, a.errorf(name, "unsupported dtype %q (want an integer array)", arr.Descr)
	}
	if len(arr.Shape) != 1 {
		return nil, a.errorf(name, "malformed CSR archive: want a 1-D array, got shape %s", npy.Header{Shape: arr.Shape}.ShapeString())
	}
	return arr.Ints, nil
}

// checkIndptr applies the SPEC §2.1.1 indptr rules.
func checkIndptr(rows int, indptr []int64, nnz int) error {
	if len(indptr) != rows+1 {
		return fmt.Errorf("bad CSR indptr: %d entries, want rows+1 = %d", len(indptr), rows+1)
	}
	if indptr[0] != 0 {
		return fmt.Errorf("bad CSR indptr: starts at %d, want 0", indptr[0])
	}
	for r := 0; r < rows; r++ {
		if indptr[r+1] < indptr[r] {
			return fmt.Errorf("bad CSR indptr: decreases at row %d (%d then %d)", r, indptr[r], indptr[r+1])
		}
	}
	if indptr[rows] != int64(nnz) {
		return fmt.Errorf("bad CSR indptr: ends at %d but there are %d stored indices", indptr[rows], nnz)
	}
	return nil
}

func checkColumns(cols int, indptr, indices []int64) error {
	for r := 0; r+1 < len(indptr); r++ {
		for _, c := range indices[indptr[r]:indptr[r+1]] {
			if c < 0 || c >= int64(cols) {
				return fmt.Errorf("row %d: out-of-range index %d (the matrix has %d columns)", r, c, cols)
			}
		}
	}
	return nil
}

// CSRMatrix decodes a CSR embedding matrix (SPEC §2.1.1): float16 data is
// widened to float32, each row's indices are sorted ascending (values
// follow) and duplicate indices within a row are rejected.
func (a *Archive) CSRMatrix() (*matrix.CSR, error) {
	c, err := a.structure()
	if err != nil {
		return nil, err
	}
	raw, err := a.member("data")
	if err != nil {
		return nil, err
	}
	f, err := npy.DecodeFloats(a.path, raw)
	if err != nil {
		return nil, a.memberErr("data", err)
	}
	if len(f.Shape) != 1 || f.Len() != len(c.indices) {
		return nil, a.errorf("data", "malformed CSR archive: shape %s, want (%d,) to match indices",
			npy.Header{Shape: f.Shape}.ShapeString(), len(c.indices))
	}
	idx := make([]int32, len(c.indices))
	for k, v := range c.indices {
		if v > math.MaxInt32 {
			return nil, formats.Errorf(a.path, "column index %d exceeds the int32 range", v)
		}
		idx[k] = int32(v)
	}
	c.indices = nil // release the int64 copy before sorting
	var m *matrix.CSR
	switch f.DType {
	case matrix.Float64:
		if err := sortRows(c.indptr, idx, f.F64); err != nil {
			return nil, &formats.Error{Path: a.path, Err: err}
		}
		m, err = matrix.NewCSR64(c.rows, c.cols, c.indptr, idx, f.F64)
	default:
		vals := f.F32
		if f.DType == matrix.Float16 {
			vals = make([]float32, len(f.F16))
			for i, b := range f.F16 {
				vals[i] = float16.Frombits(b).Float32()
			}
		}
		if err := sortRows(c.indptr, idx, vals); err != nil {
			return nil, &formats.Error{Path: a.path, Err: err}
		}
		m, err = matrix.NewCSR32(c.rows, c.cols, c.indptr, idx, vals)
	}
	if err != nil {
		return nil, &formats.Error{Path: a.path, Msg: "malformed CSR archive", Err: err}
	}
	return m, nil
}

// rowSorter sorts one row's indices, carrying the values along.
type rowSorter[T any] struct {
	idx []int32
	val []T
}

func (s rowSorter[T]) Len() int           { return len(s.idx) }
func (s rowSorter[T]) Less(i, j int) bool { return s.idx[i] < s.idx[j] }
func (s rowSorter[T]) Swap(i, j int) {
	s.idx[i], s.idx[j] = s.idx[j], s.idx[i]
	s.val[i], s.val[j] = s.val[j], s.val[i]
}

func sortRows[T any](indptr []int64, idx []int32, val []T) error {
	for r := 0; r+1 < len(indptr); r++ {
		lo, hi := indptr[r], indptr[r+1]
		ri, rv := idx[lo:hi], val[lo:hi]
		sorted := true
		for k := 1; k < len(ri); k++ {
			if ri[k] <= ri[k-1] {
				sorted = false
				break
			}
		}
		if sorted {
			continue
		}
		sort.Sort(rowSorter[T]{ri, rv})
		for k := 1; k < len(ri); k++ {
			if ri[k] == ri[k-1] {
				return fmt.Errorf("row %d: duplicate column index %d", r, ri[k])
			}
		}
	}
	return nil
}

// SparseRelevance is a CSR relevance matrix as stored (SPEC §2.4 (b)): rows
// are neither sorted nor deduplicated, since duplicates are summed by the
// dataset in stored order, and nothing is densified.
type SparseRelevance struct {
	Rows, Cols int
	Indptr     []int64
	Indices    []int64
	Data       []float64
}

// CSRRelevance decodes a CSR relevance matrix. Data may be of any float,
// integer or bool dtype; grades are not validated here.
func (a *Archive) CSRRelevance() (*SparseRelevance, error) {
	c, err := a.structure()
	if err != nil {
		return nil, err
	}
	raw, err := a.member("data")
	if err != nil {
		return nil, err
	}
	arr, err := npy.DecodeArray(a.path, raw)
	if err != nil {
		return nil, a.memberErr("data", err)
	}
	var data []float64
	switch arr.Kind {
	case 'f':
		data = arr.Floats
	case 'i', 'u', 'b':
		data = make([]float64, len(arr.Ints))
		for i, v := range arr.Ints {
			data[i] = float64(v)
		}
	default:
		return nil, a.errorf("data", "unsupported dtype %q (want a numeric array)", arr.Descr)
	}
	if len(arr.Shape) != 1 || len(data) != len(c.indices) {
		return nil, a.errorf("data", "malformed CSR archive: shape %s, want (%d,) to match indices",
			npy.Header{Shape: arr.Shape}.ShapeString(), len(c.indices))
	}
	return &SparseRelevance{Rows: c.rows, Cols: c.cols, Indptr: c.indptr, Indices: c.indices, Data: data}, nil
}

// Writers. Archives are written uncompressed, as np.savez does.

func create(zw *zip.Writer, name string) (io.Writer, error) {
	return zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Store})
}

// WriteDense writes a single-array archive; name "" becomes "arr_0", the
// name np.savez gives a positional array.
func WriteDense(w io.Writer, name string, m *matrix.Dense) error {
	if name == "" {
		name = "arr_0"
	}
	zw := zip.NewWriter(w)
	fw, err := create(zw, name)
	if err != nil {
		return err
	}
	if err := npy.WriteDense(fw, m); err != nil {
		return err
	}
	return zw.Close()
}

// WriteCSR writes m in scipy.sparse.save_npz's layout (member order
// indices, indptr, format, shape, data). Like scipy, both index arrays are
// int32 when the entry count and width fit, int64 otherwise.
func WriteCSR(w io.Writer, m *matrix.CSR) error {
	indptr, idx := m.Components()
	indices := make([]int64, len(idx))
	for i, v := range idx {
		indices[i] = int64(v)
	}
	zw := zip.NewWriter(w)
	if err := writeStructure(zw, m.Rows(), m.Cols(), indptr, indices); err != nil {
		return err
	}
	fw, err := create(zw, "data")
	if err != nil {
		return err
	}
	var vals []float64
	if m.DType() == matrix.Float32 {
		data := make([]float32, 0, m.NNZ())
		for i := 0; i < m.Rows(); i++ {
			_, vals = m.RowEntries(i, vals)
			for _, v := range vals {
				data = append(data, float32(v)) // exact: the values were float32
			}
		}
		err = npy.WriteFloat32(fw, []int{len(data)}, data)
	} else {
		data := make([]float64, 0, m.NNZ())
		for i := 0; i < m.Rows(); i++ {
			_, vals = m.RowEntries(i, vals)
			data = append(data, vals...)
		}
		err = npy.WriteFloat64(fw, []int{len(data)}, data)
	}
	if err != nil {
		return err
	}
	return zw.Close()
}

// WriteSparseRelevance writes r in the scipy CSR layout with float64 data.
func WriteSparseRelevance(w io.Writer, r *SparseRelevance) error {
	if r.Rows < 0 || r.Cols < 0 {
		return fmt.Errorf("npz: negative shape (%d, %d)", r.Rows, r.Cols)
	}
	if err := checkIndptr(r.Rows, r.Indptr, len(r.Indices)); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	if len(r.Data) != len(r.Indices) {
		return fmt.Errorf("npz: %d values for %d indices", len(r.Data), len(r.Indices))
	}
	if err := checkColumns(r.Cols, r.Indptr, r.Indices); err != nil {
		return fmt.Errorf("npz: %w", err)
	}
	zw := zip.NewWriter(w)
	if err := writeStructure(zw, r.Rows, r.Cols, r.Indptr, r.Indices); err != nil {
		return err
	}
	fw, err := create(zw, "data")
	if err != nil {
		return err
	}
	if err := npy.WriteFloat64(fw, []int{len(r.Data)}, r.Data); err != nil {
		return err
	}
	return zw.Close()
}

// writeStructure writes indices, indptr, format (b'csr') and shape.
func writeStructure(zw *zip.Writer, rows, cols int, indptr, indices []int64) error {
	narrow := len(indices) <= math.MaxInt32 && cols <= math.MaxInt32
	for _, part := range []struct {
		name string
		vals []int64
	}{{"indices", indices}, {"indptr", indptr}} {
		fw, err := create(zw, part.name)
		if err != nil {
			return err
		}
		if narrow {
			v32 := make([]int32, len(part.vals))
			for i, v := range part.vals {
				v32[i] = int32(v)
			}
			err = npy.WriteInt32(fw, []int{len(v32)}, v32)
		} else {
			err = npy.WriteInt64(fw, []int{len(part.vals)}, part.vals)
		}
		if err != nil {
			return err
		}
	}
	fw, err := create(zw, "format")
	if err != nil {
		return err
	}
	if err := npy.WriteHeader(fw, npy.Header{Descr: "|S3", Shape: []int{}}); err != nil {
		return err
	}
	if _, err := io.WriteString(fw, "csr"); err != nil {
		return err
	}
	fw, err = create(zw, "shape")
	if err != nil {
		return err
	}
	return npy.WriteInt64(fw, []int{2}, []int64{int64(rows), int64(cols)})
}
