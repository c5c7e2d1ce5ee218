package artifact

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/npy"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/faulty"
	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/mem"
)

var ctx = context.Background()

func TestValidateKey(t *testing.T) {
	good := []string{"a", "a/b", "retrieval/relevance/x", "a..b", "a__b", "a.b/c", "runs/0123/x"}
	bad := []string{"", "/a", `a\b`, "a//b", "a/", "./a", "a/./b", "a/..", "..", "a\x00b", "a\nb", "a\tb", "a\x7fb"}
	for _, k := range good {
		if err := ValidateKey(k); err != nil {
			t.Errorf("%q rejected: %v", k, err)
		}
	}
	for _, k := range bad {
		err := ValidateKey(k)
		if !errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), "invalid artifact key") {
			t.Errorf("%q: %v", k, err)
		}
	}
}

func TestKeyBuilders(t *testing.T) {
	d, r := strings.Repeat("d", 64), strings.Repeat("r", 64)
	if got := EndpointKey(d, r, SideQuery, "default"); got != "retrieval/embeddings/"+d+"/"+r+"/query/default" {
		t.Error(got)
	}
	if got := ShardKey("e", 1, 4); got != "e/shards/00001-of-00004" {
		t.Error(got)
	}
	if got := PartialKey("s", 0, 12); got != "s/partials/00000-of-00012" {
		t.Error(got)
	}
	if got := RunScopedKey("ab", "retrieval/x"); got != "runs/ab/retrieval/x" {
		t.Error(got)
	}
	if RelevanceKey(d) != "retrieval/relevance/"+d || FittedKey(d, r) != "retrieval/fitted/"+d+"/"+r || ScoreKey("f") != "retrieval/scores/v2-f" {
		t.Error("relevance/fitted/score keys")
	}
	if bk, _ := BranchKey(""); bk != "default" {
		t.Error(bk)
	}
	bk, _ := BranchKey("text")
	// H({"branch":"text"}) = sha256(`{"branch":"text"}`).
	if bk != digest([]byte(`{"branch":"text"}`)) {
		t.Error(bk)
	}
	p, _ := CompressionPrefix("q", "g", "h")
	if p != "retrieval/compressions/"+digest([]byte(`{"gallery":"g","identity_schema":2,"query":"q"}`))+"/h" {
		t.Error(p)
	}
}

// digest is a plain SHA-256 in hex (key components are canonical hashes).
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func dense32(t *testing.T, rows, cols int, seed float32) *matrix.Dense {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = seed + float32(i%7) - float32(i%3)*0.5
	}
	m, err := matrix.NewDense32(rows, cols, v)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testMatrices(t *testing.T) map[string]matrix.Matrix {
	t.Helper()
	f64, _ := matrix.NewDense64(3, 2, []float64{1, 2, 3, 4, 5, 6.5})
	f16, _ := matrix.NewDense16(2, 2, []uint16{0x3c00, 0x4000, 0xc000, 0x0001})
	csr, _ := matrix.NewCSR32(3, 4, []int64{0, 2, 2, 3}, []int32{0, 3, 1}, []float32{1.5, -2, 3})
	csr64, _ := matrix.NewCSR64(2, 3, []int64{0, 1, 2}, []int32{2, 0}, []float64{0.25, 7})
	return map[string]matrix.Matrix{"f16": f16, "f32": dense32(t, 5, 3, 1), "f64": f64, "csr32": csr, "csr64": csr64}
}

func sameMatrix(a, b matrix.Matrix) bool {
	if a.Rows() != b.Rows() || a.Cols() != b.Cols() || a.DType() != b.DType() || a.Sparse() != b.Sparse() {
		return false
	}
	ra, rb := make([]float64, a.Cols()), make([]float64, b.Cols())
	for i := 0; i < a.Rows(); i++ {
		a.RowFloat64(i, ra)
		b.RowFloat64(i, rb)
		for j := range ra {
			if ra[j] != rb[j] {
				return false
			}
		}
	}
	return true
}

