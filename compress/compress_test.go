package compress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var commonKeys = []string{
	"applied", "compressed_dim", "dtype", "enabled", "fit_side", "input_sparse",
	"method", "original_dim", "output_sparse", "recipe", "warnings",
}

func withKeys(extra ...string) []string {
	out := append(append([]string(nil), commonKeys...), extra...)
	sort.Strings(out)
	return out
}

func TestNoOpSkip(t *testing.T) {
	id := dense(t, identity(3))
	cfg := cfgOf(MethodPCA, 3)
	cfg.DType = ptr("float32")
	res := apply(t, cfg, id, id)
	want := "Requested n_components=3 is greater than or equal to the original dimension 3; skipping compression."
	md := res.Metadata
	if md["applied"] != false || md["enabled"] != true || md["method"] != "pca" || md["dtype"] != "float64" {
		t.Fatalf("metadata = %v", md)
	}
	if md["original_dim"] != 3 || md["compressed_dim"] != 3 || md["input_sparse"] != false || md["output_sparse"] != false || md["fit_side"] != "gallery" {
		t.Fatalf("metadata = %v", md)
	}
	if !reflect.DeepEqual(md["warnings"], []any{want}) || !reflect.DeepEqual(res.Warnings, []string{want}) {
		t.Fatalf("warnings = %v / %v", md["warnings"], res.Warnings)
	}
	if !reflect.DeepEqual(keys(md), withKeys()) {
		t.Fatalf("skipped metadata keys = %v", keys(md))
	}
	if res.Query != matrix.Matrix(id) || res.Gallery != matrix.Matrix(id) {
		t.Fatal("a skipped no-op must return the input matrices")
	}
	recipe := md["recipe"].(map[string]any)
	if recipe["method"] != "pca" || recipe["n_components"] != 3 || recipe["dtype"] != "float32" {
		t.Fatalf("recipe = %v", recipe)
	}

	// Every method with n_components, dense or sparse input, any k ≥ width.
	sp := csr(t, [][]float64{{1, 0, 2}, {0, 3, 0}})
	for _, m := range []string{MethodPCA, MethodTruncatedSVD, MethodGaussianRandomProjection, MethodSparseRandomProjection, MethodPrefixTruncate} {
		for _, in := range []matrix.Matrix{id, sp} {
			res := apply(t, cfgOf(m, 4), in, in)
			if res.Metadata["applied"] != false || res.Gallery != in || res.Query != in {
				t.Fatalf("%s k=4 on width 3: %v", m, res.Metadata)
			}
			if !reflect.DeepEqual(rowsOf(res.Gallery), rowsOf(in)) {
				t.Fatalf("%s: values changed", m)
			}
			if res.Metadata["input_sparse"] != in.Sparse() || res.Metadata["output_sparse"] != in.Sparse() {
				t.Fatalf("%s: sparsity flags %v", m, res.Metadata)
			}
		}
	}
}

func TestDisabled(t *testing.T) {
	g := dense32(t, [][]float64{{1, 2}, {3, 4}})
	q := dense32(t, [][]float64{{5, 6}})
	off := cfgOf(MethodPCA, 1)
	off.Enabled = ptr(false)
	for _, cfg := range []Config{Default(), off} {
		res := apply(t, cfg, q, g)
		md := res.Metadata
		if res.Query != matrix.Matrix(q) || res.Gallery != matrix.Matrix(g) {
			t.Fatal("disabled compression must return the inputs")
		}
		want := map[string]any{
			"enabled": false, "method": "none", "applied": false, "original_dim": 2, "compressed_dim": 2,
			"input_sparse": false, "output_sparse": false, "dtype": "float32", "warnings": []any{},
			"recipe": map[string]any{"method": "none", "enabled": false}, "fit_side": "gallery",
		}
		if !reflect.DeepEqual(md, want) {
			t.Fatalf("disabled metadata = %v\nwant %v", md, want)
		}
		if len(res.Warnings) != 0 {
			t.Fatalf("warnings = %v", res.Warnings)
		}
	}
}

