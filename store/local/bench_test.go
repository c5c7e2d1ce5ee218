package local_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vertebrae-eval/vertebrae/store/local"
	"github.com/vertebrae-eval/vertebrae/store/storetest"
)

// benchSize is one large object: 128 MiB (16 MiB under -short).
func benchSize() int64 {
	if testing.Short() {
		return 16 << 20
	}
	return 128 << 20
}

// repeatReader streams n bytes from one buffer, so the source costs
// nothing next to the store (an encoder handing over batches).
type repeatReader struct {
	buf  []byte
	left int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := 0
	for n < len(p) && r.left > 0 {
		m := copy(p[n:min(len(p), n+int(min(r.left, int64(len(r.buf)))))], r.buf)
		n += m
		r.left -= int64(m)
	}
	return n, nil
}

// BenchmarkLocalPutGet streams one large object into the local store
// (temp file, fsync, rename, directory fsync) and back out, in MB/s, next
// to cp of the same file for scale (cp alone does not fsync; cp+sync
// does):
//
//	go test -run '^$' -bench LocalPutGet -benchtime 5x ./store/local
func BenchmarkLocalPutGet(b *testing.B) {
	size := benchSize()
	dir := b.TempDir()
	src := filepath.Join(dir, "src.bin")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(f, storetest.NewGenerator(1, size)); err != nil {
		b.Fatal(err)
	}
	f.Close()
	s, err := local.Open(filepath.Join(dir, "store"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	name := "retrieval/embeddings/ds/r/query/main/array-x.npy"

	b.Run("PutFromFile", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(src)
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Put(ctx, name, f, size); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("PutFromStream", func(b *testing.B) {
		chunk := make([]byte, 1<<20)
		storetest.NewGenerator(2, int64(len(chunk))).Read(chunk)
		b.SetBytes(size)
		for b.Loop() {
			if err := s.Put(ctx, name, &repeatReader{buf: chunk, left: size}, size); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Get", func(b *testing.B) {
		buf := make([]byte, 1<<20)
		b.SetBytes(size)
		for b.Loop() {
			rc, err := s.Get(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			var n int64
			for {
				m, err := rc.Read(buf)
				n += int64(m)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			rc.Close()
			if n != size {
				b.Fatalf("read %d bytes", n)
			}
		}
	})
	cp, err := exec.LookPath("cp")
	if err != nil {
		return
	}
	b.Run("cp", func(b *testing.B) {
		dst := filepath.Join(dir, "cp.bin")
		b.SetBytes(size)
		for b.Loop() {
			if out, err := exec.Command(cp, src, dst).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v %s", err, out)
			}
		}
	})
	// cp made as durable as Put: coreutils sync FILE fsyncs the copy.
	if sync, err := exec.LookPath("sync"); err == nil {
		b.Run("cp+sync", func(b *testing.B) {
			dst := filepath.Join(dir, "cp.bin")
			b.SetBytes(size)
			for b.Loop() {
				if out, err := exec.Command(cp, src, dst).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v %s", err, out)
				}
				if out, err := exec.Command(sync, dst).CombinedOutput(); err != nil {
					b.Fatalf("sync: %v %s", err, out)
				}
			}
		})
	}
}
