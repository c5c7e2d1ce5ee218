package retrieval

import (
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// The streamed label triples hash exactly as the materialised pairs: the
// content identity key, the relevance and protocol fingerprints agree for
// query counts whose indices cross digit-width boundaries (templates per
// width), one to several classes, and batches of 64 queries (pipelined
// formatting) ending anywhere; a background identity gives the same key.
func TestLabelTriplesHashAsMaterialised(t *testing.T) {
	for _, nq := range []int{1, 9, 10, 11, 64, 65, 99, 100, 101, 129, 1001} {
		for _, nc := range []int{1, 3} {
			ng := 23
			gl := make([]string, ng)
			gids := make([]string, ng)
			for i := range gl {
				gl[i], gids[i] = "c"+strconv.Itoa(i%nc), "g"+strconv.Itoa(i)
			}
			ql := make([]string, nq)
			qids := make([]string, nq)
			for i := range ql {
				ql[i], qids[i] = "c"+strconv.Itoa((i*7)%nc), "q"+strconv.Itoa(i)
			}
			qv, gv := make([]float64, nq), make([]float64, ng)
			for i := range qv {
				qv[i] = float64(i + 1)
			}
			for i := range gv {
				gv[i] = float64(i + 1)
			}
			qm, _ := matrix.NewDense64(nq, 1, qv)
			gm, _ := matrix.NewDense64(ng, 1, gv)
			build := func(opts ...Option) *Dataset {
				ds, err := NewDataset(DatasetInputs{Queries: Embeddings(qm), Gallery: Embeddings(gm), QueryIDs: qids, GalleryIDs: gids,
					Identity: FromContent()}, LabelRelevance(ql, gl), opts...)
				if err != nil {
					t.Fatal(err)
				}
				return ds
			}
			a, b := build(), build(WithMaterialisedLabels())
			if a.Classes() == nil || b.Classes() != nil {
				t.Fatal("representations not as requested")
			}
			bg := build(WithBackgroundIdentity()) // hashed while the test goes on
			if a.IdentityKey() != b.IdentityKey() || bg.IdentityKey() != a.IdentityKey() || bg.Summary().Identity["key"] != a.IdentityKey() {
				t.Fatalf("nq %d, %d classes: identity keys differ", nq, nc)
			}
			fa, err1 := a.ProtocolFingerprint(DefaultConfig())
			fb, err2 := b.ProtocolFingerprint(DefaultConfig())
			if err1 != nil || err2 != nil || fa != fb {
				t.Fatalf("nq %d, %d classes: fingerprints %s %s (%v %v)", nq, nc, fa, fb, err1, err2)
			}
		}
	}
}
