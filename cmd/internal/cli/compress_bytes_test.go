package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Issue 27 item 5 end to end: the same embeddings from a float32 and a
// float64 .npy give the same gallery bytes and compression ratios in the
// JSON metadata and the Markdown compression table, and those are the
// encoded bytes of each method against the float32 baseline (40 × 6 × 4 =
// 960 bytes).
func TestCompressionBytesIndependentOfSourceDType(t *testing.T) {
	const nq, ng, dim = 10, 40, 6
	dir := t.TempDir()
	values := func(n, off int) []float64 {
		v := make([]float64, n*dim)
		for i := range v {
			v[i] = float64(((i+off)*5)%9)/2 - 2 // exact in float32
		}
		return v
	}
	var ql, gl strings.Builder
	for i := 0; i < nq; i++ {
		ql.WriteString(string(rune('a'+i%4)) + "\n")
	}
	for i := 0; i < ng; i++ {
		gl.WriteString(string(rune('a'+i%4)) + "\n")
	}
	qLabels, gLabels := writeFile(t, dir, "ql.txt", ql.String()), writeFile(t, dir, "gl.txt", gl.String())

	type cells struct{ bytes, ratio string }
	want := map[string]cells{
		"x":                    {"960", "1.00"}, // 40·6·4 float32 baseline
		"x[quantize_int8]":     {"288", "3.33"}, // 40·6·1 codes + 6·8 scales
		"x[quantize_float16]":  {"480", "2.00"}, // 40·6·2
		"x[pca_2]":             {"320", "3.00"}, // 40·2·4
		"x[prefix_truncate_3]": {"480", "2.00"}, // 40·3·4
	}
	wantJSON := map[string]float64{"x[quantize_int8]": 288, "x[quantize_float16]": 480, "x[pca_2]": 320, "x[prefix_truncate_3]": 480}
	for _, dt := range []string{"float32", "float64"} {
		mk := func(n, off int) *matrix.Dense {
			v := values(n, off)
			if dt == "float64" {
				m, err := matrix.NewDense64(n, dim, v)
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			v32 := make([]float32, len(v))
			for i, x := range v {
				v32[i] = float32(x)
			}
			m, err := matrix.NewDense32(n, dim, v32)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
		qp := writeMatrix(t, dir, dt+"_q.npy", mk(nq, 3))
		gp := writeMatrix(t, dir, dt+"_g.npy", mk(ng, 0))
		mdPath := filepath.Join(dir, dt+".md")
		code, stdout, stderr := run(t, "retrieval", "run", "--queries", qp, "--gallery", gp, "--query-labels", qLabels, "--gallery-labels", gLabels,
			"--dataset-id", "bytes", "--dataset-revision", "1", "--name", "x", "--quiet",
			"--compress", "quantize:int8", "--compress", "quantize:float16", "--compress", "pca:2", "--compress", "prefix:3",
			"--json", "-", "--markdown", mdPath)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", dt, code, stderr)
		}
		rep := reportOf(t, stdout)
		for _, r := range rep["extractor_results"].([]any) {
			r := r.(map[string]any)
			name := r["name"].(string)
			md := r["compression_metadata"].(map[string]any)
			w, ok := wantJSON[name]
			if !ok {
				continue
			}
			if md["resident_bytes"] != w || md["compression_ratio"] != 960/w {
				t.Errorf("%s source, %s: resident_bytes %v, compression_ratio %v; want %v, %v", dt, name, md["resident_bytes"], md["compression_ratio"], w, 960/w)
			}
		}
		table := map[string]cells{}
		for _, line := range strings.Split(mustRead(t, mdPath), "\n") {
			f := strings.Split(line, " | ")
			// | extractor | method | applied | dim | gallery bytes | ratio | primary score |
			if len(f) == 7 && strings.HasPrefix(line, "| x") {
				table[strings.TrimPrefix(f[0], "| ")] = cells{f[4], f[5]}
			}
		}
		for name, c := range want {
			if table[name] != c {
				t.Errorf("%s source, %s: table gallery bytes %q, ratio %q; want %q, %q", dt, name, table[name].bytes, table[name].ratio, c.bytes, c.ratio)
			}
		}
	}
}
