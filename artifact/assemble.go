package artifact

import (
	"context"
	"fmt"
	"github.com/vertebrae-eval/vertebrae/internal/stale"
	"io"
	"os"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// RowAssembler is the batched dense write of SPEC §10.5 (merge): rows
// arrive in batches with their endpoint row indices, in any order, and are
// written into a preallocated temporary file; row indices must be unique,
// in [0, rows) and complete. The finished file is then the Source of
// WriteArray, streamed from disk, so a merge never holds the endpoint in
// memory.
type RowAssembler struct {
	f          *os.File
	rows, cols int
	dt         matrix.DType
	seen       []bool
	filled     int
}

// mergePrefix names the staging files of merges.
const mergePrefix = "vertebrae-merge-"

// NewRowAssembler creates the temporary file (in dir, "" = the OS default)
// for a rows × cols endpoint of element type dt.
func NewRowAssembler(dir string, rows, cols int, dt matrix.DType) (*RowAssembler, error) {
	if rows < 1 || cols < 1 || dt.Size() == 0 {
		return nil, fmt.Errorf("row assembler: cannot assemble a %d×%d %s array", rows, cols, dt)
	}
	if dir == "" {
		dir = os.TempDir()
	}
	// Endpoint-sized files of killed merges (older than this run, no live
	// owner) go first; this one stays locked while it is in use.
	if _, err := stale.Remove(dir, mergePrefix); err != nil {
		return nil, fmt.Errorf("row assembler: remove what an interrupted merge left in %s: %w", dir, err)
	}
	f, err := stale.CreateFile(dir, mergePrefix+"*.bin")
	if err != nil {
		return nil, fmt.Errorf("row assembler: %w", err)
	}
	if err := f.Truncate(int64(rows) * int64(cols) * int64(dt.Size())); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("row assembler: %w", err)
	}
	return &RowAssembler{f: f, rows: rows, cols: cols, dt: dt, seen: make([]bool, rows)}, nil
}

func (a *RowAssembler) rowBytes() int { return a.cols * a.dt.Size() }

// Put stores batch row j at endpoint row index[j].
func (a *RowAssembler) Put(index []int, batch *matrix.Dense) error {
	if batch.Cols() != a.cols || batch.DType() != a.dt || batch.Rows() != len(index) {
		return fmt.Errorf("row assembler: a %d×%d %s batch with %d row indices does not fit a %d-column %s endpoint",
			batch.Rows(), batch.Cols(), batch.DType(), len(index), a.cols, a.dt)
	}
	var raw []byte
	switch a.dt {
	case matrix.Float16:
		raw = asBytes(batch.Float16Bits())
	case matrix.Float32:
		raw = asBytes(batch.Float32Data())
	default:
		raw = asBytes(batch.Float64Data())
	}
	if !hostLittleEndian {
		return fmt.Errorf("row assembler: big-endian hosts are not supported")
	}
	rb := a.rowBytes()
	for j, r := range index {
		switch {
		case r < 0 || r >= a.rows:
			return fmt.Errorf("row assembler: row index %d is outside [0, %d)", r, a.rows)
		case a.seen[r]:
			return fmt.Errorf("row assembler: row index %d given twice", r)
		}
		if _, err := a.f.WriteAt(raw[j*rb:(j+1)*rb], int64(r)*int64(rb)); err != nil {
			return fmt.Errorf("row assembler: %w", err)
		}
		a.seen[r] = true
		a.filled++
	}
	return nil
}

// Source checks that every row was given and returns the assembled array.
func (a *RowAssembler) Source() (Source, error) {
	if a.filled != a.rows {
		var missing []int
		for r, ok := range a.seen {
			if !ok && len(missing) < 10 {
				missing = append(missing, r)
			}
		}
		return nil, fmt.Errorf("row assembler: %d of %d rows are missing (first: %v)", a.rows-a.filled, a.rows, missing)
	}
	return assembled{a}, nil
}

// Close removes the temporary file.
func (a *RowAssembler) Close() error {
	err := a.f.Close()
	if rerr := os.Remove(a.f.Name()); err == nil {
		err = rerr
	}
	return err
}

type assembled struct{ a *RowAssembler }

func (s assembled) Rows() int           { return s.a.rows }
func (s assembled) Cols() int           { return s.a.cols }
func (s assembled) DType() matrix.DType { return s.a.dt }
func (s assembled) Sparse() bool        { return false }

func (s assembled) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	a := s.a
	per := batchRows(a.cols, a.dt)
	r := io.NewSectionReader(a.f, 0, int64(a.rows)*int64(a.rowBytes()))
	for lo := 0; lo < a.rows; lo += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(per, a.rows-lo)
		var m *matrix.Dense
		var err error
		switch a.dt {
		case matrix.Float16:
			v := make([]uint16, n*a.cols)
			if _, err = io.ReadFull(r, asBytes(v)); err == nil {
				m, err = matrix.NewDense16(n, a.cols, v)
			}
		case matrix.Float32:
			v := make([]float32, n*a.cols)
			if _, err = io.ReadFull(r, asBytes(v)); err == nil {
				m, err = matrix.NewDense32(n, a.cols, v)
			}
		default:
			v := make([]float64, n*a.cols)
			if _, err = io.ReadFull(r, asBytes(v)); err == nil {
				m, err = matrix.NewDense64(n, a.cols, v)
			}
		}
		if err != nil {
			return fmt.Errorf("row assembler: %w", err)
		}
		if err := yield(m); err != nil {
			return err
		}
	}
	return nil
}