func TestAppliedMetadataKeys(t *testing.T) {
	g := dense(t, [][]float64{{1, 2, 3, 4}, {2, 1, 0, 5}, {0, 1, 3, 1}, {4, 4, 1, 0}, {1, 0, 0, 2}})
	q := dense(t, [][]float64{{1, 1, 1, 1}})
	applied := []string{"compression_ratio", "resident_bytes"}
	variance := []string{"explained_variance_ratio", "explained_variance_total", "resolved_n_components"}
	cases := []struct {
		cfg   Config
		extra []string
	}{
		{cfgOf(MethodPCA, 2), variance},
		{cfgOf(MethodTruncatedSVD, 2), variance},
		{cfgOf(MethodGaussianRandomProjection, 2), nil},
		{cfgOf(MethodSparseRandomProjection, 2), nil},
		{cfgOf(MethodPrefixTruncate, 2), []string{"assume_matryoshka"}},
		{Config{Method: MethodQuantize, Precision: ptr("int8"), RandomState: 42}, []string{"precision", "quantization_mode", "encoded_dtype", "scoring_dtype", "estimated_encoded_bytes"}},
	}
	for _, c := range cases {
		res := apply(t, c.cfg, q, g)
		want := withKeys(append(append([]string(nil), applied...), c.extra...)...)
		if got := keys(res.Metadata); !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys = %v\nwant %v", c.cfg.Method, got, want)
		}
		md := res.Metadata
		if md["applied"] != true || md["enabled"] != true || md["method"] != c.cfg.Method || md["fit_side"] != "gallery" || md["original_dim"] != 4 {
			t.Errorf("%s metadata = %v", c.cfg.Method, md)
		}
		recipe := md["recipe"].(map[string]any)
		_, hasGen := recipe["generator"]
		if hasGen != randomised(c.cfg.Method) {
			t.Errorf("%s recipe = %v", c.cfg.Method, recipe)
		}
	}
}

func TestPCALine(t *testing.T) {
	// Points on y = 2x: one component (1, 2)/√5 explains everything.
	g := dense(t, [][]float64{{0, 0}, {1, 2}, {2, 4}, {3, 6}})
	q := dense(t, [][]float64{{10, 0}, {1.5, 3}})
	res := apply(t, cfgOf(MethodPCA, 1), q, g)
	s5 := math.Sqrt(5)
	near(t, "gallery", rowsOf(res.Gallery), [][]float64{{-7.5 / s5}, {-2.5 / s5}, {2.5 / s5}, {7.5 / s5}}, 1e-12)
	// The query is centred by the gallery mean (1.5, 3), not its own.
	near(t, "query", rowsOf(res.Query), [][]float64{{2.5 / s5}, {0}}, 1e-12)
	md := res.Metadata
	ratio := md["explained_variance_ratio"].([]any)
	if len(ratio) != 1 || math.Abs(ratio[0].(float64)-1) > 1e-12 || math.Abs(md["explained_variance_total"].(float64)-1) > 1e-12 || md["resolved_n_components"] != 1 {
		t.Fatalf("variance metadata = %v", md)
	}
	if md["compressed_dim"] != 1 || md["dtype"] != "float64" || md["resident_bytes"] != 4*1*4 || md["compression_ratio"] != 2.0 {
		t.Fatalf("metadata = %v", md)
	}

	// Whitening: v = s²/(n−1) = 25/3, so the gallery column has unit
	// sample variance.
	w := cfgOf(MethodPCA, 1)
	w.Whiten = true
	res = apply(t, w, q, g)
	sd := math.Sqrt(25.0 / 3)
	near(t, "whitened", rowsOf(res.Gallery), [][]float64{{-7.5 / s5 / sd}, {-2.5 / s5 / sd}, {2.5 / s5 / sd}, {7.5 / s5 / sd}}, 1e-12)
	near(t, "whitened query", rowsOf(res.Query), [][]float64{{2.5 / s5 / sd}, {0}}, 1e-12)
}

func TestPCASignRule(t *testing.T) {
	// Output for unit queries e_j (minus the mean's projection) reveals the
	// component; the gallery is centred at 0.
	cases := []struct {
		dir  [2]float64
		want [2]float64
	}{
		{[2]float64{1, -2}, [2]float64{-1 / math.Sqrt(5), 2 / math.Sqrt(5)}},
		{[2]float64{-3, 1}, [2]float64{3 / math.Sqrt(10), -1 / math.Sqrt(10)}},
		// A tie in |value|: the lowest index is made positive.
		{[2]float64{-1, 1}, [2]float64{1 / math.Sqrt(2), -1 / math.Sqrt(2)}},
	}
	for _, c := range cases {
		g := dense(t, [][]float64{{c.dir[0], c.dir[1]}, {-c.dir[0], -c.dir[1]}, {2 * c.dir[0], 2 * c.dir[1]}, {-2 * c.dir[0], -2 * c.dir[1]}})
		res := apply(t, cfgOf(MethodPCA, 1), dense(t, identity(2)), g)
		near(t, "component", rowsOf(res.Query), [][]float64{{c.want[0]}, {c.want[1]}}, 1e-12)
	}
}

