package retrieval

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// A known endpoint digest (EmbeddingsWithDigest) is what the content
// identity uses in place of hashing, in the foreground and the background;
// a slice of such an endpoint is hashed.
func TestEmbeddingsWithDigest(t *testing.T) {
	rel := RecordRelevance([]Record{{QueryID: "0", GalleryID: "0", Grade: 1}, {QueryID: "1", GalleryID: "1", Grade: 1}})
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 1}})
	exact, _ := EmbeddingDigest(g)
	wrong := map[string]any{"kind": "dense", "dtype": "float64", "shape": []any{3, 2}, "sha256": strings.Repeat("0", 64)}
	key := func(gallery Items, opts ...Option) string {
		in := base(t)
		in.Gallery = gallery
		ds, err := NewDataset(in, rel, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return ds.IdentityKey()
	}
	want := key(Embeddings(g))
	for _, bg := range [][]Option{nil, {WithBackgroundIdentity()}} {
		var calls atomic.Int32
		known := func(d map[string]any) func() map[string]any {
			return func() map[string]any { calls.Add(1); return d }
		}
		if got := key(EmbeddingsWithDigest(g, known(exact)), bg...); got != want {
			t.Errorf("background %v: exact known digest gives %s, want %s", bg != nil, got, want)
		}
		if got := key(EmbeddingsWithDigest(g, known(wrong)), bg...); got == want {
			t.Errorf("background %v: the known digest was not used", bg != nil)
		}
		if calls.Load() != 2 {
			t.Errorf("background %v: digest called %d times, want 2", bg != nil, calls.Load())
		}
	}
	// A slice hashes its own rows.
	sliced := EmbeddingsWithDigest(g, func() map[string]any { return wrong }).Slice(0, 3)
	if got := key(sliced); got != want {
		t.Errorf("slice used the whole endpoint's digest: %s, want %s", got, want)
	}
}

// The endpoint digests of SPEC §2.9 are chunked SHA-256s (§10.5): for data
// under one chunk, SHA-256 of the SHA-256 of the bytes, written out here
// from the little-endian elements and the text framing.
func TestEndpointDigestIsChunked(t *testing.T) {
	chunked := func(b []byte) string {
		one := sha256.Sum256(b)
		two := sha256.Sum256(one[:])
		return hex.EncodeToString(two[:])
	}
	g, _ := matrix.FromRows([][]float64{{1, 0}, {0, 1}, {1, 1}})
	var le []byte
	for _, v := range []float64{1, 0, 0, 1, 1, 1} {
		le = binary.LittleEndian.AppendUint64(le, math.Float64bits(v))
	}
	d, err := EmbeddingDigest(g)
	if err != nil || d["sha256"] != chunked(le) || d["kind"] != "dense" {
		t.Fatalf("dense digest %v (%v), want sha256 %s", d, err, chunked(le))
	}
	framed := []byte{0, 0, 0, 0, 0, 0, 0, 2, 'h', 'i', 0, 0, 0, 0, 0, 0, 0, 0}
	td, err := Texts{"hi", ""}.ContentDigest()
	if err != nil || td["sha256"] != chunked(framed) || td["count"] != 2 {
		t.Fatalf("text digest %v (%v), want sha256 %s", td, err, chunked(framed))
	}
}
