package rank

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// screenCase is a dense problem built to stress one part of the screen.
type screenCase struct {
	name string
	q, g [][]float64
}

func gauss(r *rand.Rand, d int, scale float64) []float64 {
	v := make([]float64, d)
	for i := range v {
		v[i] = r.NormFloat64() * scale
	}
	return v
}

// screenCases builds, for width d: Gaussian rows; embedding-like rows (a
// shared direction plus small noise, cosines near 0.9); duplicated rows
// (exact ties); scaled copies (cosine 1 ± ulp); near-ties whose score
// differences span 1e-12…1e-3 around the bound; and, for dot, rows of
// magnitude 1e-30 and 1e30 (float32 underflow and overflow of the cheap
// score) mixed with ordinary ones.
func screenCases(r *rand.Rand, d, nq, ng int) []screenCase {
	var cs []screenCase
	add := func(name string, q, g [][]float64) { cs = append(cs, screenCase{name, q, g}) }
	rows := func(n int, f func(i int) []float64) [][]float64 {
		out := make([][]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	add("gaussian", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 { return gauss(r, d, 1) }))
	mean := gauss(r, d, 1)
	like := func(int) []float64 {
		v := gauss(r, d, 0.35)
		for i := range v {
			v[i] += mean[i]
		}
		return v
	}
	add("embedding-like", rows(nq, like), rows(ng, like))
	base := rows(5, func(int) []float64 { return gauss(r, d, 1) })
	add("duplicated", rows(nq, func(i int) []float64 { return append([]float64(nil), base[i%5]...) }),
		rows(ng, func(i int) []float64 { return append([]float64(nil), base[r.IntN(5)]...) }))
	q := rows(nq, func(int) []float64 { return gauss(r, d, 1) })
	add("scaled copies", q, rows(ng, func(i int) []float64 {
		v := append([]float64(nil), q[i%nq]...)
		k := r.IntN(4)
		for j := range v {
			switch k {
			case 0:
				v[j] *= 4
			case 1:
				v[j] = math.Nextafter(v[j], math.Inf(1))
			case 2:
				v[j] *= 1 + 0x1p-52*float64(r.IntN(3))
			}
		}
		return v
	}))
	// Near-ties: every gallery row is a perturbation of one of a few
	// anchors, at a log-uniform distance, so many score differences sit
	// at and around the float32 error and the bound.
	anchors := rows(3, func(int) []float64 { return gauss(r, d, 1) })
	add("near-ties", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 {
		v := append([]float64(nil), anchors[r.IntN(3)]...)
		t := math.Pow(10, -12+9*r.Float64())
		for j := range v {
			v[j] += t * r.NormFloat64()
		}
		return v
	}))
	// A tight cluster: the nearest negative is one of many rows whose exact
	// scores differ by far less than the float32 error.
	anchor := gauss(r, d, 1)
	add("tight cluster", rows(nq, func(int) []float64 { return gauss(r, d, 1) }), rows(ng, func(int) []float64 {
		v := append([]float64(nil), anchor...)
		t := math.Pow(10, -12+4*r.Float64())
		for j := range v {
			v[j] += t * r.NormFloat64()
		}
		return v
	}))
	extreme := func(i int) []float64 {
		return gauss(r, d, []float64{1e-30, 1e30, 1, 1e-20}[i%4])
	}
	add("extreme magnitudes", rows(nq, extreme), rows(ng, extreme))
	return cs
}

func denseProblem(t testing.TB, c screenCase, r *rand.Rand) Problem {
	t.Helper()
	q, err := matrix.FromRows(c.q)
	if err != nil {
		t.Fatal(err)
	}
	g, err := matrix.FromRows(c.g)
	if err != nil {
		t.Fatal(err)
	}
	p := Problem{Queries: q, Gallery: g, Relevance: make([][]retrieval.Positive, len(c.q)), Exclusions: make([][]int, len(c.q))}
	ng := len(c.g)
	for i := range c.q {
		p.QueryIDs = append(p.QueryIDs, "q"+strconv.Itoa(i))
		perm := r.Perm(ng)
		pos := append([]int(nil), perm[:1+r.IntN(3)]...)
		slicesSort(pos)
		for _, j := range pos {
			p.Relevance[i] = append(p.Relevance[i], retrieval.Positive{Index: j, Grade: 1})
		}
		if r.IntN(2) == 0 {
			p.Exclusions[i] = []int{perm[len(pos)]}
		}
	}
	for j := range ng {
		p.GalleryIDs = append(p.GalleryIDs, "g"+strconv.Itoa(j))
	}
	return p
}

func slicesSort(v []int) { sort.Ints(v) }
func classProblem(r *rand.Rand, nq, ng, d, nc int, sorted, selfExcl, ties bool) Problem {
	p := randomProblem(r, nq, ng, d, ties)
	qc, gc := make([]int32, nq), make([]int32, ng)
	for i := range gc {
		gc[i] = int32(r.IntN(nc))
		if sorted {
			gc[i] = int32(i * nc / ng)
		}
	}
	for i := range qc {
		qc[i] = gc[r.IntN(ng)] // every query's class has a member
		if sorted {
			qc[i] = int32(i * nc / nq)
			if nc > ng {
				qc[i] = gc[i%ng]
			}
		}
	}
	c := retrieval.NewClasses(qc, gc)
	p.Relevance, p.Classes = nil, c
	p.Exclusions = make([][]int, nq)
	for q := range nq {
		m := c.Members(int(qc[q]))
		keep := int(m[r.IntN(len(m))]) // never excluded
		var ex []int
		for g := range ng {
			if g == keep {
				continue
			}
			if (selfExcl && g == q%ng) || r.IntN(10) == 0 {
				ex = append(ex, g)
			}
		}
		p.Exclusions[q] = ex
	}
	return p
}
