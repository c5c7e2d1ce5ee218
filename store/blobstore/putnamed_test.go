package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"gocloud.dev/blob/memblob"

	"github.com/vertebrae-eval/vertebrae/store"
	"github.com/vertebrae-eval/vertebrae/store/blobstore"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// names lists every object of s (the whole store).
func names(t *testing.T, s store.Store) []string {
	t.Helper()
	var out []string
	for n, err := range s.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func read(t *testing.T, s store.Store, name string) []byte {
	t.Helper()
	rc, err := s.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// PutNamed streams the bytes once into a temporary object, names the final
// object after the last byte (a server-side copy, in parts past the copy
// limit) and leaves no temporary object; every failure leaves nothing and
// keeps an older object of the final name.
func TestPutNamed(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) *blobstore.Store
	}{
		{"memblob", func(*testing.T) *blobstore.Store { return blobstore.New(memblob.OpenBucket(nil), "mem-bucket") }},
		{"fake-s3", func(t *testing.T) *blobstore.Store { return openURI(t, storetest.FakeS3(t)) }},
		{"fake-gcs", func(t *testing.T) *blobstore.Store { return openURI(t, fakeGCS(t)) }},
		{"real-s3", func(t *testing.T) *blobstore.Store { return openURI(t, storetest.S3URIForTest(t)) }},
		{"real-s3-in-parts", func(t *testing.T) *blobstore.Store {
			s := openURI(t, storetest.S3URIForTest(t))
			blobstore.SetCopyParts(s, 6<<20, 5<<20) // S3's smallest part: 5 MiB
			return s
		}},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			s := st.open(t)
			defer s.Close()
			ctx := context.Background()
			data := make([]byte, 12<<20+123)
			if _, err := io.ReadFull(storetest.NewGenerator(7, int64(len(data))), data); err != nil {
				t.Fatal(err)
			}
			if err := s.Put(ctx, "k/old", strings.NewReader("old"), 3); err != nil {
				t.Fatal(err)
			}
			cr := &countingReader{r: bytes.NewReader(data)}
			calls := 0
			err := s.PutNamed(ctx, "k", cr, -1, func() (string, error) {
				if calls++; cr.n.Load() != int64(len(data)) {
					t.Errorf("name called after %d of %d bytes", cr.n.Load(), len(data))
				}
				return "final", nil
			})
			if err != nil || calls != 1 {
				t.Fatalf("PutNamed: %v (name called %d times)", err, calls)
			}
			if got := read(t, s, "k/final"); !bytes.Equal(got, data) {
				t.Fatalf("k/final holds %d bytes, not the %d written", len(got), len(data))
			}
			if got := names(t, s); strings.Join(got, " ") != "k/final k/old" {
				t.Fatalf("objects %v, want k/final k/old (no temporary object)", got)
			}

			// Failures: the reader, the name function, a bad name, a
			// cancelled context. Nothing new appears; k/old stays.
			boom := errors.New("boom")
			cctx, cancel := context.WithCancel(ctx)
			fails := []struct {
				name string
				ctx  context.Context
				r    io.Reader
				base func() (string, error)
			}{
				{"reader", ctx, io.MultiReader(strings.NewReader("abc"), errAfter{boom}), func() (string, error) { return "x", nil }},
				{"name", ctx, strings.NewReader("abc"), func() (string, error) { return "", boom }},
				{"two components", ctx, strings.NewReader("abc"), func() (string, error) { return "a/b", nil }},
				{"reserved", ctx, strings.NewReader("abc"), func() (string, error) { return blobstore.TempPrefix + "x", nil }},
				{"cancelled before the copy", cctx, strings.NewReader("abc"), func() (string, error) { cancel(); return "old", nil }},
			}
			for _, f := range fails {
				if err := s.PutNamed(f.ctx, "k", f.r, -1, f.base); err == nil {
					t.Errorf("%s: PutNamed succeeded", f.name)
				}
				if got := names(t, s); strings.Join(got, " ") != "k/final k/old" {
					t.Fatalf("%s: objects %v after a failed PutNamed", f.name, got)
				}
				if got := read(t, s, "k/old"); string(got) != "old" {
					t.Fatalf("%s: k/old reads %q", f.name, got)
				}
			}
			if err := s.Put(ctx, "k/"+blobstore.TempPrefix+"x", strings.NewReader("x"), 1); err == nil {
				t.Fatal("Put of a reserved name succeeded")
			}
		})
	}
}

// A temporary object left by a killed process goes with a later PutNamed
// under the same prefix once it is older than the store's limit.
func TestPutNamedDeletesStaleTemps(t *testing.T) {
	b := memblob.OpenBucket(nil)
	s := blobstore.New(b, "mem-bucket")
	defer s.Close()
	ctx := context.Background()
	if err := b.WriteAll(ctx, "k/"+blobstore.TempPrefix+"left", []byte("left"), nil); err != nil {
		t.Fatal(err)
	}
	put := func() {
		if err := s.PutNamed(ctx, "k", strings.NewReader("abc"), 3, func() (string, error) { return "n", nil }); err != nil {
			t.Fatal(err)
		}
	}
	put()
	if got := names(t, s); strings.Join(got, " ") != "k/"+blobstore.TempPrefix+"left k/n" {
		t.Fatalf("a fresh temporary object was deleted: %v", got)
	}
	blobstore.SetStaleTempAge(s, 0)
	put()
	if got := names(t, s); strings.Join(got, " ") != "k/n" {
		t.Fatalf("the stale temporary object stayed: %v", got)
	}
}