func TestPCAPreserveVariance(t *testing.T) {
	// Axis-aligned, centred gallery with variances in the ratio 6:3:1.
	a, b := math.Sqrt(6), math.Sqrt(3)
	g := dense(t, [][]float64{{a, 0, 0}, {-a, 0, 0}, {0, b, 0}, {0, -b, 0}, {0, 0, 1}, {0, 0, -1}})
	q := dense(t, [][]float64{{1, 2, 3}})
	for _, c := range []struct {
		p    float64
		k    int
		want []float64
	}{
		{0.5, 1, []float64{0.6}},
		{0.85, 2, []float64{0.6, 0.3}},
		{0.95, 3, []float64{0.6, 0.3, 0.1}},
	} {
		cfg := Default()
		cfg.Method = MethodPCA
		cfg.PreserveVariance = ptr(c.p)
		res := apply(t, cfg, q, g)
		md := res.Metadata
		if md["resolved_n_components"] != c.k || md["compressed_dim"] != c.k || md["applied"] != true {
			t.Fatalf("p=%v: metadata %v", c.p, md)
		}
		ratio := md["explained_variance_ratio"].([]any)
		for j, r := range ratio {
			if math.Abs(r.(float64)-c.want[j]) > 1e-12 {
				t.Fatalf("p=%v ratio = %v", c.p, ratio)
			}
		}
		near(t, "query", rowsOf(res.Query), [][]float64{[]float64{1, 2, 3}[:c.k]}, 1e-12)
		if got := VariantName("x", cfg, res.Gallery.Cols()); got != fmt.Sprintf("x[pca_%d]", c.k) {
			t.Fatalf("variant name %q", got)
		}
	}
}

func TestPCAErrors(t *testing.T) {
	g := dense(t, [][]float64{{1, 2, 3, 4, 5}, {5, 4, 3, 2, 1}})
	_, err := Apply(context.Background(), cfgOf(MethodPCA, 3), g, g)
	if err == nil || !strings.Contains(err.Error(), "cannot fit n_components=3 from only 2 fit-side samples") {
		t.Fatalf("err = %v", err)
	}
	_, err = Apply(context.Background(), cfgOf(MethodTruncatedSVD, 3), g, g)
	if err == nil || !strings.Contains(err.Error(), "cannot fit n_components=3 from only 2 fit-side samples") {
		t.Fatalf("err = %v", err)
	}
	sp := csr(t, [][]float64{{1, 0, 2}, {0, 3, 0}})
	_, err = Apply(context.Background(), cfgOf(MethodPCA, 1), sp, sp)
	if err == nil || !strings.Contains(err.Error(), "pca requires dense embeddings; use truncated_svd or a random projection") {
		t.Fatalf("err = %v", err)
	}
	_, err = Apply(context.Background(), cfgOf(MethodPCA, 1), dense(t, [][]float64{{1, 2}}), g)
	if err == nil || !strings.Contains(err.Error(), "Paired embeddings must have the same feature dimension") {
		t.Fatalf("err = %v", err)
	}
	bad := dense(t, [][]float64{{1, math.NaN(), 0, 0, 0}})
	_, err = Apply(context.Background(), cfgOf(MethodPCA, 1), bad, g)
	if err == nil || !strings.Contains(err.Error(), "must contain only finite numeric values") {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err = Apply(ctx, cfgOf(MethodGaussianRandomProjection, 2), g, g); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
	if _, err = Apply(context.Background(), Config{Method: "zip"}, g, g); err == nil {
		t.Fatal("invalid config accepted")
	}
}

// PCA with a large tall gallery takes the covariance path; it must agree
// with the SVD path.
func TestPCACovariancePathAgrees(t *testing.T) {
	n, d := 1<<15, 130 // n·d > svdMaxElements, n > d
	g := newRNG(7)
	data := make([]float64, n*d)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			data[i*d+j] = g.normal() * float64(d-j) / float64(d)
		}
	}
	gal, _ := matrix.NewDense64(n, d, data)
	q := dense(t, identity(d))
	res := apply(t, cfgOf(MethodPCA, 4), q, gal)
	// The same fit by the SVD path.
	fit, err := fitPCAWith(context.Background(), gal, 4, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	comps := fit.components
	got := rowsOf(res.Query) // row j = column j of Wᵀ minus mean projection
	meanProj := make([]float64, 4)
	for r := 0; r < 4; r++ {
		for c := 0; c < d; c++ {
			meanProj[r] += fit.mean[c] * comps[r*d+c]
		}
	}
	for c := 0; c < d; c++ {
		for r := 0; r < 4; r++ {
			if diff := math.Abs(got[c][r] + meanProj[r] - comps[r*d+c]); diff > 1e-8 {
				t.Fatalf("component %d, column %d differs by %g", r, c, diff)
			}
		}
	}
}

