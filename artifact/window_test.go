package artifact

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/memory"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// windowFixture is a random float32 problem in a store: every gallery row
// is a positive of query (row mod nq), plus random extra positives, or
// label classes.
func windowFixture(t testing.TB, st store.Store, nq, ng, d int, labels bool, seed uint64) scoreFixture {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	vals := func(n int) []float32 {
		v := make([]float32, n*d)
		for i := range v {
			v[i] = float32(r.IntN(9)-4) / 4 // a small grid: ties happen
		}
		for i := 0; i < n; i++ {
			v[i*d] = 1 // no zero rows
		}
		return v
	}
	q, _ := matrix.NewDense32(nq, d, vals(nq))
	g, _ := matrix.NewDense32(ng, d, vals(ng))
	qids, gids := make([]string, nq), make([]string, ng)
	for i := range qids {
		qids[i] = fmt.Sprintf("q%d", i)
	}
	for i := range gids {
		gids[i] = fmt.Sprintf("g%d", i)
	}
	var rel retrieval.Relevance
	if labels {
		ql, gl := make([]string, nq), make([]string, ng)
		for i := range ql {
			ql[i] = fmt.Sprint("c", i%3)
		}
		for i := range gl {
			gl[i] = fmt.Sprint("c", r.IntN(3))
		}
		rel = retrieval.LabelRelevance(ql, gl)
	} else {
		var recs []retrieval.Record
		for i := range ng {
			recs = append(recs, retrieval.Record{QueryID: qids[i%nq], GalleryID: gids[i], Grade: float64(1 + r.IntN(2))})
		}
		rel = retrieval.RecordRelevance(recs)
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		QueryIDs: qids, GalleryIDs: gids, Identity: retrieval.Declared("window", fmt.Sprint(seed))}, rel)
	if err != nil {
		t.Fatal(err)
	}
	f := scoreFixture{s: New(st), ds: ds, q: q, g: g}
	f.qk, f.gk = f.writeEndpoint(t, "e/query", SideQuery, q, qids), f.writeEndpoint(t, "e/gallery", SideGallery, g, gids)
	if f.rk, _, err = f.s.WriteRelevance(ctx, ds, ""); err != nil {
		t.Fatal(err)
	}
	return f
}

// shardLocal runs every shard's positives stage, then every count stage,
// then finalize.
func shardLocal(f scoreFixture, req ScoreRequest, n int, layout rank.ShardLayout) (*Scored, error) {
	for i := range n {
		if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: i, Total: n, Layout: layout}); err != nil {
			return nil, err
		}
	}
	for i := range n {
		if _, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: n, Layout: layout}); err != nil {
			return nil, err
		}
	}
	return f.s.FinalizeScore(ctx, req, n, layout.String())
}

// Shards that read only their rows (positives stage, count stage,
// finalize) write the score an unsharded run writes, bit for bit: qrels
// and labels, both directions, both precisions, N ∈ {1, 2, 3, 7}.
func TestShardLocalScoreEqualsScore(t *testing.T) {
	for _, labels := range []bool{false, true} {
		for _, bidir := range []bool{false, true} {
			for _, prec := range []string{retrieval.PrecisionF64, retrieval.PrecisionF32} {
				f := windowFixture(t, mem.New(), 9, 40, 5, labels, 3)
				cfg := retrieval.DefaultConfig()
				cfg.Ks, cfg.PrimaryMetric, cfg.Bidirectional, cfg.Precision = []int{1, 5}, "map", bidir, prec
				cfg.Similarity = []string{retrieval.Cosine, retrieval.Dot, retrieval.SquaredL2}[len(prec)%3]
				req := f.request(cfg)
				req.OutputKey = fmt.Sprintf("s/%v-%v-%s/whole", labels, bidir, prec)
				want, err := f.s.Score(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{1, 2, 3, 7} {
					for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
						req.OutputKey = fmt.Sprintf("s/%v-%v-%s/%d-%s", labels, bidir, prec, n, layout)
						got, err := shardLocal(f, req, n, layout)
						if err != nil {
							t.Fatalf("labels %v bidir %v %s N=%d %s: %v", labels, bidir, prec, n, layout, err)
						}
						if a, b := evaluationJSON(t, f.s, got), evaluationJSON(t, f.s, want); a != b {
							t.Fatalf("labels %v bidir %v %s N=%d %s:\nshards %s\nscore  %s", labels, bidir, prec, n, layout, a, b)
						}
					}
				}
			}
		}
	}
}

// A count stage without every positives stage names the missing one, and
// stages of two layouts do not mix.
func TestPositivesStageMissing(t *testing.T) {
	f := windowFixture(t, mem.New(), 4, 12, 3, false, 4)
	req := f.request(retrieval.DefaultConfig())
	if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: 1, Total: 3}); err != nil {
		t.Fatal(err)
	}
	_, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: 0, Total: 3})
	if !errors.Is(err, ErrCheck) || !strings.Contains(err.Error(), "missing positives stage: gallery shard 0 of 3") {
		t.Fatalf("got %v", err)
	}
	for _, i := range []int{0, 2} {
		if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: i, Total: 3, Layout: rank.Modulo}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: 0, Total: 3}); !errors.Is(err, ErrCheck) || !strings.Contains(err.Error(), `shard_by "contiguous" differs from "modulo"`) {
		t.Fatalf("mixed layouts: %v", err)
	}
}

