package distributed

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// centering is a same-modality StatefulFitter: it subtracts the gallery's
// column means (fitted on the gallery) from every row of its tables.
type centering struct {
	q, g *matrix.Dense
	mean []float64 // nil until fitted or loaded
	fits int
}

func (c *centering) Name() string        { return "centering" }
func (c *centering) Type() string        { return "test_centering" }
func (c *centering) StreamingSafe() bool { return true }
func (c *centering) Modality() string    { return extract.ModalityEmbeddings }
func (c *centering) Recipe() map[string]any {
	return map[string]any{"name": "centering", "cache_identity": "centering-v1"}
}

func (c *centering) Fit(ctx context.Context, gallery retrieval.Items) error {
	c.fits++
	c.mean = make([]float64, c.g.Cols())
	row := make([]float64, c.g.Cols())
	for r := 0; r < c.g.Rows(); r++ {
		c.g.RowFloat64(r, row)
		for j, v := range row {
			c.mean[j] += v
		}
	}
	for j := range c.mean {
		c.mean[j] /= float64(c.g.Rows())
	}
	return nil
}

func (c *centering) MarshalState() ([]byte, error) {
	var b []byte
	for _, v := range c.mean {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b, nil
}

func (c *centering) UnmarshalState(b []byte) error {
	if len(b) != 8*c.g.Cols() {
		return fmt.Errorf("state of %d bytes, want %d", len(b), 8*c.g.Cols())
	}
	c.mean = make([]float64, c.g.Cols())
	for j := range c.mean {
		c.mean[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
	}
	return nil
}

func (c *centering) Encode(ctx context.Context, b extract.Batch) (matrix.Matrix, error) {
	if c.mean == nil {
		return nil, errors.New("centering: not fitted")
	}
	t := c.q
	if b.Side == artifact.SideGallery {
		t = c.g
	}
	n, d := b.Items.Len(), t.Cols()
	out := make([]float64, 0, n*d)
	row := make([]float64, d)
	for i := range n {
		t.RowFloat64(b.Row(i), row)
		for j, v := range row {
			out = append(out, v-c.mean[j])
		}
	}
	return matrix.NewDense64(n, d, out)
}

// SPEC §11.2 with a fitted same-modality extractor: plan fits it once on
// the gallery and stores its state; workers (fresh extractors, never
// fitted) load that state, and the merged endpoints equal, bit for bit,
// what the single-process encoder (extract.Encode, which fits) gives, for
// N ∈ {1, 3}.
func TestFittedExtractorShards(t *testing.T) {
	q, _ := matrix.NewDense64(4, 3, []float64{1, 2, 3, 0.5, 0.25, 1, 3, 1, 0.1, 2, 2, 2})
	g, _ := matrix.NewDense64(7, 3, []float64{1, 0, 0, 0.3, 1, 0, 1, 1, 0.7, 2, 1, 0, 1, 2, 3, 0.1, 0.2, 0.3, 5, 1, 1})
	ds := dataset(t, q, g)
	ctx := context.Background()
	local, err := extract.Encode(ctx, ds, extract.Entry{Extractor: &centering{q: q, g: g}}, extract.DefaultEmbeddingConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	for _, total := range []int{1, 3} {
		st := artifact.New(mem.New())
		planner := &centering{q: q, g: g}
		p, _ := NewPlan("run.yaml", []byte("spec"), ds, total)
		pe, err := PlanExtractor(ctx, st, ds, "centering", extract.Entry{Extractor: planner}, 2, p, total)
		if err != nil {
			t.Fatal(err)
		}
		p.Extractors = append(p.Extractors, pe)
		if planner.fits != 1 || pe.FittedStateKey == nil || *pe.FittedStateKey != artifact.FittedKey(ds.IdentityKey(), pe.RecipeHash) {
			t.Fatalf("N=%d: fits %d, fitted_state_key %v", total, planner.fits, pe.FittedStateKey)
		}
		var doc artifact.FittedState
		if _, err := st.ReadJSON(ctx, *pe.FittedStateKey, &doc); err != nil || doc.ArtifactType != artifact.TypeFittedState || doc.FitSide != "gallery" || doc.StateBase64 == "" {
			t.Fatalf("fitted state %+v, %v", doc, err)
		}
		for side, want := range map[string]matrix.Matrix{artifact.SideQuery: local.Query, artifact.SideGallery: local.Gallery} {
			pe, ep, _ := p.Endpoint("centering", side)
			for _, sh := range ep.Shards {
				worker := &centering{q: q, g: g} // a fresh process: never fitted
				if err := LoadState(ctx, st, pe, worker); err != nil {
					t.Fatal(err)
				}
				m, ids, err := Encode(ctx, ds, extract.Entry{Extractor: worker}, true, side, sh)
				if err != nil {
					t.Fatal(err)
				}
				if worker.fits != 0 {
					t.Fatal("a worker fitted")
				}
				if err := Write(ctx, st, pe, ep, sh, worker.Recipe(), m, ids); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := WriteMerged(ctx, st, pe, ep); err != nil {
				t.Fatal(err)
			}
			got, _, err := st.ReadEndpoint(ctx, ep.OutputKey)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(bitsOf(got), bitsOf(want)) {
				t.Errorf("N=%d %s: sharded %v, local %v", total, side, rowsOf(got), rowsOf(want))
			}
		}
		// Without the state a worker cannot encode: the state is what
		// makes the shards equal.
		pe0, _, _ := p.Endpoint("centering", artifact.SideQuery)
		if _, _, err := Encode(ctx, ds, extract.Entry{Extractor: &centering{q: q, g: g}}, true, artifact.SideQuery, pe0.Endpoints[0].Shards[0]); err == nil {
			t.Error("an unfitted worker encoded")
		}
	}
}

func bitsOf(m matrix.Matrix) [][]uint64 {
	out := make([][]uint64, m.Rows())
	row := make([]float64, m.Cols())
	for r := range out {
		m.RowFloat64(r, row)
		for _, v := range row {
			out[r] = append(out[r], math.Float64bits(v))
		}
	}
	return out
}

// A Fitter that is not a StatefulFitter cannot be planned; a state of
// another recipe is refused by LoadState, naming its key.
func TestFittedStateErrors(t *testing.T) {
	q, _ := matrix.NewDense64(2, 2, []float64{1, 0, 0, 1})
	g, _ := matrix.NewDense64(3, 2, []float64{1, 0, 0, 1, 1, 1})
	ds := dataset(t, q, g)
	ctx := context.Background()
	st := artifact.New(mem.New())
	p, _ := NewPlan("run.yaml", nil, ds, 2)
	type plainFitter struct {
		extract.Encoder
		extract.Fitter
	}
	x := plainFitter{Encoder: &centering{q: q, g: g}, Fitter: &centering{q: q, g: g}}
	if _, err := PlanExtractor(ctx, st, ds, "plain", extract.Entry{Extractor: x}, 0, p, 2); err == nil ||
		err.Error() != "Extractor plain cannot be distributed: fitted state is not serialisable" {
		t.Errorf("plain fitter: %v", err)
	}
	pe, err := PlanExtractor(ctx, st, ds, "centering", extract.Entry{Extractor: &centering{q: q, g: g}}, 0, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	other := pe
	other.RecipeHash = strings.Repeat("0", 64)
	err = LoadState(ctx, st, &other, &centering{q: q, g: g})
	if !errors.Is(err, artifact.ErrCheck) || !strings.Contains(err.Error(), *pe.FittedStateKey) {
		t.Errorf("foreign state: %v", err)
	}
	// A no-op Func (no FitFunc) is no fitter: it plans without state.
	fn := &extract.Func{ExtractorName: "f", Serves: extract.ModalityEmbeddings, Streaming: true,
		EncodeFunc: func(ctx context.Context, b extract.Batch) (matrix.Matrix, error) { return nil, nil }}
	if pe, err := PlanExtractor(ctx, st, ds, "f", extract.Entry{Extractor: fn}, 0, p, 2); err != nil || pe.FittedStateKey != nil {
		t.Errorf("Func without FitFunc: %+v, %v", pe, err)
	}
}