func TestArrayRoundTrip(t *testing.T) {
	s := New(mem.New())
	for name, m := range testMatrices(t) {
		key := "t/" + name
		if err := s.WriteArray(ctx, key, FromMatrix(m), map[string]any{"artifact_type": "x", "n": 1}); err != nil {
			t.Fatal(name, err)
		}
		got, md, err := s.LoadArray(ctx, key)
		if err != nil {
			t.Fatal(name, err)
		}
		if !sameMatrix(got, m) || string(md) != `{"artifact_type":"x","n":1}` {
			t.Errorf("%s: round trip differs (%s)", name, md)
		}
		rows := 0
		if _, err := s.StreamArray(ctx, key, func(b matrix.Matrix) error { rows += b.Rows(); return nil }); err != nil || rows != m.Rows() {
			t.Errorf("%s: stream %d rows, %v", name, rows, err)
		}
		man, _ := s.Manifest(ctx, key)
		if d, ok := m.(*matrix.Dense); ok {
			// The dense file is exactly what np.save writes.
			var buf bytes.Buffer
			_ = npy.WriteDense(&buf, d)
			if man.Array.SHA256 != chunkdigest.Of(buf.Bytes()).Hex() || man.Array.StorageFormat != "npy" || man.Array.NNZ != nil {
				t.Errorf("%s: manifest %+v", name, man.Array)
			}
		} else if man.Array.StorageFormat != "npz" || man.Array.SparseFormat != "csr" || *man.Array.NNZ != int64(m.(*matrix.CSR).NNZ()) {
			t.Errorf("%s: manifest %+v", name, man.Array)
		}
	}
}

// A large dense array streams in several batches and LoadArray decodes it
// into one matrix.
func TestArrayManyBatches(t *testing.T) {
	s := New(mem.New())
	m := dense32(t, 3000, 700, 2) // 8.4 MB: three 4 MiB batches
	if err := s.WriteArray(ctx, "big", FromMatrix(m), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	n := 0
	if _, err := s.StreamArray(ctx, "big", func(matrix.Matrix) error { n++; return nil }); err != nil || n < 3 {
		t.Fatalf("%d batches, %v", n, err)
	}
	got, _, err := s.LoadArray(ctx, "big")
	if err != nil || !sameMatrix(got, m) {
		t.Fatal("load differs", err)
	}
}

func objectBytes(t *testing.T, st store.Store, name string) []byte {
	t.Helper()
	rc, err := st.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	return b
}

func putBytes(t *testing.T, st store.Store, name string, b []byte) {
	t.Helper()
	if err := st.Put(ctx, name, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// Damage is detected on read, with the SPEC fragment and the key named.
func TestTamperingDetected(t *testing.T) {
	m := dense32(t, 4, 3, 0)
	cases := []struct {
		name   string
		damage func(st store.Store, man *Manifest)
		frag   string
		is     error
	}{
		{"flipped byte", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Filename
			b := objectBytes(t, st, n)
			b[len(b)-3] ^= 0x40
			putBytes(t, st, n, b)
		}, "checksum mismatch", ErrChecksum},
		{"flipped header byte", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Filename
			b := objectBytes(t, st, n)
			b[20] ^= 0x01
			putBytes(t, st, n, b)
		}, "checksum mismatch", ErrChecksum},
		{"truncated", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Filename
			b := objectBytes(t, st, n)
			putBytes(t, st, n, b[:len(b)-5])
		}, "truncated", ErrTruncated},
		{"appended", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Filename
			putBytes(t, st, n, append(objectBytes(t, st, n), 0))
		}, "size mismatch", ErrSizeMismatch},
		{"metadata flipped", func(st store.Store, man *Manifest) {
			n := "k/" + man.Metadata.Filename
			b := objectBytes(t, st, n)
			b[2] ^= 0x20
			putBytes(t, st, n, b)
		}, "checksum mismatch", ErrChecksum},
		{"manifest extra field", func(st store.Store, man *Manifest) {
			var v map[string]any
			_ = json.Unmarshal(objectBytes(t, st, "k/manifest.json"), &v)
			v["extra"] = 1
			b, _ := json.Marshal(v)
			putBytes(t, st, "k/manifest.json", b)
		}, "invalid manifest", ErrInvalidManifest},
		{"manifest shape edited", func(st store.Store, man *Manifest) {
			man.Array.Shape = []int{3, 4}
			b, _ := man.Encode()
			putBytes(t, st, "k/manifest.json", b)
		}, "does not match its manifest", ErrMismatch},
		{"data file missing", func(st store.Store, man *Manifest) {
			_ = st.Delete(ctx, "k/"+man.Array.Filename)
		}, "which is missing", ErrNotFound},
		{"sidecar flipped", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Chunks.Filename
			b := objectBytes(t, st, n)
			b[5] ^= 0x01
			putBytes(t, st, n, b)
		}, "checksum mismatch", ErrChecksum},
		{"sidecar truncated", func(st store.Store, man *Manifest) {
			n := "k/" + man.Array.Chunks.Filename
			putBytes(t, st, n, objectBytes(t, st, n)[:31])
		}, "truncated", ErrTruncated},
		{"sidecar missing", func(st store.Store, man *Manifest) {
			_ = st.Delete(ctx, "k/"+man.Array.Chunks.Filename)
		}, "which is missing", ErrNotFound},
		{"metadata sidecar missing", func(st store.Store, man *Manifest) {
			_ = st.Delete(ctx, "k/"+man.Metadata.Chunks.Filename)
		}, "which is missing", ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := mem.New()
			s := New(st)
			if err := s.WriteArray(ctx, "k", FromMatrix(m), map[string]any{"a": 1}); err != nil {
				t.Fatal(err)
			}
			man, err := s.Manifest(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			c.damage(st, man)
			_, _, err = s.LoadArray(ctx, "k")
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.frag) || !strings.Contains(err.Error(), "artifact k:") {
				t.Fatalf("got %v, want %q naming the key", err, c.frag)
			}
			if _, err := s.StreamArray(ctx, "k", func(matrix.Matrix) error { return nil }); !errors.Is(err, c.is) {
				t.Fatalf("stream: got %v", err)
			}
			if _, _, err := s.ReadRows(ctx, "k", 1, 3); !errors.Is(err, c.is) {
				t.Fatalf("rows: got %v", err)
			}
		})
	}
}