// The memory a worker checks against the budget is its own rows: four
// shards fit a budget of 40 % of what the unsharded score needs, which
// fails with the memory message; a shard reads about its quarter of the
// gallery file; a damaged chunk fails exactly the shards whose rows it
// holds, naming the key and the byte range.
func TestShardLocalMemoryReadsAndDamage(t *testing.T) {
	const nq, ng, d = 40, 70_000, 96 // gallery: 26.9 MB, four chunks
	cs := &countingStore{Store: mem.New()}
	f := windowFixture(t, cs, nq, ng, d, false, 5)
	cfg := retrieval.DefaultConfig()
	cfg.Similarity, cfg.Precision = retrieval.Dot, retrieval.PrecisionF32
	req := f.request(cfg)
	req.OutputKey = "s/whole"
	want, err := f.s.Score(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	need := int64(nq+ng) * d * 4
	budget := memory.WithLimit(ctx, need*4/10)
	req.OutputKey = "s/budget"
	var be *memory.BudgetError
	if _, err := f.s.Score(budget, req); !errors.As(err, &be) || !strings.Contains(err.Error(), "exceeding the memory budget") {
		t.Fatalf("unsharded under 40%%: %v", err)
	}
	req.OutputKey = "s/sharded"
	man, err := f.s.Manifest(ctx, f.gk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		cs.read.Store(0)
		if _, _, err := f.s.ScorePositivesStage(budget, req, rank.Shard{Index: i, Total: 4}); err != nil {
			t.Fatal(err)
		}
		// Its quarter of the gallery, at most two partly used chunks and
		// the header's more, plus the queries and small files.
		if n := cs.read.Load(); n > man.Array.SizeBytes/4+3*chunkdigest.ChunkBytes {
			t.Fatalf("shard %d read %d bytes of a %d-byte gallery", i, n, man.Array.SizeBytes)
		}
	}
	for i := range 4 {
		if _, err := f.s.ScorePartial(budget, req, rank.Shard{Index: i, Total: 4}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.s.FinalizeScore(budget, req, 4, "")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := evaluationJSON(t, f.s, got), evaluationJSON(t, f.s, want); a != b {
		t.Fatalf("under the budget:\nshards %s\nscore  %s", a, b)
	}

	// Damage chunk 2 (bytes [16 MiB, 24 MiB)): rows 43,690–65,535 of the
	// gallery, held by shards 2 and 3.
	name := f.gk + "/" + man.Array.Filename
	b := objectBytes(t, cs, name)
	b[2*chunkdigest.ChunkBytes+4321] ^= 0x08
	putBytes(t, cs, name, b)
	want2 := fmt.Sprintf("artifact %s: %s: checksum mismatch in bytes [%d, %d) (chunk 2)", f.gk, man.Array.Filename, 2*chunkdigest.ChunkBytes, 3*chunkdigest.ChunkBytes)
	for i := range 4 {
		_, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: 4})
		if i < 2 && err != nil {
			t.Fatalf("shard %d reads clean chunks: %v", i, err)
		}
		if i >= 2 && (!errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), want2)) {
			t.Fatalf("shard %d: %v, want %q", i, err, want2)
		}
	}
}

// After the positives stages, a one-direction count stage writes its
// counts alone (the scores are the stages', read once by finalize), and a
// positives stage holds the scores alone (the pairs are the relevance's).
func TestShardLocalArtifactsHoldNoPairs(t *testing.T) {
	f := windowFixture(t, mem.New(), 9, 40, 5, true, 5)
	cfg := retrieval.DefaultConfig()
	req := f.request(cfg)
	req.OutputKey = "s/compact"
	if _, err := shardLocal(f, req, 3, rank.Modulo); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		for _, c := range []struct {
			key  string
			want []string
		}{{PartialKey(req.OutputKey, i, 3), PartialCountColumns}, {PositivesKey(req.OutputKey, i, 3), PositivesColumns}} {
			m, md, err := f.s.LoadArray(ctx, c.key)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Columns []string `json:"columns"`
			}
			if err := json.Unmarshal(md, &doc); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(doc.Columns, c.want) || m.Cols() != 1 {
				t.Fatalf("%s: columns %v, %d array columns, want %v and one", c.key, doc.Columns, m.Cols(), c.want)
			}
		}
	}
}

