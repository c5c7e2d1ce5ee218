package retrieval

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func dense(t *testing.T, rows ...[]float64) EmbeddingItems {
	t.Helper()
	m, err := matrix.FromRows(rows)
	if err != nil {
		t.Fatal(err)
	}
	return Embeddings(m)
}

func base(t *testing.T) DatasetInputs {
	return DatasetInputs{
		Queries:  dense(t, []float64{1, 0}, []float64{0, 1}),
		Gallery:  dense(t, []float64{1, 0}, []float64{0, 1}, []float64{1, 1}),
		Identity: FromContent(),
	}
}

func TestDatasetValidationFragments(t *testing.T) {
	okRel := RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}})
	cases := []struct {
		name string
		edit func(*DatasetInputs)
		rel  Relevance
		want string
	}{
		{"identity", func(in *DatasetInputs) { in.Identity = Identity{} }, okRel, "dataset identity is required"},
		{"nan", func(in *DatasetInputs) {
			in.Gallery = dense(t, []float64{1, 0}, []float64{math.NaN(), 1}, []float64{1, 1})
		}, okRel, `Gallery embeddings must contain only finite numeric values; row 1 (ID "1"), column 0`},
		{"width", func(in *DatasetInputs) { in.Gallery = dense(t, []float64{1, 0, 0}) }, okRel, "same width; got 2 and 3"},
		{"empty ids", func(in *DatasetInputs) { in.QueryIDs = []string{} }, okRel, "query IDs must not be empty"},
		{"blank id", func(in *DatasetInputs) { in.QueryIDs = []string{"a", ""} }, okRel, "query IDs must be non-empty UTF-8 strings; index 1"},
		{"bad utf8", func(in *DatasetInputs) { in.GalleryIDs = []string{"a", "\xff", "c"} }, okRel, "gallery IDs must be non-empty UTF-8 strings"},
		{"dup id", func(in *DatasetInputs) { in.GalleryIDs = []string{"a", "b", "a"} }, okRel, `gallery IDs must be unique; "a"`},
		{"misaligned", func(in *DatasetInputs) { in.QueryIDs = []string{"0"} }, okRel, "query IDs must align with their input collections"},
		{"misaligned gallery", func(in *DatasetInputs) { in.GalleryIDs = []string{"0", "1"} }, okRel, "gallery IDs must align with their input collections"},
		{"negative grade", nil, RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: -1, Origin: "q.tsv:3"}}), "q.tsv:3: query \"0\", gallery \"0\": -1"},
		{"nan grade dense", nil, DenseRelevance([][]float64{{1, 0, math.NaN()}, {0, 1, 0}}), "Relevance grades must be finite and non-negative"},
		{"dense shape", nil, DenseRelevance([][]float64{{1, 0}, {0, 1}}), "Dense relevance must have shape (n_queries, n_gallery)"},
		{"csr shape", nil, CSRRelevance(SparseRelevance{Rows: 2, Cols: 2, Indptr: []int64{0, 0, 0}}), "Sparse relevance must have shape (n_queries, n_gallery)"},
		{"unknown id", nil, RecordRelevance([]Record{{QueryID: "0", GalleryID: "zz", Grade: 1}}), `Relevance record references an unknown query or gallery ID: gallery ID "zz"`},
		{"duplicate record", nil, RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}, {QueryID: "0", GalleryID: "0", Grade: 0, Origin: "x:9"}}), "x:9: Duplicate query/gallery relevance records are not allowed"},
		{"empty records", nil, RecordRelevance(nil), "Every query must retain at least one eligible positive relevance after exclusions; missing for [\"0\", \"1\"]"},
		{"unknown exclusion", func(in *DatasetInputs) { in.Exclusions = []Pair{{QueryID: "7", GalleryID: "0"}} }, okRel, `Exclusion references an unknown query or gallery ID: query ID "7"`},
		{"metadata nan", func(in *DatasetInputs) { in.Metadata = map[string]any{"x": math.Inf(1)} }, okRel, "Retrieval metadata must be deterministically JSON-serializable"},
		{"metadata type", func(in *DatasetInputs) { in.Metadata = map[string]any{"x": struct{}{}} }, okRel, "Retrieval metadata must be deterministically JSON-serializable"},
		{"reserved", func(in *DatasetInputs) { in.Metadata = map[string]any{"precomputed_embeddings": false} }, okRel, "reserved metadata key"},
		{"labels align", nil, LabelRelevance([]string{"a"}, []string{"a", "b", "c"}), "labels must align with their input collections"},
		{"declared blank", func(in *DatasetInputs) { in.Identity = Declared("", "1") }, okRel, "declared dataset identity needs a non-empty dataset_id and revision"},
	}
	for _, c := range cases {
		in := base(t)
		if c.edit != nil {
			c.edit(&in)
		}
		_, err := NewDataset(in, c.rel)
		var inv *InvalidError
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &inv) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

