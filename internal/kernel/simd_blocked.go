package kernel

// The driver of the blocked screening kernels (DotBlocked32). Their chunk
// structure lets the dimension be split into passes for free: a tile's
// accumulators are zero at every chunk boundary and only its totals carry
// over, so they live in a buffer rather than in registers, and each pass
// covers blkK dimensions, so that the slice of the packed queries a pass
// reads for every gallery row of a group of blkRows rows stays within L2
// whatever d. The order of operations inside each accumulator and total is
// unchanged, so the bits are those of DotBlockedRow32.
//
// Passes of 128 dimensions (a 24–32 KiB slice, L1-resident) measured 3–4 %
// slower at d = 768 on a Sapphire Rapids core than one pass of 768: the
// loop runs at the same rate from L2, and every pass pays the call, the
// totals' reload and a new short run of each gallery row.

// blkTileFn is a generated blocked tile kernel (internal/asmgen): the tile
// contract plus the totals t ([row][query] vectors) and flags (1: start
// the totals at +0; 2: copy them into out at the end).
type blkTileFn func(a *float32, lda int, p *float32, d int, c *float32, ldc int, nq int, ng int, t *float32, flags int)

type blkShape struct {
	mr, nv int
	fn     blkTileFn
}

// blkTiles is tiles for the blocked kernels: shapes[i].nv == i+1.
type blkTiles struct {
	width  int
	shapes []blkShape
}

const (
	blkK    = 24 * ScreenChunk // dimensions per pass (a multiple of ScreenChunk)
	blkRows = 192              // gallery rows per group (a multiple of every mr)
)

func (t *blkTiles) run(q []float32, qn int, g []float32, gn, d int, out []float32) {
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
	qb := max(1, simdBlockBytes/(d*4*maxNR)) * maxNR
	for b0 := 0; b0 < qn; b0 += qb {
		n := min(qb, qn-b0)
		t.block(q[b0*d:(b0+n)*d], n, g, gn, d, out[b0*gn:(b0+n)*gn])
	}
}

func (t *blkTiles) block(q []float32, qn int, g []float32, gn, d int, out []float32) {
	const es = 4
	maxNR := t.shapes[len(t.shapes)-1].nv * t.width
	var panelsBuf [64]panel
	panels := panelsBuf[:0]
	for i0 := 0; i0 < qn; {
		nq := min(qn-i0, maxNR)
		panels = append(panels, panel{i0: i0, nq: nq, shape: (nq+t.width-1)/t.width - 1})
		i0 += nq
	}
	buf := getBuffers[float32]()
	defer putBuffers(buf)
	packLen, totLen := 0, 0
	for _, p := range panels {
		s := t.shapes[p.shape]
		nr := s.nv * t.width
		packLen += nr * d
		totLen += (blkRows/s.mr + 1) * s.mr * nr
	}
	buf.pack = grow(buf.pack, packLen+totLen)
	pack, tot := buf.pack[:packLen], buf.pack[packLen:]
	off := 0
	for _, p := range panels {
		nr := t.shapes[p.shape].nv * t.width
		packPanel(pack[off:off+nr*d], q, p, nr, d)
		off += nr * d
	}
	for j0 := 0; j0 < gn; j0 += blkRows {
		j1 := min(j0+blkRows, gn)
		for k0 := 0; k0 < d; k0 += blkK {
			k1 := min(k0+blkK, d)
			flags := 0
			if k0 == 0 {
				flags |= 1
			}
			if k1 == d {
				flags |= 2
			}
			off, toff := 0, 0
			for _, p := range panels {
				s := t.shapes[p.shape]
				nr := s.nv * t.width
				pk := &pack[off+k0*nr]
				for j := j0; j < j1; j += s.mr {
					ng := min(s.mr, j1-j)
					a := &g[j*d+k0]
					if ng < s.mr {
						// The kernel reads mr whole rows: pad a copy.
						buf.rows = grow(buf.rows, s.mr*d)
						copy(buf.rows, g[j*d:(j+ng)*d])
						clear(buf.rows[ng*d:])
						a = &buf.rows[k0]
					}
					s.fn(a, d*es, pk, k1-k0, &out[p.i0*gn+j], gn*es, p.nq, ng, &tot[toff], flags)
					toff += s.mr * nr
				}
				off += nr * d
			}
		}
	}
}
