package distributed

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

func dataset(t *testing.T, q, g matrix.Matrix) *retrieval.Dataset {
	t.Helper()
	rel := make([][]float64, q.Rows())
	for i := range rel {
		rel[i] = make([]float64, g.Rows())
		rel[i][i%g.Rows()] = 1
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		Identity: retrieval.Declared("d", "1")}, retrieval.DenseRelevance(rel))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// Plan → encode every shard → merge gives back the endpoint tables row for
// row, for every shard count (more shards than rows included: N =
// min(requested, rows)), dense and CSR (SPEC §11.2).
func TestEncodeMergeRoundTrip(t *testing.T) {
	q, _ := matrix.NewDense32(2, 3, []float32{1, 0, 2, 0, 1, 1})
	g, _ := matrix.NewDense32(5, 3, []float32{1, 0, 0, 0, 1, 0, 1, 1, 0, 2, 1, 0, 1, 2, 3})
	gs, _ := matrix.NewCSR64(5, 3, []int64{0, 1, 2, 4, 5, 6}, []int32{0, 1, 0, 2, 1, 2}, []float64{1, 2, 3, 4, 5, 6})
	qs, _ := matrix.NewCSR64(2, 3, []int64{0, 1, 3}, []int32{2, 0, 1}, []float64{1, 1, 1})
	ctx := context.Background()
	for _, c := range []struct {
		name string
		q, g matrix.Matrix
	}{{"dense", q, g}, {"csr", qs, gs}} {
		for _, total := range []int{1, 2, 3, 7} {
			ds := dataset(t, c.q, c.g)
			st := artifact.New(mem.New())
			x := &extract.Precomputed{ExtractorName: "tables", Query: c.q, Gallery: c.g}
			p, err := NewPlan("run.yaml", []byte("spec"), ds, total)
			if err != nil {
				t.Fatal(err)
			}
			entry := extract.Entry{Extractor: x}
			pe, err := PlanExtractor(ctx, st, ds, "tables", entry, 2, p, total)
			if err != nil {
				t.Fatal(err)
			}
			p.Extractors = append(p.Extractors, pe)
			for side, want := range map[string]matrix.Matrix{artifact.SideQuery: c.q, artifact.SideGallery: c.g} {
				pe, ep, err := p.Endpoint("tables", side)
				if err != nil {
					t.Fatal(err)
				}
				if len(ep.Shards) != min(total, want.Rows()) {
					t.Fatalf("%s N=%d %s: %d shards", c.name, total, side, len(ep.Shards))
				}
				// Shards written in reverse order: the merge does not
				// depend on completion order.
				for i := len(ep.Shards) - 1; i >= 0; i-- {
					sh := ep.Shards[i]
					m, ids, err := Encode(ctx, ds, entry, true, side, sh)
					if err != nil {
						t.Fatal(err)
					}
					if m.Rows() != (want.Rows()-i+sh.TotalShards-1)/sh.TotalShards {
						t.Fatalf("shard %d has %d rows", i, m.Rows())
					}
					if err := Write(ctx, st, pe, ep, sh, x.Recipe(), m, ids); err != nil {
						t.Fatal(err)
					}
				}
				rows, cols, err := WriteMerged(ctx, st, pe, ep)
				if err != nil || rows != want.Rows() || cols != want.Cols() {
					t.Fatalf("merge: %d×%d, %v", rows, cols, err)
				}
				got, _, err := st.ReadEndpoint(ctx, ep.OutputKey)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(rowsOf(got), rowsOf(want)) {
					t.Errorf("%s N=%d %s: merged %v, want %v", c.name, total, side, rowsOf(got), rowsOf(want))
				}
			}
		}
	}
}

func rowsOf(m matrix.Matrix) [][]float64 {
	out := make([][]float64, m.Rows())
	for r := range out {
		out[r] = make([]float64, m.Cols())
		m.RowFloat64(r, out[r])
	}
	return out
}

