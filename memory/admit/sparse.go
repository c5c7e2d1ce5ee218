package admit

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// sparseRowCost is the §7.4 cost of rows holding nnz stored entries:
// nnz × (element size + 4) + 8 per row.
func sparseRowCost(nnz, rows, elemSize int64) int64 {
	return addSat(mulSat(nnz, elemSize+4), mulSat(rows, 8))
}

// runSparse finishes a CSR endpoint whose first batch is first. The final
// nnz is unknown until the last batch, so rows are admitted batch by batch;
// the first batch whose admission would exceed the budget moves everything
// to spill files (values, indices, row pointers), or fails without spill.
func runSparse[T float32 | float64](r *run, first *matrix.CSR,
	data func(*matrix.CSR) []T,
	build func(rows, cols int, indptr []int64, indices []int32, data []T) (*matrix.CSR, error),
) (m matrix.Matrix, closeFn func() error, err error) {
	cols := first.Cols()
	size := int64(first.DType().Size())

	var (
		vals    []T
		idx     []int32
		ptr     []int64
		charged int64
		nnz     int64 // entries written so far (spill mode)
		dir     *spillDir
		fv, fi  *spillFile // values, indices
		fp      *spillFile // row pointers
	)
	cleanup := func() error {
		r.budget.release(charged)
		charged = 0
		if dir != nil {
			return dir.remove()
		}
		return nil
	}
	defer func() {
		if err != nil || m == nil {
			_ = cleanup()
		}
	}()

	// Size the arrays for the whole endpoint when an extrapolation of the
	// first batch fits the budget, so that uniform sparsity needs a single
	// allocation; otherwise start with the first batch and grow.
	est := mulSat(int64(first.NNZ()), int64(r.n)) / int64(first.Rows())
	if cost := sparseRowCost(est, int64(r.n), size); cost <= maxAllocBytes && r.budget.fits(cost) {
		vals = make([]T, 0, est)
		idx = make([]int32, 0, est)
		ptr = make([]int64, 1, r.n+1)
	}

	spill := func() error {
		var err error
		if dir, err = newSpillDir(r.budget.SpillDir()); err != nil {
			return err
		}
		if fv, err = dir.create("values.bin"); err != nil {
			return err
		}
		if fi, err = dir.create("indices.bin"); err != nil {
			return err
		}
		if fp, err = dir.create("indptr.bin"); err != nil {
			return err
		}
		if ptr == nil {
			ptr = []int64{0}
		}
		if err = writeLE(fv, vals); err != nil {
			return err
		}
		if err = writeLE(fi, idx); err != nil {
			return err
		}
		if err = writeLE(fp, ptr); err != nil {
			return err
		}
		nnz = int64(len(vals))
		// The retained rows now live in files; drop them and their charge.
		vals, idx, ptr = nil, nil, nil
		r.budget.release(charged)
		charged = 0
		return nil
	}

	put := func(b *matrix.CSR, lo int) error {
		bp, bi := b.Components()
		bv := data(b)
		if len(bp) != b.Rows()+1 || len(bi) != len(bv) || bp[0] < 0 || bp[len(bp)-1]-bp[0] != int64(len(bv)) {
			return fmt.Errorf("%s: rows [%d, %d): %w", r.owner, lo, lo+b.Rows(), errInconsistent)
		}
		if dir == nil {
			cost := sparseRowCost(int64(len(bv)), int64(b.Rows()), size)
			required, ok := r.budget.admit(cost)
			switch {
			case ok:
				charged += cost
				base := int64(len(vals))
				if ptr == nil {
					ptr = []int64{0}
				}
				for _, p := range bp[1:] {
					ptr = append(ptr, base+p-bp[0])
				}
				vals = append(vals, bv...)
				idx = append(idx, bi...)
				return nil
			case !r.budget.AllowSpill():
				return r.overBudget(required)
			}
			if err := spill(); err != nil {
				return err
			}
		}
		if err := writeLE(fv, bv); err != nil {
			return err
		}
		if err := writeLE(fi, bi); err != nil {
			return err
		}
		if err := writeOffsets(fp, bp, nnz); err != nil {
			return err
		}
		nnz += int64(len(bv))
		return nil
	}

	if err = put(first, 0); err != nil {
		return nil, nil, err
	}
	for lo := r.batch; lo < r.n; lo += r.batch {
		b, berr := r.encode(lo, first)
		if berr != nil {
			return nil, nil, berr
		}
		if err = put(b.(*matrix.CSR), lo); err != nil {
			return nil, nil, err
		}
	}
	if err = r.ctx.Err(); err != nil {
		return nil, nil, err
	}

	stats := Stats{Owner: r.owner, Rows: r.n, Cols: cols, DType: first.DType(), Sparse: true, Batches: r.calls}
	if dir == nil {
		c, berr := build(r.n, cols, ptr, idx, vals)
		if berr != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.owner, berr)
		}
		stats.ResidentBytes = charged
		r.budget.record(stats)
		return c, sync.OnceValue(cleanup), nil
	}

	var unmaps []func() error
	unmapAll := func() error {
		var errs []error
		for _, u := range unmaps {
			errs = append(errs, u())
		}
		return errors.Join(errs...)
	}
	mapOne := func(f *spillFile, want int64) ([]byte, error) {
		raw, unmap, err := f.mapped(want)
		if err != nil {
			return nil, err
		}
		unmaps = append(unmaps, unmap)
		return raw, nil
	}
	rv, err := mapOne(fv, nnz*size)
	if err != nil {
		return nil, nil, errors.Join(err, unmapAll())
	}
	ri, err := mapOne(fi, nnz*4)
	if err != nil {
		return nil, nil, errors.Join(err, unmapAll())
	}
	rp, err := mapOne(fp, int64(r.n+1)*8)
	if err != nil {
		return nil, nil, errors.Join(err, unmapAll())
	}
	c, err := build(r.n, cols, viewLE[int64](rp), viewLE[int32](ri), viewLE[T](rv))
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("%s: %w", r.owner, err), unmapAll())
	}
	stats.Spilled, stats.SpillDir = true, dir.path
	stats.SpillBytes = fv.size + fi.size + fp.size
	r.budget.record(stats)
	return c, sync.OnceValue(func() error {
		return errors.Join(unmapAll(), cleanup())
	}), nil
}
