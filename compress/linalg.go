package compress

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack"
	"gonum.org/v1/gonum/lapack/lapack64"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// PCA decomposes the centred gallery (n×d) by a thin SVD, which is the more
// accurate route for the small components. A large, tall gallery is reduced
// to its d×d covariance (eigendecomposed by Syev) instead: the SVD's
// Householder QR and the covariance product both cost about 2·n·d² flops,
// but the product runs in gonum's parallel Gemm while the QR is serial, and
// both then pay O(d³). Measured on d = 768, the two break even near
// n ≈ 20·d; below svdMaxElements values either takes a second or two, so
// the SVD is always used there.
const (
	svdMaxElements = 1 << 22
	covarianceRows = 16 // minimum n/d for the covariance route
)

// useCovariance reports whether PCA on an n×d gallery takes the covariance
// route.
func useCovariance(n, d int) bool {
	return n >= covarianceRows*d && n*d > svdMaxElements
}

// linalgErr converts a panic of the numerical routines (which signal bad
// shapes by panicking) into an error, so no input can crash the caller.
func linalgErr(step string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("compress: %s failed: %v", step, r)
	}
}

// loadDense returns the rows of m widened to float64, row-major.
func loadDense(ctx context.Context, m matrix.Matrix) ([]float64, error) {
	n, d := m.Rows(), m.Cols()
	if t, ok := m.(*matrix.Dense); ok && t.DType() == matrix.Float64 {
		return append([]float64(nil), t.Float64Data()...), nil
	}
	out := make([]float64, n*d)
	for i := 0; i < n; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		m.RowFloat64(i, out[i*d:(i+1)*d])
	}
	return out, nil
}

// signFix flips each row of the k×d matrix w so that its largest-|value|
// entry is positive, the lowest index winning ties (SPEC §8.3).
func signFix(w []float64, k, d int) {
	for r := 0; r < k; r++ {
		row := w[r*d : (r+1)*d]
		best, at := -1.0, 0
		for j, v := range row {
			if a := math.Abs(v); a > best {
				best, at = a, j
			}
		}
		if row[at] < 0 {
			for j := range row {
				row[j] = -row[j]
			}
		}
	}
}

// pcaFit is the fitted state of PCA.
type pcaFit struct {
	mean       []float64 // d gallery column means
	components []float64 // k×d, rows are unit eigenvectors
	variance   []float64 // k explained variances s²/(n−1)
	ratio      []float64 // k explained-variance ratios
}

// fitPCA fits PCA on the gallery. k = 0 selects the smallest k whose
// cumulative explained-variance ratio reaches preserve (SPEC §8.3).
func fitPCA(ctx context.Context, g matrix.Matrix, k int, preserve float64) (*pcaFit, error) {
	n, d := g.Rows(), g.Cols()
	return fitPCAWith(ctx, g, k, preserve, useCovariance(n, d))
}

