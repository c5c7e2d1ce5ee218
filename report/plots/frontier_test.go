package plots

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// frontierBenchmark holds, for one gallery of n × d values read from a
// source of element type dt, the uncompressed result and its pca:2,
// quantize:int8 and quantize:float16 variants, with the compression
// metadata compress.Apply writes (read back from JSON when viaJSON).
func frontierBenchmark(t *testing.T, dt matrix.DType, viaJSON bool) *results.Benchmark {
	t.Helper()
	const n, d = 50, 8
	v64 := make([]float64, n*d)
	v32 := make([]float32, n*d)
	for i := range v64 {
		v64[i] = float64((i*7)%11) - 5 // exact in float32
		v32[i] = float32(v64[i])
	}
	var g matrix.Matrix
	var err error
	if dt == matrix.Float64 {
		g, err = matrix.NewDense64(n, d, v64)
	} else {
		g, err = matrix.NewDense32(n, d, v32)
	}
	if err != nil {
		t.Fatal(err)
	}
	k := 2
	cfgs := []struct {
		name string
		cfg  compress.Config
	}{
		{"x", compress.Default()},
		{"x[pca_2]", compress.Config{Method: compress.MethodPCA, NComponents: &k, RandomState: 42}},
		{"x[quantize_int8]", compress.Config{Method: compress.MethodQuantize, Precision: ptrTo(compress.PrecisionInt8), RandomState: 42}},
		{"x[quantize_float16]", compress.Config{Method: compress.MethodQuantize, Precision: ptrTo(compress.PrecisionFloat16), RandomState: 42}},
	}
	b := &results.Benchmark{Metadata: results.Metadata{RetrievalConfig: retrieval.Config{PrimaryMetric: "ndcg@10", Similarity: "cosine", Ks: []int{1, 5, 10}}}}
	for i, c := range cfgs {
		res, err := compress.Apply(context.Background(), c.cfg, g, g)
		if err != nil {
			t.Fatal(err)
		}
		r := fakeResult(c.name, 0.9-0.1*float64(i), "none", d, 0)
		r.Forward.Metadata.NGallery = n
		r.CompressionMetadata = res.Metadata
		if viaJSON {
			data, err := json.Marshal(res.Metadata)
			if err != nil {
				t.Fatal(err)
			}
			r.CompressionMetadata = nil
			if err := json.Unmarshal(data, &r.CompressionMetadata); err != nil {
				t.Fatal(err)
			}
		}
		b.ExtractorResults = append(b.ExtractorResults, r)
	}
	if err := b.Finalize(); err != nil {
		t.Fatal(err)
	}
	return b
}

func ptrTo[T any](v T) *T { return &v }

// The frontier's x values are the gallery bytes of the report table
// (compress.GalleryBytes), hand-computed here: float32 baseline for the
// uncompressed result, encoded bytes for the variants, the same for a
// float32 and a float64 source; int8 is not drawn on top of the
// uncompressed point.
func TestFrontierUsesGalleryBytes(t *testing.T) {
	const n, d = 50, 8
	want := map[string]float64{
		"x":                   n * d * 4,   // 1600: float32 baseline
		"x[pca_2]":            n * 2 * 4,   // 400
		"x[quantize_int8]":    n*d*1 + d*8, // 464: codes + float64 scales
		"x[quantize_float16]": n * d * 2,   // 800
	}
	for _, dt := range []matrix.DType{matrix.Float32, matrix.Float64} {
		for _, viaJSON := range []bool{false, true} {
			b := frontierBenchmark(t, dt, viaJSON)
			rs, err := newResultSet(b)
			if err != nil {
				t.Fatal(err)
			}
			pts, anyCompressed := frontierPoints(rs)
			if !anyCompressed || len(pts) != len(want) {
				t.Fatalf("%v source: %d points, compressed %v", dt, len(pts), anyCompressed)
			}
			for _, pt := range pts {
				name := pt.s.r.Name
				if pt.bytes != want[name] {
					t.Errorf("%v source (JSON %v): %s at x = %v, want %v", dt, viaJSON, name, pt.bytes, want[name])
				}
				gb, ok := compress.GalleryBytes(pt.s.r.CompressionMetadata, n)
				if !ok || float64(gb) != pt.bytes {
					t.Errorf("%s: plot x %v, table gallery bytes %d %v", name, pt.bytes, gb, ok)
				}
				if pt.compressed != (name != "x") {
					t.Errorf("%s: compressed = %v", name, pt.compressed)
				}
				// The ratio of the table is the uncompressed x over this x.
				if r, ok := compress.Ratio(pt.s.r.CompressionMetadata, n); !ok || r != want["x"]/pt.bytes {
					t.Errorf("%s: ratio %v %v, want %v", name, r, ok, want["x"]/pt.bytes)
				}
			}
		}
	}
	// An uncompressed sparse gallery has no byte count and is left out.
	b := frontierBenchmark(t, matrix.Float32, false)
	b.ExtractorResults[0].CompressionMetadata["output_sparse"] = true
	rs, err := newResultSet(b)
	if err != nil {
		t.Fatal(err)
	}
	if pts, _ := frontierPoints(rs); len(pts) != len(want)-1 {
		t.Errorf("%d points with a sparse uncompressed gallery, want %d", len(pts), len(want)-1)
	}
}
