package artifact

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/rank"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// generated is an endpoint produced batch by batch (never held whole).
type generated struct{ rows, cols int }

func (g generated) Rows() int           { return g.rows }
func (g generated) Cols() int           { return g.cols }
func (g generated) DType() matrix.DType { return matrix.Float32 }
func (g generated) Sparse() bool        { return false }

func (g generated) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	per := max(1, DefaultBatchBytes/(4*g.cols))
	buf := make([]float32, per*g.cols)
	for lo := 0; lo < g.rows; lo += per {
		n := min(per, g.rows-lo)
		v := buf[:n*g.cols]
		for i := range v {
			v[i] = float32((lo*g.cols+i)%1000) / 1000
		}
		m, _ := matrix.NewDense32(n, g.cols, v)
		if err := yield(m); err != nil {
			return err
		}
	}
	return nil
}

// Write and verified streaming read of a 20,000 × 768 float32 endpoint
// (61 MB) on the local store; bench/artifacts/run.sh runs the 614 MB case
// against cp with peak RSS.
func BenchmarkLocalEndpointWrite(b *testing.B) {
	st, err := local.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s, src := New(st), generated{20_000, 768}
	b.SetBytes(int64(src.rows * src.cols * 4))
	for b.Loop() {
		if err := s.WriteArray(context.Background(), "e", src, map[string]any{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLocalEndpointVerifiedRead(b *testing.B) {
	st, err := local.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	s, src := New(st), generated{20_000, 768}
	if err := s.WriteArray(context.Background(), "e", src, map[string]any{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(src.rows * src.cols * 4))
	for b.Loop() {
		if _, err := s.StreamArray(context.Background(), "e", func(matrix.Matrix) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRelevanceView is what a gallery shard's worker pays for the
// relevance before scoring (one of 16 contiguous shards held): the
// document streamed, every gallery ID hashed twice, the held IDs kept.
func BenchmarkRelevanceView(b *testing.B) {
	const nq, ng, shards = 1000, 1_000_000, 16
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.IDsOnly(nq), Gallery: retrieval.IDsOnly(ng),
		Identity: retrieval.Declared("bench", "1")}, retrieval.RecordRelevance(benchRecords(nq, ng)))
	if err != nil {
		b.Fatal(err)
	}
	s := New(mem.New())
	key, _, err := s.WriteRelevance(ctx, ds, "")
	if err != nil {
		b.Fatal(err)
	}
	sh := rank.Shard{Index: 3, Total: shards, Layout: rank.Contiguous}
	lo, hi := sh.Range(ng)
	b.ResetTimer()
	for range b.N {
		if _, err := s.ReadRelevanceView(ctx, key, func(g int) bool { return g >= lo && g < hi }); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRecords gives query q one positive, gallery row q·(ng/nq) (IDs are
// the row numbers).
func benchRecords(nq, ng int) []retrieval.Record {
	out := make([]retrieval.Record, nq)
	for q := range out {
		out[q] = retrieval.Record{QueryID: strconv.Itoa(q), GalleryID: strconv.Itoa(q * (ng / nq)), Grade: 1}
	}
	return out
}

// The peak heap of a bidirectional finalize per reverse query (one per
// gallery row): four gallery shards of a 100,000-row gallery on a local
// store, finalized once per iteration; reported as
// peak-heap-B/reverse-query (the heap in use sampled every millisecond,
// over the heap before finalize).
func BenchmarkFinalizeBidirectional(b *testing.B) {
	const ng, n = 100_000, 4
	ls, err := local.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	f := windowFixture(b, ls, 500, ng, 8, false, 3)
	cfg := retrieval.DefaultConfig()
	cfg.Bidirectional = true
	req := f.request(cfg)
	req.OutputKey = "s/bidi"
	for i := range n {
		if _, _, err := f.s.ScorePositivesStage(ctx, req, rank.Shard{Index: i, Total: n}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range n {
		if _, err := f.s.ScorePartial(ctx, req, rank.Shard{Index: i, Total: n}); err != nil {
			b.Fatal(err)
		}
	}
	var worst uint64
	for b.Loop() {
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		done := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			var ms runtime.MemStats
			for {
				select {
				case <-done:
					return
				case <-time.After(time.Millisecond):
				}
				runtime.ReadMemStats(&ms)
				peak.Store(max(peak.Load(), ms.HeapInuse))
			}
		}()
		if _, err := f.s.FinalizeScore(ctx, req, n, ""); err != nil {
			b.Fatal(err)
		}
		close(done)
		<-sampled
		if p := peak.Load(); p > base.HeapInuse {
			worst = max(worst, p-base.HeapInuse)
		}
	}
	b.ReportMetric(float64(worst)/ng, "peak-heap-B/reverse-query")
}