func TestPCAGalleryOnly(t *testing.T) {
	g := dense(t, [][]float64{{1, 0, 0}, {-1, 0, 0}, {0, 0.5, 0}, {0, -0.5, 0}})
	q1 := dense(t, [][]float64{{100, 100, 100}})
	q2 := dense(t, [][]float64{{-5, 7, 9}, {3, 3, 3}, {1000, 0, -1000}})
	r1 := apply(t, cfgOf(MethodPCA, 2), q1, g)
	r2 := apply(t, cfgOf(MethodPCA, 2), q2, g)
	if !reflect.DeepEqual(rowsOf(r1.Gallery), rowsOf(r2.Gallery)) {
		t.Fatal("the queries influenced the fit")
	}
	near(t, "query", rowsOf(r1.Query), [][]float64{{100, 100}}, 1e-12)
}

func TestTruncatedSVD(t *testing.T) {
	u := []float64{1, 2, 0, -1, 0, 3}
	v := []float64{0, 1, 1, 0, -2, 0}
	rows := make([][]float64, 20)
	for i := range rows {
		a, b := float64(i%7)-3, float64((i*3)%5)-1.5
		rows[i] = make([]float64, 6)
		for j := range rows[i] {
			rows[i][j] = a*u[j] + b*v[j]
		}
	}
	g, gs := dense(t, rows), csr(t, rows)
	q := dense(t, identity(6))
	cfg := cfgOf(MethodTruncatedSVD, 2)
	rd := apply(t, cfg, q, g)
	rs := apply(t, cfg, csr(t, identity(6)), gs)
	// Query e_j gives column j of Vᵀ: the fitted basis.
	vt := rowsOf(rd.Query)
	near(t, "sparse basis", rowsOf(rs.Query), vt, 1e-12)
	near(t, "sparse gallery", rowsOf(rs.Gallery), rowsOf(rd.Gallery), 1e-12)
	if rs.Gallery.Sparse() || rs.Metadata["output_sparse"] != false || rs.Metadata["input_sparse"] != true {
		t.Fatal("truncated_svd output must be dense")
	}
	// Orthonormal basis whose span contains u and v.
	for _, x := range [][]float64{u, v} {
		var rec [6]float64
		for r := 0; r < 2; r++ {
			dot := 0.0
			for j := 0; j < 6; j++ {
				dot += x[j] * vt[j][r]
			}
			for j := 0; j < 6; j++ {
				rec[j] += dot * vt[j][r]
			}
		}
		for j := range rec {
			if math.Abs(rec[j]-x[j]) > 1e-10 {
				t.Fatalf("row space not recovered: %v vs %v", rec, x)
			}
		}
	}
	if tot := rd.Metadata["explained_variance_total"].(float64); math.Abs(tot-1) > 1e-10 {
		t.Fatalf("explained_variance_total = %v", tot)
	}
	// Reproducible for a seed, sign-fixed for every seed.
	again := apply(t, cfg, q, g)
	if !reflect.DeepEqual(rowsOf(again.Query), vt) {
		t.Fatal("truncated_svd is not reproducible")
	}
	other := cfg
	other.RandomState = 7
	near(t, "other seed", rowsOf(apply(t, other, q, g).Query), vt, 1e-10)
	// Gallery rows are x·Vᵀ with no centring.
	for i, r := range rowsOf(rd.Gallery) {
		for c := 0; c < 2; c++ {
			want := 0.0
			for j := 0; j < 6; j++ {
				want += rows[i][j] * vt[j][c]
			}
			if math.Abs(r[c]-want) > 1e-12 {
				t.Fatalf("gallery[%d][%d] = %v, want %v", i, c, r[c], want)
			}
		}
	}
}

