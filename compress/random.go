package compress

import (
	"math"
	"math/rand/v2"
)

// Generator names recorded in the recipe (SPEC §8.3). The "-v1" suffix is
// bumped whenever the sampled values change.
const (
	generatorNormal  = "pcg-dxsm-polar-normal-v1"
	generatorUniform = "pcg-dxsm-uniform53-v1"
)

// pcgStream is the fixed second PCG seed word; random_state is the first.
const pcgStream = 0x766572746562726b // "vertebrk"

// rng draws the random matrices of the randomised methods. It is a PCG-DXSM
// source (whose output sequence Go promises to keep) plus transforms written
// here with IEEE-exact operations only. rand.NormFloat64 is avoided on
// purpose: its rare tail path calls math.Log/math.Exp, whose results differ
// between the assembly (amd64, s390x) and pure-Go implementations, so its
// values could differ across platforms.
type rng struct {
	src      *rand.PCG
	spare    float64
	hasSpare bool
}

func newRNG(seed int) *rng {
	return &rng{src: rand.NewPCG(uint64(int64(seed)), pcgStream)}
}

// uniform returns a value in [0, 1) with 53 random bits.
func (r *rng) uniform() float64 {
	return float64(r.src.Uint64()>>11) * 0x1p-53
}

// normal returns a standard normal deviate by Marsaglia's polar method; the
// second deviate of each accepted pair is returned by the next call.
func (r *rng) normal() float64 {
	if r.hasSpare {
		r.hasSpare = false
		return r.spare
	}
	for {
		u := float64(2*r.uniform()) - 1
		v := float64(2*r.uniform()) - 1
		s := float64(u*u) + float64(v*v)
		if s == 0 || s >= 1 {
			continue
		}
		m := math.Sqrt(float64(-2*portableLog(s)) / s)
		r.spare, r.hasSpare = float64(v*m), true
		return float64(u * m)
	}
}

// portableLog is the natural logarithm for x in (0, 1], computed with the
// algorithm of Go's pure-Go math.Log (FreeBSD e_log.c) but with every product
// rounded explicitly: an explicit float64 conversion forbids the compiler to
// fuse a multiply-add, so the result is bit-identical on every platform.
func portableLog(x float64) float64 {
	const (
		ln2Hi = 6.93147180369123816490e-01
		ln2Lo = 1.90821492927058770002e-10
		l1    = 6.666666666666735130e-01
		l2    = 3.999999999940941908e-01
		l3    = 2.857142874366239149e-01
		l4    = 2.222219843214978396e-01
		l5    = 1.818357216161805012e-01
		l6    = 1.531383769920937332e-01
		l7    = 1.479819860511658591e-01
	)
	f1, ki := math.Frexp(x)
	if f1 < math.Sqrt2/2 {
		f1 *= 2
		ki--
	}
	f := f1 - 1
	k := float64(ki)
	s := f / (2 + f)
	s2 := float64(s * s)
	s4 := float64(s2 * s2)
	t1 := float64(s2 * (l1 + float64(s4*(l3+float64(s4*(l5+float64(s4*l7)))))))
	t2 := float64(s4 * (l2 + float64(s4*(l4+float64(s4*l6)))))
	rr := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+rr)) + float64(k*ln2Lo))) - f)
}

// gaussianMatrix returns a rows×cols row-major matrix of i.i.d. N(0, 1/rows)
// entries if scaled, else N(0, 1).
func gaussianMatrix(seed, rows, cols int, scaled bool) []float64 {
	g := newRNG(seed)
	out := make([]float64, rows*cols)
	sd := 1.0
	if scaled {
		sd = math.Sqrt(float64(rows))
	}
	for i := range out {
		out[i] = g.normal() / sd
	}
	return out
}

// sparseProjection is a sparse random projection matrix R (k×width) stored
// by input column: column c of R holds scale at rows rows[c][e] when
// pos[c][e] is true and −scale when it is false.
type sparseProjection struct {
	k, width int
	scale    float64
	rows     [][]int32
	pos      [][]bool
}

// newSparseProjection draws the k×width matrix of SPEC §8.3: density
// ρ = 1/sqrt(width), entries ±sqrt(1/ρ)/sqrt(k) with probability ρ/2 each.
// One uniform per entry, drawn row-major, decides: u < ρ/2 → +, u < ρ → −.
func newSparseProjection(seed, k, width int) *sparseProjection {
	g := newRNG(seed)
	rho := 1 / math.Sqrt(float64(width))
	half := rho / 2
	p := &sparseProjection{
		k:     k,
		width: width,
		scale: math.Sqrt(1/rho) / math.Sqrt(float64(k)),
		rows:  make([][]int32, width),
		pos:   make([][]bool, width),
	}
	for r := 0; r < k; r++ {
		for c := 0; c < width; c++ {
			u := g.uniform()
			if u < rho {
				p.rows[c] = append(p.rows[c], int32(r))
				p.pos[c] = append(p.pos[c], u < half)
			}
		}
	}
	return p
}

// dense expands R to a k×width row-major matrix.
func (p *sparseProjection) dense() []float64 {
	out := make([]float64, p.k*p.width)
	for c, rows := range p.rows {
		for e, r := range rows {
			if p.pos[c][e] {
				out[int(r)*p.width+c] = p.scale
			} else {
				out[int(r)*p.width+c] = -p.scale
			}
		}
	}
	return out
}