func TestCSRRelevanceSumsAndDropsZeros(t *testing.T) {
	in := base(t)
	// Row 0: (0, 1) twice → summed to 3; (0, 2) explicit zero dropped.
	// Row 1: unsorted indices 2, 1.
	ds, err := NewDataset(in, CSRRelevance(SparseRelevance{Rows: 2, Cols: 3,
		Indptr: []int64{0, 3, 5}, Indices: []int64{1, 2, 1, 2, 1}, Data: []float64{1, 0, 2, 4, 5}}))
	if err != nil {
		t.Fatal(err)
	}
	if p := ds.Positives(0); len(p) != 1 || p[0] != (Positive{Index: 1, Grade: 3}) {
		t.Errorf("row 0 %v", p)
	}
	if p := ds.Positives(1); len(p) != 2 || p[0] != (Positive{Index: 1, Grade: 5}) || p[1] != (Positive{Index: 2, Grade: 4}) {
		t.Errorf("row 1 %v", p)
	}
}

func TestDenseRelevanceZeroNotStored(t *testing.T) {
	ds, err := NewDataset(base(t), DenseRelevance([][]float64{{2, 0, 0}, {0, 0, 0.5}}))
	if err != nil {
		t.Fatal(err)
	}
	if s := ds.Summary(); s.NRelevancePairs != 2 {
		t.Errorf("pairs %d", s.NRelevancePairs)
	}
}

func TestImmutability(t *testing.T) {
	qdata := []float64{1, 0, 0, 1}
	qm, _ := matrix.NewDense64(2, 2, qdata)
	ids := []string{"a", "b"}
	recs := []Record{{QueryID: "a", GalleryID: "0", Grade: 1}, {QueryID: "b", GalleryID: "1", Grade: 1}}
	meta := map[string]any{"k": []any{"v"}}
	in := DatasetInputs{Queries: Embeddings(qm), Gallery: dense(t, []float64{1, 0}, []float64{0, 1}), QueryIDs: ids, Metadata: meta, Identity: FromContent()}
	ds, err := NewDataset(in, RecordRelevance(recs))
	if err != nil {
		t.Fatal(err)
	}
	key, sum := ds.IdentityKey(), ds.Summary()
	qdata[0], ids[0], recs[0].Grade = 99, "zzz", 7
	meta["k"].([]any)[0] = "changed"
	meta["new"] = 1
	if ds.IdentityKey() != key || ds.QueryIDs()[0] != "a" || ds.Metadata()["k"].([]any)[0] != "v" || len(ds.Metadata()) != len(sum.Metadata) {
		t.Fatal("dataset changed with its inputs")
	}
	if ds.Queries().(EmbeddingItems).Matrix().(*matrix.Dense).At(0, 0) != 1 {
		t.Fatal("matrix aliased")
	}
	got := ds.QueryIDs()
	got[0] = "mutated"
	if ds.QueryIDs()[0] != "a" {
		t.Fatal("accessor aliased")
	}
}