func TestRandomProjections(t *testing.T) {
	g1 := dense(t, [][]float64{{1, 2, 3, 4, 5, 6, 7, 8}, {0, 1, 0, 1, 0, 1, 0, 1}})
	g2 := dense(t, [][]float64{{-9, 9, -9, 9, -9, 9, -9, 9}})
	q := dense(t, identity(8))
	for _, m := range []string{MethodGaussianRandomProjection, MethodSparseRandomProjection} {
		cfg := cfgOf(m, 3)
		a := apply(t, cfg, q, g1)
		b := apply(t, cfg, q, g2)
		// R depends on (seed, k, width) only, never on the gallery.
		if !reflect.DeepEqual(rowsOf(a.Query), rowsOf(b.Query)) {
			t.Fatalf("%s: projection depends on the gallery", m)
		}
		// The query e_j returns column j of R.
		var r []float64
		if m == MethodGaussianRandomProjection {
			r = gaussianMatrix(42, 3, 8, true)
		} else {
			r = newSparseProjection(42, 3, 8).dense()
		}
		for j, row := range rowsOf(a.Query) {
			for c := 0; c < 3; c++ {
				if row[c] != r[c*8+j] {
					t.Fatalf("%s: query %d output %v, R column %v", m, j, row, r)
				}
			}
		}
		other := cfg
		other.RandomState = 43
		if reflect.DeepEqual(rowsOf(apply(t, other, q, g1).Query), rowsOf(a.Query)) {
			t.Fatalf("%s: a different seed gave the same projection", m)
		}
		// Dense and CSR inputs give identical outputs.
		s := apply(t, cfg, csr(t, rowsOf(q)), csr(t, rowsOf(g1)))
		if !reflect.DeepEqual(rowsOf(s.Gallery), rowsOf(a.Gallery)) || s.Gallery.Sparse() {
			t.Fatalf("%s: sparse input differs", m)
		}
	}
}

func TestGaussianStatistics(t *testing.T) {
	k, w := 64, 4096
	r := gaussianMatrix(42, k, w, true)
	var sum, sq, quad float64
	for _, v := range r {
		sum += v
		sq += v * v
		quad += v * v * v * v
	}
	n := float64(len(r))
	mean, variance := sum/n, sq/n
	if math.Abs(mean) > 4*math.Sqrt(1/float64(k)/n) {
		t.Errorf("mean = %v", mean)
	}
	if math.Abs(variance*float64(k)-1) > 0.02 {
		t.Errorf("variance·k = %v, want 1", variance*float64(k))
	}
	if kurt := quad / n / (variance * variance); math.Abs(kurt-3) > 0.1 {
		t.Errorf("kurtosis = %v, want 3", kurt)
	}
}

func TestSparseProjectionStatistics(t *testing.T) {
	k, w := 64, 4096
	r := newSparseProjection(42, k, w).dense()
	rho := 1 / math.Sqrt(float64(w))
	a := math.Sqrt(1/rho) / math.Sqrt(float64(k))
	var nnz, pos int
	for _, v := range r {
		switch v {
		case 0:
		case a:
			nnz++
			pos++
		case -a:
			nnz++
		default:
			t.Fatalf("entry %v is not 0 or ±%v", v, a)
		}
	}
	want := rho * float64(len(r))
	if math.Abs(float64(nnz)-want) > 5*math.Sqrt(want) {
		t.Errorf("nnz = %d, want about %v", nnz, want)
	}
	if f := float64(pos) / float64(nnz); math.Abs(f-0.5) > 0.03 {
		t.Errorf("positive fraction = %v", f)
	}
}

func TestPortableLog(t *testing.T) {
	g := newRNG(1)
	for i := 0; i < 200000; i++ {
		x := g.uniform()
		if x == 0 {
			continue
		}
		got, want := portableLog(x), math.Log(x)
		if math.Abs(got-want) > 2*math.Abs(math.Nextafter(want, 0)-want) {
			t.Fatalf("portableLog(%v) = %v, math.Log = %v", x, got, want)
		}
	}
	if portableLog(1) != 0 {
		t.Fatal("log(1) != 0")
	}
}