// fitPCAWith is fitPCA with the decomposition chosen by the caller: the
// eigendecomposition of the covariance, or the thin SVD of the centred data.
func fitPCAWith(ctx context.Context, g matrix.Matrix, k int, preserve float64, covariance bool) (*pcaFit, error) {
	n, d := g.Rows(), g.Cols()
	x, err := loadDense(ctx, g)
	if err != nil {
		return nil, err
	}
	mean := make([]float64, d)
	for i := 0; i < n; i++ {
		for j, v := range x[i*d : (i+1)*d] {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	var sumSq float64
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		for j := range row {
			row[j] -= mean[j]
			sumSq += row[j] * row[j]
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// s2 holds the squared singular values (descending) and vt the matching
	// right singular vectors as rows.
	var s2, vt []float64
	err = interruptible(ctx, func() (err error) {
		if covariance {
			s2, vt, err = eigCovariance(x, n, d)
		} else {
			s2, vt, err = thinSVD(x, n, d)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	// v_j = s_j²/(n−1); a single sample has no variance.
	m := len(s2)
	variance := make([]float64, m)
	ratio := make([]float64, m)
	total := 0.0
	if n > 1 {
		total = sumSq / float64(n-1)
		for j := range variance {
			variance[j] = s2[j] / float64(n-1)
		}
	}
	if total > 0 {
		for j := range ratio {
			ratio[j] = variance[j] / total
		}
	}
	if k == 0 {
		// Rounding can leave the cumulative sum just short of p; all
		// components are then kept.
		k = m
		cum := 0.0
		for j, r := range ratio {
			cum += r
			if cum >= preserve {
				k = j + 1
				break
			}
		}
	}
	if k > m {
		return nil, fmt.Errorf("cannot fit n_components=%d from only %d fit-side samples", k, n)
	}
	comps := append([]float64(nil), vt[:k*d]...)
	signFix(comps, k, d)
	return &pcaFit{mean: mean, components: comps, variance: variance[:k], ratio: ratio[:k]}, nil
}

// thinSVD returns the squared singular values and right singular vectors
// (min(n,d) rows of length d) of the n×d matrix a, which it destroys.
func thinSVD(a []float64, n, d int) (s2, vt []float64, err error) {
	defer linalgErr("singular value decomposition", &err)
	mn := min(n, d)
	A := blas64.General{Rows: n, Cols: d, Stride: d, Data: a}
	V := blas64.General{Rows: mn, Cols: d, Stride: d, Data: make([]float64, mn*d)}
	var U blas64.General
	s := make([]float64, mn)
	work := []float64{0}
	lapack64.Gesvd(lapack.SVDNone, lapack.SVDStore, A, U, V, s, work, -1)
	work = make([]float64, int(work[0]))
	if !lapack64.Gesvd(lapack.SVDNone, lapack.SVDStore, A, U, V, s, work, len(work)) {
		return nil, nil, errors.New("compress: singular value decomposition did not converge")
	}
	for j, v := range s {
		s[j] = v * v
	}
	return s, V.Data, nil
}

// eigCovariance returns the eigenvalues (descending, clamped at 0: they are
// the squared singular values of a) and eigenvectors (as rows) of aᵀa for the
// n×d matrix a.
func eigCovariance(a []float64, n, d int) (s2, vt []float64, err error) {
	defer linalgErr("eigendecomposition", &err)
	A := blas64.General{Rows: n, Cols: d, Stride: d, Data: a}
	C := blas64.General{Rows: d, Cols: d, Stride: d, Data: make([]float64, d*d)}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, A, A, 0, C)
	S := blas64.Symmetric{N: d, Stride: d, Data: C.Data, Uplo: blas.Upper}
	w := make([]float64, d)
	work := []float64{0}
	lapack64.Syev(lapack.EVCompute, S, w, work, -1)
	work = make([]float64, int(work[0]))
	if !lapack64.Syev(lapack.EVCompute, S, w, work, len(work)) {
		return nil, nil, errors.New("compress: eigendecomposition did not converge")
	}
	// Syev orders eigenvalues ascending and stores eigenvector j in column j.
	s2 = make([]float64, d)
	vt = make([]float64, d*d)
	for r := 0; r < d; r++ {
		j := d - 1 - r
		s2[r] = max(w[j], 0)
		for i := 0; i < d; i++ {
			vt[r*d+i] = S.Data[i*d+j]
		}
	}
	return s2, vt, nil
}

// operand is the gallery as the randomised SVD sees it: dense float64 data
// or the CSR matrix itself (never densified).
type operand struct {
	n, d  int
	dense []float64
	csr   *matrix.CSR
}

// mul returns A·m for the d×l matrix m (row-major, n×l result).
func (op *operand) mul(ctx context.Context, m []float64, l int) ([]float64, error) {
	out := make([]float64, op.n*l)
	if op.dense != nil {
		err := interruptible(ctx, func() error { return gemm(blas.NoTrans, op.n, op.d, op.dense, m, l, out) })
		return out, err
	}
	err := forRows(ctx, op.n, func() func(i int) {
		var vals []float64
		return func(i int) {
			var idx []int32
			idx, vals = op.csr.RowEntries(i, vals)
			dst := out[i*l : (i+1)*l]
			for e, c := range idx {
				v := vals[e]
				src := m[int(c)*l : (int(c)+1)*l]
				for j := range dst {
					dst[j] += v * src[j]
				}
			}
		}
	})
	return out, err
}

// mulT returns Aᵀ·q for the n×l matrix q (row-major, d×l result).
func (op *operand) mulT(ctx context.Context, q []float64, l int) ([]float64, error) {
	out := make([]float64, op.d*l)
	if op.dense != nil {
		err := interruptible(ctx, func() error { return gemm(blas.Trans, op.n, op.d, op.dense, q, l, out) })
		return out, err
	}
	// A scatter into the rows of out, in row order: serial keeps the
	// summation order fixed.
	var vals []float64
	for i := 0; i < op.n; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var idx []int32
		idx, vals = op.csr.RowEntries(i, vals)
		src := q[i*l : (i+1)*l]
		for e, c := range idx {
			v := vals[e]
			dst := out[int(c)*l : (int(c)+1)*l]
			for j := range dst {
				dst[j] += v * src[j]
			}
		}
	}
	return out, nil
}

// gemm computes out = op(A)·b for the n×d matrix a (tA = NoTrans: b is d×l;
// Trans: b is n×l).
func gemm(tA blas.Transpose, n, d int, a, b []float64, l int, out []float64) (err error) {
	defer linalgErr("matrix product", &err)
	A := blas64.General{Rows: n, Cols: d, Stride: d, Data: a}
	rows := n
	if tA == blas.Trans {
		rows = d
	}
	B := blas64.General{Rows: len(b) / l, Cols: l, Stride: l, Data: b}
	C := blas64.General{Rows: rows, Cols: l, Stride: l, Data: out}
	blas64.Gemm(tA, blas.NoTrans, 1, A, B, 0, C)
	return nil
}

// orthonormalize replaces the r×l matrix y (r ≥ l) by the thin Q factor of
// its Householder QR decomposition.
func orthonormalize(y []float64, r, l int) (err error) {
	defer linalgErr("QR decomposition", &err)
	Y := blas64.General{Rows: r, Cols: l, Stride: l, Data: y}
	tau := make([]float64, l)
	work := []float64{0}
	lapack64.Geqrf(Y, tau, work, -1)
	need := int(work[0])
	lapack64.Orgqr(Y, tau, work, -1)
	need = max(need, int(work[0]), l, 1)
	work = make([]float64, need)
	lapack64.Geqrf(Y, tau, work, need)
	lapack64.Orgqr(Y, tau, work, need)
	return nil
}

// Randomised range finder parameters (SPEC §8.3).
const (
	oversampling    = 10
	powerIterations = 5
)

// fitTruncatedSVD returns the top-k right singular vectors (k×d, sign-fixed)
// of the gallery by the randomised range finder of Halko, Martinsson and
// Tropp: Ω is d×l Gaussian (l = k + 10, capped by the gallery's shape), each
// power iteration re-orthonormalises by QR, and the small l×d matrix QᵀA is
// decomposed exactly.
func fitTruncatedSVD(ctx context.Context, g matrix.Matrix, k, seed int) ([]float64, error) {
	n, d := g.Rows(), g.Cols()
	op := &operand{n: n, d: d}
	if c, ok := g.(*matrix.CSR); ok {
		op.csr = c
	} else if g.Sparse() {
		return nil, fmt.Errorf("compress: unsupported sparse matrix type %T", g)
	} else {
		var err error
		if op.dense, err = loadDense(ctx, g); err != nil {
			return nil, err
		}
	}
	l := min(k+oversampling, n, d)
	var omega []float64
	if err := interruptible(ctx, func() error { omega = gaussianMatrix(seed, d, l, false); return nil }); err != nil {
		return nil, err
	}
	y, err := op.mul(ctx, omega, l)
	if err != nil {
		return nil, err
	}
	if err := interruptible(ctx, func() error { return orthonormalize(y, n, l) }); err != nil {
		return nil, err
	}
	for it := 0; it < powerIterations; it++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		z, err := op.mulT(ctx, y, l)
		if err != nil {
			return nil, err
		}
		if err := interruptible(ctx, func() error { return orthonormalize(z, d, l) }); err != nil {
			return nil, err
		}
		if y, err = op.mul(ctx, z, l); err != nil {
			return nil, err
		}
		if err := interruptible(ctx, func() error { return orthonormalize(y, n, l) }); err != nil {
			return nil, err
		}
	}
	// B = QᵀA is l×d; it is built as (AᵀQ)ᵀ.
	bt, err := op.mulT(ctx, y, l)
	if err != nil {
		return nil, err
	}
	b := make([]float64, l*d)
	for c := 0; c < d; c++ {
		for j := 0; j < l; j++ {
			b[j*d+c] = bt[c*l+j]
		}
	}
	var vt []float64
	err = interruptible(ctx, func() (err error) { _, vt, err = thinSVD(b, l, d); return err })
	if err != nil {
		return nil, err
	}
	comps := vt[:k*d]
	signFix(comps, k, d)
	return comps, nil
}
