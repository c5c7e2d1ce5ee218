package distributed

import (
	"context"
	"fmt"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// mergedSource is a dense endpoint merged from its N modulo shards as an
// artifact.Source (SPEC §11.2): endpoint row r is row r/N of shard r%N, so
// Batches reads the N shards in lockstep through the store's verified
// streaming read and yields consecutive endpoint rows in blocks of about
// artifact.DefaultBatchBytes. Memory is O(N × batch) and no file is staged:
// the only gallery-sized write is the artifact itself. Batches may run more
// than once (stores that hash before uploading call it twice); each run
// reads and verifies the shards again.
type mergedSource struct {
	st         *artifact.Store
	keys       []string // shard keys, by shard index
	endpoint   string   // the merged endpoint's key, for messages
	rows, cols int
	dt         matrix.DType
}

func (s *mergedSource) Rows() int           { return s.rows }
func (s *mergedSource) Cols() int           { return s.cols }
func (s *mergedSource) DType() matrix.DType { return s.dt }
func (s *mergedSource) Sparse() bool        { return false }

// Batches implements artifact.Source. The last block is yielded only once
// every shard's read has finished and verified its checksum, so a damaged
// shard fails the write before the merged array is complete.
func (s *mergedSource) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	switch s.dt {
	case matrix.Float16:
		return mergeBatches(ctx, s, yield, (*matrix.Dense).Float16Bits, matrix.NewDense16)
	case matrix.Float32:
		return mergeBatches(ctx, s, yield, (*matrix.Dense).Float32Data, matrix.NewDense32)
	case matrix.Float64:
		return mergeBatches(ctx, s, yield, (*matrix.Dense).Float64Data, matrix.NewDense64)
	}
	return fmt.Errorf("merge %s: unsupported dtype %s", s.endpoint, s.dt)
}

// shardError names the shard a merge failure comes from.
func (s *mergedSource) shardError(i int, err error) error {
	return fmt.Errorf("merge shard %d of %d (artifact %s) into %s: %w", i, len(s.keys), s.keys[i], s.endpoint, err)
}

// shardReader is one shard's verified batches, delivered in order by a
// goroutine running the store's streaming read. The goroutine waits for
// the merge to release a batch before it decodes the next, so a shard
// holds one batch at a time.
type shardReader struct {
	batches chan *matrix.Dense // closed after the read's result is in done
	release chan struct{}      // the merge is done with the last batch sent
	done    chan error         // the read's result (buffered)
	cur     *matrix.Dense      // the batch being consumed
	off     int                // rows of cur already consumed
}

// drop releases the current batch to the reader and returns its
// unconsumed rows.
func (r *shardReader) drop(ctx context.Context) int {
	if r.cur == nil {
		return 0
	}
	left := r.cur.Rows() - r.off
	r.cur = nil
	r.free(ctx)
	return left
}

// free lets the reader decode its next batch; once ctx is done the reader
// has stopped (or stops) waiting, and its closed channel ends the merge.
func (r *shardReader) free(ctx context.Context) {
	select {
	case r.release <- struct{}{}:
	case <-ctx.Done():
	}
}

// start streams shard i into a new shardReader until the read ends or ctx
// is done.
func (s *mergedSource) start(ctx context.Context, i int) *shardReader {
	r := &shardReader{batches: make(chan *matrix.Dense), release: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		_, err := s.st.StreamArray(ctx, s.keys[i], func(b matrix.Matrix) error {
			d, ok := b.(*matrix.Dense)
			if !ok {
				return fmt.Errorf("a batch is %T, not dense like shard 0", b)
			}
			if d.DType() != s.dt || d.Cols() != s.cols {
				return fmt.Errorf("a %d-column %s batch does not fit the %d-column %s endpoint", d.Cols(), d.DType(), s.cols, s.dt)
			}
			select {
			case r.batches <- d:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case <-r.release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		r.done <- err
		close(r.batches)
	}()
	return r
}

// next makes r.cur hold at least one unconsumed row. It fails with the
// read's error, or names the shard as short when its read ended cleanly.
func (s *mergedSource) next(ctx context.Context, i int, r *shardReader, consumed int) error {
	for r.cur == nil || r.off == r.cur.Rows() {
		r.drop(ctx)
		d, ok := <-r.batches
		if !ok {
			if err := <-r.done; err != nil {
				return s.shardError(i, err)
			}
			return s.shardError(i, fmt.Errorf("the array ends after %d rows; the modulo rule gives more", consumed))
		}
		r.cur, r.off = d, 0
	}
	return nil
}

// finish checks that shard i's read ended with every row consumed and its
// checksum verified.
func (s *mergedSource) finish(ctx context.Context, i int, r *shardReader, consumed int) error {
	extra := r.drop(ctx)
	for d := range r.batches {
		extra += d.Rows()
		r.free(ctx)
	}
	if err := <-r.done; err != nil {
		return s.shardError(i, err)
	}
	if extra > 0 {
		return s.shardError(i, fmt.Errorf("the array has %d rows beyond the %d the modulo rule gives", extra, consumed))
	}
	return nil
}

func mergeBatches[T uint16 | float32 | float64](ctx context.Context, s *mergedSource, yield func(matrix.Matrix) error,
	data func(*matrix.Dense) []T, build func(rows, cols int, v []T) (*matrix.Dense, error)) error {
	n, cols := len(s.keys), s.cols
	// Cancelling stops every shard's read when the merge ends early.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	readers := make([]*shardReader, n)
	for i := range readers {
		readers[i] = s.start(ctx, i)
	}
	defer func() {
		cancel()
		for _, r := range readers { // wait for the readers: none outlives the merge
			for range r.batches {
			}
		}
	}()
	per := max(1, artifact.DefaultBatchBytes/(cols*s.dt.Size()))
	consumed := make([]int, n) // rows taken from each shard
	for lo := 0; lo < s.rows; lo += per {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+per, s.rows)
		out := make([]T, 0, (hi-lo)*cols)
		for row := lo; row < hi; row++ {
			i := row % n
			r := readers[i]
			if err := s.next(ctx, i, r, consumed[i]); err != nil {
				return err
			}
			out = append(out, data(r.cur)[r.off*cols:(r.off+1)*cols]...)
			r.off++
			consumed[i]++
		}
		if hi == s.rows {
			// Hold the last block until every shard has verified.
			for i, r := range readers {
				if err := s.finish(ctx, i, r, consumed[i]); err != nil {
					return err
				}
			}
		}
		m, err := build(hi-lo, cols, out)
		if err != nil {
			return fmt.Errorf("merge %s: %w", s.endpoint, err)
		}
		if err := yield(m); err != nil {
			return err
		}
	}
	return nil
}
