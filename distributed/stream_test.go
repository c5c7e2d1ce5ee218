package distributed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/x448/float16"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// rowEncoder is a fake extractor whose row r is a function of its input
// row and of r itself (so a row handed to the encoder under the wrong
// endpoint index gives a different vector); it counts its calls and checks
// that each item's ID is its row's.
type rowEncoder struct {
	safe   bool
	ids    []string
	calls  int
	widest int
}

func (e *rowEncoder) Name() string           { return "rows" }
func (e *rowEncoder) Type() string           { return "test" }
func (e *rowEncoder) Recipe() map[string]any { return map[string]any{"name": "rows"} }
func (e *rowEncoder) StreamingSafe() bool    { return e.safe }
func (e *rowEncoder) Modality() string       { return retrieval.ModalityEmbeddings }

func (e *rowEncoder) Encode(_ context.Context, b extract.Batch) (matrix.Matrix, error) {
	e.calls++
	e.widest = max(e.widest, b.Items.Len())
	in := b.Items.(retrieval.EmbeddingItems).Matrix()
	n, d := in.Rows(), in.Cols()
	out := make([]float32, 0, n*d)
	row := make([]float64, d)
	for i := range n {
		r := b.Row(i)
		if b.IDs[i] != e.ids[r] {
			return nil, fmt.Errorf("item %d (row %d) has ID %q, want %q", i, r, b.IDs[i], e.ids[r])
		}
		in.RowFloat64(i, row)
		for j, v := range row {
			out = append(out, float32(math.Sin(v*float64(j+1))+float64(r)/7))
		}
	}
	return matrix.NewDense32(n, d, out)
}

func randomDense64(rows, cols int, seed uint64) *matrix.Dense {
	rng := rand.New(rand.NewPCG(seed, 7))
	v := make([]float64, rows*cols)
	for i := range v {
		v[i] = rng.NormFloat64()
	}
	m, _ := matrix.NewDense64(rows, cols, v)
	return m
}

func float32Bits(t *testing.T, m matrix.Matrix) []float32 {
	t.Helper()
	d, ok := m.(*matrix.Dense)
	if !ok || d.DType() != matrix.Float32 {
		t.Fatalf("%T %v, want a float32 Dense", m, m.DType())
	}
	return d.Float32Data()
}

