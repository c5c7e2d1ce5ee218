package runspec

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/digestcache"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// tableFiles remembers the digest-cache snapshots (internal/digestcache) of
// the embedding files a run file's tables were read from, so that facts
// established about a file's content — its SPEC §2.9 digest, that every
// value is finite — are reused while the file is unchanged, under the
// cache's staleness rules: every extraction shard of a large gallery
// would otherwise hash and scan the whole file again.
type tableFiles struct {
	cache  *digestcache.Cache
	finite *digestcache.Cache // cache.Sub(finiteCache): files whose values are all finite
	files  []tableFile
}

// newTableFiles remembers the files of a run file's tables in c (nil:
// disabled).
func newTableFiles(c *digestcache.Cache) *tableFiles {
	return &tableFiles{cache: c, finite: c.Sub(finiteCache)}
}

type tableFile struct {
	m         matrix.Matrix // *matrix.Dense or *matrix.CSR
	snap      digestcache.Snapshot
	finiteHit bool // the cache knew m finite
}

// finiteCache names the digest cache's part that records files whose
// values a full scan found finite.
const finiteCache = "finite"

// add records that m was read from snap's file; a mapped dense table the
// cache knows to be finite is marked so (Dense.MarkFinite), which skips
// the dataset's scan of it.
func (t *tableFiles) add(m matrix.Matrix, snap digestcache.Snapshot) {
	if t == nil || t.cache == nil {
		return
	}
	switch m.(type) {
	case *matrix.Dense, *matrix.CSR:
	default:
		return // an interface of another type may not be comparable
	}
	f := tableFile{m: m, snap: snap}
	if d, ok := m.(*matrix.Dense); ok && d.IsReadOnly() && !d.KnownFinite() {
		if e, ok := t.finite.Lookup(snap); ok && sameFinite(e, finiteEntry(d)) {
			d.MarkFinite()
			f.finiteHit = true
		}
	}
	t.files = append(t.files, f)
}

// finiteEntry is the cache entry recording that d's values are finite;
// its dtype and shape are checked against the matrix it is used for.
func finiteEntry(d *matrix.Dense) map[string]string {
	return map[string]string{"finite": "true", "dtype": d.DType().String(), "shape": strconv.Itoa(d.Rows()) + "x" + strconv.Itoa(d.Cols())}
}

func sameFinite(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// storeFinite records, for every mapped dense table whose values a full
// scan (the dataset's check) found finite, that its file is finite.
func (t *tableFiles) storeFinite() {
	if t == nil || t.cache == nil {
		return
	}
	for i := range t.files {
		f := &t.files[i]
		if d, ok := f.m.(*matrix.Dense); ok && !f.finiteHit && d.IsReadOnly() && d.KnownFinite() {
			t.finite.Store(f.snap, finiteEntry(d))
		}
	}
}

// digest is the SPEC §2.9 digest of a table (extract.Precomputed.Digest):
// the digest cache's entry for its unchanged file, the same entry the
// dataset's endpoint digest uses (cachedEmbeddings), else hashed (stopping
// with ctx) and stored.
func (t *tableFiles) digest(ctx context.Context, m matrix.Matrix) (map[string]any, error) {
	var snap digestcache.Snapshot
	found := false
	if t != nil {
		for _, f := range t.files {
			if f.m == m {
				snap, found = f.snap, true
				break
			}
		}
	}
	if found {
		if known, ok := t.cache.Lookup(snap); ok {
			if d, ok := digestFromCache(known, m); ok {
				return d, nil
			}
		}
	}
	d, err := retrieval.EmbeddingDigestContext(ctx, m)
	if err == nil && found {
		t.cache.Store(snap, digestToCache(d))
	}
	return d, err
}

// digestSnap records an embedding file's identity before it is read, for
// the digest cache (internal/digestcache). Only formats whose matrix is the
// file's stored elements, independent of how this build decodes anything
// else, take part: .npy, .npz and .safetensors. Parquet and Arrow columns
// are always hashed.
func digestSnap(c *digestcache.Cache, path, tensor string) digestcache.Snapshot {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy", ".npz", ".safetensors":
		return c.Snap(path, "embeddings\x00"+tensor)
	}
	return digestcache.Snapshot{}
}

// cachedEmbeddings wraps the matrix read from a snapshot's file as dataset
// inputs whose SPEC §2.9 endpoint digest comes from the digest cache when
// the file is unchanged since it was hashed; otherwise the digest is
// computed when the content identity needs it and then stored.
func cachedEmbeddings(c *digestcache.Cache, snap digestcache.Snapshot, m matrix.Matrix) retrieval.EmbeddingItems {
	if c == nil {
		return retrieval.Embeddings(m)
	}
	switch m.(type) {
	case *matrix.Dense, *matrix.CSR:
	default:
		return retrieval.Embeddings(m)
	}
	if known, ok := c.Lookup(snap); ok {
		if d, ok := digestFromCache(known, m); ok {
			return retrieval.EmbeddingsWithDigest(m, func() map[string]any { return d })
		}
	}
	return retrieval.EmbeddingsWithDigest(m, func() map[string]any {
		d, _ := retrieval.EmbeddingDigest(m) // dense and CSR digests cannot fail
		c.Store(snap, digestToCache(d))
		return d
	})
}

// digestToCache flattens an endpoint digest to strings; the shape is kept
// only to check an entry against the matrix it is used for.
func digestToCache(d map[string]any) map[string]string {
	out := make(map[string]string, len(d))
	for k, v := range d {
		switch t := v.(type) {
		case string:
			out[k] = t
		case []any:
			var parts []string
			for _, x := range t {
				if n, ok := x.(int); ok {
					parts = append(parts, strconv.Itoa(n))
				}
			}
			out[k] = strings.Join(parts, "x")
		}
	}
	return out
}

// digestFromCache rebuilds the endpoint digest of m from a cache entry (the
// same map EmbeddingDigest returns, with Go ints in the shape), provided
// the entry's kind, dtype and shape are m's.
func digestFromCache(e map[string]string, m matrix.Matrix) (map[string]any, bool) {
	shape := strconv.Itoa(m.Rows()) + "x" + strconv.Itoa(m.Cols())
	var sums []string
	var kind, dtype string
	switch t := m.(type) {
	case *matrix.Dense:
		kind, dtype, sums = "dense", t.DType().String(), []string{"sha256"}
	case *matrix.CSR:
		kind, dtype, sums = "csr", t.DType().String(), []string{"data_sha256", "indices_sha256", "indptr_sha256"}
	default:
		return nil, false
	}
	if e["kind"] != kind || e["dtype"] != dtype || e["shape"] != shape || len(e) != 3+len(sums) {
		return nil, false
	}
	d := map[string]any{"kind": kind, "dtype": dtype, "shape": []any{m.Rows(), m.Cols()}}
	for _, k := range sums {
		s, ok := e[k]
		if !ok || !isHex64(s) {
			return nil, false
		}
		d[k] = s
	}
	return d, true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
