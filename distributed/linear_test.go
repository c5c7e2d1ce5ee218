package distributed

import (
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// putRecord is one object written through a countingStore.
type putRecord struct {
	name  string // the final object name
	bytes int64
	reads int // Read calls that returned data: the writer's blocks
}

// countingStore is an in-memory object store (no store.LateNamer: every
// array is written the way an S3 bucket receives it) that records each
// Put, how many bytes it carried and in how many blocks they arrived, and
// counts Gets per object.
type countingStore struct {
	inner *mem.Store // not embedded: its PutNamed must stay hidden
	mu    sync.Mutex
	puts  []putRecord
	gets  map[string]int
}

func newCountingStore() *countingStore {
	return &countingStore{inner: mem.New(), gets: map[string]int{}}
}

var _ store.Store = (*countingStore)(nil)

func (s *countingStore) GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	return s.inner.GetRange(ctx, name, off, n)
}
func (s *countingStore) Stat(ctx context.Context, name string) (int64, error) {
	return s.inner.Stat(ctx, name)
}
func (s *countingStore) List(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return s.inner.List(ctx, prefix)
}
func (s *countingStore) Delete(ctx context.Context, name string) error {
	return s.inner.Delete(ctx, name)
}
func (s *countingStore) Close() error { return s.inner.Close() }

// drain reads r with a buffer far larger than any block the writer
// produces, so each Read returns (at most) one of the writer's writes.
func drain(r io.Reader) ([]byte, int, error) {
	var out bytes.Buffer
	buf := make([]byte, 64<<20)
	reads := 0
	for {
		n, err := r.Read(buf)
		if n > 0 {
			reads++
			out.Write(buf[:n])
		}
		if errors.Is(err, io.EOF) {
			return out.Bytes(), reads, nil
		}
		if err != nil {
			return nil, reads, err
		}
	}
}

func (s *countingStore) record(name string, data []byte, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.puts = append(s.puts, putRecord{name: name, bytes: int64(len(data)), reads: reads})
}

func (s *countingStore) Put(ctx context.Context, name string, r io.Reader, size int64) error {
	data, reads, err := drain(r)
	if err != nil {
		return err
	}
	if err := s.inner.Put(ctx, name, bytes.NewReader(data), int64(len(data))); err != nil {
		return err
	}
	s.record(name, data, reads)
	return nil
}

func (s *countingStore) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	s.mu.Lock()
	s.gets[name]++
	s.mu.Unlock()
	return s.inner.Get(ctx, name)
}

// lateNamingStore is a countingStore that names objects after their last
// byte (store.LateNamer), as the local store does.
type lateNamingStore struct{ *countingStore }

var _ store.LateNamer = lateNamingStore{}

func (s lateNamingStore) PutNamed(ctx context.Context, prefix string, r io.Reader, size int64, name func() (string, error)) error {
	data, reads, err := drain(r)
	if err != nil {
		return err
	}
	var final string
	err = s.inner.PutNamed(ctx, prefix, bytes.NewReader(data), int64(len(data)), func() (string, error) {
		n, err := name()
		final = prefix + "/" + n
		return n, err
	})
	if err != nil {
		return err
	}
	s.record(final, data, reads)
	return nil
}

// writeShards plans g's gallery endpoint into n modulo shards and writes
// them to raw.
func writeShards(t *testing.T, raw store.Store, g matrix.Matrix, n int) (*artifact.Store, *Extractor, *Endpoint) {
	t.Helper()
	ctx := context.Background()
	q := toDType(t, randomDense64(2, g.Cols(), 5), g.DType())
	ds := dataset(t, q, g)
	st := artifact.New(raw)
	x := &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}
	entry := extract.Entry{Extractor: x}
	p, err := NewPlan("run.yaml", nil, ds, n)
	if err != nil {
		t.Fatal(err)
	}
	pe, err := PlanExtractor(ctx, st, ds, "t", entry, 256, p, n)
	if err != nil {
		t.Fatal(err)
	}
	p.Extractors = append(p.Extractors, pe)
	pe2, ep, err := p.Endpoint("t", artifact.SideGallery)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range ep.Shards {
		m, ids, err := Encode(ctx, ds, entry, true, ep.Side, sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(ctx, st, pe2, ep, sh, x.Recipe(), m, ids); err != nil {
			t.Fatal(err)
		}
	}
	return st, pe2, ep
}