func TestPrefix(t *testing.T) {
	rows := [][]float64{{1, 0, 3, 4}, {0, 2, 0, 5}}
	for _, in := range []matrix.Matrix{dense32(t, rows), csr(t, rows)} {
		cfg := cfgOf(MethodPrefixTruncate, 2)
		res := apply(t, cfg, in, in)
		near(t, "prefix", rowsOf(res.Gallery), [][]float64{{1, 0}, {0, 2}}, 0)
		if res.Gallery.Sparse() != in.Sparse() || res.Metadata["output_sparse"] != in.Sparse() {
			t.Fatalf("sparsity not kept")
		}
		if res.Gallery.DType() != in.DType() {
			t.Fatalf("dtype %v, want %v", res.Gallery.DType(), in.DType())
		}
		if !reflect.DeepEqual(res.Warnings, []string{PrefixWarning}) || res.Metadata["assume_matryoshka"] != false {
			t.Fatalf("warnings %v, metadata %v", res.Warnings, res.Metadata)
		}
		cfg.AssumeMatryoshka = true
		res = apply(t, cfg, in, in)
		if len(res.Warnings) != 0 || res.Metadata["assume_matryoshka"] != true || len(res.Metadata["warnings"].([]any)) != 0 {
			t.Fatalf("matryoshka: warnings %v", res.Warnings)
		}
	}
	// CSR bytes (float64 source, counted as float32): 5 values in, 2 out,
	// 4-byte values and indices, 8-byte row pointers.
	sp := csr(t, rows)
	res := apply(t, cfgOf(MethodPrefixTruncate, 2), sp, sp)
	in, out := 5*4+4*5+8*3, 2*4+4*2+8*3
	if res.Metadata["resident_bytes"] != out || res.Metadata["compression_ratio"] != float64(in)/float64(out) {
		t.Fatalf("bytes: %v", res.Metadata)
	}
	cfg := cfgOf(MethodPrefixTruncate, 2)
	cfg.DType = ptr("float16")
	if _, err := Apply(context.Background(), cfg, sp, sp); err == nil || !strings.HasPrefix(err.Error(), "CompressionConfig.dtype") {
		t.Fatalf("sparse float16: err = %v", err)
	}
	res = apply(t, cfg, dense(t, rows), dense(t, rows))
	if res.Gallery.DType() != matrix.Float16 || res.Metadata["dtype"] != "float16" {
		t.Fatal("dtype not applied")
	}
}

func TestOutputDType(t *testing.T) {
	g := dense32(t, [][]float64{{1, 2, 3}, {3, 1, 2}, {0, 0, 1}})
	q := dense(t, [][]float64{{1, 1, 1}})
	res := apply(t, cfgOf(MethodGaussianRandomProjection, 2), q, g)
	if res.Gallery.DType() != matrix.Float32 || res.Query.DType() != matrix.Float64 || res.Metadata["dtype"] != "float32" {
		t.Fatalf("dtypes %v %v", res.Gallery.DType(), res.Query.DType())
	}
	cfg := cfgOf(MethodGaussianRandomProjection, 2)
	cfg.DType = ptr("float16")
	res = apply(t, cfg, q, g)
	if res.Gallery.DType() != matrix.Float16 || res.Query.DType() != matrix.Float16 {
		t.Fatal("requested dtype not applied")
	}
	big := dense(t, [][]float64{{1e6, 1e6, 1e6}})
	if _, err := Apply(context.Background(), cfg, big, g); err == nil || !strings.Contains(err.Error(), "cannot be represented in float16") {
		t.Fatalf("err = %v", err)
	}
}