// A missing shard fails the merge naming its key; an unknown extractor or
// side is an EndpointError.
func TestMergeMissingShardAndUnknownEndpoint(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(3, 2, []float64{1, 0, 0, 1, 1, 1})
	ds := dataset(t, q, g)
	st := artifact.New(mem.New())
	ctx := context.Background()
	entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}}
	p, _ := NewPlan("run.yaml", nil, ds, 3)
	pe, err := PlanExtractor(ctx, st, ds, "t", entry, 0, p, 3)
	if err != nil {
		t.Fatal(err)
	}
	p.Extractors = append(p.Extractors, pe)
	pe2, ep, _ := p.Endpoint("t", artifact.SideGallery)
	for _, sh := range ep.Shards[:2] {
		m, ids, _ := Encode(ctx, ds, entry, false, ep.Side, sh)
		if err := Write(ctx, st, pe2, ep, sh, entry.Extractor.Recipe(), m, ids); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = WriteMerged(ctx, st, pe2, ep)
	if !errors.Is(err, artifact.ErrNotFound) || !containsKey(err, ep.Shards[2].OutputKey) {
		t.Errorf("missing shard: %v", err)
	}
	var ee *EndpointError
	if _, _, err := p.Endpoint("nope", artifact.SideQuery); !errors.As(err, &ee) || ee.Msg != `the plan has no extractor "nope"` {
		t.Errorf("unknown extractor: %v", err)
	}
	if _, _, err := p.Endpoint("t", "middle"); !errors.As(err, &ee) {
		t.Errorf("bad side: %v", err)
	}
	if _, err := NewPlan("run.yaml", nil, ds, 0); err == nil {
		t.Error("total 0 accepted")
	}
}

func containsKey(err error, key string) bool {
	return err != nil && strings.Contains(err.Error(), key)
}

// A shard whose data disagree with its own metadata (an array with more
// rows than its metadata declares) fails the merge naming the shard and
// the endpoint, not only the row assembler.
func TestMergeErrorNamesTheShard(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(4, 2, []float64{1, 0, 0, 1, 1, 1, 2, 1})
	ds := dataset(t, q, g)
	st := artifact.New(mem.New())
	ctx := context.Background()
	entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}}
	p, _ := NewPlan("run.yaml", nil, ds, 2)
	pe, err := PlanExtractor(ctx, st, ds, "t", entry, 0, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	p.Extractors = append(p.Extractors, pe)
	pe2, ep, _ := p.Endpoint("t", artifact.SideGallery)
	for _, sh := range ep.Shards {
		m, ids, _ := Encode(ctx, ds, entry, false, ep.Side, sh)
		if err := Write(ctx, st, pe2, ep, sh, entry.Extractor.Recipe(), m, ids); err != nil {
			t.Fatal(err)
		}
	}
	// Shard 1 again, its metadata unchanged, its array one row longer.
	key := ep.Shards[1].OutputKey
	_, md, err := st.LoadArray(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(md, &meta); err != nil {
		t.Fatal(err)
	}
	long, _ := matrix.NewDense64(3, 2, []float64{0, 1, 2, 1, 5, 5})
	if err := st.WriteArray(ctx, key, artifact.FromMatrix(long), meta); err != nil {
		t.Skipf("the store refuses an array that disagrees with its metadata, so merge cannot meet one: %v", err)
	}
	_, _, err = WriteMerged(ctx, st, pe2, ep)
	// (The endpoint key is a prefix of the shard key, so the message must
	// say which merge step failed, not only carry the keys.)
	if err == nil || !containsKey(err, key) || !strings.Contains(err.Error(), "merge shard 1 of 2 (artifact "+key+") into "+ep.OutputKey) {
		t.Errorf("merge of an inconsistent shard: %v; want an error naming shard 1 of 2, %s and %s", err, key, ep.OutputKey)
	}
}
