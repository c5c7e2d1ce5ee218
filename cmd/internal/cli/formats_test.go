package cli

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/columnar"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/formats/npz"
	"github.com/vertebrae-eval/vertebrae/formats/safetensors"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// The same dataset written as .npy, dense .npz, CSR .npz, safetensors,
// Parquet and Arrow IPC gives byte-identical metrics, diagnostics and
// warnings; with an ID column the rows may come in any order.
func TestEveryEmbeddingFormatGivesTheSameJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	dir := t.TempDir()
	const nq, ng, d = 9, 40, 6
	mk := func(n int) *matrix.Dense {
		v := make([]float32, n*d)
		for i := range v {
			if r.IntN(3) > 0 { // sparse-ish, so the CSR form is meaningful
				v[i] = float32(r.NormFloat64())
			}
		}
		v[0] = 1 // keep row 0 nonzero; other rows are checked below
		m, _ := matrix.NewDense32(n, d, v)
		return m
	}
	qm, gm := mk(nq), mk(ng)
	for _, m := range []*matrix.Dense{qm, gm} {
		row := make([]float64, d)
		for i := 0; i < m.Rows(); i++ {
			m.RowFloat64(i, row)
			nz := false
			for _, x := range row {
				nz = nz || x != 0
			}
			if !nz {
				m.Float32Data()[i*d] = 0.5
			}
		}
	}
	var qrels strings.Builder
	for q := 0; q < nq; q++ {
		for _, g := range r.Perm(ng)[:2] {
			qrels.WriteString(strconv.Itoa(q) + " 0 " + strconv.Itoa(g) + " " + strconv.Itoa(1+r.IntN(2)) + "\n")
		}
	}
	qrelsPath := writeFile(t, dir, "rel.qrels", qrels.String())
	csrOf := func(m *matrix.Dense) *matrix.CSR {
		indptr := []int64{0}
		var idx []int32
		var vals []float32
		for i := 0; i < m.Rows(); i++ {
			for j := 0; j < d; j++ {
				if x := m.Float32Data()[i*d+j]; x != 0 {
					idx = append(idx, int32(j))
					vals = append(vals, x)
				}
			}
			indptr = append(indptr, int64(len(idx)))
		}
		c, _ := matrix.NewCSR32(m.Rows(), d, indptr, idx, vals)
		return c
	}
	write := func(name string, fn func(*bytes.Buffer) error) string {
		var buf bytes.Buffer
		if err := fn(&buf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return writeFile(t, dir, name, buf.String())
	}
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(i)
		}
		return out
	}
	// Shuffled gallery rows with their IDs in a column.
	perm := r.Perm(ng)
	shuffled := make([]float32, ng*d)
	shuffledIDs := make([]string, ng)
	for k, i := range perm {
		copy(shuffled[k*d:(k+1)*d], gm.Float32Data()[i*d:(i+1)*d])
		shuffledIDs[k] = strconv.Itoa(i)
	}
	gShuffled, _ := matrix.NewDense32(ng, d, shuffled)

	type pair struct{ args []string }
	forms := map[string]pair{
		"npy": {[]string{"--queries", writeMatrix(t, dir, "q.npy", qm), "--gallery", writeMatrix(t, dir, "g.npy", gm)}},
		"npz-dense": {[]string{"--queries", write("q.npz", func(b *bytes.Buffer) error { return npz.WriteDense(b, "q", qm) }),
			"--gallery", write("g.npz", func(b *bytes.Buffer) error { return npz.WriteDense(b, "g", gm) })}},
		"npz-csr": {[]string{"--queries", write("qc.npz", func(b *bytes.Buffer) error { return npz.WriteCSR(b, csrOf(qm)) }),
			"--gallery", write("gc.npz", func(b *bytes.Buffer) error { return npz.WriteCSR(b, csrOf(gm)) })}},
		"safetensors": {[]string{"--queries", write("q.safetensors", func(b *bytes.Buffer) error { return safetensors.WriteMatrix(b, "emb", qm) }),
			"--gallery", write("g.safetensors", func(b *bytes.Buffer) error { return safetensors.WriteMatrix(b, "emb", gm) })}},
		"parquet": {[]string{"--queries", write("q.parquet", func(b *bytes.Buffer) error { return columnar.WriteParquet(b, "emb", qm, "id", ids(nq), 4, true) }),
			"--gallery", write("g.parquet", func(b *bytes.Buffer) error { return columnar.WriteParquet(b, "emb", gm, "id", ids(ng), 16, false) }),
			"--query-id-column", "id", "--gallery-id-column", "id"}},
		"arrow": {[]string{"--queries", write("q.arrow", func(b *bytes.Buffer) error { return columnar.WriteArrow(b, "emb", qm, "", nil, 4, true) }),
			"--gallery", write("g.arrow", func(b *bytes.Buffer) error { return columnar.WriteArrow(b, "emb", gm, "", nil, 7, false) })}},
	}
	forms["parquet-shuffled"] = pair{[]string{"--queries", writeMatrix(t, dir, "q2.npy", qm),
		"--gallery", write("gs.parquet", func(b *bytes.Buffer) error {
			return columnar.WriteParquet(b, "emb", gShuffled, "id", shuffledIDs, 16, false)
		}), "--gallery-id-column", "id"}}
	var ref, refMetrics []byte
	var refName string
	for name, f := range forms {
		args := append([]string{"retrieval", "run", "--qrels", qrelsPath, "--json", "-", "--k", "1,5", "--primary", "ndcg@5"}, f.args...)
		code, stdout, stderr := run(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var rep struct {
			Results []struct {
				Forward json.RawMessage `json:"forward"`
			} `json:"extractor_results"`
		}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatal(err)
		}
		got := []byte(rep.Results[0].Forward)
		var fwd struct {
			Metrics json.RawMessage `json:"metrics"`
		}
		json.Unmarshal(got, &fwd)
		if name == "parquet-shuffled" {
			// Other gallery indices: pooled diagnostics sum in another
			// order, but every metric is the same to the bit.
			defer func(m []byte) {
				if !bytes.Equal(m, refMetrics) {
					t.Errorf("shuffled rows matched by ID: metrics differ:\n%s\n%s", m, refMetrics)
				}
			}(fwd.Metrics)
			continue
		}
		if ref == nil {
			ref, refName, refMetrics = got, name, fwd.Metrics
			continue
		}
		if !bytes.Equal(got, ref) {
			t.Errorf("%s: forward result differs from %s", name, refName)
		}
	}
}

