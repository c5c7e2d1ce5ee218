package syncfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Sync (chunked write-back, then fsync) leaves the file's content as
// written, small or spanning many chunks.
func TestSyncKeepsContent(t *testing.T) {
	for _, size := range []int{0, 1000, 3*chunkSize() + 12345} {
		p := filepath.Join(t.TempDir(), "f")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 31)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := Sync(context.Background(), f); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("size %d: content changed", size)
		}
	}
}

// A cancelled context ends Flush and Sync with its error.
func TestFlushCancelled(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*chunkSize())); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Flush(ctx, f); !errors.Is(err, context.Canceled) {
		t.Errorf("Flush: %v, want context.Canceled", err)
	}
	if err := Sync(ctx, f); !errors.Is(err, context.Canceled) {
		t.Errorf("Sync: %v, want context.Canceled", err)
	}
}