// SPEC §11.2: with streaming on, a streaming-safe extractor encodes a
// modulo shard's rows i, i+N, … in batches of the shard's batch size (one
// gathered extract.Batch per call), and the vectors equal, bit for bit,
// those of one row per call and of the unsharded endpoint. An extractor
// that is not streaming-safe still gets one row per call.
func TestEncodeModuloShardBatched(t *testing.T) {
	const rows, cols, batch = 103, 5, 8
	q := randomDense64(3, cols, 1)
	g := randomDense64(rows, cols, 2)
	ds := dataset(t, q, g)
	ctx := context.Background()
	whole, _, err := Encode(ctx, ds, extract.Entry{Extractor: &rowEncoder{safe: true, ids: ds.GalleryIDs()}}, true, artifact.SideGallery,
		Shard{ShardIndex: 0, TotalShards: 1, BatchSize: batch})
	if err != nil {
		t.Fatal(err)
	}
	wholeRows := float32Bits(t, whole)
	for _, n := range []int{2, 3, 7} {
		for i := range n {
			sh := Shard{ShardIndex: i, TotalShards: n, BatchSize: batch}
			shardRows := (rows - i + n - 1) / n
			batched := &rowEncoder{safe: true, ids: ds.GalleryIDs()}
			got, _, err := Encode(ctx, ds, extract.Entry{Extractor: batched}, true, artifact.SideGallery, sh)
			if err != nil {
				t.Fatal(err)
			}
			single := &rowEncoder{safe: true, ids: ds.GalleryIDs()}
			want, _, err := Encode(ctx, ds, extract.Entry{Extractor: single}, false, artifact.SideGallery, sh)
			if err != nil {
				t.Fatal(err)
			}
			if wantCalls := (shardRows + batch - 1) / batch; batched.calls != wantCalls || batched.widest != min(batch, shardRows) {
				t.Errorf("N=%d shard %d: %d encoder calls of at most %d rows, want %d of at most %d", n, i, batched.calls, batched.widest, wantCalls, min(batch, shardRows))
			}
			if single.calls != shardRows || single.widest != 1 {
				t.Errorf("N=%d shard %d unbatched: %d calls of at most %d rows, want %d of 1", n, i, single.calls, single.widest, shardRows)
			}
			gb, wb := float32Bits(t, got), float32Bits(t, want)
			if got.Rows() != shardRows || len(gb) != len(wb) {
				t.Fatalf("N=%d shard %d: %d rows, want %d", n, i, got.Rows(), shardRows)
			}
			for k := range gb {
				r, c := k/cols, k%cols
				w := wholeRows[(i+r*n)*cols+c]
				if math.Float32bits(gb[k]) != math.Float32bits(wb[k]) || math.Float32bits(gb[k]) != math.Float32bits(w) {
					t.Fatalf("N=%d shard %d row %d col %d: batched %v, one row per call %v, unsharded %v", n, i, r, c, gb[k], wb[k], w)
				}
			}

			unsafe := &rowEncoder{safe: false, ids: ds.GalleryIDs()}
			if _, _, err := Encode(ctx, ds, extract.Entry{Extractor: unsafe}, true, artifact.SideGallery, sh); err != nil {
				t.Fatal(err)
			}
			if unsafe.calls != shardRows || unsafe.widest != 1 {
				t.Errorf("N=%d shard %d, not streaming-safe: %d calls of at most %d rows, want %d of 1", n, i, unsafe.calls, unsafe.widest, shardRows)
			}
		}
	}
}

// The precomputed extractor looks rows up by index: a gathered batch gives
// the rows Batch.Row names, for dense tables of every element type and
// CSR tables, equal to the unsharded endpoint's rows bit for bit.
func TestEncodeModuloShardPrecomputed(t *testing.T) {
	g64 := randomDense64(29, 3, 3)
	g32 := toDType(t, g64, matrix.Float32)
	g16 := toDType(t, g64, matrix.Float16)
	gcsr, _ := matrix.NewCSR32(4, 3, []int64{0, 1, 1, 3, 4}, []int32{2, 0, 1, 1}, []float32{1, 2, 3, 4})
	ctx := context.Background()
	for name, g := range map[string]matrix.Matrix{"f64": g64, "f32": g32, "f16": g16, "csr32": gcsr} {
		ds := dataset(t, randomDense64(2, 3, 4), g)
		entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "t", Query: ds.Queries().(retrieval.EmbeddingItems).Matrix(), Gallery: g}}
		for _, n := range []int{2, 3} {
			for i := range n {
				m, _, err := Encode(ctx, ds, entry, true, artifact.SideGallery, Shard{ShardIndex: i, TotalShards: n, BatchSize: 4})
				if err != nil {
					t.Fatal(err)
				}
				want, err := matrix.StridedRows(g, i, n, m.Rows())
				if err != nil {
					t.Fatal(err)
				}
				if arrayDigest(t, m) != arrayDigest(t, want) {
					t.Errorf("%s N=%d shard %d: rows differ from the table's", name, n, i)
				}
			}
		}
	}
}

