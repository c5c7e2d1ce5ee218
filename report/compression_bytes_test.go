package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/results"
)

// bytesBenchmark scores nothing: it holds one 6 × 5 gallery, read from a
// source of element type dt, uncompressed and as pca:2, quantize:int8 and
// quantize:float16 variants, with the metadata compress.Apply writes,
// round-tripped through JSON as a report read back from disk is.
func bytesBenchmark(t *testing.T, dt matrix.DType) *results.Benchmark {
	t.Helper()
	const n, d = 6, 5
	v64 := make([]float64, n*d)
	v32 := make([]float32, n*d)
	for i := range v64 {
		v64[i] = float64((i*3)%7) - 3
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
	k, int8p, f16p := 2, compress.PrecisionInt8, compress.PrecisionFloat16
	cfgs := []struct {
		name string
		cfg  compress.Config
	}{
		{"x", compress.Default()},
		{"x[pca_2]", compress.Config{Method: compress.MethodPCA, NComponents: &k, RandomState: 42}},
		{"x[quantize_int8]", compress.Config{Method: compress.MethodQuantize, Precision: &int8p, RandomState: 42}},
		{"x[quantize_float16]", compress.Config{Method: compress.MethodQuantize, Precision: &f16p, RandomState: 42}},
	}
	b := &results.Benchmark{}
	for i, c := range cfgs {
		res, err := compress.Apply(context.Background(), c.cfg, g, g)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(res.Metadata)
		if err != nil {
			t.Fatal(err)
		}
		var md map[string]any
		if err := json.Unmarshal(data, &md); err != nil {
			t.Fatal(err)
		}
		s := 1 - 0.1*float64(i)
		fwd := score("ndcg@1", vals(s, s, s, s, s, s), row("q0", vals(s, s, s, s, s, s)))
		fwd.Metadata.NGallery = n
		b.ExtractorResults = append(b.ExtractorResults, &results.ExtractorResult{Name: c.name, Forward: fwd, PrimaryScore: s, CompressionMetadata: md})
	}
	return b
}

// compressionTable is the "## Compression" section of a Markdown report.
func compressionTable(t *testing.T, md []byte) string {
	t.Helper()
	s := string(md)
	i, j := strings.Index(s, "## Compression\n"), strings.Index(s, "## Details\n")
	if i < 0 || j < i {
		t.Fatalf("no compression section in\n%s", s)
	}
	return s[i:j]
}

// The "gallery bytes" and "ratio" cells are the encoded bytes of the
// gallery as stored (hand-computed below) and baseline / bytes, with the
// float32 baseline 6·5·4 = 120 bytes; a float64 source gives the same
// table as a float32 one; the HTML table shows the same cells.
func TestCompressionTableBytes(t *testing.T) {
	want := "## Compression\n\n" +
		"| extractor | method | applied | dim | gallery bytes | ratio | primary score |\n" +
		"| --- | --- | --- | ---: | ---: | ---: | ---: |\n" +
		"| x | none | false | 5 | 120 | 1.00 | 1.0000 |\n" + // 6·5·4 float32
		"| x[pca_2] | pca | true | 2 | 48 | 2.50 | 0.9000 |\n" + // 6·2·4
		"| x[quantize_int8] | quantize | true | 5 | 70 | 1.71 | 0.8000 |\n" + // 6·5·1 + 5·8 scales
		"| x[quantize_float16] | quantize | true | 5 | 60 | 2.00 | 0.7000 |\n\n" // 6·5·2
	for _, dt := range []matrix.DType{matrix.Float32, matrix.Float64} {
		b := bytesBenchmark(t, dt)
		md, err := Markdown(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := compressionTable(t, md); got != want {
			t.Errorf("%v source: compression table\n%s\nwant\n%s", dt, got, want)
		}
		for _, r := range b.ExtractorResults {
			row, err := compressionRow(r)
			if err != nil {
				t.Fatal(err)
			}
			line := "| " + r.Name + " | " + row.Method + " | " + row.Applied + " | " + row.Dim + " | " + row.Bytes + " | " + row.Ratio + " | "
			if !strings.Contains(want, line) {
				t.Errorf("%v source: HTML row %q is not in the Markdown table", dt, line)
			}
		}
	}
}
