package matrix

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// FirstNonFiniteParallel is FirstNonFinite split over row chunks scanned by
// threads goroutines (0 = GOMAXPROCS): the entry found is the same, the
// first in row-major order. A large endpoint is checked at load, at dataset
// construction and before scoring, so the scan is on the critical path; on
// read-only storage only the first of them reads the values (see
// Dense.finite).
func FirstNonFiniteParallel(m Matrix, threads int) (row, col int, ok bool) {
	row, col, ok, _ = FirstNonFiniteParallelContext(context.Background(), m, threads)
	return row, col, ok
}

// FirstNonFiniteParallelContext is FirstNonFiniteParallel that returns
// ctx's error once ctx is done (checked before each chunk of at most 4096
// rows of a dense matrix).
func FirstNonFiniteParallelContext(ctx context.Context, m Matrix, threads int) (row, col int, ok bool, err error) {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	d, isDense := m.(*Dense)
	if !isDense || threads <= 1 && ctx.Done() == nil || d.Rows() < 2 || d.knownFinite() {
		row, col, ok = FirstNonFinite(m)
		return row, col, ok, ctx.Err()
	}
	chunk := max(1, min(4096, d.Rows()/(4*threads)))
	chunks := (d.Rows() + chunk - 1) / chunk
	rows, cols, hit := make([]int, chunks), make([]int, chunks), make([]bool, chunks)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(threads, chunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := int(next.Add(1) - 1); c < chunks; c = int(next.Add(1) - 1) {
				if ctx.Err() != nil {
					return
				}
				lo := c * chunk
				r, cc, b := FirstNonFinite(d.RowSlice(lo, min(lo+chunk, d.Rows())))
				rows[c], cols[c], hit[c] = lo+r, cc, b
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return 0, 0, false, err // some chunks may be unscanned
	}
	for c := range hit {
		if hit[c] {
			return rows[c], cols[c], true, nil
		}
	}
	d.markFinite()
	return 0, 0, false, nil
}
