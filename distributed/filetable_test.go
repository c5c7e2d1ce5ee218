package distributed

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/vertebrae-eval/vertebrae/artifact"
	"github.com/vertebrae-eval/vertebrae/extract"
	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

// mappedTable writes m as a .npy file and maps it back (the table a run
// file's precomputed extractor gets).
func mappedTable(t *testing.T, m *matrix.Dense) *matrix.Dense {
	t.Helper()
	var buf bytes.Buffer
	if err := npy.WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "g.npy")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	d, closeFn, err := npy.MapMatrix(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFn() })
	if !d.HasFileRows() {
		t.Fatal("the mapped table has no backing file")
	}
	return d
}

// A modulo shard of a table mapped from a file is streamed from the file
// (a matrix.StridedFile read in blocks as it is stored), and the shards
// merge into the byte-identical endpoint array of N = 1 and of the table
// held in memory: every dtype, N ∈ {1, 2, 3, 7} over 101 rows (not a
// multiple of N), batches smaller than the artifact store's.
func TestMappedTableShardsMergeBitIdentical(t *testing.T) {
	const rows, cols = 101, 7
	ctx := context.Background()
	for _, dt := range []matrix.DType{matrix.Float16, matrix.Float32, matrix.Float64} {
		inMem := toDType(t, randomDense64(rows, cols, 21), dt)
		want := arrayDigest(t, inMem)
		g := mappedTable(t, inMem)
		q := toDType(t, randomDense64(2, cols, 5), dt)
		for _, c := range []struct {
			n   int
			raw store.Store
		}{{1, mem.New()}, {2, mem.New()}, {3, mem.New()}, {7, mem.New()}, {7, newCountingStore()}} {
			// (the counting store is an object store: the array is read
			// twice, a digest pass and the upload)
			n := c.n
			ds := dataset(t, q, g)
			st := artifact.New(c.raw)
			x := &extract.Precomputed{ExtractorName: "t", Query: q, Gallery: g}
			entry := extract.Entry{Extractor: x}
			p, err := NewPlan("run.yaml", nil, ds, n)
			if err != nil {
				t.Fatal(err)
			}
			pe, err := PlanExtractor(ctx, st, ds, "t", entry, 4, p, n)
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
				// Every shard of a mapped table, N = 1 included, is read from
				// the file as it is written, never held (nor copied) whole.
				if _, streamed := m.(*matrix.StridedFile); !streamed {
					t.Errorf("%v N=%d shard %d: %T, want a StridedFile", dt, n, sh.ShardIndex, m)
				}
				// The shard's own array is the rows copied from memory.
				sm, err := matrix.StridedRows(inMem, sh.ShardIndex, n, m.Rows())
				if err != nil {
					t.Fatal(err)
				}
				if err := Write(ctx, st, pe2, ep, sh, x.Recipe(), m, ids); err != nil {
					t.Fatal(err)
				}
				man, err := st.Manifest(ctx, sh.OutputKey)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := man.Array.SHA256, arrayDigest(t, sm); got != want {
					t.Errorf("%v N=%d shard %d: array %s, want %s", dt, n, sh.ShardIndex, got, want)
				}
			}
			if _, _, err := WriteMerged(ctx, st, pe2, ep); err != nil {
				t.Fatal(err)
			}
			man, err := st.Manifest(ctx, ep.OutputKey)
			if err != nil {
				t.Fatal(err)
			}
			if man.Array.SHA256 != want {
				t.Errorf("%v N=%d: merged array %s, want the table's %s", dt, n, man.Array.SHA256, want)
			}
		}
	}
}

// idsSHA256's one-pass path gives artifact.IDsSHA256's digest for lists
// that need no escapes (row numbers, across its buffer flushes) and hands
// every other list to it.
func TestIDsSHA256MatchesArtifact(t *testing.T) {
	rows := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = strconv.Itoa(i)
		}
		return ids
	}
	for _, ids := range [][]string{
		{}, {"0"}, rows(10), rows(12345), rows(100001),
		{"a b", "~", "x y z", "!#$%&'()*+,-./:;<=>?@[]^_`{|}"},
		{"ok", "del\x7f"}, {"q\"uote"}, {"back\\slash"}, {"tab\t"}, {"é"}, {"line\u2028sep"}, {"ctl\x01"},
	} {
		want, err := artifact.IDsSHA256(ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := idsSHA256(ids)
		if err != nil || got != want {
			t.Errorf("%d IDs (%.20q…): %s, %v; want %s", len(ids), ids, got, err, want)
		}
	}
}