func TestManifestStrict(t *testing.T) {
	sum := strings.Repeat("a", 64)
	base := func() map[string]any {
		return map[string]any{"schema_version": 2, "kind": "json",
			"metadata": map[string]any{"filename": "metadata-" + sum + ".json", "media_type": "application/json", "size_bytes": 2, "sha256": sum}}
	}
	enc := func(v map[string]any) []byte { b, _ := json.Marshal(v); return b }
	if _, err := DecodeManifest("k", enc(base())); err != nil {
		t.Fatal(err)
	}
	chunked := func(m map[string]any) {
		m["schema_version"] = 3
		for _, k := range []string{"metadata", "array"} {
			if c, ok := m[k].(map[string]any); ok {
				c["chunk_bytes"], c["chunks_filename"] = 8<<20, "chunks-"+sum+".bin"
			}
		}
	}
	if m := base(); true {
		chunked(m)
		if _, err := DecodeManifest("k", enc(m)); err != nil {
			t.Fatal(err)
		}
	}
	edits := map[string]func(m map[string]any){
		"schema 3 without chunks": func(m map[string]any) { m["schema_version"] = 3 },
		"schema 4":                func(m map[string]any) { chunked(m); m["schema_version"] = 4 },
		"schema 2 with chunks":    func(m map[string]any) { chunked(m); m["schema_version"] = 2 },
		"chunk size": func(m map[string]any) {
			chunked(m)
			m["metadata"].(map[string]any)["chunk_bytes"] = 1 << 20
		},
		"sidecar name": func(m map[string]any) {
			chunked(m)
			m["metadata"].(map[string]any)["chunks_filename"] = "chunks-" + strings.Repeat("b", 64) + ".bin"
		},
		"schema string":    func(m map[string]any) { m["schema_version"] = "2" },
		"missing kind":     func(m map[string]any) { delete(m, "kind") },
		"unknown kind":     func(m map[string]any) { m["kind"] = "blob" },
		"extra top":        func(m map[string]any) { m["x"] = nil },
		"array on json":    func(m map[string]any) { m["array"] = map[string]any{} },
		"extra md field":   func(m map[string]any) { m["metadata"].(map[string]any)["x"] = 1 },
		"size as string":   func(m map[string]any) { m["metadata"].(map[string]any)["size_bytes"] = "2" },
		"size fractional":  func(m map[string]any) { m["metadata"].(map[string]any)["size_bytes"] = 2.5 },
		"media type":       func(m map[string]any) { m["metadata"].(map[string]any)["media_type"] = "text/plain" },
		"name not digest":  func(m map[string]any) { m["metadata"].(map[string]any)["filename"] = "metadata.json" },
		"missing md field": func(m map[string]any) { delete(m["metadata"].(map[string]any), "sha256") },
	}
	for name, edit := range edits {
		m := base()
		edit(m)
		if _, err := DecodeManifest("k", enc(m)); !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "invalid manifest") {
			t.Errorf("%s: %v", name, err)
		}
	}
	arr := func() map[string]any {
		m := base()
		m["kind"] = "array+metadata"
		m["array"] = map[string]any{"filename": "array-" + sum + ".npy", "storage_format": "npy", "shape": []any{2, 3}, "dtype": "float32",
			"size_bytes": 152, "sha256": sum, "sparse_format": nil, "nnz": nil}
		return m
	}
	if _, err := DecodeManifest("k", enc(arr())); err != nil {
		t.Fatal(err)
	}
	if m := arr(); true {
		chunked(m)
		if _, err := DecodeManifest("k", enc(m)); err != nil {
			t.Fatal(err)
		}
		delete(m["array"].(map[string]any), "chunks_filename")
		if _, err := DecodeManifest("k", enc(m)); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("array without its sidecar name: %v", err)
		}
	}
	for name, edit := range map[string]func(a map[string]any){
		"dense with nnz":  func(a map[string]any) { a["nnz"] = 3 },
		"missing nnz":     func(a map[string]any) { delete(a, "nnz") },
		"1-d shape":       func(a map[string]any) { a["shape"] = []any{6} },
		"int8":            func(a map[string]any) { a["dtype"] = "int8" },
		"npz not csr":     func(a map[string]any) { a["storage_format"] = "npz"; a["filename"] = "array-" + sum + ".npz" },
		"wrong extension": func(a map[string]any) { a["filename"] = "array-" + sum + ".npz" },
	} {
		m := arr()
		edit(m["array"].(map[string]any))
		if _, err := DecodeManifest("k", enc(m)); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMetadataMustBeJSON(t *testing.T) {
	st := mem.New()
	s := New(st)
	err := s.WriteArray(ctx, "k", FromMatrix(dense32(t, 2, 2, 0)), map[string]any{"bad": func() {}})
	if err == nil {
		t.Fatal("non-JSON metadata accepted")
	}
	for n, err := range st.List(ctx, "") {
		t.Errorf("wrote %s (%v) before validating metadata", n, err)
	}
}

// A write that dies after its data files, before its manifest — or in the
// middle of its array or metadata upload — leaves the previous generation
// readable and verified; the manifest is always the last object written.
func TestCrashBeforeManifestKeepsPreviousGeneration(t *testing.T) {
	faults := map[string]faulty.Fault{
		"before manifest":      faulty.FailPut(faulty.Named("manifest.json")).Crashing(),
		"mid array upload":     faulty.FailPutAfter(func(n string) bool { return strings.HasSuffix(n, ".npy") }, 100).Crashing(),
		"metadata upload":      faulty.FailPut(func(n string) bool { return strings.Contains(n, "/metadata-") }).Crashing(),
		"corrupted in transit": faulty.CorruptPut(faulty.Named("manifest.json"), 3),
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			inner := mem.New()
			s := New(inner)
			old := dense32(t, 6, 4, 1)
			if err := s.WriteArray(ctx, "k", FromMatrix(old), map[string]any{"gen": 1}); err != nil {
				t.Fatal(err)
			}
			fs := faulty.New(inner, fault)
			err := New(fs).WriteArray(ctx, "k", FromMatrix(dense32(t, 6, 4, 9)), map[string]any{"gen": 2})
			if name == "corrupted in transit" {
				// A manifest damaged on its way is refused on read, never
				// half-trusted.
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := s.LoadArray(ctx, "k"); !errors.Is(err, ErrInvalidManifest) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if !errors.Is(err, faulty.ErrInjected) {
				t.Fatalf("got %v", err)
			}
			got, md, err := s.LoadArray(ctx, "k")
			if err != nil || !sameMatrix(got, old) || string(md) != `{"gen":1}` {
				t.Fatalf("previous generation lost: %v %s", err, md)
			}
		})
	}
	fs := faulty.New(mem.New())
	if err := New(fs).WriteArray(ctx, "k", FromMatrix(dense32(t, 2, 2, 0)), map[string]any{}); err != nil {
		t.Fatal(err)
	}
	puts := fs.Puts()
	if len(puts) != 5 || puts[4] != "k/manifest.json" {
		t.Fatalf("puts %v: the manifest must be written last", puts)
	}
}

