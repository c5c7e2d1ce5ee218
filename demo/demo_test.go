package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// subsetSHA256 pins the embedded data file; update it only together with a
// deliberate regeneration (go generate ./demo).
const subsetSHA256 = "e4ae080b598703a41b2eb6989e2d4dcbb0959d27b8871a9f02c572539d835fa3"

func TestEmbeddedFileSHA256(t *testing.T) {
	sum := sha256.Sum256(subsetFile)
	if got := hex.EncodeToString(sum[:]); got != subsetSHA256 {
		t.Fatalf("embedded data SHA-256 = %s, want %s", got, subsetSHA256)
	}
}

func mustLoad(t testing.TB) *Data {
	t.Helper()
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLoad(t *testing.T) {
	d := mustLoad(t)
	check := func(what string, images [][]byte, labels, ids []string, n int, prefix string, first []string) {
		t.Helper()
		if len(images) != n || len(labels) != n || len(ids) != n {
			t.Fatalf("%s: %d images, %d labels, %d ids, want %d each", what, len(images), len(labels), len(ids), n)
		}
		seen := map[string]bool{}
		for i := range n {
			if len(images[i]) != 784 {
				t.Fatalf("%s image %d: %d bytes", what, i, len(images[i]))
			}
			if !slices.Contains(classNames[:], labels[i]) {
				t.Fatalf("%s label %d = %q, not a class", what, i, labels[i])
			}
			seen[labels[i]] = true
			if want := fmt.Sprintf("%s-%d", prefix, i); ids[i] != want {
				t.Fatalf("%s id %d = %q, want %q", what, i, ids[i], want)
			}
		}
		if len(seen) != 10 {
			t.Errorf("%s: %d classes present, want 10", what, len(seen))
		}
		// Known first labels of the Fashion-MNIST splits.
		if !slices.Equal(labels[:len(first)], first) {
			t.Errorf("%s: first labels %q, want %q", what, labels[:len(first)], first)
		}
	}
	check("query", d.QueryImages, d.QueryLabels, d.QueryIDs, 1000, "test",
		[]string{"Ankle boot", "Pullover", "Trouser", "Trouser", "Shirt"})
	check("gallery", d.GalleryImages, d.GalleryLabels, d.GalleryIDs, 5000, "train",
		[]string{"Ankle boot", "T-shirt/top", "T-shirt/top", "Dress", "T-shirt/top"})

	// Images are capacity-limited, so appending cannot clobber a neighbour.
	next := d.QueryImages[1][0]
	_ = append(d.QueryImages[0], 0xff)
	if d.QueryImages[1][0] != next {
		t.Error("append to one image overwrote the next")
	}
}

func TestClassNames(t *testing.T) {
	names := ClassNames()
	if len(names) != 10 || names[0] != "T-shirt/top" || names[9] != "Ankle boot" {
		t.Fatalf("ClassNames() = %q", names)
	}
	names[0] = "x"
	if ClassNames()[0] != "T-shirt/top" {
		t.Error("ClassNames returned shared storage")
	}
}

func TestBackbonesShapeAndRecipe(t *testing.T) {
	d := mustLoad(t)
	images := d.QueryImages[:300]
	want := []struct {
		name, typ string
		dim       int
	}{{"raw-pixels", "pixels", 784}, {"avg-pool-4x4", "pooled-pixels", 49}, {"hog", "hog", 1296}}
	bbs := Backbones()
	if len(bbs) != len(want) {
		t.Fatalf("%d backbones, want %d", len(bbs), len(want))
	}
	for i, bb := range bbs {
		w := want[i]
		if bb.Name != w.name || bb.Type != w.typ {
			t.Errorf("backbone %d = %s/%s, want %s/%s", i, bb.Name, bb.Type, w.name, w.typ)
		}
		if _, err := json.Marshal(bb.Recipe); err != nil {
			t.Errorf("%s: recipe is not JSON-compatible: %v", bb.Name, err)
		}
		if bb.Recipe["dim"] != w.dim {
			t.Errorf("%s: recipe dim %v, want %d", bb.Name, bb.Recipe["dim"], w.dim)
		}
		m, err := bb.Embed(images)
		if err != nil {
			t.Fatalf("%s: %v", bb.Name, err)
		}
		if m.Rows() != len(images) || m.Cols() != w.dim || m.DType() != matrix.Float32 {
			t.Fatalf("%s: shape (%d, %d) %v, want (%d, %d) float32", bb.Name, m.Rows(), m.Cols(), m.DType(), len(images), w.dim)
		}
		for j, v := range m.Float32Data() {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > 1 {
				t.Fatalf("%s: value %d = %v, want finite in [0, 1]", bb.Name, j, v)
			}
		}
	}
}

func TestEmbedEdgeCases(t *testing.T) {
	for _, bb := range Backbones() {
		m, err := bb.Embed(nil)
		if err != nil || m.Rows() != 0 {
			t.Errorf("%s: Embed(nil) = %v rows, %v", bb.Name, m, err)
		}
		_, err = bb.Embed([][]byte{make([]byte, 784), make([]byte, 783)})
		if !errors.Is(err, ErrImageSize) {
			t.Errorf("%s: short image: err = %v, want ErrImageSize", bb.Name, err)
		}
	}
}

func embedOne(t *testing.T, name string, img []byte) []float32 {
	t.Helper()
	for _, bb := range Backbones() {
		if bb.Name == name {
			m, err := bb.Embed([][]byte{img})
			if err != nil {
				t.Fatal(err)
			}
			return m.Float32Data()
		}
	}
	t.Fatalf("no backbone %q", name)
	return nil
}

func filled(f func(y, x int) byte) []byte {
	img := make([]byte, 784)
	for y := range 28 {
		for x := range 28 {
			img[y*28+x] = f(y, x)
		}
	}
	return img
}

func TestAvgPool(t *testing.T) {
	// 51/255 = 0.2 exactly as a rational, so every cell is float32(0.2).
	for i, v := range embedOne(t, "avg-pool-4x4", filled(func(y, x int) byte { return 51 })) {
		if v != 0.2 {
			t.Fatalf("constant image: cell %d = %v, want 0.2", i, v)
		}
	}
	// One bright 4x4 block at block row 2, col 5; a single pixel in block 0
	// contributes 255/16/255.
	img := filled(func(y, x int) byte {
		switch {
		case y >= 8 && y < 12 && x >= 20 && x < 24:
			return 255
		case y == 0 && x == 0:
			return 255
		}
		return 0
	})
	got := embedOne(t, "avg-pool-4x4", img)
	for i, v := range got {
		want := float32(0)
		switch i {
		case 2*7 + 5:
			want = 1
		case 0:
			want = 1.0 / 16
		}
		if v != want {
			t.Errorf("cell %d = %v, want %v", i, v, want)
		}
	}
}

func TestRawPixels(t *testing.T) {
	got := embedOne(t, "raw-pixels", filled(func(y, x int) byte { return byte(y*28 + x) }))
	for i, v := range got {
		if want := float32(float64(byte(i)) / 255); v != want {
			t.Fatalf("pixel %d = %v, want %v", i, v, want)
		}
	}
}

// binEnergy returns the squared descriptor mass per orientation bin.
func binEnergy(desc []float32) (e [hogBins]float64) {
	for i, v := range desc {
		e[i%hogBins] += float64(v) * float64(v)
	}
	return e
}

func TestHOGEdges(t *testing.T) {
	// Dark left half, bright right half: horizontal gradient, angle 0, which
	// is the centre of bin 0.
	vertical := binEnergy(embedOne(t, "hog", filled(func(y, x int) byte {
		if x >= 14 {
			return 200
		}
		return 10
	})))
	total := 0.0
	for _, e := range vertical {
		total += e
	}
	if total == 0 || vertical[0] != total {
		t.Errorf("vertical edge: bin energies %v, want all in bin 0", vertical)
	}

	// Horizontal edge: vertical gradient at π/2 = 4.5 bins, split evenly
	// between bins 4 and 5.
	horizontal := binEnergy(embedOne(t, "hog", filled(func(y, x int) byte {
		if y >= 14 {
			return 200
		}
		return 10
	})))
	if horizontal[4] == 0 || math.Abs(horizontal[4]-horizontal[5]) > 1e-6*horizontal[4] {
		t.Errorf("horizontal edge: bins 4 and 5 = %v, %v, want equal and nonzero", horizontal[4], horizontal[5])
	}
	for b, e := range horizontal {
		if b != 4 && b != 5 && e != 0 {
			t.Errorf("horizontal edge: bin %d energy %v, want 0", b, e)
		}
	}
}

func TestHOGFlatImages(t *testing.T) {
	for _, v := range []byte{0, 128, 255} {
		for i, x := range embedOne(t, "hog", filled(func(y, x int) byte { return v })) {
			if x != 0 {
				t.Fatalf("flat image %d: component %d = %v, want 0", v, i, x)
			}
		}
	}
}

func TestHOGBlockNorm(t *testing.T) {
	d := mustLoad(t)
	desc := embedOne(t, "hog", d.QueryImages[0])
	for b := 0; b < hogDim; b += hogBlockDim {
		s := 0.0
		for _, v := range desc[b : b+hogBlockDim] {
			s += float64(v) * float64(v)
		}
		if s != 0 && math.Abs(s-1) > 1e-4 {
			t.Errorf("block at %d has squared norm %v, want 1 or 0", b, s)
		}
	}
}

func TestUnsignedAngle(t *testing.T) {
	// Every gradient a pair of uint8 differences can produce.
	for gx := -255; gx <= 255; gx++ {
		for gy := -255; gy <= 255; gy++ {
			if gx == 0 && gy == 0 {
				continue
			}
			want := math.Atan2(float64(gy), float64(gx))
			if want < 0 {
				want += math.Pi
			}
			if want == math.Pi {
				want = 0
			}
			got := unsignedAngle(gx, gy)
			if math.Abs(got-want) > 1e-14 || got < 0 || got >= math.Pi {
				t.Fatalf("unsignedAngle(%d, %d) = %v, want %v", gx, gy, got, want)
			}
		}
	}
}

// outputDigests pins each backbone's float32 bits on the 1,000 queries, so a
// platform or toolchain that rounds differently fails here.
var outputDigests = map[string]string{
	"raw-pixels":   "101b34d8580144d13d8a590c23b71a13727ebfb8698c6410aa08140b0b657da5",
	"avg-pool-4x4": "3f32d80a389971cef85e37a4bfe84257bc8a9569307036b40a6fca4d48f8f9b5",
	"hog":          "bda4914b58b79898b6213014d8356428935d8cae853ab730bff44f21bdddbcda",
}

func digest(m *matrix.Dense) string {
	h := sha256.New()
	var b [4]byte
	for _, v := range m.Float32Data() {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestDeterminism(t *testing.T) {
	d := mustLoad(t)
	for _, bb := range Backbones() {
		a, err := bb.Embed(d.QueryImages)
		if err != nil {
			t.Fatal(err)
		}
		// A second call with a different worker count must agree bit for bit.
		prev := runtime.GOMAXPROCS(1)
		b, err := bb.Embed(d.QueryImages)
		runtime.GOMAXPROCS(prev)
		if err != nil {
			t.Fatal(err)
		}
		da, db := digest(a), digest(b)
		if da != db {
			t.Errorf("%s: two calls differ", bb.Name)
		}
		if want := outputDigests[bb.Name]; da != want {
			t.Errorf("%s: output digest %s, want %s", bb.Name, da, want)
		}
	}
}

// top1Agreement returns the fraction of the first n queries whose most
// cosine-similar gallery image has the same label.
func top1Agreement(t *testing.T, d *Data, bb Backbone, n int) float64 {
	t.Helper()
	q, err := bb.Embed(d.QueryImages[:n])
	if err != nil {
		t.Fatal(err)
	}
	g, err := bb.Embed(d.GalleryImages)
	if err != nil {
		t.Fatal(err)
	}
	normalized := func(m *matrix.Dense) [][]float64 {
		rows := make([][]float64, m.Rows())
		for i := range rows {
			r := make([]float64, m.Cols())
			m.RowFloat64(i, r)
			s := 0.0
			for _, v := range r {
				s += v * v
			}
			if s > 0 {
				s = math.Sqrt(s)
				for j := range r {
					r[j] /= s
				}
			}
			rows[i] = r
		}
		return rows
	}
	qs, gs := normalized(q), normalized(g)
	agree := 0
	for i, qr := range qs {
		best, bestSim := -1, math.Inf(-1)
		for j, gr := range gs {
			sim := 0.0
			for k, v := range qr {
				sim += v * gr[k]
			}
			if sim > bestSim {
				best, bestSim = j, sim
			}
		}
		if d.GalleryLabels[best] == d.QueryLabels[i] {
			agree++
		}
	}
	return float64(agree) / float64(n)
}

func TestNearestNeighbourAboveChance(t *testing.T) {
	if testing.Short() {
		t.Skip("brute-force 200x5000 search")
	}
	d := mustLoad(t)
	for _, bb := range Backbones() {
		acc := top1Agreement(t, d, bb, 200)
		t.Logf("%s: top-1 label agreement on 200 queries = %.3f", bb.Name, acc)
		if bb.Name != "avg-pool-4x4" && acc <= 0.5 {
			t.Errorf("%s: top-1 agreement %.3f, want > 0.5 (chance is 0.1)", bb.Name, acc)
		}
	}
}

func BenchmarkEmbed(b *testing.B) {
	d := mustLoad(b)
	images := append(slices.Clip(d.QueryImages), d.GalleryImages...)
	for _, bb := range Backbones() {
		b.Run(bb.Name, func(b *testing.B) {
			for b.Loop() {
				if _, err := bb.Embed(images); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The table gives atanUnit of the same quotient, bit for bit, for every
// ratio of two pixel differences.
func TestAtanRatioEqualsAtanUnit(t *testing.T) {
	for q := 1; q <= 255; q++ {
		for p := 0; p <= q; p++ {
			if got, want := atanRatio(p, q), atanUnit(float64(p)/float64(q)); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("atanRatio(%d, %d) = %v, atanUnit = %v", p, q, got, want)
			}
		}
	}
}
