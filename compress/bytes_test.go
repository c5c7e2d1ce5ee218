package compress

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// bytesGallery is a 6 × 5 gallery of small integers (exact in float16,
// float32 and float64), 19 of its 30 entries non-zero.
var bytesGallery = [][]float64{
	{1, 0, 3, 4, 0},
	{0, 2, 0, 5, 1},
	{2, 1, 0, 0, 3},
	{4, 0, 1, 2, 0},
	{0, 3, 2, 1, 1},
	{1, 1, 0, 0, 2},
}

const (
	bytesRows, bytesDim, bytesNNZ = 6, 5, 19
	// The float32 baselines: 6·5·4 dense; 19 values and indices of 4
	// bytes plus 7 row pointers of 8 bytes for CSR.
	denseBaseline = 6 * 5 * 4
	csrBaseline   = 19*4 + 19*4 + 8*7
)

// sources are the same values in every element type a source file may
// have.
func denseSources(t *testing.T, rows [][]float64) map[string]matrix.Matrix {
	t.Helper()
	n, d := len(rows), len(rows[0])
	var v16 []uint16
	for _, r := range rows {
		for _, x := range r {
			v16 = append(v16, float16FromFloat32(float32(x)))
		}
	}
	m16, err := matrix.NewDense16(n, d, v16)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]matrix.Matrix{"float16": m16, "float32": dense32(t, rows), "float64": dense(t, rows)}
}

func csrSources(t *testing.T, rows [][]float64) map[string]matrix.Matrix {
	t.Helper()
	c64 := csr(t, rows)
	indptr := []int64{0}
	var indices []int32
	var vals []float32
	for _, r := range rows {
		for j, v := range r {
			if v != 0 {
				indices = append(indices, int32(j))
				vals = append(vals, float32(v))
			}
		}
		indptr = append(indptr, int64(len(indices)))
	}
	c32, err := matrix.NewCSR32(len(rows), len(rows[0]), indptr, indices, vals)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]matrix.Matrix{"float32": c32, "float64": c64}
}

// TestGalleryBytesPerMethod pins the gallery bytes of every method by hand
// (see BaselineElementBytes) and checks that they, the ratio and the
// metadata read back from JSON are the same for every source element type.
func TestGalleryBytesPerMethod(t *testing.T) {
	withDType := func(c Config, dt string) Config { c.DType = ptr(dt); return c }
	quant := func(p string) Config { return Config{Method: MethodQuantize, Precision: ptr(p), RandomState: 42} }
	cases := []struct {
		name     string
		cfg      Config
		sparse   bool
		bytes    int // hand-computed gallery bytes
		baseline int
	}{
		{"pca:2", cfgOf(MethodPCA, 2), false, 6 * 2 * 4, denseBaseline},
		{"pca:2 float16", withDType(cfgOf(MethodPCA, 2), "float16"), false, 6 * 2 * 2, denseBaseline},
		{"pca:2 float32", withDType(cfgOf(MethodPCA, 2), "float32"), false, 6 * 2 * 4, denseBaseline},
		{"pca:2 float64", withDType(cfgOf(MethodPCA, 2), "float64"), false, 6 * 2 * 8, denseBaseline},
		{"truncated_svd:3", cfgOf(MethodTruncatedSVD, 3), false, 6 * 3 * 4, denseBaseline},
		{"gaussian_rp:2", cfgOf(MethodGaussianRandomProjection, 2), false, 6 * 2 * 4, denseBaseline},
		{"sparse_rp:3", cfgOf(MethodSparseRandomProjection, 3), false, 6 * 3 * 4, denseBaseline},
		{"prefix:2", cfgOf(MethodPrefixTruncate, 2), false, 6 * 2 * 4, denseBaseline},
		{"prefix:2 float16", withDType(cfgOf(MethodPrefixTruncate, 2), "float16"), false, 6 * 2 * 2, denseBaseline},
		{"quantize:float16", quant(PrecisionFloat16), false, 6 * 5 * 2, denseBaseline},
		{"quantize:int8", quant(PrecisionInt8), false, 6*5*1 + 5*8, denseBaseline},
		{"quantize:uint8", quant(PrecisionUint8), false, 6*5*1 + 5*2*8, denseBaseline},
		// Sparse galleries: CSR stays CSR for prefix and float16; the
		// prefix keeps the 8 non-zeros of columns 0 and 1.
		{"csr prefix:2", cfgOf(MethodPrefixTruncate, 2), true, 8*4 + 8*4 + 8*7, csrBaseline},
		{"csr prefix:2 float64", withDType(cfgOf(MethodPrefixTruncate, 2), "float64"), true, 8*8 + 8*4 + 8*7, csrBaseline},
		{"csr quantize:float16", quant(PrecisionFloat16), true, 19*2 + 19*4 + 8*7, csrBaseline},
		{"csr truncated_svd:2", cfgOf(MethodTruncatedSVD, 2), true, 6 * 2 * 4, csrBaseline},
		{"csr gaussian_rp:2", cfgOf(MethodGaussianRandomProjection, 2), true, 6 * 2 * 4, csrBaseline},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sources := denseSources(t, bytesGallery)
			if c.sparse {
				sources = csrSources(t, bytesGallery)
			}
			wantRatio := float64(c.baseline) / float64(c.bytes)
			for dt, g := range sources {
				md := apply(t, c.cfg, g, g).Metadata
				if md["resident_bytes"] != c.bytes || md["compression_ratio"] != wantRatio {
					t.Errorf("%s source: resident_bytes %v, ratio %v; want %d, %v", dt, md["resident_bytes"], md["compression_ratio"], c.bytes, wantRatio)
				}
				if c.cfg.Method == MethodQuantize && md["estimated_encoded_bytes"] != c.bytes {
					t.Errorf("%s source: estimated_encoded_bytes %v, want %d", dt, md["estimated_encoded_bytes"], c.bytes)
				}
				// The readers (report table, frontier plot) get the same
				// numbers from fresh and from JSON-decoded metadata.
				for _, m := range []map[string]any{md, viaJSON(t, md)} {
					if b, ok := GalleryBytes(m, bytesRows); !ok || b != c.bytes {
						t.Errorf("%s source: GalleryBytes = %d %v, want %d", dt, b, ok, c.bytes)
					}
					if r, ok := Ratio(m, bytesRows); !ok || r != wantRatio {
						t.Errorf("%s source: Ratio = %v %v, want %v", dt, r, ok, wantRatio)
					}
				}
			}
		})
	}
}

