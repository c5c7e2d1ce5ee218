package hosted

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// errAborted cancels the remaining batches once one has failed.
var errAborted = errors.New("hosted: aborted after another batch failed")

// Embed returns one float32 row per text, in input order. Texts are sent in
// batches of BatchSize, at most Concurrency at once; with a cache, only the
// texts of a batch that miss it are requested, and each validated response
// is cached as soon as it arrives, so a cancelled run keeps its completed
// batches. Any failure stops the remaining batches and is returned; when
// several batches fail on their own, the lowest-indexed one is reported.
// An empty input yields a 0×Dimensions matrix without any request.
func (c *Client) Embed(ctx context.Context, texts []string) (*matrix.Dense, error) {
	m, err := c.embed(ctx, texts)
	return m, c.scrub(err)
}

// run is the state of one Embed call.
type run struct {
	c     *Client
	texts []string
	keys  []string    // cache keys; nil without a cache
	rows  [][]float32 // filled by the batches, disjoint per batch

	mu    sync.Mutex
	width int // common width, 0 until the first batch settles it
	from  [2]int
}

func (c *Client) embed(ctx context.Context, texts []string) (*matrix.Dense, error) {
	n := len(texts)
	for i, t := range texts {
		// encoding/json would silently replace invalid bytes, embedding a
		// text other than the one given.
		if !utf8.ValidString(t) {
			return nil, fmt.Errorf("hosted %s: text of row %d is not valid UTF-8", c.cfg.Provider, i)
		}
	}
	if n == 0 {
		return matrix.NewDense32(0, c.cfg.Dimensions, nil)
	}
	r := &run{c: c, texts: texts, rows: make([][]float32, n)}
	if c.cache != nil {
		r.keys = make([]string, n)
		for i, t := range texts {
			k, err := c.cacheKey(t)
			if err != nil {
				return nil, fmt.Errorf("hosted %s: cache key of row %d: %w", c.cfg.Provider, i, err)
			}
			r.keys[i] = k
		}
	}

	bs := c.cfg.BatchSize
	nb := (n + bs - 1) / bs
	errs := make([]error, nb)
	var done atomic.Int64
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// Batches are handed out in index order, so an interrupted run has
	// completed (and cached) a prefix of them, give or take those in flight.
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(c.cfg.Concurrency, nb) {
		wg.Go(func() {
			for b := range jobs {
				if bctx.Err() != nil {
					continue
				}
				lo := b * bs
				if err := r.batch(bctx, lo, min(lo+bs, n)); err != nil {
					errs[b] = err
					cancel(errAborted)
					continue
				}
				done.Add(1)
			}
		})
	}
feed:
	for b := range nb {
		select {
		case jobs <- b:
		case <-bctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	if err := ctx.Err(); err != nil && int(done.Load()) < nb {
		return nil, fmt.Errorf("hosted %s: interrupted after %d of %d batches: %w", c.cfg.Provider, done.Load(), nb, err)
	}
	for _, err := range errs {
		// Batches cut short by the abort report context.Canceled; the
		// caller's own cancellation was handled above.
		if err != nil && !errors.Is(err, context.Canceled) {
			return nil, err
		}
	}
	data := make([]float32, 0, n*r.width)
	for _, v := range r.rows {
		data = append(data, v...)
	}
	return matrix.NewDense32(n, r.width, data)
}

// batch fills rows [lo, hi): cache hits first, then one request (with
// retries) for the misses, in batch order.
func (r *run) batch(ctx context.Context, lo, hi int) error {
	c := r.c
	var miss []int
	for i := lo; i < hi; i++ {
		if c.cache != nil {
			if v := c.cache.load(r.keys[i], c.cfg.Dimensions); v != nil {
				r.rows[i] = v
				continue
			}
		}
		miss = append(miss, i)
	}
	where := fmt.Sprintf("hosted %s POST %s rows [%d, %d)", c.cfg.Provider, c.endpoint, lo, hi)
	// Hits are checked before paying for the misses.
	for i := lo; i < hi; i++ {
		if v := r.rows[i]; v != nil {
			if err := r.agree(len(v), i, i+1); err != nil {
				return fmt.Errorf("%s: cached embedding (cache directory %s): %w", where, c.cache.dir, err)
			}
		}
	}
	if len(miss) == 0 {
		return nil
	}
	texts := make([]string, len(miss))
	for j, i := range miss {
		texts[j] = r.texts[i]
	}
	vecs, err := c.fetch(ctx, texts, miss)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := r.agree(len(vecs[0]), lo, hi); err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	// Only now, with the response validated on its own and against the
	// other batches, may it reach the cache.
	for j, i := range miss {
		if c.cache != nil {
			if err := c.cache.store(r.keys[i], vecs[j]); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
		r.rows[i] = vecs[j]
	}
	return nil
}

// agree settles the run's width on first use and checks rows [lo, hi)
// of width w against it.
func (r *run) agree(w, lo, hi int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.width == 0 {
		r.width, r.from = w, [2]int{lo, hi}
		return nil
	}
	if w != r.width {
		return mismatchf("embeddings have %d dimensions, rows [%d, %d) have %d", w, r.from[0], r.from[1], r.width)
	}
	return nil
}
