package compress

import (
	"reflect"
	"runtime"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Results must not depend on the number of threads (SPEC §1.3).
func TestThreadCountIndependence(t *testing.T) {
	n, d := 700, 200
	g := newRNG(11)
	data := make([]float64, n*d)
	for i := range data {
		data[i] = g.normal()
		if i%3 == 0 {
			data[i] = 0
		}
	}
	gal, _ := matrix.NewDense64(n, d, data)
	q, _ := matrix.NewDense64(50, d, data[:50*d])
	sp := csr(t, rowsOf(gal))
	cfgs := []Config{cfgOf(MethodPCA, 20), cfgOf(MethodTruncatedSVD, 20), cfgOf(MethodGaussianRandomProjection, 20), cfgOf(MethodSparseRandomProjection, 20)}
	run := func(procs int) [][][]float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var out [][][]float64
		for _, c := range cfgs {
			r := apply(t, c, q, gal)
			out = append(out, rowsOf(r.Query), rowsOf(r.Gallery))
		}
		r := apply(t, cfgOf(MethodTruncatedSVD, 20), sp, sp)
		return append(out, rowsOf(r.Query), rowsOf(r.Gallery))
	}
	one, many := run(1), run(4)
	if !reflect.DeepEqual(one, many) {
		t.Fatal("results differ between GOMAXPROCS=1 and 4")
	}
}
