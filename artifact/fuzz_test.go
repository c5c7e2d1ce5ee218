package artifact

import (
	"errors"
	"testing"
)

// Manifests come from the store, which anyone with bucket access can edit:
// decoding never panics, and whatever it accepts re-encodes to a manifest
// that decodes to the same value.
func FuzzDecodeManifest(f *testing.F) {
	sum := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	f.Add([]byte(`{"kind":"json","metadata":{"filename":"metadata-` + sum + `.json","media_type":"application/json","sha256":"` + sum + `","size_bytes":2},"schema_version":2}`))
	f.Add([]byte(`{"array":{"dtype":"float32","filename":"array-` + sum + `.npy","nnz":null,"sha256":"` + sum + `","shape":[2,3],"size_bytes":152,"sparse_format":null,"storage_format":"npy"},"kind":"array+metadata","metadata":{"filename":"metadata-` + sum + `.json","media_type":"application/json","sha256":"` + sum + `","size_bytes":2},"schema_version":2}`))
	f.Add([]byte(`{"schema_version":2}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest("k", data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("error %v is not an invalid manifest", err)
			}
			return
		}
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeManifest("k", b)
		if err != nil {
			t.Fatalf("re-encoded manifest rejected: %v\n%s", err, b)
		}
		b2, _ := m2.Encode()
		if string(b) != string(b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
	})
}
