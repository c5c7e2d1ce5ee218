package artifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/location"
	"github.com/vertebrae-eval/vertebrae/store/mem"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// countingStore counts the data bytes its readers hand out.
type countingStore struct {
	store.Store
	read atomic.Int64
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (s *countingStore) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	rc, err := s.Store.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &s.read}, nil
}

func (s *countingStore) GetRange(ctx context.Context, name string, off, n int64) (io.ReadCloser, error) {
	rc, err := s.Store.GetRange(ctx, name, off, n)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &s.read}, nil
}

// indexed is a rows×cols float32 matrix whose element (i, j) is i·cols+j,
// so a misplaced row shows.
func indexed(t *testing.T, rows, cols int) *matrix.Dense {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = float32(i)
	}
	m, err := matrix.NewDense32(rows, cols, v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A row range reads only the chunks holding it (plus the header's), equals
// the same rows of a whole read, and damage outside the range is not even
// seen, while damage inside names the key and the chunk's byte range.
func TestReadRowsReadsOnlyItsChunks(t *testing.T) {
	const rows, cols = 65_536, 128 // 32 MiB of float32: four chunks and a bit
	m := indexed(t, rows, cols)
	for _, kind := range []string{"mem", "local", "s3"} {
		t.Run(kind, func(t *testing.T) {
			var st store.Store
			if kind == "s3" { // ranged GETs against an S3 server on 127.0.0.1
				var err error
				if st, err = location.Open(ctx, storetest.FakeS3(t)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
			} else {
				st = newStore(t, kind)
			}
			cs := &countingStore{Store: st}
			s := New(cs)
			if err := s.WriteArray(ctx, "g", FromMatrix(m), map[string]any{"a": 1}); err != nil {
				t.Fatal(err)
			}
			man, err := s.Manifest(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			if man.SchemaVersion != 3 || chunkdigest.Count(man.Array.SizeBytes) != 5 {
				t.Fatalf("schema %d, %d bytes", man.SchemaVersion, man.Array.SizeBytes)
			}
			rowBytes := int64(cols * 4)
			for _, r := range [][2]int{{0, rows}, {0, 1}, {rows - 1, rows}, {16_000, 16_500}, {20_000, 40_000}, {7, 7}} {
				cs.read.Store(0)
				got, md, err := s.ReadRows(ctx, "g", r[0], r[1])
				if err != nil {
					t.Fatal(r, err)
				}
				if !sameMatrix(got, m.RowSlice(r[0], r[1])) || string(md) != `{"a":1}` {
					t.Fatalf("rows %v differ", r)
				}
				// The chunks overlapping the rows, chunk 0 for the header,
				// the sidecar and the metadata: nothing else.
				header := man.Array.SizeBytes - rows*rowBytes
				first, last := (header+int64(r[0])*rowBytes)/chunkdigest.ChunkBytes, (header+int64(r[1])*rowBytes-1)/chunkdigest.ChunkBytes
				chunks := max(0, last-first+1)
				if first > 0 || chunks == 0 {
					chunks++
				}
				if n := cs.read.Load(); n > chunks*chunkdigest.ChunkBytes+4096 {
					t.Fatalf("rows %v: read %d bytes of a %d-byte file (%d chunks)", r, n, man.Array.SizeBytes, chunks)
				}
			}

			// Flip one byte in chunk 3 (bytes [25165824, 33554432)).
			name := "g/" + man.Array.Filename
			b := objectBytes(t, cs, name)
			b[3*chunkdigest.ChunkBytes+100] ^= 0x10
			putBytes(t, cs, name, b)
			if _, _, err := s.ReadRows(ctx, "g", 0, 10_000); err != nil {
				t.Fatalf("rows in clean chunks: %v", err)
			}
			_, _, err = s.ReadRows(ctx, "g", 40_000, 60_000)
			want := fmt.Sprintf("artifact g: %s: checksum mismatch in bytes [%d, %d) (chunk 3)", man.Array.Filename, 3*chunkdigest.ChunkBytes, 4*chunkdigest.ChunkBytes)
			if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want %q", err, want)
			}
			if _, _, err := s.LoadArray(ctx, "g"); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), want) {
				t.Fatalf("whole read: %v", err)
			}
		})
	}
}

func TestReadRowsRejects(t *testing.T) {
	s := New(mem.New())
	if err := s.WriteArray(ctx, "g", FromMatrix(indexed(t, 4, 3)), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int{{-1, 2}, {3, 2}, {0, 5}} {
		if _, _, err := s.ReadRows(ctx, "g", r[0], r[1]); err == nil || !strings.Contains(err.Error(), "not a range of its 4 rows") {
			t.Errorf("rows %v: %v", r, err)
		}
	}
	csr, err := matrix.NewCSR32(2, 3, []int64{0, 1, 1}, []int32{2}, []float32{1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteArray(ctx, "sparse", FromMatrix(csr), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ReadRows(ctx, "sparse", 0, 1); err == nil || !strings.Contains(err.Error(), "dense arrays only") {
		t.Errorf("sparse: %v", err)
	}
}

// Artifacts written before chunked digests (manifest schema 2: one SHA-256
// per whole file, no sidecar) still read, whole and by rows.
func TestSchema2StillReads(t *testing.T) {
	st := mem.New()
	m := indexed(t, 50, 6)
	var buf bytes.Buffer
	if err := npy.WriteDense(&buf, m); err != nil {
		t.Fatal(err)
	}
	whole := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	md := []byte(`{"artifact_type":"x"}`)
	man := &Manifest{SchemaVersion: 2, Kind: KindArrayMetadata,
		Array: &ArrayEntry{Filename: "array-" + whole(buf.Bytes()) + ".npy", StorageFormat: "npy", Shape: []int{50, 6},
			DType: "float32", SizeBytes: int64(buf.Len()), SHA256: whole(buf.Bytes())},
		Metadata: FileEntry{Filename: "metadata-" + whole(md) + ".json", MediaType: "application/json", SizeBytes: int64(len(md)), SHA256: whole(md)}}
	enc, err := man.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(enc), "chunk") {
		t.Fatalf("a schema-2 manifest has no chunk fields: %s", enc)
	}
	putBytes(t, st, "old/"+man.Array.Filename, buf.Bytes())
	putBytes(t, st, "old/"+man.Metadata.Filename, md)
	putBytes(t, st, "old/manifest.json", enc)
	s := New(st)
	got, gotMD, err := s.LoadArray(ctx, "old")
	if err != nil || !sameMatrix(got, m) || string(gotMD) != string(md) {
		t.Fatalf("whole: %v", err)
	}
	rows, _, err := s.ReadRows(ctx, "old", 10, 23)
	if err != nil || !sameMatrix(rows, m.RowSlice(10, 23)) {
		t.Fatalf("rows: %v", err)
	}
	b := buf.Bytes()
	b[len(b)-1] ^= 1
	putBytes(t, st, "old/"+man.Array.Filename, b)
	if _, _, err := s.ReadRows(ctx, "old", 0, 1); !errors.Is(err, ErrChecksum) {
		t.Fatalf("damaged schema-2 file: %v", err)
	}
}