// The merge (SPEC §11.2) writes the merged endpoint's array once, in large
// blocks, and nothing else gallery-sized: on a store that names objects
// after their last byte (local) and on an object store (S3: the digest
// pass reads the shards, the one upload streams them again). No scratch
// file is staged: with TMPDIR pointing nowhere, a merge that created a
// temporary file would fail.
func TestMergeWritesOnceInLargeBlocks(t *testing.T) {
	t.Setenv("TMPDIR", "/nonexistent/vertebrae-merge-scratch")
	const rows, cols, n = 30001, 48, 8 // 5.8 MB of float32: several 4 MiB merge blocks
	g := toDType(t, randomDense64(rows, cols, 11), matrix.Float32)
	for _, late := range []bool{true, false} {
		name := map[bool]string{true: "late-naming store", false: "object store"}[late]
		cs := newCountingStore()
		var raw store.Store = cs
		if late {
			raw = lateNamingStore{cs}
		}
		st, pe, ep := writeShards(t, raw, g, n)
		cs.mu.Lock()
		cs.puts, cs.gets = nil, map[string]int{}
		cs.mu.Unlock()
		if _, _, err := WriteMerged(context.Background(), st, pe, ep); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := arrayDigest(t, g)
		var arrays []putRecord
		var other int64
		for _, p := range cs.puts {
			if !strings.HasPrefix(p.name, ep.OutputKey+"/") || strings.Contains(p.name, "/shards/") {
				t.Errorf("%s: the merge wrote %s, outside its endpoint", name, p.name)
			}
			if strings.Contains(p.name, "/array-") {
				arrays = append(arrays, p)
			} else {
				other += p.bytes
			}
		}
		if len(arrays) != 1 {
			t.Fatalf("%s: the merged array was uploaded %d times (%v), want once", name, len(arrays), cs.puts)
		}
		a := arrays[0]
		if !strings.Contains(a.name, want) {
			t.Errorf("%s: merged array %s, want the endpoint table's digest %s", name, a.name, want)
		}
		if size := int64(rows*cols*4 + 128); a.bytes != size {
			t.Errorf("%s: merged array of %d bytes, want %d", name, a.bytes, size)
		}
		// Blocks of at least 256 KiB on average (the writer buffers 1 MiB;
		// a row per write would be 30001 blocks).
		t.Logf("%s: %d bytes in %d writes", name, a.bytes, a.reads)
		if maxReads := int(a.bytes/(256<<10)) + 2; a.reads > maxReads {
			t.Errorf("%s: the merged array arrived in %d writes, want at most %d (large blocks)", name, a.reads, maxReads)
		}
		if other > 64<<10 {
			t.Errorf("%s: %d bytes of other objects beside the array (%v), want only the manifest, sidecar and metadata", name, other, cs.puts)
		}
		// Each shard's array is read once for a late-naming store, twice
		// for an object store (digest pass, then the upload), never more.
		wantReads := map[bool]int{true: 1, false: 2}[late]
		for obj, k := range cs.gets {
			if strings.Contains(obj, "/array-") && k != wantReads {
				t.Errorf("%s: %s read %d times, want %d", name, obj, k, wantReads)
			}
		}
	}
}