// TestGalleryBytesSourceIndependent is the property: the same values from
// a float16, float32 or float64 source give identical gallery bytes and
// ratios, for every method, with or without a configured dtype, and for
// galleries of several shapes.
func TestGalleryBytesSourceIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 27))
	for trial := 0; trial < 20; trial++ {
		n, d := 3+rng.IntN(6), 3+rng.IntN(6)
		rows := make([][]float64, n)
		for i := range rows {
			rows[i] = make([]float64, d)
			for j := range rows[i] {
				rows[i][j] = float64(rng.IntN(9) - 4) // exact in float16
			}
			rows[i][i%d] = 5 // no empty row
		}
		k := 1 + rng.IntN(min(n, d)-1)
		var cfgs []Config
		for _, m := range []string{MethodPCA, MethodTruncatedSVD, MethodGaussianRandomProjection, MethodSparseRandomProjection, MethodPrefixTruncate} {
			cfgs = append(cfgs, cfgOf(m, k))
			for _, dt := range []string{"float16", "float32", "float64"} {
				c := cfgOf(m, k)
				c.DType = ptr(dt)
				cfgs = append(cfgs, c)
			}
		}
		for _, p := range []string{PrecisionFloat16, PrecisionInt8, PrecisionUint8} {
			cfgs = append(cfgs, Config{Method: MethodQuantize, Precision: ptr(p), RandomState: 42})
		}
		cfgs = append(cfgs, Default(), cfgOf(MethodPCA, d)) // none and the no-op
		sources := denseSources(t, rows)
		for _, cfg := range cfgs {
			type numbers struct {
				resident, ratio, encoded any
				bytes                    int
				r                        float64
			}
			var ref *numbers
			for _, dt := range []string{"float16", "float32", "float64"} {
				md := apply(t, cfg, sources[dt], sources[dt]).Metadata
				got := numbers{resident: md["resident_bytes"], ratio: md["compression_ratio"], encoded: md["estimated_encoded_bytes"]}
				var ok1, ok2 bool
				got.bytes, ok1 = GalleryBytes(md, n)
				got.r, ok2 = Ratio(md, n)
				if !ok1 || !ok2 {
					t.Fatalf("%v %s source: no byte count in %v", cfg.AsMap(), dt, md)
				}
				if ref == nil {
					ref = &got
				} else if !reflect.DeepEqual(*ref, got) {
					t.Fatalf("%dx%d %v: %s source gives %+v, float16 source %+v", n, d, cfg.AsMap(), dt, got, *ref)
				}
			}
		}
	}
}

// TestGalleryBytesUncompressed: none, disabled and the no-op count the
// float32 baseline rows × dim × 4 with ratio 1 whatever the source dtype;
// an uncompressed sparse gallery has no byte count in the readers.
func TestGalleryBytesUncompressed(t *testing.T) {
	off := cfgOf(MethodPCA, 2)
	off.Enabled = ptr(false)
	for _, cfg := range []Config{Default(), off, cfgOf(MethodPCA, 5), cfgOf(MethodPrefixTruncate, 9)} {
		for dt, g := range denseSources(t, bytesGallery) {
			md := apply(t, cfg, g, g).Metadata
			if md["dtype"] != dt {
				t.Fatalf("metadata dtype %v, want %s", md["dtype"], dt)
			}
			for _, m := range []map[string]any{md, viaJSON(t, md)} {
				b, ok := GalleryBytes(m, bytesRows)
				r, rok := Ratio(m, bytesRows)
				if !ok || b != denseBaseline || !rok || r != 1 {
					t.Errorf("%v %s source: bytes %d %v, ratio %v %v; want %d, 1", cfg.AsMap(), dt, b, ok, r, rok, denseBaseline)
				}
			}
		}
		for dt, g := range csrSources(t, bytesGallery) {
			md := apply(t, cfg, g, g).Metadata
			if _, ok := GalleryBytes(md, bytesRows); ok {
				t.Errorf("%v %s sparse source: uncompressed CSR has a byte count", cfg.AsMap(), dt)
			}
			if _, ok := Ratio(md, bytesRows); ok {
				t.Errorf("%v %s sparse source: uncompressed CSR has a ratio", cfg.AsMap(), dt)
			}
		}
	}
	if _, ok := GalleryBytes(map[string]any{"applied": true}, 3); ok {
		t.Error("applied metadata without resident_bytes has a byte count")
	}
	if _, ok := GalleryBytes(map[string]any{"applied": false}, 3); ok {
		t.Error("metadata without compressed_dim has a byte count")
	}
}

func viaJSON(t *testing.T, md map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(md)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(fmt.Errorf("%w: %s", err, data))
	}
	return out
}