// rawCSR writes a scipy-style CSR archive without validating it.
func rawCSR(t *testing.T, dir, name string, rows, cols int, indptr, indices []int64, data []float64) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	add := func(member string, write func(w io.Writer) error) {
		w, err := zw.Create(member + ".npy")
		if err != nil {
			t.Fatal(err)
		}
		if err := write(w); err != nil {
			t.Fatal(err)
		}
	}
	add("indices", func(w io.Writer) error { return npy.WriteInt64(w, []int{len(indices)}, indices) })
	add("indptr", func(w io.Writer) error { return npy.WriteInt64(w, []int{len(indptr)}, indptr) })
	add("format", func(w io.Writer) error { return npy.WriteStrings(w, []string{"csr"}) })
	add("shape", func(w io.Writer) error { return npy.WriteInt64(w, []int{2}, []int64{int64(rows), int64(cols)}) })
	add("data", func(w io.Writer) error { return npy.WriteFloat64(w, []int{len(data)}, data) })
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return writeFile(t, dir, name, buf.String())
}

func TestMalformedSparseInputs(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		path  string
		frags []string
	}{
		{rawCSR(t, f.dir, "indptr.npz", 3, 2, []int64{0, 2, 1, 3}, []int64{0, 1, 1}, []float64{1, 1, 1}), []string{"indptr.npz", "bad CSR indptr"}},
		{rawCSR(t, f.dir, "range.npz", 3, 2, []int64{0, 1, 2, 3}, []int64{0, 5, 1}, []float64{1, 1, 1}), []string{"range.npz", "out-of-range index", "row 1"}},
	}
	for _, c := range cases {
		code, _, stderr := run(t, "retrieval", "run", "--queries", f.q, "--gallery", c.path, "--qrels", f.qrels(t))
		if code != 1 {
			t.Errorf("%s: exit %d: %s", c.path, code, stderr)
		}
		for _, frag := range c.frags {
			if !strings.Contains(stderr, frag) {
				t.Errorf("%q lacks %q", stderr, frag)
			}
		}
	}
}
