package artifact

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/store"
)

// Source is an array to be written, delivered in row batches. Batches may be
// called more than once: the writer hashes the encoding in a first pass
// (the data file is named by its SHA-256, which must be known before the
// upload starts) and streams it to the store in a second, re-hashing to
// prove both passes saw the same bytes. Nothing is ever buffered whole.
type Source interface {
	Rows() int
	Cols() int
	DType() matrix.DType
	Sparse() bool
	// Batches calls yield with consecutive row batches covering every row
	// in order: *matrix.Dense for dense sources; a sparse source yields
	// exactly one *matrix.CSR holding every row.
	Batches(ctx context.Context, yield func(matrix.Matrix) error) error
}

// DefaultBatchBytes is the size of the row batches the readers decode and
// the matrix source yields.
const DefaultBatchBytes = 4 << 20

// FromMatrix is the Source of an in-memory (or memory-mapped) matrix.
func FromMatrix(m matrix.Matrix) Source { return matrixSource{m} }

type matrixSource struct{ m matrix.Matrix }

func (s matrixSource) Rows() int           { return s.m.Rows() }
func (s matrixSource) Cols() int           { return s.m.Cols() }
func (s matrixSource) DType() matrix.DType { return s.m.DType() }
func (s matrixSource) Sparse() bool        { return s.m.Sparse() }

func (s matrixSource) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	d, ok := s.m.(*matrix.Dense)
	if !ok {
		return yield(s.m)
	}
	per := batchRows(d.Cols(), d.DType())
	for lo := 0; lo < d.Rows(); lo += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := yield(d.RowSlice(lo, min(lo+per, d.Rows()))); err != nil {
			return err
		}
	}
	return nil
}

func batchRows(cols int, dt matrix.DType) int {
	return max(1, DefaultBatchBytes/max(1, cols*dt.Size()))
}

func npyDescr(dt matrix.DType) string { return fmt.Sprintf("<f%d", dt.Size()) }

// encodeArray writes src's file encoding to w and returns its nnz (-1 for
// dense).
func encodeArray(ctx context.Context, w io.Writer, src Source) (int64, error) {
	if src.Sparse() {
		var nnz int64 = -1
		err := src.Batches(ctx, func(m matrix.Matrix) error {
			c, ok := m.(*matrix.CSR)
			if !ok || nnz >= 0 || c.Rows() != src.Rows() || c.Cols() != src.Cols() || c.DType() != src.DType() {
				return fmt.Errorf("sparse source must yield one %d×%d %s CSR matrix", src.Rows(), src.Cols(), src.DType())
			}
			nnz = int64(c.NNZ())
			return npz.WriteCSR(w, c)
		})
		if err == nil && nnz < 0 {
			err = errors.New("sparse source yielded nothing")
		}
		return nnz, err
	}
	if err := npy.WriteHeader(w, npy.Header{Descr: npyDescr(src.DType()), Shape: []int{src.Rows(), src.Cols()}}); err != nil {
		return 0, err
	}
	rows := 0
	err := src.Batches(ctx, func(m matrix.Matrix) error {
		d, ok := m.(*matrix.Dense)
		if !ok || d.Cols() != src.Cols() || d.DType() != src.DType() || rows+d.Rows() > src.Rows() {
			return fmt.Errorf("dense source yielded a batch that does not fit its %d×%d %s shape", src.Rows(), src.Cols(), src.DType())
		}
		rows += d.Rows()
		return d.WriteLE(w)
	})
	if err == nil && rows != src.Rows() {
		err = fmt.Errorf("dense source yielded %d rows, declared %d", rows, src.Rows())
	}
	return -1, err
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// WriteArray commits an array+metadata artifact at key: metadata is checked
// first, then the data file and the metadata document are written, and the
// manifest last. src must have at least one row and column. The key rules
// of WriteJSON apply.
func (s *Store) WriteArray(ctx context.Context, key string, src Source, metadata any, opts ...WriteOption) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	md, err := encodeMetadata(key, metadata)
	if err != nil {
		return err
	}
	if src.Rows() < 1 || src.Cols() < 1 {
		return &Error{Key: key, Msg: fmt.Sprintf("cannot store a %d×%d array", src.Rows(), src.Cols())}
	}
	o, typ := writeOpts(opts), typeOf(md)
	if _, err := s.occupant(ctx, key, typ, o.explicit); err != nil {
		return err // before encoding: a refused key costs nothing
	}
	var nnz int64
	var a *ArrayEntry
	d, err := s.putStreamed(ctx, key, "array", func(w io.Writer) (err error) {
		nnz, err = encodeArray(ctx, w, src)
		return err
	}, func(d chunkdigest.Digest) string {
		a = newArrayEntry(src, d, nnz)
		return a.Filename
	})
	if err == nil {
		err = s.putSidecar(ctx, key, a.Chunks, d.Sidecar)
	}
	if err != nil {
		return err
	}
	entry, mdSidecar := metadataEntry(md)
	if err := s.putMetadata(ctx, key, entry, md, mdSidecar); err != nil {
		return err
	}
	m := &Manifest{SchemaVersion: SchemaVersion, Kind: KindArrayMetadata, Array: a, Metadata: entry}
	if err := s.guardCommit(ctx, key, typ, m, o); err != nil {
		return err
	}
	return s.commit(ctx, key, m)
}

