package chunkdigest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// reference is the definition, written out: SHA-256 of each 8 MiB piece
// (what `split -b 8M` and `sha256sum` give), concatenated, hashed again.
func reference(b []byte) string {
	var side []byte
	for lo := 0; ; lo += ChunkBytes {
		s := sha256.Sum256(b[lo:min(len(b), lo+ChunkBytes)])
		side = append(side, s[:]...)
		if lo+ChunkBytes >= len(b) {
			break
		}
	}
	s := sha256.Sum256(side)
	return hex.EncodeToString(s[:])
}

func data(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func TestDigestMatchesDefinition(t *testing.T) {
	t.Parallel()
	// The empty file is one empty chunk: SHA-256 of SHA-256("").
	empty := sha256.Sum256(nil)
	want := sha256.Sum256(empty[:])
	if got := Of(nil).Hex(); got != hex.EncodeToString(want[:]) {
		t.Fatalf("empty: %s", got)
	}
	for _, n := range []int{0, 1, 100, ChunkBytes - 1, ChunkBytes, ChunkBytes + 1, 3*ChunkBytes + 17} {
		b := data(n, uint64(n))
		ref := reference(b)
		if got := Of(b); got.Hex() != ref || got.Size != int64(n) || len(got.Sidecar) != Count(int64(n))*Size {
			t.Fatalf("Of(%d bytes) = %s (%d chunks), want %s", n, got.Hex(), len(got.Sidecar)/Size, ref)
		}
		// Written in irregular pieces, as a streaming encoder would.
		h := NewHasher()
		r := rand.New(rand.NewPCG(uint64(n), 2))
		for rest := b; len(rest) > 0; {
			k := min(len(rest), 1+r.IntN(3<<20))
			h.Write(rest[:k])
			rest = rest[k:]
		}
		if got := h.Digest(); got.Hex() != ref || !bytes.Equal(got.Sidecar, Of(b).Sidecar) {
			t.Fatalf("Hasher(%d bytes) = %s, want %s", n, got.Hex(), ref)
		}
	}
	if n := Count(ChunkBytes); n != 1 {
		t.Fatalf("Count(ChunkBytes) = %d", n)
	}
	if lo, hi := Span(ChunkBytes+5, 1); lo != ChunkBytes || hi != ChunkBytes+5 {
		t.Fatalf("Span = [%d, %d)", lo, hi)
	}
}

func TestReaderVerifiesRanges(t *testing.T) {
	t.Parallel()
	b := data(3*ChunkBytes+1000, 7)
	d := Of(b)
	sc, err := ParseSidecar(d.Sidecar, d.Size, d.Hex())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ first, end int }{{0, 4}, {1, 3}, {3, 4}, {2, 2}} {
		lo, _ := Span(d.Size, tc.first)
		hi := lo
		if tc.end > tc.first {
			_, hi = Span(d.Size, tc.end-1)
		}
		r := NewReader(ctx, bytes.NewReader(b[lo:]), sc, tc.first, tc.end)
		got, err := io.ReadAll(r)
		r.Close()
		if tc.end < Count(d.Size) {
			got = got[:min(len(got), int(hi-lo))]
		}
		if err != nil || !bytes.Equal(got, b[lo:hi]) {
			t.Fatalf("chunks [%d, %d): %d bytes, err %v", tc.first, tc.end, len(got), err)
		}
	}

	// One flipped byte in chunk 2 fails exactly that chunk's range, and
	// nothing of the damaged chunk is handed out.
	bad := bytes.Clone(b)
	bad[2*ChunkBytes+12345] ^= 1
	r := NewReader(ctx, bytes.NewReader(bad), sc, 0, 4)
	got, err := io.ReadAll(r)
	r.Close()
	var me *MismatchError
	if !errors.As(err, &me) || me.Chunk != 2 || me.Lo != 2*ChunkBytes || me.Hi != 3*ChunkBytes || len(got) != 2*ChunkBytes {
		t.Fatalf("damaged chunk: err %v, %d bytes read", err, len(got))
	}

	// A short or a long source.
	r = NewReader(ctx, bytes.NewReader(b[:len(b)-1]), sc, 0, 4)
	_, err = io.ReadAll(r)
	var te *TruncatedError
	if !errors.As(err, &te) || te.Read != d.Size-1 {
		t.Fatalf("truncated: %v", err)
	}
	r = NewReader(ctx, bytes.NewReader(append(bytes.Clone(b), 0)), sc, 0, 4)
	_, err = io.ReadAll(r)
	var oe *OverrunError
	if !errors.As(err, &oe) {
		t.Fatalf("overrun: %v", err)
	}

	// Next hands out whole verified chunks.
	r = NewReader(ctx, bytes.NewReader(b), sc, 0, 4)
	var all []byte
	for {
		c, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c...)
	}
	if !bytes.Equal(all, b) {
		t.Fatal("Next lost bytes")
	}

	// A cancelled context stops the reader.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	r = NewReader(cctx, bytes.NewReader(b), sc, 0, 4)
	if _, err := io.ReadAll(r); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestParseSidecarRejects(t *testing.T) {
	t.Parallel()
	d := Of(data(ChunkBytes+1, 3))
	if _, err := ParseSidecar(d.Sidecar[:Size], d.Size, d.Hex()); err == nil {
		t.Fatal("a short sidecar was accepted")
	}
	side := bytes.Clone(d.Sidecar)
	side[0] ^= 1
	var me *MismatchError
	if _, err := ParseSidecar(side, d.Size, d.Hex()); !errors.As(err, &me) || !me.Sidecar {
		t.Fatalf("a damaged sidecar: %v", err)
	}
}

func BenchmarkHasher(b *testing.B) {
	buf := data(64<<20, 1)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		h := NewHasher()
		for lo := 0; lo < len(buf); lo += 1 << 20 {
			h.Write(buf[lo : lo+1<<20])
		}
		h.Digest()
	}
}