// toDType converts a float64 Dense to dt (float16 through x448/float16).
func toDType(t *testing.T, m *matrix.Dense, dt matrix.DType) *matrix.Dense {
	t.Helper()
	v := m.Float64Data()
	var out *matrix.Dense
	var err error
	switch dt {
	case matrix.Float16:
		b := make([]uint16, len(v))
		for i, x := range v {
			b[i] = uint16(float16.Fromfloat32(float32(x)))
		}
		out, err = matrix.NewDense16(m.Rows(), m.Cols(), b)
	case matrix.Float32:
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		out, err = matrix.NewDense32(m.Rows(), m.Cols(), f)
	default:
		out = m
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// arrayDigest is the SHA-256 of m's stored encoding (the .npy or .npz
// file), the bit-for-bit identity of an array with its shape and dtype.
func arrayDigest(t *testing.T, m matrix.Matrix) string {
	t.Helper()
	st := artifact.New(mem.New())
	if err := st.WriteArray(context.Background(), "k", artifact.FromMatrix(m), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	man, err := st.Manifest(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	return man.Array.SHA256
}

// shardedStore plans an endpoint of g into n modulo shards and writes them;
// it returns the store, its raw objects, the plan's endpoint and the
// shards as written.
func shardedStore(t *testing.T, g matrix.Matrix, n int) (*artifact.Store, *mem.Store, *Extractor, *Endpoint, []matrix.Matrix) {
	t.Helper()
	ctx := context.Background()
	q := toDType(t, randomDense64(2, g.Cols(), 5), g.DType())
	ds := dataset(t, q, g)
	raw := mem.New()
	st := artifact.New(raw)
	x := &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}
	entry := extract.Entry{Extractor: x}
	p, err := NewPlan("run.yaml", nil, ds, n)
	if err != nil {
		t.Fatal(err)
	}
	pe, err := PlanExtractor(ctx, st, ds, "t", entry, 512, p, n)
	if err != nil {
		t.Fatal(err)
	}
	p.Extractors = append(p.Extractors, pe)
	pe2, ep, err := p.Endpoint("t", artifact.SideGallery)
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Shards) != n {
		t.Fatalf("%d shards, want %d", len(ep.Shards), n)
	}
	var parts []matrix.Matrix
	for _, sh := range ep.Shards {
		m, ids, err := Encode(ctx, ds, entry, true, ep.Side, sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(ctx, st, pe2, ep, sh, x.Recipe(), m, ids); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, m)
	}
	return st, raw, pe2, ep, parts
}

// The streaming merge (SPEC §11.2) reads the N shards in lockstep and
// yields the endpoint in order: for N ∈ {1, 2, 3, 7}, every dense element
// type and a row count that is no multiple of N, with shards and the
// merged endpoint several read batches long, the merged artifact equals,
// bit for bit, the endpoint table and a direct interleaving of the shards
// (row r = row r/N of shard r%N), as the staged merge wrote it.
func TestStreamingMergeEqualsInterleavedShards(t *testing.T) {
	const rows = 20011 // odd, ≡ 5 mod 7; 10 MB per array: several 4 MiB batches
	ctx := context.Background()
	g64 := randomDense64(rows, 64, 9)
	for _, c := range []struct {
		dt   matrix.DType
		cols int // 512-byte rows
	}{{matrix.Float16, 256}, {matrix.Float32, 128}, {matrix.Float64, 64}} {
		g := toDType(t, randomDense64(rows, c.cols, uint64(c.cols)), c.dt)
		if c.dt == matrix.Float64 {
			g = g64
		}
		for _, n := range []int{1, 2, 3, 7} {
			st, _, pe, ep, parts := shardedStore(t, g, n)
			gotRows, gotCols, err := WriteMerged(ctx, st, pe, ep)
			if err != nil || gotRows != rows || gotCols != c.cols {
				t.Fatalf("%s N=%d: merged %d×%d, %v", c.dt, n, gotRows, gotCols, err)
			}
			merged, _, err := st.ReadEndpoint(ctx, ep.OutputKey)
			if err != nil {
				t.Fatal(err)
			}
			interleaved, err := GatherRows(ctx, parts, rows, func(r int) (int, int) { return r % n, r / n })
			if err != nil {
				t.Fatal(err)
			}
			got := arrayDigest(t, merged)
			if got != arrayDigest(t, g) || got != arrayDigest(t, interleaved) {
				t.Errorf("%s N=%d: the merged endpoint differs from the table or the interleaved shards", c.dt, n)
			}
		}
	}
}

// A shard whose array is damaged past its first read batch fails the
// streaming merge with the checksum error naming the shard key and the
// merge step, and the endpoint is not committed (the last block waits for
// every shard's verification).
func TestStreamingMergeDamagedShard(t *testing.T) {
	ctx := context.Background()
	g := toDType(t, randomDense64(20011, 128, 11), matrix.Float32)
	for _, n := range []int{1, 3} {
		st, raw, pe, ep, _ := shardedStore(t, g, n)
		bad := ep.Shards[n-1].OutputKey
		man, err := st.Manifest(ctx, bad)
		if err != nil {
			t.Fatal(err)
		}
		name := bad + "/" + man.Array.Filename
		rc, err := raw.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		b[len(b)-9] ^= 0x10 // in the last batch: caught by the checksum at the end
		if err := raw.Put(ctx, name, bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		_, _, err = WriteMerged(ctx, st, pe, ep)
		want := fmt.Sprintf("merge shard %d of %d (artifact %s) into %s", n-1, n, bad, ep.OutputKey)
		if !errors.Is(err, artifact.ErrChecksum) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "checksum mismatch") {
			t.Errorf("N=%d: merge of a damaged shard: %v; want a checksum mismatch naming %q", n, err, want)
		}
		if ok, err := st.Exists(ctx, ep.OutputKey); ok || err != nil {
			t.Errorf("N=%d: the failed merge left the endpoint committed (%v, %v)", n, ok, err)
		}
	}
}

// Cancelling the context mid-merge stops the streaming merge promptly
// with the context's error, leaving no shard reader running.
func TestStreamingMergeCancel(t *testing.T) {
	g := toDType(t, randomDense64(20011, 128, 12), matrix.Float32)
	for _, n := range []int{1, 3} {
		st, _, pe, ep, _ := shardedStore(t, g, n)
		_, src, _, cleanup, err := Merge(context.Background(), st, pe, ep)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		blocks := 0
		done := make(chan error, 1)
		go func() {
			done <- src.Batches(ctx, func(matrix.Matrix) error {
				blocks++
				cancel()
				return nil
			})
		}()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) || blocks != 1 {
				t.Errorf("N=%d: cancelled merge: %v after %d blocks; want context.Canceled after 1", n, err, blocks)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("N=%d: the cancelled merge did not return", n)
		}
		cleanup()
		cancel()
	}
}

// BenchmarkEncodeShard encodes every shard of a 128-wide float32 endpoint
// (precomputed, streaming-safe, batch size 1024) for N = 1 and N = 8 at two
// sizes: ns/row stays flat across sizes and splits (linear in rows).
//
//	go test ./shard -run '^$' -bench EncodeShard -benchtime 5x
func BenchmarkEncodeShard(b *testing.B) {
	ctx := context.Background()
	for _, rows := range []int{50_000, 200_000} {
		g := randomDense64(rows, 128, 1)
		v := g.Float64Data()
		f := make([]float32, len(v))
		for i, x := range v {
			f[i] = float32(x)
		}
		g32, _ := matrix.NewDense32(rows, 128, f)
		q32, _ := matrix.NewDense32(1, 128, f[:128])
		ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q32), Gallery: retrieval.Embeddings(g32),
			Identity: retrieval.Declared("d", "1")}, retrieval.DenseRelevance([][]float64{append([]float64{1}, make([]float64, rows-1)...)}))
		if err != nil {
			b.Fatal(err)
		}
		entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "t", Query: q32, Gallery: g32}}
		for _, n := range []int{1, 8} {
			b.Run(fmt.Sprintf("rows=%d/N=%d", rows, n), func(b *testing.B) {
				for b.Loop() {
					for i := range n {
						if _, _, err := Encode(ctx, ds, entry, true, artifact.SideGallery, Shard{ShardIndex: i, TotalShards: n, BatchSize: 1024}); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
	}
}
