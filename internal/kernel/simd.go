package kernel

//go:generate go run ./internal/asmgen -out kernel_amd64.s -stubs kernel_amd64_stubs.go -tables kernel_amd64_tables.go -pkg kernel

import (
	"sync"
	"unsafe"
)

// This file drives the SIMD tile kernels (generated into kernel_amd64.s by
// internal/asmgen; their contract is documented there). It is portable Go so
// that its blocking and edge handling can be tested on any architecture with
// a Go model of a tile kernel.
//
// A SIMD lane holds one (query, gallery row) accumulator. The lanes of a
// vector are consecutive queries, taken from a k-major packed copy of the
// query block, and each gallery row is broadcast straight from g: packing the
// queries costs qn·d moves per call and is reused by all gn gallery rows,
// whereas packing the gallery would cost gn·d moves reused only qn times.
// Each tile writes its scores transposed into out (in registers for a full
// tile), a cost of at most one move per score against d FMAs.

type float interface{ ~float32 | ~float64 }

// tileFn is a generated tile kernel.
type tileFn[T float] func(a *T, lda int, p *T, d int, c *T, ldc int, nq int, ng int)

// tileShape is a tile kernel of mr gallery rows × nv vectors of queries.
type tileShape[T float] struct {
	mr, nv int
	fn     tileFn[T]
}

// tiles is the family of tile kernels of one precision and similarity on one
// instruction set, by increasing width: shapes[i].nv == i+1.
type tiles[T float] struct {
	width  int // lanes per vector
	shapes []tileShape[T]
}

// simdSet is an instruction set's tile kernels.
type simdSet struct {
	dot64, sqDist64 tiles[float64]
	dot32, sqDist32 tiles[float32]
	dotBlk32        blkTiles // the screening kernel (screen.go, simd_blocked.go)
}

// buffers holds the packed queries and the padded copy of a last, short group
// of gallery rows.
type buffers[T float] struct{ pack, rows []T }

var pool64, pool32 sync.Pool

func getBuffers[T float]() *buffers[T] {
	pool := &pool64
	if unsafe.Sizeof(T(0)) == 4 {
		pool = &pool32
	}
	if b, ok := pool.Get().(*buffers[T]); ok {
		return b
	}
	return new(buffers[T])
}

func putBuffers[T float](b *buffers[T]) {
	pool := &pool64
	if unsafe.Sizeof(T(0)) == 4 {
		pool = &pool32
	}
	pool.Put(b)
}

func grow[T float](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// panel is a group of consecutive queries that one tile shape covers.
type panel struct {
	i0, nq int // first query, number of queries
	shape  int // index into tiles.shapes
}

// simdBlockBytes bounds the packed queries that one pass over the gallery
// serves: beyond it (thousands of queries at a time) the packed panels would
// stream from memory for every gallery chunk, so the queries are split into
// blocks and the gallery is read once per block instead.
var simdBlockBytes = 2 << 20

// run computes the qn×gn block of scores (see Dot64) with the tile kernels.
func (t *tiles[T]) run(q []T, qn int, g []T, gn, d int, out []T) {
	if qn <= 0 || gn <= 0 {
		return
	}
	out = out[:qn*gn]
	if d <= 0 {
		clear(out)
		return
	}
	q, g = q[:qn*d], g[:gn*d]
	maxNR := t.shapes[len(t.shapes)-1].nv * t.width
	es := int(unsafe.Sizeof(q[0]))
	qb := max(1, simdBlockBytes/(d*es*maxNR)) * maxNR
	for b0 := 0; b0 < qn; b0 += qb {
		n := min(qb, qn-b0)
		t.block(q[b0*d:(b0+n)*d], n, g, gn, d, out[b0*gn:(b0+n)*gn])
	}
}

// block is run for one block of queries (q and out sliced to it).
func (t *tiles[T]) block(q []T, qn int, g []T, gn, d int, out []T) {
	es := int(unsafe.Sizeof(q[0]))

	// Panels: as many of the widest shape as fit, then the narrowest shape
	// that holds the remaining queries, so at most width−1 lanes idle.
	maxNR := t.shapes[len(t.shapes)-1].nv * t.width
	var panelsBuf [64]panel
	panels := panelsBuf[:0]
	for i0 := 0; i0 < qn; {
		nq := min(qn-i0, maxNR)
		s := (nq+t.width-1)/t.width - 1
		panels = append(panels, panel{i0: i0, nq: nq, shape: s})
		i0 += nq
	}

	buf := getBuffers[T]()
	defer putBuffers(buf)

	// Pack each panel k-major: pack[off + k*nr + l] = q[i0+l, k], with zero
	// lanes past the last query (their scores are computed and dropped).
	packLen := 0
	for _, p := range panels {
		packLen += t.shapes[p.shape].nv * t.width * d
	}
	buf.pack = grow(buf.pack, packLen)
	pack := buf.pack
	off := 0
	for _, p := range panels {
		nr := t.shapes[p.shape].nv * t.width
		packPanel(pack[off:off+nr*d], q, p, nr, d)
		off += nr * d
	}

	// The gallery is walked in chunks of the fewest rows that every tile
	// shape divides (so only the last chunk can end in a short group of
	// rows), and each chunk meets every query panel before the next is read:
	// its rows stay in L1/L2 while the panels stream from L2. Larger chunks
	// measured slower.
	chunk := 1
	for _, s := range t.shapes {
		chunk = lcm(chunk, s.mr)
	}
	for j0 := 0; j0 < gn; j0 += chunk {
		j1 := min(j0+chunk, gn)
		off := 0
		for _, p := range panels {
			s := t.shapes[p.shape]
			pk := &pack[off]
			off += s.nv * t.width * d
			for j := j0; j < j1; j += s.mr {
				ng := min(s.mr, j1-j)
				a := &g[j*d]
				if ng < s.mr {
					// The kernel reads mr whole rows: pad a copy.
					buf.rows = grow(buf.rows, s.mr*d)
					copy(buf.rows, g[j*d:(j+ng)*d])
					clear(buf.rows[ng*d:])
					a = &buf.rows[0]
				}
				s.fn(a, d*es, pk, d, &out[p.i0*gn+j], gn*es, p.nq, ng)
			}
		}
	}
}

// packPanel writes panel p of q k-major into dst: dst[k*nr+l] = q[i0+l, k],
// zero for the lanes past the last query. It walks the dimension in runs of
// 16, so that the rows it reads stay in L1 while it writes dst in order
// (twice as fast as one row at a time at d = 768).
func packPanel[T float](dst, q []T, p panel, nr, d int) {
	dst = dst[:nr*d]
	const run = 16
	for k0 := 0; k0 < d; k0 += run {
		k1 := min(k0+run, d)
		for l := 0; l < p.nq; l++ {
			row := q[(p.i0+l)*d+k0 : (p.i0+l)*d+k1]
			for k, x := range row {
				dst[(k0+k)*nr+l] = x
			}
		}
	}
	if p.nq < nr {
		for k := 0; k < d; k++ {
			clear(dst[k*nr+p.nq : (k+1)*nr])
		}
	}
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}
