package admit

import (
	"errors"
	"fmt"
	"sync"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// runDense finishes a dense endpoint whose first batch is first. Once the
// first batch fixes the width, the final size S = n × width × element size
// is known, so the endpoint is placed exactly once: one allocation copied
// into batch by batch, or one spill file of S bytes.
func runDense[T uint16 | float32 | float64](r *run, first *matrix.Dense,
	data func(*matrix.Dense) []T, build func(rows, cols int, data []T) (*matrix.Dense, error),
) (m matrix.Matrix, closeFn func() error, err error) {
	cols := first.Cols()
	size := int64(first.DType().Size())
	total := mulSat(mulSat(int64(r.n), int64(cols)), size)

	var (
		buf     []T
		charged int64
		dir     *spillDir
		file    *spillFile
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
		// Also runs if the encoder panics, so no spill file outlives us.
		if err != nil || m == nil {
			_ = cleanup()
		}
	}()

	required, ok := r.budget.admit(total)
	if ok && total > maxAllocBytes {
		// Within budget but beyond what one heap allocation can hold.
		r.budget.release(total)
		ok = false
	}
	switch {
	case ok:
		charged = total
		buf = make([]T, r.n*cols)
	case !r.budget.AllowSpill() && required <= r.budget.Limit():
		return nil, nil, fmt.Errorf("%s needs %d bytes, more than one allocation can hold. Enable MemoryConfig.allow_disk_spill.", r.owner, total)
	case !r.budget.AllowSpill():
		return nil, nil, r.overBudget(required)
	default:
		if dir, err = newSpillDir(r.budget.SpillDir()); err != nil {
			return nil, nil, err
		}
		if file, err = dir.create("dense.bin"); err != nil {
			return nil, nil, err
		}
		if err = file.preallocate(total); err != nil {
			return nil, nil, err
		}
	}

	put := func(b *matrix.Dense, lo int) error {
		vals := data(b)
		if len(vals) != b.Rows()*cols {
			return fmt.Errorf("%s: rows [%d, %d): %w", r.owner, lo, lo+b.Rows(), errInconsistent)
		}
		if file != nil {
			return writeLE(file, vals)
		}
		copy(buf[lo*cols:], vals)
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
		if err = put(b.(*matrix.Dense), lo); err != nil {
			return nil, nil, err
		}
	}
	if err = r.ctx.Err(); err != nil {
		return nil, nil, err
	}

	stats := Stats{Owner: r.owner, Rows: r.n, Cols: cols, DType: first.DType(), Batches: r.calls}
	if file == nil {
		d, berr := build(r.n, cols, buf)
		if berr != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.owner, berr)
		}
		stats.ResidentBytes = charged
		r.budget.record(stats)
		return d, sync.OnceValue(cleanup), nil
	}

	raw, unmap, err := file.mapped(total)
	if err != nil {
		return nil, nil, err
	}
	d, err := build(r.n, cols, viewLE[T](raw))
	if err != nil {
		_ = unmap()
		return nil, nil, fmt.Errorf("%s: %w", r.owner, err)
	}
	stats.Spilled, stats.SpillBytes, stats.SpillDir = true, total, dir.path
	r.budget.record(stats)
	return d.ReadOnly(), sync.OnceValue(func() error {
		return errors.Join(unmap(), cleanup())
	}), nil
}