func TestQuantizeInt8(t *testing.T) {
	// Column 0: scale 127 (the gallery's max |x|); column 1: all zero → 1.
	g := dense(t, [][]float64{{-127, 0}, {63.5, 0}, {10, 0}})
	q := dense(t, [][]float64{{0.5, 0.5}, {1.5, 2}, {2.5, -0.3}, {300, 1}, {-300, -7}})
	cfg := Config{Method: MethodQuantize, Precision: ptr("int8"), RandomState: 42}
	res := apply(t, cfg, q, g)
	step := 1.0 / 127 // column 1 decodes code·(1/127)
	dec := func(code float64) float64 { return float64(float32(code * step)) }
	// Column 0: x/127·127 = x: 0.5 → 0, 1.5 → 2, 2.5 → 2 (half to even);
	// ±300 clip to ±127. Column 1: x·127 → round → /127.
	near(t, "query", rowsOf(res.Query), [][]float64{
		{0, dec(64)}, // 0.5·127 = 63.5 → 64
		{2, dec(127)},
		{2, dec(-38)},
		{127, dec(127)},
		{-127, dec(-127)},
	}, 0)
	near(t, "gallery", rowsOf(res.Gallery), [][]float64{{-127, 0}, {64, 0}, {10, 0}}, 0)
	md := res.Metadata
	if md["quantization_mode"] != "symmetric_absmax" || md["encoded_dtype"] != "int8" || md["scoring_dtype"] != "float32" || md["precision"] != "int8" {
		t.Fatalf("metadata %v", md)
	}
	enc := 3*2 + 8*2
	if md["estimated_encoded_bytes"] != enc || md["resident_bytes"] != enc || md["compression_ratio"] != float64(3*2*4)/float64(enc) || md["dtype"] != "float32" {
		t.Fatalf("bytes metadata %v", md)
	}
	if res.Gallery.DType() != matrix.Float32 || res.Query.DType() != matrix.Float32 {
		t.Fatal("quantize output must be float32")
	}
}

func TestQuantizeUint8(t *testing.T) {
	// Column 0: min 0, range 255; column 1: min 10, range 255; column 2 constant 5.
	g := dense(t, [][]float64{{0, 10, 5}, {255, 265, 5}, {100, 20, 5}})
	q := dense(t, [][]float64{{0.5, 12.5, 5}, {1.5, 13.5, 6}, {127.5, -50, 4}, {-10, 1000, 5.5}})
	cfg := Config{Method: MethodQuantize, Precision: ptr("uint8"), RandomState: 42}
	res := apply(t, cfg, q, g)
	step := 1.0 / 255 // column 2 decodes code·(1/255) + 5
	dec := func(code float64) float64 { return float64(float32(float64(code*step) + 5)) }
	// (x−min)/range·255 = x−min here; decoded = code + min.
	// Column 2: range 0 → 1: code = round((x−5)·255) clipped to [0, 255].
	near(t, "query", rowsOf(res.Query), [][]float64{
		{0, 12, dec(0)},
		{2, 14, dec(255)},
		{128, 10, dec(0)},
		{0, 265, dec(128)}, // 0.5·255 = 127.5 → 128
	}, 0)
	near(t, "gallery", rowsOf(res.Gallery), [][]float64{{0, 10, 5}, {255, 265, 5}, {100, 20, 5}}, 0)
	md := res.Metadata
	if md["quantization_mode"] != "affine_minmax" || md["encoded_dtype"] != "uint8" || md["estimated_encoded_bytes"] != 3*3+16*3 {
		t.Fatalf("metadata %v", md)
	}
	sp := csr(t, [][]float64{{1, 0}, {0, 1}})
	if _, err := Apply(context.Background(), cfg, sp, sp); err == nil || !strings.Contains(err.Error(), "requires dense embeddings") {
		t.Fatalf("sparse uint8: err = %v", err)
	}
}

