package artifact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/canonjson"
	"github.com/vertebrae-eval/vertebrae/internal/chunkdigest"
)

// SchemaVersion is the manifest schema written (SPEC §10.5): every data
// file carries a chunked SHA-256 and its sidecar of chunk digests, so a
// byte range verifies without the rest of the file.
const SchemaVersion = 3

// schemaWholeFile is the older schema, still read: one SHA-256 over each
// whole data file, so every read verifies the whole file.
const schemaWholeFile = 2

// Manifest kinds.
const (
	KindArrayMetadata = "array+metadata"
	KindJSON          = "json"
)

// ManifestName is the commit point of every key.
const ManifestName = "manifest.json"

// Manifest is a key's manifest.json (SPEC §10.5). Array is nil for kind
// "json".
type Manifest struct {
	SchemaVersion int
	Kind          string
	Array         *ArrayEntry
	Metadata      FileEntry
}

// ArrayEntry describes the array data file.
type ArrayEntry struct {
	Filename      string
	StorageFormat string // "npy" (dense) or "npz" (CSR)
	Shape         []int
	DType         string
	SizeBytes     int64
	SHA256        string
	SparseFormat  string // "" (null) or "csr"
	NNZ           *int64 // nil (null) for dense
	Chunks        Chunks
}

// Chunks locate a data file's chunk digest sidecar (schema 3; zero in a
// schema-2 manifest, whose SHA256 hashes the whole file).
type Chunks struct {
	Bytes    int64  // chunk size: chunkdigest.ChunkBytes
	Filename string // chunks-<sha256>.bin
}

func chunksFor(sum string) Chunks {
	return Chunks{Bytes: chunkdigest.ChunkBytes, Filename: "chunks-" + sum + ".bin"}
}

// component is one data file as the readers see it.
type component struct {
	name, sum string
	size      int64
	chunks    Chunks
}

func (a *ArrayEntry) component() component {
	return component{a.Filename, a.SHA256, a.SizeBytes, a.Chunks}
}

func (f FileEntry) component() component {
	return component{f.Filename, f.SHA256, f.SizeBytes, f.Chunks}
}

// FileEntry describes the metadata document.
type FileEntry struct {
	Filename  string
	MediaType string
	SizeBytes int64
	SHA256    string
	Chunks    Chunks
}

var hexRe = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (m *Manifest) asMap() map[string]any {
	chunked := func(obj map[string]any, c Chunks) map[string]any {
		if m.SchemaVersion != schemaWholeFile {
			obj["chunk_bytes"], obj["chunks_filename"] = c.Bytes, c.Filename
		}
		return obj
	}
	out := map[string]any{
		"schema_version": m.SchemaVersion,
		"kind":           m.Kind,
		"metadata": chunked(map[string]any{
			"filename": m.Metadata.Filename, "media_type": m.Metadata.MediaType,
			"size_bytes": m.Metadata.SizeBytes, "sha256": m.Metadata.SHA256,
		}, m.Metadata.Chunks),
	}
	if a := m.Array; a != nil {
		shape := make([]any, len(a.Shape))
		for i, s := range a.Shape {
			shape[i] = s
		}
		var sf, nnz any
		if a.SparseFormat != "" {
			sf = a.SparseFormat
		}
		if a.NNZ != nil {
			nnz = *a.NNZ
		}
		out["array"] = chunked(map[string]any{
			"filename": a.Filename, "storage_format": a.StorageFormat, "shape": shape, "dtype": a.DType,
			"size_bytes": a.SizeBytes, "sha256": a.SHA256, "sparse_format": sf, "nnz": nnz,
		}, a.Chunks)
	}
	return out
}

// Encode returns the manifest's bytes: canonical JSON (RFC 8785), so equal
// manifests are equal bytes and re-running a command rewrites nothing new.
func (m *Manifest) Encode() ([]byte, error) { return canonjson.Marshal(m.asMap()) }