// Concurrent writers of one key end with one complete generation that
// verifies and is one of theirs, in memory and on local disk (separate
// store handles, as separate processes would have).
func TestConcurrentWritersOneKey(t *testing.T) {
	dir := t.TempDir()
	backends := map[string]func() store.Store{
		"mem": func() store.Store { m := mem.New(); return m },
		"local": func() store.Store {
			s, err := local.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			shared := open()
			const n = 8
			ms := make([]*matrix.Dense, n)
			for i := range ms {
				ms[i] = dense32(t, 500, 40, float32(i))
			}
			var wg sync.WaitGroup
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st := shared
					if name == "local" {
						st = open()
					}
					if err := New(st).WriteArray(ctx, "k", FromMatrix(ms[i]), map[string]any{"writer": i}); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			got, md, err := New(shared).LoadArray(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			var meta struct{ Writer int }
			_ = json.Unmarshal(md, &meta)
			if !sameMatrix(got, ms[meta.Writer]) {
				t.Fatalf("array is not writer %d's", meta.Writer)
			}
		})
	}
}

func TestMissingKey(t *testing.T) {
	s := New(mem.New())
	if _, _, err := s.LoadArray(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if ok, err := s.Exists(ctx, "nope"); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := s.Manifest(ctx, "a//b"); !errors.Is(err, ErrInvalidKey) {
		t.Fatal(err)
	}
}

func TestWeakestStatus(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{CacheHit, CacheHit}, CacheHit},
		{[]string{CacheHit, CacheMiss}, CacheMiss},
		{[]string{CacheDisabled, CacheMiss}, CacheDisabled},
		{[]string{CacheMiss, CacheBypassed, CacheDisabled}, CacheBypassed},
	} {
		if got := WeakestStatus(c.in...); got != c.want {
			t.Errorf("%v: %s", c.in, got)
		}
	}
}

