package rank

import (
	"context"
	"errors"

	"github.com/vertebrae-eval/vertebrae/internal/msgfmt"
)

// A run fails when the exact score of any of its pairs is not finite
// (SPEC §4.2), wherever that score is met: the positives stage, a tile of
// the pass, an exact row behind a screen, or an excluded pair of a tile
// that needs no scores. Whichever stage meets one stops the run, and the
// error names one pair by one rule, whatever the path, the block sizes,
// the threads or the chunks: the non-finite pair with the lowest gallery
// index, then the lowest query index. failure finds it by scoring the
// pass's blocks in gallery order, stopping at the first that holds one.

// nonFiniteAt is a non-finite pair found by failure.
type nonFiniteAt struct{ q, g int }

func (e *nonFiniteAt) Error() string { return "non-finite score" }

// failure returns the error of the run's non-finite score.
func (s *scorer[T]) failure(ctx context.Context) error {
	blocks := passBlocks(s.pl.rows.len(), s.pl.gb)
	newWorker := func() *worker[T] { return &worker[T]{tmp: make([]float64, s.d)} }
	const qb = 128
	err := parallel(ctx, s.pr.threads, len(blocks), newWorker, func(i int, w *worker[T]) error {
		b := s.pl.rows.block(blocks[i][0], blocks[i][1])
		first := nonFiniteAt{-1, -1}
		note := func(q int, row []T) {
			for j, v := range row {
				if v-v != 0 {
					if g := b.global(j); first.g < 0 || g < first.g || (g == first.g && q < first.q) {
						first = nonFiniteAt{q, g}
					}
					return
				}
			}
		}
		if s.pl.sparse {
			t := s.sparseTile(w, b)
			out := growTo(w.out, b.n)
			w.out = out
			for q := s.qlo; q < s.qhi; q++ {
				sparseRow(s, w, t, q, out)
				note(q, out)
			}
		} else {
			w.g = growTo(w.g, b.n*s.d)
			g := blockRows(s.g, b, w.g, w.tmp)
			for q0 := s.qlo; q0 < s.qhi; q0 += qb {
				if err := ctx.Err(); err != nil {
					return err
				}
				q1 := min(q0+qb, s.qhi)
				out := growTo(w.out, (q1-q0)*b.n)
				w.out = out
				s.ex.block(s.queryRows(w, q0, q1), q1-q0, g, b.n, out)
				for a := range q1 - q0 {
					note(q0+a, out[a*b.n:(a+1)*b.n])
				}
			}
		}
		if first.g >= 0 {
			return &first
		}
		return nil
	})
	var at *nonFiniteAt
	if errors.As(err, &at) {
		return errorf("non-finite similarity score for query %s and gallery %s", msgfmt.Quote(s.pr.p.QueryIDs[at.q]), msgfmt.Quote(s.pr.p.galleryName(at.g)))
	}
	if err != nil {
		return err
	}
	return errors.New("rank: a non-finite score was met but not found again") // not reached: scores are deterministic
}