// DecodeManifest parses manifest bytes strictly: an extra, missing or
// mistyped field, a schema_version other than 3 (or 2, still read), or
// file names that do not follow the content-address rule fail with
// ErrInvalidManifest.
func DecodeManifest(key string, data []byte) (*Manifest, error) {
	bad := func(format string, args ...any) error {
		return keyErr(key, ErrInvalidManifest, "invalid manifest: "+fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil {
		return nil, bad("not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, bad("trailing data after the JSON object")
	}
	m := &Manifest{}
	sv, err := intField(top, "schema_version")
	if err != nil {
		return nil, bad("%v", err)
	}
	if sv != SchemaVersion && sv != schemaWholeFile {
		return nil, bad("schema_version must be %d (or %d); got %d", SchemaVersion, schemaWholeFile, sv)
	}
	m.SchemaVersion = int(sv)
	// chunkFields reads a schema-3 component's sidecar fields, which must
	// name the sidecar of the component's digest.
	var chunkKeys []string
	if sv == SchemaVersion {
		chunkKeys = []string{"chunk_bytes", "chunks_filename"}
	}
	chunkFields := func(where string, obj map[string]any, sum string) (Chunks, error) {
		if sv != SchemaVersion {
			return Chunks{}, nil
		}
		var c Chunks
		var err error
		if c.Bytes, err = intField(obj, "chunk_bytes"); err != nil {
			return c, bad("%s.%v", where, err)
		}
		if c.Filename, err = strField(obj, "chunks_filename"); err != nil {
			return c, bad("%s.%v", where, err)
		}
		if c != chunksFor(sum) {
			return c, bad("%s must have chunk_bytes %d and chunks_filename chunks-<sha256>.bin of its digest", where, chunkdigest.ChunkBytes)
		}
		return c, nil
	}
	if m.Kind, err = strField(top, "kind"); err != nil {
		return nil, bad("%v", err)
	}
	var want []string
	switch m.Kind {
	case KindArrayMetadata:
		want = []string{"array", "kind", "metadata", "schema_version"}
	case KindJSON:
		want = []string{"kind", "metadata", "schema_version"}
	default:
		return nil, bad("kind must be %q or %q; got %q", KindArrayMetadata, KindJSON, m.Kind)
	}
	if err := exactKeys("manifest", top, want); err != nil {
		return nil, bad("%v", err)
	}
	md, ok := top["metadata"].(map[string]any)
	if !ok {
		return nil, bad("metadata must be an object")
	}
	if err := exactKeys("metadata", md, append([]string{"filename", "media_type", "sha256", "size_bytes"}, chunkKeys...)); err != nil {
		return nil, bad("%v", err)
	}
	f := &m.Metadata
	if f.Filename, err = strField(md, "filename"); err == nil {
		if f.MediaType, err = strField(md, "media_type"); err == nil {
			if f.SHA256, err = strField(md, "sha256"); err == nil {
				f.SizeBytes, err = intField(md, "size_bytes")
			}
		}
	}
	if err != nil {
		return nil, bad("metadata.%v", err)
	}
	if f.MediaType != "application/json" {
		return nil, bad("metadata.media_type must be application/json; got %q", f.MediaType)
	}
	if !hexRe.MatchString(f.SHA256) || f.Filename != "metadata-"+f.SHA256+".json" || f.SizeBytes < 0 {
		return nil, bad("metadata entry does not name metadata-<sha256>.json with its digest and size")
	}
	if f.Chunks, err = chunkFields("metadata", md, f.SHA256); err != nil {
		return nil, err
	}
	if m.Kind == KindJSON {
		return m, nil
	}
	arr, ok := top["array"].(map[string]any)
	if !ok {
		return nil, bad("array must be an object")
	}
	if err := exactKeys("array", arr, append([]string{"dtype", "filename", "nnz", "sha256", "shape", "size_bytes", "sparse_format", "storage_format"}, chunkKeys...)); err != nil {
		return nil, bad("%v", err)
	}
	a := &ArrayEntry{}
	for _, s := range []struct {
		name string
		dst  *string
	}{{"filename", &a.Filename}, {"storage_format", &a.StorageFormat}, {"dtype", &a.DType}, {"sha256", &a.SHA256}} {
		if *s.dst, err = strField(arr, s.name); err != nil {
			return nil, bad("array.%v", err)
		}
	}
	if a.SizeBytes, err = intField(arr, "size_bytes"); err != nil {
		return nil, bad("array.%v", err)
	}
	shape, ok := arr["shape"].([]any)
	if !ok || len(shape) != 2 {
		return nil, bad("array.shape must be a list of two integers")
	}
	for i, v := range shape {
		n, err := toInt(v)
		if err != nil || n < 0 {
			return nil, bad("array.shape[%d] must be a non-negative integer", i)
		}
		a.Shape = append(a.Shape, int(n))
	}
	switch v := arr["sparse_format"].(type) {
	case nil:
	case string:
		if v != "csr" {
			return nil, bad("array.sparse_format must be null or \"csr\"; got %q", v)
		}
		a.SparseFormat = v
	default:
		return nil, bad("array.sparse_format must be null or \"csr\"")
	}
	if arr["nnz"] != nil {
		n, err := toInt(arr["nnz"])
		if err != nil || n < 0 {
			return nil, bad("array.nnz must be null or a non-negative integer")
		}
		a.NNZ = &n
	}
	switch {
	case !slices.Contains([]string{"float16", "float32", "float64"}, a.DType):
		return nil, bad("array.dtype must be float16, float32 or float64; got %q", a.DType)
	case a.StorageFormat == "npy" && (a.SparseFormat != "" || a.NNZ != nil):
		return nil, bad("a dense npy array has sparse_format null and nnz null")
	case a.StorageFormat == "npz" && (a.SparseFormat != "csr" || a.NNZ == nil):
		return nil, bad("a sparse npz array has sparse_format \"csr\" and an nnz")
	case a.StorageFormat != "npy" && a.StorageFormat != "npz":
		return nil, bad("array.storage_format must be npy or npz; got %q", a.StorageFormat)
	case !hexRe.MatchString(a.SHA256) || a.Filename != "array-"+a.SHA256+"."+a.StorageFormat || a.SizeBytes < 0:
		return nil, bad("array entry does not name array-<sha256>.%s with its digest and size", a.StorageFormat)
	}
	if a.Chunks, err = chunkFields("array", arr, a.SHA256); err != nil {
		return nil, err
	}
	m.Array = a
	return m, nil
}

func exactKeys(where string, m map[string]any, want []string) error {
	var extra, missing []string
	for k := range m {
		if !slices.Contains(want, k) {
			extra = append(extra, k)
		}
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			missing = append(missing, k)
		}
	}
	slices.Sort(extra)
	switch {
	case len(extra) > 0:
		return fmt.Errorf("%s has unexpected field(s) %s", where, strings.Join(extra, ", "))
	case len(missing) > 0:
		return fmt.Errorf("%s is missing field(s) %s", where, strings.Join(missing, ", "))
	}
	return nil
}

func strField(m map[string]any, k string) (string, error) {
	s, ok := m[k].(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string", k)
	}
	return s, nil
}

func intField(m map[string]any, k string) (int64, error) {
	n, err := toInt(m[k])
	if err != nil {
		return 0, fmt.Errorf("%s must be an integer", k)
	}
	return n, nil
}

func toInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	return strconv.ParseInt(string(n), 10, 64)
}

// Files are the data file names the manifest references, sidecars
// included.
func (m *Manifest) Files() []string {
	out := []string{m.Metadata.Filename}
	if m.Metadata.Chunks.Filename != "" {
		out = append(out, m.Metadata.Chunks.Filename)
	}
	if a := m.Array; a != nil {
		out = append(out, a.Filename)
		if a.Chunks.Filename != "" {
			out = append(out, a.Chunks.Filename)
		}
	}
	return out
}
