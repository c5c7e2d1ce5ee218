//go:build measure16

package rank

// The stage-1 measurement of an int16 screen for the float32 protocol
// (screen.md "float32 protocol"): it quantises the float32 working rows,
// computes the exact integer dot products and the proven bound of each
// pair, and counts the pairs the decision rules of screen.md §5 would leave
// undecided. Run it with
//
//	VERTEBRAE_M16="name:queries.npy:gallery.npy:qrels.tsv:dot|cosine[:sample]" \
//	    go test -tags measure16 -run TestMeasureInt16Screen -v ./rank/
//
// (several sets separated by spaces; "fiori:PATH/embeddings.bin" reads the
// 778×384 MiniLM set, queries = gallery, self excluded, positive = a random
// other row and, as "fiori-nn", the nearest other row).

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/kernel"
)

type m16set struct {
	name      string
	q, g      []float32 // float32 working rows
	nq, ng, d int
	pos       [][]int // positives per query
	self      bool    // exclude g == q
}

func m16load(t *testing.T, path string) ([]float32, int, int) {
	m, err := npy.ReadMatrix(path)
	if err != nil {
		t.Fatal(err)
	}
	n, d := m.Rows(), m.Cols()
	v := make([]float32, n*d)
	tmp := make([]float64, d)
	for i := range n {
		m.RowFloat64(i, tmp)
		for j, x := range tmp {
			v[i*d+j] = float32(x)
		}
	}
	return v, n, d
}

// m16cosine applies SPEC §4.1 step 3 to float32 rows and rounds to float32.
func m16cosine(v []float32, n, d int) {
	for i := range n {
		row := v[i*d : (i+1)*d]
		m := 0.0
		for _, x := range row {
			m = math.Max(m, math.Abs(float64(x)))
		}
		acc := 0.0
		for _, x := range row {
			y := float64(x) / m
			acc = math.FMA(y, y, acc)
		}
		norm := m * math.Sqrt(acc)
		for j, x := range row {
			row[j] = float32(float64(x) / norm)
		}
	}
}

func m16qrels(t *testing.T, path string, nq int) [][]int {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pos := make([][]int, nq)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 2 {
			continue
		}
		q, _ := strconv.Atoi(fs[0])
		g, _ := strconv.Atoi(fs[1])
		if q < nq {
			pos[q] = append(pos[q], g)
		}
	}
	return pos
}

// quantised is one row's integer image and the norms of the bound.
type quantised struct {
	Q     []int16
	sigma float64 // a power of two: σ·Q_i is exact
	n     float64 // ≥ ‖σQ‖
	r     float64 // ≥ ‖x − σQ‖
	R     float64 // ≥ ‖x‖
}

// m16quant quantises one row. chunk = 0: one int32 accumulation over the
// row, so ‖Q‖ ≤ 46340 (then every partial sum of Q^q_i Q^g_i is at most
// ‖Q^q‖‖Q^g‖ < 2³¹ by Cauchy–Schwarz); chunk = k: int32 sums of k
// dimensions widened to int64, so only each chunk's norm is capped.
func m16quant(x []float32, chunk int) quantised {
	d := len(x)
	mx, ss := 0.0, 0.0
	for _, v := range x {
		mx = math.Max(mx, math.Abs(float64(v)))
		ss += float64(v) * float64(v)
	}
	capN := math.Sqrt(ss)
	if chunk > 0 {
		capN = 0
		for c := 0; c < d; c += chunk {
			s := 0.0
			for _, v := range x[c:min(c+chunk, d)] {
				s += float64(v) * float64(v)
			}
			capN = math.Max(capN, math.Sqrt(s))
		}
	}
	out := quantised{Q: make([]int16, d)}
	if mx == 0 {
		out.sigma = 1
		return out
	}
	// the smallest power of two σ with max|x|/σ ≤ 32767 and cap/σ ≤ 46340
	need := math.Max(mx/32767, capN/46340) * (1 + 1e-9)
	_, e := math.Frexp(need)
	sigma := math.Ldexp(1, e)
	for {
		ok := true
		var nq2 int64
		var cmax int64
		var csum int64
		for i, v := range x {
			q := math.RoundToEven(float64(v) / sigma)
			if math.Abs(q) > 32767 {
				ok = false
				break
			}
			out.Q[i] = int16(q)
			nq2 += int64(q) * int64(q)
			csum += int64(q) * int64(q)
			if chunk > 0 && (i+1)%chunk == 0 || i == d-1 {
				cmax = max(cmax, csum)
				csum = 0
			}
		}
		if chunk == 0 {
			cmax = nq2
		}
		if ok && cmax <= 46340*46340 {
			out.n = sigma * math.Sqrt(float64(nq2)) * (1 + 1e-15)
			break
		}
		sigma *= 2
	}
	out.sigma = sigma
	rr := 0.0
	for i, v := range x {
		dlt := float64(v) - sigma*float64(out.Q[i]) // exact
		rr += dlt * dlt
	}
	out.r = math.Sqrt(rr) * (1 + 1e-12)
	out.R = math.Sqrt(ss) * (1 + 1e-12)
	return out
}

