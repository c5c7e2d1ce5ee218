package rank

import (
	"context"

	"github.com/vertebrae-eval/vertebrae/memory"
)

// pooledGalleryCap bounds the working-value copy of the gallery that the
// streaming pooled pass keeps (a variable so that tests can turn it off).
var pooledGalleryCap int64 = 256 << 20

// cacheGallery converts the members of every class a query belongs to into
// working values once, in member order, shared by all tasks. Without it
// every task (a block of queries) converts its class's members again: with
// one class of 20,000 members and 2,000 queries, ten conversions of the
// whole gallery, as costly as the products. The copy is at most the
// gallery (each row is a member of one class), whatever the number of
// positives; above pooledGalleryCap or the memory budget the tasks convert
// as before. Stored rows that already are the working values of a class
// whose members are consecutive rows are used as they are.
func (ps *pooledScan) cacheGallery(ctx context.Context) {
	s := ps.s
	c := s.p.Classes
	d := s.d
	f64 := s.o.Precision == Float64
	used := make([]bool, c.NumClasses())
	for _, k := range c.Query {
		used[k] = true
	}
	var rows int64
	for k, u := range used {
		if u {
			rows += int64(len(c.Members(k)))
		}
	}
	width := int64(4)
	if f64 {
		width = 8
	}
	bytes := memory.Bytes(rows, int64(d), width)
	if bytes > pooledGalleryCap || memory.Check(ctx, "Pooled positive scores (gallery in working values)", bytes) != nil {
		return
	}
	workers := s.workersBeside(ctx)
	if f64 {
		ps.gal64 = make([][]float64, len(used))
	} else {
		ps.gal32 = make([][]float32, len(used))
	}
	for k, u := range used {
		m := c.Members(k)
		if !u || len(m) == 0 {
			continue
		}
		lo, hi := int(m[0]), int(m[len(m)-1])+1
		if hi-lo == len(m) { // consecutive rows
			if f64 && s.g.direct64 != nil {
				ps.gal64[k] = s.g.direct64[lo*d : hi*d]
				continue
			}
			if !f64 && s.g.direct32 != nil {
				ps.gal32[k] = s.g.direct32[lo*d : hi*d]
				continue
			}
		}
		if f64 {
			out := make([]float64, len(m)*d)
			parallelChunks(len(m), normChunk, workers, func(_, i0, i1 int) {
				for i := i0; i < i1; i++ {
					g := int(m[i])
					copy(out[i*d:(i+1)*d], s.g.block64(g, g+1, out[i*d:(i+1)*d]))
				}
			})
			ps.gal64[k] = out
		} else {
			out := make([]float32, len(m)*d)
			parallelChunks(len(m), normChunk, workers, func(_, i0, i1 int) {
				tmp := make([]float64, d)
				for i := i0; i < i1; i++ {
					g := int(m[i])
					copy(out[i*d:(i+1)*d], s.g.block32(g, g+1, out[i*d:(i+1)*d], tmp))
				}
			})
			ps.gal32[k] = out
		}
	}
}