// newArrayEntry describes the encoded data file of src with its digest.
func newArrayEntry(src Source, d chunkdigest.Digest, nnz int64) *ArrayEntry {
	sum := d.Hex()
	a := &ArrayEntry{StorageFormat: "npy", Shape: []int{src.Rows(), src.Cols()}, DType: src.DType().String(),
		SizeBytes: d.Size, SHA256: sum, Chunks: chunksFor(sum)}
	if src.Sparse() {
		a.StorageFormat, a.SparseFormat, a.NNZ = "npz", "csr", &nnz
	}
	a.Filename = "array-" + sum + "." + a.StorageFormat
	return a
}

// putStreamed writes the data file that encode writes, named
// name(digest): in one pass (putOnce) on stores that can name an object
// after its last byte, else in two (putTwice). what names the file in
// errors ("array", "metadata").
func (s *Store) putStreamed(ctx context.Context, key, what string, encode func(io.Writer) error, name func(chunkdigest.Digest) string) (chunkdigest.Digest, error) {
	ln, ok := s.st.(store.LateNamer)
	if !ok {
		return s.putTwice(ctx, key, what, encode, name)
	}
	d, err := s.putOnce(ctx, ln, key, encode, name)
	if err != nil {
		return d, &Error{Key: key, Msg: "write " + what, Err: err}
	}
	return d, nil
}

// putOnce streams what encode writes into the store once, hashing its
// chunks on the way (on every core), and names the object name(digest)
// once the last byte is written. A failure or a crash leaves no object
// (the store's temporary file goes with the failure, or with the next
// write into the key after a crash).
func (s *Store) putOnce(ctx context.Context, ln store.LateNamer, key string, encode func(io.Writer) error, name func(chunkdigest.Digest) string) (chunkdigest.Digest, error) {
	h := chunkdigest.NewHasher()
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(io.MultiWriter(h, pw), 1<<20)
		err := encode(bw)
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
		encoded <- err
	}()
	var d chunkdigest.Digest
	var encErr error
	received := false
	err := ln.PutNamed(ctx, key, pr, -1, func() (string, error) {
		// The reader reached EOF, so the encoder has finished: its error
		// and whatever it recorded are final.
		encErr, received = <-encoded, true
		if encErr != nil {
			return "", encErr
		}
		d = h.Digest()
		return name(d), nil
	})
	pr.CloseWithError(io.ErrClosedPipe) // unblock the encoder if the write stopped early
	if !received {
		encErr = <-encoded
	}
	if err == nil {
		err = encErr
	}
	return d, err
}

// putTwice is the path for stores without a cheap rename: a first pass of
// encode computes the digest that names the file, a second streams the
// same bytes into the store, re-hashed to prove the source did not change
// in between.
func (s *Store) putTwice(ctx context.Context, key, what string, encode func(io.Writer) error, name func(chunkdigest.Digest) string) (chunkdigest.Digest, error) {
	h := chunkdigest.NewHasher()
	if err := encode(h); err != nil {
		return chunkdigest.Digest{}, &Error{Key: key, Msg: "encode " + what, Err: err}
	}
	d := h.Digest()
	filename := name(d)
	pr, pw := io.Pipe()
	encoded := make(chan error, 1)
	go func() {
		h2 := chunkdigest.NewHasher()
		err := encode(io.MultiWriter(pw, h2))
		if err == nil && h2.Digest().Hex() != d.Hex() {
			err = errors.New("the source changed between the hashing and the upload pass")
		}
		pw.CloseWithError(err)
		encoded <- err
	}()
	err := s.st.Put(ctx, key+"/"+filename, pr, d.Size)
	pr.CloseWithError(io.ErrClosedPipe) // unblock the encoder if Put stopped early
	encErr := <-encoded
	if err == nil && encErr != nil {
		// A store may stop reading after exactly the size: the encoder's
		// verdict decides. The object holds bytes that are not its name's.
		_ = s.st.Delete(ctx, key+"/"+filename)
		err = encErr
	}
	if err != nil {
		return chunkdigest.Digest{}, &Error{Key: key, Msg: "write " + filename, Err: err}
	}
	return d, nil
}