// A positives stage holding fewer scores than its rows' eligible positives
// (written for another relevance, say) fails the count stage naming the
// stage's key.
func TestShortPositivesStageNamesItsKey(t *testing.T) {
	f := windowFixture(t, mem.New(), 9, 40, 5, true, 9)
	req := f.request(retrieval.DefaultConfig())
	req.OutputKey = "s/short"
	for i := range 3 {
		if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: i, Total: 3}); err != nil {
			t.Fatal(err)
		}
	}
	key := PositivesKey(req.OutputKey, 1, 3)
	m, md, err := f.s.LoadArray(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var doc EvaluationPositives
	if err := json.Unmarshal(md, &doc); err != nil {
		t.Fatal(err)
	}
	scores := m.(*matrix.Dense).Float64Data()
	doc.NPositives--
	short, err := matrix.NewDense64(len(scores)-1, 1, scores[:len(scores)-1])
	if err != nil {
		t.Fatal(err)
	}
	if err := f.s.WriteArray(ctx, key, FromMatrix(short), &doc); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.ScorePartial(ctx, req, rank.Shard{Index: 0, Total: 3})
	want := fmt.Sprintf("foreign positives stage: it lists %d scores, the relevance gives gallery shard 1's rows %d eligible positives", len(scores)-1, len(scores))
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error naming %s: %s", err, key, want)
	}
}

// A gallery shard's worker hashes no gallery ID (SPEC §11.3): a relevance
// artifact whose fingerprint does not verify, and a gallery endpoint whose
// ID list differs from the relevance's, pass every shard's stages, and
// finalize fails with the unsharded score's message, byte for byte. A
// one-direction shard keeps no gallery ID, yet its zero-norm message names
// the row's ID as the unsharded score does.
func TestShardsLeaveWholeListChecksToFinalize(t *testing.T) {
	t.Parallel()
	for _, labels := range []bool{false, true} {
		f := windowFixture(t, mem.New(), 6, 30, 4, labels, 11)
		cfg := retrieval.DefaultConfig()
		cfg.Ks, cfg.PrimaryMetric = []int{1, 5}, "map"

		// Relevance whose stored fingerprint is not its content's.
		var doc map[string]any
		if _, err := f.s.ReadJSON(ctx, f.rk, &doc); err != nil {
			t.Fatal(err)
		}
		doc["protocol_fingerprint"] = strings.Repeat("0", 64)
		if err := f.s.WriteJSON(ctx, "rel/tampered", doc); err != nil {
			t.Fatal(err)
		}
		tampered := f.request(cfg)
		tampered.RelevanceKey = "rel/tampered"

		// A gallery endpoint of the same rows under other IDs.
		gids := slices.Clone(f.ds.GalleryIDs())
		gids[17] = "someone else"
		otherIDs := f.request(cfg)
		otherIDs.GalleryKey = f.writeEndpoint(t, "e/gallery-other-ids", SideGallery, f.g, gids)

		for name, req := range map[string]ScoreRequest{"fingerprint": tampered, "gallery IDs": otherIDs} {
			req.OutputKey = "s/" + name + "/whole"
			_, want := f.s.Score(ctx, req)
			if want == nil {
				t.Fatalf("labels %v, %s: the unsharded score passed", labels, name)
			}
			for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
				req.OutputKey = fmt.Sprintf("s/%s/%s", name, layout)
				for i := range 3 {
					if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: i, Total: 3, Layout: layout}); err != nil {
						t.Fatalf("labels %v, %s, %s positives stage %d: %v", labels, name, layout, i, err)
					}
				}
				for i := range 3 {
					if _, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: 3, Layout: layout}); err != nil {
						t.Fatalf("labels %v, %s, %s count stage %d: %v", labels, name, layout, i, err)
					}
				}
				_, err := f.s.FinalizeScore(ctx, req, 3, layout.String())
				if err == nil || err.Error() != want.Error() {
					t.Fatalf("labels %v, %s, %s finalize: %v, want the unsharded score's %q", labels, name, layout, err, want)
				}
			}
		}

		// Gallery rows 13 and 16 (one contiguous shard, one modulo shard)
		// have zero norm: under cosine the shard holding them fails with
		// the unsharded message, which names both IDs.
		vals := slices.Clone(f.g.Float32Data())
		clear(vals[13*4 : 14*4])
		clear(vals[16*4 : 17*4])
		zg, _ := matrix.NewDense32(30, 4, vals)
		req := f.request(cfg)
		req.Config.Similarity = retrieval.Cosine
		req.GalleryKey = f.writeEndpoint(t, "e/gallery-zero", SideGallery, zg, f.ds.GalleryIDs())
		req.OutputKey = "s/zero/whole"
		_, want := f.s.Score(ctx, req)
		if want == nil || !strings.Contains(want.Error(), `index 13 (ID "g13"), index 16 (ID "g16")`) {
			t.Fatalf("labels %v: unsharded score with a zero row: %v", labels, want)
		}
		for _, layout := range []rank.ShardLayout{rank.Contiguous, rank.Modulo} {
			req.OutputKey = "s/zero/" + layout.String()
			for i := range 3 {
				shard := rank.Shard{Index: i, Total: 3, Layout: layout}
				_, _, err := f.s.ScorePositivesStage(ctx, req, shard)
				if holds := shard.Holds(30, 13); holds != (err != nil) || (holds && err.Error() != want.Error()) {
					t.Fatalf("labels %v, %s shard %d (holds row 13: %v): %v, want %q", labels, layout, i, holds, err, want)
				}
			}
		}
	}
}