// changing is a source whose second pass differs from its first.
type changing struct {
	generated
	calls int
}

func (c *changing) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	c.calls++
	if c.calls == 1 {
		return c.generated.Batches(ctx, yield)
	}
	return generated{c.rows, c.cols}.Batches(ctx, func(m matrix.Matrix) error {
		d := m.(*matrix.Dense).Clone()
		d.Float32Data()[0] += 1
		return yield(d)
	})
}

// newStore is an empty in-memory ("mem") or local-disk ("local") store.
func newStore(t *testing.T, kind string) store.Store {
	if kind == "mem" {
		return mem.New()
	}
	st, err := local.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// noMove hides a store's PutNamed, as an object store has none, so the
// two-pass write path runs.
type noMove struct{ store.Store }

// failing yields one batch, then fails.
type failing struct{ generated }

func (f failing) Batches(ctx context.Context, yield func(matrix.Matrix) error) error {
	calls := 0
	return f.generated.Batches(ctx, func(m matrix.Matrix) error {
		if calls++; calls > 1 {
			return errors.New("source broke")
		}
		return yield(m)
	})
}

// On stores that name an object after writing it (local, mem) the data are
// streamed once and named by their digest: the committed file is named by
// the SHA-256 of its bytes, reads verify, and a source failing mid-stream
// leaves no object behind.
func TestSinglePassWrite(t *testing.T) {
	for _, name := range []string{"mem", "local"} {
		st := newStore(t, name)
		if _, ok := st.(store.LateNamer); !ok {
			t.Fatalf("%s store has no PutNamed", name)
		}
		s := New(st)
		src := generated{70_000, 16} // two batches of DefaultBatchBytes
		if err := s.WriteArray(ctx, "k", src, map[string]any{}); err != nil {
			t.Fatal(err)
		}
		var names []string
		for n, err := range st.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		if len(names) != 5 || !strings.HasPrefix(names[0], "k/array-") || !strings.HasPrefix(names[1], "k/chunks-") ||
			!strings.HasPrefix(names[2], "k/chunks-") || names[3] != "k/manifest.json" || !strings.HasPrefix(names[4], "k/metadata-") {
			t.Fatalf("%s: objects %v", name, names)
		}
		rc, err := st.Get(ctx, names[0])
		if err != nil {
			t.Fatal(err)
		}
		h := chunkdigest.NewHasher()
		_, err = io.Copy(h, rc)
		rc.Close()
		if err != nil || "k/array-"+h.Digest().Hex()+".npy" != names[0] {
			t.Fatalf("%s: %s is not named by its digest (%v)", name, names[0], err)
		}
		if _, _, err := s.LoadArray(ctx, "k"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := s.WriteArray(ctx, "broken", failing{generated{70_000, 16}}, map[string]any{}); err == nil || !strings.Contains(err.Error(), "source broke") {
			t.Fatalf("%s: got %v", name, err)
		}
		for n, err := range st.List(ctx, "broken") {
			t.Errorf("%s: failed write left %s (%v)", name, n, err)
		}
	}
}

// A source that changes between the hashing and the upload pass is never
// committed under a digest it does not have.
func TestSourceChangingBetweenPasses(t *testing.T) {
	for _, name := range []string{"mem", "local"} {
		st := newStore(t, name)
		s := New(noMove{st})
		err := s.WriteArray(ctx, "k", &changing{generated: generated{10, 4}}, map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "source changed") {
			t.Fatalf("%s: got %v", name, err)
		}
		for n, err := range st.List(ctx, "") {
			t.Errorf("%s: left %s (%v)", name, n, err)
		}
	}
}