// LoadArray verifies and decodes key's array into memory (a dense matrix is
// decoded straight into its final slice; the file is never held whole) and
// returns it with the verified metadata document.
func (s *Store) LoadArray(ctx context.Context, key string) (matrix.Matrix, []byte, error) {
	md, m, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	a, err := arrayEntry(key, m)
	if err != nil {
		return nil, nil, err
	}
	var out matrix.Matrix
	err = s.verified(ctx, key, a.component(), func(r io.Reader) error {
		if a.StorageFormat == "npz" {
			c, err := decodeCSR(key, r, a)
			out = c
			return err
		}
		d, err := decodeDenseAll(key, r, a)
		out = d
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return out, md, nil
}

// StreamArray verifies key's dense array while handing it to fn in row
// batches of about DefaultBatchBytes, so memory stays at one batch whatever
// the endpoint's size. The verdict comes at the end: a caller must not act
// on the batches (other than staging them) unless StreamArray returns nil.
// Sparse arrays are delivered as one verified CSR batch.
func (s *Store) StreamArray(ctx context.Context, key string, fn func(batch matrix.Matrix) error) ([]byte, error) {
	md, m, err := s.ReadMetadata(ctx, key)
	if err != nil {
		return nil, err
	}
	a, err := arrayEntry(key, m)
	if err != nil {
		return nil, err
	}
	err = s.verified(ctx, key, a.component(), func(r io.Reader) error {
		if a.StorageFormat == "npz" {
			c, err := decodeCSR(key, r, a)
			if err != nil {
				return err
			}
			return fn(c)
		}
		return decodeDense(ctx, key, r, a, fn)
	})
	if err != nil {
		return nil, err
	}
	return md, nil
}

func arrayEntry(key string, m *Manifest) (*ArrayEntry, error) {
	if m.Kind != KindArrayMetadata || m.Array == nil {
		return nil, keyErr(key, ErrMismatch, "is a JSON artifact, not an array")
	}
	return m.Array, nil
}

func mismatch(key string, format string, args ...any) error {
	return keyErr(key, ErrMismatch, fmt.Sprintf(format, args...)+" (does not match its manifest)")
}

// readNPYHeader reads and checks a dense file's header against the
// manifest, returning the element type.
func readNPYHeader(key string, r io.Reader, a *ArrayEntry) (matrix.DType, error) {
	pre := make([]byte, 12)
	if _, err := io.ReadFull(r, pre[:10]); err != nil {
		return 0, mismatch(key, "array file has no npy header")
	}
	var total int
	switch pre[6] {
	case 1:
		total = 10 + int(binary.LittleEndian.Uint16(pre[8:10]))
	case 2, 3:
		if _, err := io.ReadFull(r, pre[10:12]); err != nil {
			return 0, mismatch(key, "array file has no npy header")
		}
		total = 12 + int(binary.LittleEndian.Uint32(pre[8:12]))
	default:
		return 0, mismatch(key, "array file is not an npy file")
	}
	if total > 1<<20 {
		return 0, mismatch(key, "array file has a %d-byte npy header", total)
	}
	hdr := make([]byte, total)
	n := copy(hdr, pre[:min(12, total)])
	if pre[6] == 1 {
		n = 10
	}
	if _, err := io.ReadFull(r, hdr[n:]); err != nil {
		return 0, mismatch(key, "array file has a truncated npy header")
	}
	h, _, err := npy.ParseHeader(hdr)
	if err != nil {
		return 0, mismatch(key, "array file header: %v", err)
	}
	dt, err := matrix.ParseDType(a.DType)
	if err != nil {
		return 0, mismatch(key, "%v", err)
	}
	if h.Descr != npyDescr(dt) || h.Fortran || len(h.Shape) != 2 || h.Shape[0] != a.Shape[0] || h.Shape[1] != a.Shape[1] {
		return 0, mismatch(key, "array file holds %s %s (fortran_order %v); manifest says %s %v", h.Descr, h.ShapeString(), h.Fortran, a.DType, a.Shape)
	}
	want := int64(total) + int64(a.Shape[0])*int64(a.Shape[1])*int64(dt.Size())
	if want != a.SizeBytes {
		return 0, mismatch(key, "a %d×%d %s npy file has %d bytes; manifest says %d", a.Shape[0], a.Shape[1], a.DType, want, a.SizeBytes)
	}
	return dt, nil
}

func decodeDense(ctx context.Context, key string, r io.Reader, a *ArrayEntry, fn func(matrix.Matrix) error) error {
	dt, err := readNPYHeader(key, r, a)
	if err != nil {
		return err
	}
	rows, cols := a.Shape[0], a.Shape[1]
	per := batchRows(cols, dt)
	var buf []byte
	if !hostLittleEndian {
		buf = make([]byte, per*cols*dt.Size())
	}
	f16 := []uint16(nil)
	f32 := []float32(nil)
	f64 := []float64(nil)
	for lo := 0; lo < rows; lo += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(per, rows-lo)
		// A fresh slice per batch: fn may keep it. On little-endian hosts
		// the file bytes are read straight into it.
		var m *matrix.Dense
		var dst []byte
		switch dt {
		case matrix.Float16:
			f16 = make([]uint16, n*cols)
			dst = asBytes(f16)
		case matrix.Float32:
			f32 = make([]float32, n*cols)
			dst = asBytes(f32)
		default:
			f64 = make([]float64, n*cols)
			dst = asBytes(f64)
		}
		b := dst
		if !hostLittleEndian {
			b = buf[:n*cols*dt.Size()]
		}
		if _, err := io.ReadFull(r, b); err != nil {
			return keyErr(key, ErrTruncated, "array file is truncated")
		}
		switch dt {
		case matrix.Float16:
			if !hostLittleEndian {
				putLE16(f16, b)
			}
			m, err = matrix.NewDense16(n, cols, f16)
		case matrix.Float32:
			if !hostLittleEndian {
				putLE32(f32, b)
			}
			m, err = matrix.NewDense32(n, cols, f32)
		default:
			if !hostLittleEndian {
				putLE64(f64, b)
			}
			m, err = matrix.NewDense64(n, cols, f64)
		}
		if err != nil {
			return err
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// decodeDenseAll decodes the whole array into one matrix; the manifest
// sizes were checked against the stored file before anything is allocated.
func decodeDenseAll(key string, r io.Reader, a *ArrayEntry) (*matrix.Dense, error) {
	dt, err := readNPYHeader(key, r, a)
	if err != nil {
		return nil, err
	}
	rows, cols := a.Shape[0], a.Shape[1]
	n := rows * cols
	buf := make([]byte, min(DefaultBatchBytes, n*dt.Size()))
	step := len(buf) / dt.Size()
	var f16 []uint16
	var f32 []float32
	var f64 []float64
	switch dt {
	case matrix.Float16:
		f16 = make([]uint16, n)
	case matrix.Float32:
		f32 = make([]float32, n)
	default:
		f64 = make([]float64, n)
	}
	if hostLittleEndian {
		var dst []byte
		switch dt {
		case matrix.Float16:
			dst = asBytes(f16)
		case matrix.Float32:
			dst = asBytes(f32)
		default:
			dst = asBytes(f64)
		}
		memory.AdviseHugePages(dst) // before the first touch: partials and positives stages are hundreds of MiB
		if _, err := io.ReadFull(r, dst); err != nil {
			return nil, keyErr(key, ErrTruncated, "array file is truncated")
		}
		step = n // nothing left to convert
	}
	for lo := 0; lo < n && !hostLittleEndian; lo += step {
		k := min(step, n-lo)
		b := buf[:k*dt.Size()]
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, keyErr(key, ErrTruncated, "array file is truncated")
		}
		switch dt {
		case matrix.Float16:
			putLE16(f16[lo:lo+k], b)
		case matrix.Float32:
			putLE32(f32[lo:lo+k], b)
		default:
			putLE64(f64[lo:lo+k], b)
		}
	}
	switch dt {
	case matrix.Float16:
		return matrix.NewDense16(rows, cols, f16)
	case matrix.Float32:
		return matrix.NewDense32(rows, cols, f32)
	}
	return matrix.NewDense64(rows, cols, f64)
}

// decodeCSR reads a sparse file (its size is bounded by the verified Stat)
// and checks it against the manifest. CSR endpoints are decoded from one
// buffer of the file: the zip layout needs random access.
func decodeCSR(key string, r io.Reader, a *ArrayEntry) (*matrix.CSR, error) {
	data, err := io.ReadAll(io.LimitReader(r, a.SizeBytes))
	if err != nil {
		return nil, err
	}
	arch, err := npz.Decode(key+"/"+a.Filename, data)
	if err != nil {
		return nil, mismatch(key, "array file: %v", err)
	}
	c, err := arch.CSRMatrix()
	if err != nil {
		return nil, mismatch(key, "array file: %v", err)
	}
	if c.Rows() != a.Shape[0] || c.Cols() != a.Shape[1] || c.DType().String() != a.DType || a.NNZ == nil || int64(c.NNZ()) != *a.NNZ {
		nnz := int64(-1)
		if a.NNZ != nil {
			nnz = *a.NNZ
		}
		return nil, mismatch(key, "array file holds a %d×%d %s CSR matrix with nnz %d; manifest says %v %s nnz %d",
			c.Rows(), c.Cols(), c.DType(), c.NNZ(), a.Shape, a.DType, nnz)
	}
	return c, nil
}