// idot is the integer dot product as the kernel would form it: int32
// sums over chunks of k dimensions (k = 0: the whole row), widened.
func idot(a, b []int16, k int) int64 {
	var tot int64
	b = b[:len(a)]
	if k == 0 {
		k = len(a)
	}
	for c := 0; c < len(a); c += k {
		var s int32
		e := min(c+k, len(a))
		for i := c; i < e; i++ {
			s += int32(a[i]) * int32(b[i])
		}
		tot += int64(s)
	}
	return tot
}

func TestMeasureInt16Screen(t *testing.T) {
	spec := os.Getenv("VERTEBRAE_M16")
	if spec == "" {
		t.Fatal("set VERTEBRAE_M16")
	}
	var sets []m16set
	for _, item := range strings.Fields(spec) {
		f := strings.Split(item, ":")
		if f[0] == "fiori" {
			raw, err := os.ReadFile(f[1])
			if err != nil {
				t.Fatal(err)
			}
			d := 384
			n := len(raw) / 4 / d
			v := make([]float32, n*d)
			for i := range v {
				v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
			m16cosine(v, n, d)
			r := rand.New(rand.NewPCG(1, 2))
			rnd, nn := make([][]int, n), make([][]int, n)
			sc := make([]float32, n)
			for i := range n {
				j := r.IntN(n - 1)
				if j >= i {
					j++
				}
				rnd[i] = []int{j}
				kernel.Dot32(v[i*d:(i+1)*d], 1, v, n, d, sc)
				b := -1
				for k := range n {
					if k != i && (b < 0 || sc[k] > sc[b]) {
						b = k
					}
				}
				nn[i] = []int{b}
			}
			sets = append(sets, m16set{name: "fiori-random", q: v, g: v, nq: n, ng: n, d: d, pos: rnd, self: true},
				m16set{name: "fiori-nn", q: v, g: v, nq: n, ng: n, d: d, pos: nn, self: true})
			continue
		}
		q, nq, d := m16load(t, f[1])
		g, ng, _ := m16load(t, f[2])
		if f[4] == "cosine" {
			m16cosine(q, nq, d)
			m16cosine(g, ng, d)
		}
		sample := nq
		if len(f) > 5 {
			sample, _ = strconv.Atoi(f[5])
		}
		pos := m16qrels(t, f[3], nq)
		sets = append(sets, m16set{name: f[0], q: q[:sample*d], g: g, nq: sample, ng: ng, d: d, pos: pos[:sample]})
	}
	for _, s := range sets {
		for _, chunk := range []int{-1, 0, 32, 16} {
			m16measure(t, s, chunk)
		}
	}
}

func m16measure(t *testing.T, s m16set, chunk int) {
	d := s.d
	v := 0x1p-24
	gd := gamma(d, v)
	qq := make([]quantised, s.nq)
	gq := make([]quantised, s.ng)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			quant := func(x []float32) quantised {
				if chunk >= 0 {
					return m16quant(x, chunk)
				}
				// chunk −1: the implementation's quantise16 (float32 steps)
				q := make([]int16, len(x))
				sg, n, r, R, ok := quantise16(x, q)
				if !ok {
					panic("quantise16 failed")
				}
				return quantised{Q: q, sigma: sg, n: n, r: r, R: R}
			}
			for i := w; i < s.nq; i += 2 {
				qq[i] = quant(s.q[i*d : (i+1)*d])
			}
			for i := w; i < s.ng; i += 2 {
				gq[i] = quant(s.g[i*d : (i+1)*d])
			}
		}()
	}
	wg.Wait()
	const topN = 100
	type res struct {
		pairs, rankU, nnU, topKept, queries int64
		relSum                              float64
		maxRatio                            float64
		viol                                int64
	}
	results := make([]res, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := &results[w]
			sc := make([]float32, s.ng)
			c := make([]float64, s.ng)
			e := make([]float64, s.ng)
			lower := make([]float64, 0, s.ng)
			for qi := w; qi < s.nq; qi += 2 {
				qrow := s.q[qi*d : (qi+1)*d]
				kernel.Dot32(qrow, 1, s.g, s.ng, d, sc)
				a := qq[qi]
				isPos := map[int]bool{}
				var ps []float64
				for _, p := range s.pos[qi] {
					isPos[p] = true
					ps = append(ps, float64(sc[p]))
				}
				emax, M := 0.0, math.Inf(-1)
				for g := range s.ng {
					b := gq[g]
					c[g] = a.sigma * b.sigma * float64(idot(a.Q, b.Q, max(chunk, 0)))
					quant := math.Min(a.n*b.r+a.r*b.R, a.R*b.r+a.r*b.n)
					e[g] = (quant + gd*a.R*b.R + float64(4*d+16)*0x1p-149) * (1 + 1e-10)
					if chunk < 0 { // the implementation's cheap score and bound (per pair)
						c[g] = float64(kernel.ScaleInt16(int32(idot(a.Q, b.Q, 0)), float32(a.sigma), float32(b.sigma)))
						e[g] = quant + gd*a.R*b.R + gamma(3, v)*a.n*b.n + float64(d+2)*0x1p-149 + a.sigma*0x1p-149
					}
					if s.self && g == qi {
						continue
					}
					rs.pairs++
					rs.relSum += e[g] / (a.R * b.R)
					err := math.Abs(c[g] - float64(sc[g]))
					if err > e[g] {
						rs.viol++
					}
					rs.maxRatio = math.Max(rs.maxRatio, err/e[g])
					if !isPos[g] {
						emax = math.Max(emax, e[g])
						M = math.Max(M, c[g])
					}
				}
				lower = lower[:0]
				for g := range s.ng {
					if s.self && g == qi {
						continue
					}
					lower = append(lower, c[g]-e[g])
					if isPos[g] {
						continue
					}
					und := false
					for _, sp := range ps {
						if c[g]-e[g] <= sp && sp <= c[g]+e[g] {
							und = true
						}
					}
					if und {
						rs.rankU++
					}
					if c[g] >= M-2*emax {
						rs.nnU++
					}
				}
				sort.Float64s(lower)
				L := lower[len(lower)-min(topN, len(lower))]
				for g := range s.ng {
					if s.self && g == qi {
						continue
					}
					if c[g]+e[g] >= L {
						rs.topKept++
					}
				}
				rs.queries++
			}
		}()
	}
	wg.Wait()
	r := results[0]
	r1 := results[1]
	r.pairs += r1.pairs
	r.rankU += r1.rankU
	r.nnU += r1.nnU
	r.topKept += r1.topKept
	r.queries += r1.queries
	r.relSum += r1.relSum
	r.viol += r1.viol
	r.maxRatio = math.Max(r.maxRatio, r1.maxRatio)
	scheme := "int32 row (‖Q‖≤46340)"
	if chunk < 0 {
		scheme = "implementation (f32 step)"
	}
	if chunk > 0 {
		scheme = fmt.Sprintf("int32 per %d dims → int64", chunk)
	}
	fmt.Printf("%-14s Q=%d G=%d D=%d %-26s mean e/(R_qR_g)=%.3g (γ_d(v)=%.3g) | rank undecided %.4f%% of pairs (%.1f/query) | nearest-neg candidates %.2f/query | top-%d kept %.1f/query | max |c−s|/e %.3f, violations %d\n",
		s.name, s.nq, s.ng, d, scheme, r.relSum/float64(r.pairs), gd, 100*float64(r.rankU)/float64(r.pairs), float64(r.rankU)/float64(r.queries),
		float64(r.nnU)/float64(r.queries), topN, float64(r.topKept)/float64(r.queries), r.maxRatio, r.viol)
	if r.viol > 0 {
		t.Errorf("%s: %d bound violations", s.name, r.viol)
	}
}