func TestQuantizeFloat16(t *testing.T) {
	cfg := Config{Method: MethodQuantize, Precision: ptr("float16"), RandomState: 42}
	x := 1 + math.Ldexp(1, -11) + math.Ldexp(1, -40) // just above a float16 halfway point
	g := dense(t, [][]float64{{x, 1.0 / 3}, {65504, -2.5}})
	res := apply(t, cfg, g, g)
	// Rounded directly from float64: through float32 first, x would become
	// the halfway point itself and round down to 1.
	near(t, "gallery", rowsOf(res.Gallery), [][]float64{{1 + math.Ldexp(1, -10), 0.333251953125}, {65504, -2.5}}, 0)
	md := res.Metadata
	if md["quantization_mode"] != "cast" || md["encoded_dtype"] != "float16" || md["estimated_encoded_bytes"] != 2*4 || md["resident_bytes"] != 2*4 || md["compression_ratio"] != 2.0 {
		t.Fatalf("metadata %v", md)
	}
	for _, v := range []float64{65520, -70000, 1e300} {
		bad := dense(t, [][]float64{{1, v}})
		if _, err := Apply(context.Background(), cfg, bad, g); err == nil || !strings.Contains(err.Error(), "cannot be represented in float16") {
			t.Fatalf("%v: err = %v", v, err)
		}
	}
	// 65519.99 rounds down to 65504 and is fine.
	ok := dense(t, [][]float64{{1, 65519.99}})
	near(t, "edge", rowsOf(apply(t, cfg, ok, g).Query), [][]float64{{1, 65504}}, 0)
	// Sparse stays sparse with the same structure.
	sp := csr(t, [][]float64{{0, 1.0 / 3}, {2, 0}})
	res = apply(t, cfg, sp, sp)
	if !res.Gallery.Sparse() || res.Gallery.DType() != matrix.Float32 {
		t.Fatal("sparse float16 quantize must stay CSR float32")
	}
	near(t, "sparse", rowsOf(res.Gallery), [][]float64{{0, 0.333251953125}, {2, 0}}, 0)
	if md := res.Metadata; md["estimated_encoded_bytes"] != 2*2+4*2+8*3 {
		t.Fatalf("sparse metadata %v", md)
	}
}

func TestFloat16BitsMatchesLibrary(t *testing.T) {
	// For float32 inputs (one rounding either way) the result must match
	// x448/float16, which the rest of vertebrae uses.
	g := newRNG(3)
	check := func(f float32) {
		b, ok := float16Bits(float64(f))
		want := float16FromFloat32(f)
		if !ok {
			if want&0x7c00 != 0x7c00 {
				t.Fatalf("%v: overflow reported, library gives %#04x", f, want)
			}
			return
		}
		if b != want {
			t.Fatalf("%v: %#04x, library %#04x", f, b, want)
		}
		if float16Value(b) != float64(float16ToFloat32(b)) {
			t.Fatalf("decode %#04x", b)
		}
	}
	for i := 0; i < 300000; i++ {
		bits := uint32(g.src.Uint64())
		f := math.Float32frombits(bits)
		if f != f || math.IsInf(float64(f), 0) {
			continue
		}
		check(f)
	}
	for _, f := range []float32{0, float32(math.Copysign(0, -1)), 65504, 65519, 65520, 1e-8, 2.98e-8, 6.1e-5, 6.0e-5, 5.96e-8} {
		check(f)
		check(-f)
	}
}

func TestEmptyEndpoints(t *testing.T) {
	empty, _ := matrix.NewDense64(0, 4, nil)
	g := dense(t, [][]float64{{1, 2, 3, 4}, {4, 3, 2, 1}})
	variance := Config{Method: MethodPCA, PreserveVariance: ptr(0.5), RandomState: 42}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{cfgOf(MethodPCA, 2), "cannot fit n_components=2 from only 0 fit-side samples"},
		{cfgOf(MethodTruncatedSVD, 1), "cannot fit n_components=1 from only 0 fit-side samples"},
		{variance, "cannot fit pca from 0 fit-side samples"},
		{Config{Method: MethodQuantize, Precision: ptr("int8")}, "cannot fit quantize int8 from 0 fit-side samples"},
	} {
		if _, err := Apply(context.Background(), c.cfg, g, empty); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v", c.cfg.AsMap(), err)
		}
	}
	// Methods without a fit accept an empty gallery, and every method an
	// empty query endpoint.
	for _, spec := range []string{"prefix:2", "gaussian-rp:2", "sparse-rp:2", "quantize:float16"} {
		cfg, _ := ParseSpec(spec, 42, false)
		res := apply(t, cfg, g, empty)
		if res.Gallery.Rows() != 0 || res.Query.Rows() != 2 {
			t.Errorf("%s: shapes %d, %d", spec, res.Gallery.Rows(), res.Query.Rows())
		}
	}
	for _, spec := range []string{"pca:1", "truncated-svd:1", "quantize:uint8", "pca-variance:0.9"} {
		cfg, _ := ParseSpec(spec, 42, true)
		res := apply(t, cfg, empty, g)
		if res.Query.Rows() != 0 {
			t.Errorf("%s: query rows %d", spec, res.Query.Rows())
		}
	}
}
