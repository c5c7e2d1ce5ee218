package hosted

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
)

// Cache file layout, little-endian:
//
//	"VHE1" | width uint32 | width × float32 | CRC-32C of the preceding bytes
//
// The checksum lets a reader reject torn or foreign files, which is why
// writes skip fsync: a file cut short by a crash is simply a miss.
const (
	cacheMagic  = "VHE1"
	cacheHeader = 8
	cacheExt    = ".f32"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// cache stores one vector per text under dir/<hh>/<hash>.f32.
type cache struct {
	dir string
}

// cacheKey is H(canonical JSON) of what determines a text's vector
// (SPEC §10.1). base_url is left out so a moved or re-ported server keeps
// its cache, and so are the encoding (base64 and float carry the same
// float32 values) and the batch size (outputs are per text). dimensions is
// part of the key only for openai, the one provider that sends it.
func (c *Client) cacheKey(text string) (string, error) {
	var dims any
	if c.cfg.Provider == ProviderOpenAI && c.cfg.Dimensions > 0 {
		dims = c.cfg.Dimensions
	}
	return canonjson.Hash(map[string]any{
		"kind":       "vertebrae.hosted_embedding",
		"version":    2,
		"provider":   c.cfg.Provider,
		"model":      c.cfg.Model,
		"dimensions": dims,
		// The identity the caller vouches for (New requires one with a
		// cache): a new model deployment gets a new identity, hence new
		// keys, never the old model's vectors (SPEC §9.5).
		"cache_identity": c.cfg.CacheIdentity,
		"text":           text,
	})
}

func (k *cache) path(key string) string {
	return filepath.Join(k.dir, key[:2], key+cacheExt)
}

// load returns the cached vector, or nil when the file is missing, corrupt,
// non-finite or (when want > 0) of another width; the caller then requests
// the text and overwrites the file.
func (k *cache) load(key string, want int) []float32 {
	b, err := os.ReadFile(k.path(key))
	if err != nil || len(b) < cacheHeader+4 || string(b[:4]) != cacheMagic {
		return nil
	}
	width := int(binary.LittleEndian.Uint32(b[4:8]))
	if width == 0 || len(b) != cacheHeader+4*width+4 || (want > 0 && width != want) {
		return nil
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil
	}
	v := make([]float32, width)
	for j := range v {
		f := math.Float32frombits(binary.LittleEndian.Uint32(body[cacheHeader+4*j:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil
		}
		v[j] = f
	}
	return v
}

// store writes v atomically: a temporary file in the target directory is
// renamed over the target, so concurrent readers see the old file or the
// complete new one.
func (k *cache) store(key string, v []float32) (err error) {
	path := k.path(key)
	defer func() {
		if err != nil {
			err = fmt.Errorf("write embedding cache %s: %w", path, err)
		}
	}()
	b := make([]byte, cacheHeader, cacheHeader+4*len(v)+4)
	copy(b, cacheMagic)
	binary.LittleEndian.PutUint32(b[4:], uint32(len(v)))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))

	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