func TestIdentityModes(t *testing.T) {
	rel := RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}})
	key := func(id Identity, q [][]float64) string {
		in := base(t)
		in.Identity = id
		in.Queries = dense(t, q...)
		ds, err := NewDataset(in, rel)
		if err != nil {
			t.Fatal(err)
		}
		return ds.IdentityKey()
	}
	q1 := [][]float64{{1, 0}, {0, 1}}
	q2 := [][]float64{{1, 0}, {0, 2}}
	if a, b := key(FromContent(), q1), key(FromContent(), q2); a == b || len(a) != 64 {
		t.Error("content keys must change with content")
	}
	if key(FromContent(), q1) != key(FromContent(), q1) {
		t.Error("content keys must be reproducible")
	}
	if key(Declared("d", "1"), q1) != key(Declared("d", "1"), q2) {
		t.Error("declared keys ignore content")
	}
	if key(Ephemeral(), q1) == key(Ephemeral(), q1) {
		t.Error("ephemeral keys never repeat")
	}
	if key(FromManifest("d", map[string]any{"a": 1}), q1) == key(FromManifest("d", map[string]any{"a": 2}), q1) {
		t.Error("manifest keys depend on the manifest")
	}
	if key(Derived("p", "op", map[string]any{"x": 1}), q1) == key(Derived("p", "op2", map[string]any{"x": 1}), q1) {
		t.Error("derived keys depend on the operation")
	}
}

func TestSummaryAndFingerprints(t *testing.T) {
	in := base(t)
	in.Identity = Declared("set", "r1")
	in.Exclusions = []Pair{{QueryID: "0", GalleryID: "2"}}
	ds, err := NewDataset(in, RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "0", GalleryID: "2", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 2}}))
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Summary()
	if s.NRelevancePairs != 2 || s.NExclusions != 1 || s.Identity["dataset_id"] != "set" || s.Identity["mode"] != "declared" || s.Metadata["precomputed_embeddings"] != true {
		t.Errorf("summary %+v", s)
	}
	a := DefaultConfig()
	b := DefaultConfig()
	b.QueryBatchSize = 3
	fa, _ := ds.ProtocolFingerprint(a)
	fb, _ := ds.ProtocolFingerprint(b)
	c := DefaultConfig()
	c.Precision = PrecisionF32
	fc, _ := ds.ProtocolFingerprint(c)
	if fa != fb || fa == fc || len(fa) != 64 {
		t.Errorf("fingerprints %s %s %s", fa, fb, fc)
	}
}

func TestBidirectionalCheck(t *testing.T) {
	in := base(t)
	ds, err := NewDataset(in, RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	if err := ds.CheckBidirectional(); err == nil || !strings.Contains(err.Error(), `missing for ["2"]`) {
		t.Errorf("got %v", err)
	}
}

func TestUnknownIDsListed(t *testing.T) {
	var recs []Record
	for i := 0; i < 13; i++ {
		recs = append(recs, Record{QueryID: "0", GalleryID: "missing-" + string(rune('a'+i)), Grade: 1, Origin: "q.tsv:" + string(rune('1'+i))})
	}
	recs = append(recs, Record{QueryID: "nope", GalleryID: "0", Grade: 1})
	_, err := NewDataset(base(t), RecordRelevance(recs))
	if err == nil {
		t.Fatal("want error")
	}
	msg := err.Error()
	for _, frag := range []string{"q.tsv:1: Relevance record references an unknown query or gallery ID", `gallery ID "missing-a"`,
		`unknown query IDs (1): ["nope"]`, `unknown gallery IDs (13): ["missing-a", `, `"missing-j", ...]`} {
		if !strings.Contains(msg, frag) {
			t.Errorf("%q lacks %q", msg, frag)
		}
	}
	if strings.Contains(msg, "missing-k") {
		t.Errorf("preview list longer than 10: %s", msg)
	}
}
