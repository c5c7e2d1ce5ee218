package endpointcache

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

func dataset(t *testing.T, galleryIDs []string) *retrieval.Dataset {
	t.Helper()
	q, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0.7, 0.7}, {0, 1}})
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		GalleryIDs: galleryIDs, Identity: retrieval.Declared("d", "1")},
		retrieval.DenseRelevance([][]float64{{1, 0, 0}, {0, 0, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// scaled is a cache-safe (cache_identity) encoder doubling its inputs and
// counting rows encoded per side.
type scaled struct{ query, gallery atomic.Int64 }

func (s *scaled) Name() string        { return "scaled" }
func (s *scaled) Type() string        { return "func" }
func (s *scaled) StreamingSafe() bool { return true }
func (s *scaled) Modality() string    { return extract.ModalityEmbeddings }
func (s *scaled) Recipe() map[string]any {
	return map[string]any{"name": "scaled", "cache_identity": "x2"}
}
func (s *scaled) Encode(_ context.Context, b extract.Batch) (matrix.Matrix, error) {
	n := map[string]*atomic.Int64{"query": &s.query, "gallery": &s.gallery}[b.Side]
	n.Add(int64(b.Items.Len()))
	m := b.Items.(retrieval.EmbeddingItems).Matrix().(*matrix.Dense)
	rows := make([][]float64, m.Rows())
	for i := range rows {
		for j := 0; j < m.Cols(); j++ {
			rows[i] = append(rows[i], 2*m.At(i, j))
		}
	}
	return matrix.FromRows(rows)
}

// Miss writes both endpoints, hit reads them back bit for bit without
// encoding, a partial hit encodes only the missing side, and an artifact
// whose identity fields disagree (another ID list under the key) is an
// error naming the key.
func TestEncodeCached(t *testing.T) {
	ctx := context.Background()
	raw := mem.New()
	cache := New(artifact.New(raw))
	ds := dataset(t, nil)
	x := &scaled{}
	e := extract.Entry{Extractor: x}
	cfg := extract.DefaultEmbeddingConfig()
	enc, status, err := extract.EncodeCached(ctx, ds, e, cfg, nil, cache, true)
	if err != nil || status != extract.CacheMiss || x.query.Load() != 2 || x.gallery.Load() != 3 {
		t.Fatalf("first: %v %s %d %d", err, status, x.query.Load(), x.gallery.Load())
	}
	x.query.Store(0)
	x.gallery.Store(0)
	hit, status, err := extract.EncodeCached(ctx, ds, e, cfg, nil, cache, true)
	if err != nil || status != extract.CacheHit || x.query.Load()+x.gallery.Load() != 0 {
		t.Fatalf("second: %v %s %d %d", err, status, x.query.Load(), x.gallery.Load())
	}
	if !reflect.DeepEqual(hit.Query, enc.Query) || !reflect.DeepEqual(hit.Gallery, enc.Gallery) {
		t.Errorf("cached endpoints differ: %v %v, encoded %v %v", hit.Query, hit.Gallery, enc.Query, enc.Gallery)
	}
	// cache disabled: encodes, reads and writes nothing.
	if _, status, err := extract.EncodeCached(ctx, ds, e, cfg, nil, cache, false); err != nil || status != extract.CacheDisabled || x.query.Load() != 2 {
		t.Errorf("disabled: %v %s %d", err, status, x.query.Load())
	}

	// Partial: the query endpoint is gone, the gallery one still cached.
	rh, _ := extract.RecipeHash(x)
	qref := extract.EndpointRef{DatasetIdentityKey: ds.IdentityKey(), RecipeHash: rh, Side: "query", IDs: ds.QueryIDs()}
	qkey, _ := Key(qref)
	// A key without its manifest does not exist (SPEC §10.5).
	if err := raw.Delete(ctx, qkey+"/manifest.json"); err != nil {
		t.Fatal(err)
	}
	x.query.Store(0)
	x.gallery.Store(0)
	if _, status, err := extract.EncodeCached(ctx, ds, e, cfg, nil, cache, true); err != nil || status != extract.CacheMiss ||
		x.query.Load() != 2 || x.gallery.Load() != 0 {
		t.Errorf("partial: %v %s query %d gallery %d", err, status, x.query.Load(), x.gallery.Load())
	}

	// An artifact at the key with another ID list is refused, naming the key.
	gref := qref
	gref.Side, gref.IDs = "gallery", []string{"a", "b", "c"}
	gkey, _ := Key(gref)
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 1}})
	if err := cache.Save(ctx, gref, g); err != nil {
		t.Fatal(err)
	}
	_, _, err = extract.EncodeCached(ctx, ds, e, cfg, nil, cache, true)
	if !errors.Is(err, artifact.ErrCheck) || !strings.Contains(err.Error(), gkey) || !strings.Contains(err.Error(), "ids_sha256") {
		t.Errorf("foreign artifact: %v", err)
	}
}