// Write records ids_sha256 without boxing every ID: the digest is
// artifact.IDsSHA256's, for IDs that need JSON escapes and non-ASCII ones.
func TestWriteIDsDigestMatchesArtifact(t *testing.T) {
	ctx := context.Background()
	q := randomDense64(2, 3, 1)
	g := randomDense64(5, 3, 2)
	gids := []string{"a\"b", "c\\d", "é\u2028", "tab\tx", "\x01ctl"}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{Queries: retrieval.Embeddings(q), Gallery: retrieval.Embeddings(g),
		QueryIDs: []string{"q0", "q1"}, GalleryIDs: gids, Identity: retrieval.Declared("d", "1")},
		retrieval.RecordRelevance([]retrieval.Record{{QueryID: "q0", GalleryID: gids[0], Grade: 1}, {QueryID: "q1", GalleryID: gids[1], Grade: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	st := artifact.New(mem.New())
	x := &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}
	entry := extract.Entry{Extractor: x}
	p, err := NewPlan("run.yaml", nil, ds, 2)
	if err != nil {
		t.Fatal(err)
	}
	pe, err := PlanExtractor(ctx, st, ds, "t", entry, 2, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	p.Extractors = append(p.Extractors, pe)
	pe2, ep, err := p.Endpoint("t", artifact.SideGallery)
	if err != nil {
		t.Fatal(err)
	}
	want, err := artifact.IDsSHA256(gids)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range ep.Shards {
		m, ids, err := Encode(ctx, ds, entry, true, ep.Side, sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(ctx, st, pe2, ep, sh, x.Recipe(), m, ids); err != nil {
			t.Fatal(err)
		}
		em, err := st.ReadEndpointMeta(ctx, sh.OutputKey)
		if err != nil {
			t.Fatal(err)
		}
		if em.IDsSHA256 != want {
			t.Errorf("shard %d: ids_sha256 %s, want %s", sh.ShardIndex, em.IDsSHA256, want)
		}
	}
}

// A precomputed extractor's modulo shard costs what its rows cost: Encode
// allocates the shard's bytes once (the table lookup's copy of rows i,
// i+N, … is the shard's matrix) plus the endpoint's ID list: no gathered
// copy of the inputs, no batches copied again, nothing per row.
func TestEncodePrecomputedShardAllocations(t *testing.T) {
	const rows, cols, n, batch = 40000, 64, 4, 256
	q := randomDense64(2, cols, 1)
	g := randomDense64(rows, cols, 2)
	ds := dataset(t, q, g)
	entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}}
	ctx := context.Background()
	sh := Shard{ShardIndex: 1, TotalShards: n, BatchSize: batch}
	if _, _, err := Encode(ctx, ds, entry, true, artifact.SideGallery, sh); err != nil { // warm up
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m, _, err := Encode(ctx, ds, entry, true, artifact.SideGallery, sh)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	shardRows := (rows - 1 + n - 1) / n
	if m.Rows() != shardRows {
		t.Fatalf("%d rows, want %d", m.Rows(), shardRows)
	}
	shardBytes := uint64(shardRows * cols * 8)
	idBytes := uint64(rows * 16) // the endpoint's ID list (string headers)
	if got, limit := after.TotalAlloc-before.TotalAlloc, shardBytes+idBytes+shardBytes/4; got > limit {
		t.Errorf("Encode allocated %d bytes for a %d-byte shard, want at most %d", got, shardBytes, limit)
	}
	if got := after.Mallocs - before.Mallocs; got > 64 {
		t.Errorf("Encode made %d allocations for a %d-row shard, want at most 64 (none per row or batch)", got, shardRows)
	}
}

// A precomputed table with more rows than its endpoint fails every shard
// with the unsharded run's SPEC §9.4 message instead of serving rows
// [0, n) (the shard path gives the encoder no gathered inputs to compare).
func TestEncodePrecomputedTableRowsMustMatch(t *testing.T) {
	q := randomDense64(2, 3, 1)
	g := randomDense64(5, 3, 2)
	ds := dataset(t, q, g)
	long := randomDense64(6, 3, 3)
	entry := extract.Entry{Extractor: &extract.Precomputed{ExtractorName: "tables", Query: q, Gallery: long}}
	for _, n := range []int{1, 2} {
		_, _, err := Encode(context.Background(), ds, entry, true, artifact.SideGallery, Shard{ShardIndex: 0, TotalShards: n, BatchSize: 2})
		if want := "Retriever 'tables' gallery embeddings returned 6 embeddings for 5 rows"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("N=%d: err = %v, want %q", n, err, want)
		}
	}
	if _, _, err := Encode(context.Background(), ds, entry, true, artifact.SideQuery, Shard{ShardIndex: 0, TotalShards: 2, BatchSize: 2}); err != nil {
		t.Errorf("query side (table of the right length): %v", err)
	}
}
