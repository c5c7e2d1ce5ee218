package tinymodels

import (
	"bytes"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/png"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const testdata = "../../testdata"

// TestGeneratedFilesUpToDate regenerates testdata into a temporary
// directory and requires the committed files to be byte-identical, with no
// stale extra files.
func TestGeneratedFilesUpToDate(t *testing.T) {
	dir := t.TempDir()
	if err := WriteAll(dir); err != nil {
		t.Fatal(err)
	}
	again := Files()
	generated := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		generated[rel] = true
		got, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, again[rel]) {
			t.Errorf("%s: generator is not deterministic", rel)
		}
		want, err := os.ReadFile(filepath.Join(testdata, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: %v (run go generate ./extract/onnx/internal/tinymodels)", rel, err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator output (run go generate ./extract/onnx/internal/tinymodels)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(generated) != len(again) {
		t.Errorf("wrote %d files, Files has %d", len(generated), len(again))
	}
	err = filepath.WalkDir(testdata, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(testdata, path)
		rel = filepath.ToSlash(rel)
		if rel != "README.md" && !generated[rel] {
			t.Errorf("%s is in testdata but not generated", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestCLIPTextHandComputed(t *testing.T) {
	// "a red" = <|startoftext|> a</w> red</w> <|endoftext|>, last token masked.
	sot, _ := CLIPTokenID(CLIPStartToken)
	eot, _ := CLIPTokenID(CLIPEndToken)
	a, _ := CLIPTokenID("a</w>")
	red, _ := CLIPTokenID("red</w>")
	if sot != 546 || eot != 547 || a != 320 || red != 522 {
		t.Fatalf("ids sot=%d eot=%d a=%d red=%d", sot, eot, a, red)
	}
	ids := [][]int64{{sot, a, red, eot}}
	mask := [][]int64{{1, 1, 1, 0}}
	// generic(546): u=((2730 mod 9)−4)/16=−1/16, w=(1+546 mod 7)/16=1/16
	// generic(320): u=((1600 mod 9)−4)/16=3/16,  w=(1+320 mod 7)/16=6/16
	// red</w>: hidden (−1/2, −1/2, 1, 0)
	// mean = (−1+3−8, −1+3−8, −1+3+16, 1+6+0)/16/3 = (−6, −6, 18, 7)/48
	// @ Wt = (2·h2, 2·h0, 2·h1, h3/2) = (36, −12, −12, 3.5)/48
	got := CLIPText(ids, mask)[0]
	want := []float64{36.0 / 48, -12.0 / 48, -12.0 / 48, 3.5 / 48}
	for k := range want {
		near(t, "CLIPText[0]", got[k], want[k])
	}
	hidden := CLIPTextHidden(ids)[0]
	for k, v := range []float64{-0.5, -0.5, 1, 0} {
		near(t, "last_hidden_state[0][2]", hidden[2][k], v)
	}
	// generic(547): u=((2735 mod 9)−4)/16=4/16, w=(1+547 mod 7)/16=2/16
	for k, v := range []float64{0.25, 0.25, 0.25, 0.125} {
		near(t, "last_hidden_state[0][3]", hidden[3][k], v)
	}
}

func TestCLIPVisionHandComputed(t *testing.T) {
	// A solid image with normalized channel values (r, g, b) embeds to
	// (2r−g−b, 2g−r−b, 2b−r−g, 0) and pools to (r, g, b, (r+g)/2).
	px := make([]float32, PixelCount)
	for i := range px {
		px[i] = []float32{1, -0.5, 0.25}[i/64]
	}
	emb := CLIPVision([][]float32{px})[0]
	for k, v := range []float64{2.25, -2.25, 0, 0} {
		near(t, "image_embeds", emb[k], v)
	}
	pool := CLIPVisionPooled([][]float32{px})[0]
	for k, v := range []float64{1, -0.5, 0.25, 0.25} {
		near(t, "pooler_output", pool[k], v)
	}
	// One bright pixel at channel 1, y=0, x=3: column 3 weight (3+1)(1+1)/256.
	one := make([]float32, PixelCount)
	one[64+3] = 1
	emb = CLIPVision([][]float32{one})[0]
	for k, v := range []float64{-1.0 / 64, 2.0 / 64, -1.0 / 64, 8.0 / 256} {
		near(t, "image_embeds(one pixel)", emb[k], v)
	}
}

func TestSigLIPHandComputed(t *testing.T) {
	red, _ := SigLIPTokenID("▁red")
	if red != 6 {
		t.Fatalf("▁red id = %d", red)
	}
	ids := [][]int64{{red, SigLIPPadID}}
	pos := [][]int64{{0, 1}}
	// ▁red hidden (−1/2, 1, −1/2, 0); </s> (id 1) generic (1/16 ×3, 2/16);
	// P[0] = (−2/16 ×3, 1/32), P[1] = (−1/16 ×3, 2/32).
	// mean = (−5/16, 7/16, −5/16, 7/64); Wt: (2·h1, 2·h2, 2·h0, h3).
	got := SigLIPText(ids, pos)[0]
	for k, v := range []float64{7.0 / 8, -5.0 / 8, -5.0 / 8, 7.0 / 64} {
		near(t, "SigLIPText", got[k], v)
	}
	// Solid SigLIP red is (1, −1, −1) after normalization: (4, −2, −2, 0).
	emb := SigLIPVision([][]float32{SigLIPPixels(RetrievalImages[0])})[0]
	for k, v := range []float64{4, -2, -2, 0} {
		near(t, "SigLIPVision(red)", emb[k], v)
	}
}

func TestTextAndImageHandComputed(t *testing.T) {
	// E[5] = ((15+5k) mod 11 − 5)/8 = (−1, 4, −2, 3)/8; T[1] = (−4, 2, 0, −1)/16.
	h := TextHidden([][]int64{{5}}, [][]int64{{1}})[0][0]
	for k, v := range []float64{-1.0/8 - 4.0/16, 4.0/8 + 2.0/16, -2.0 / 8, 3.0/8 - 1.0/16} {
		near(t, "TextHidden", h[k], v)
	}
	// Top-left quadrant R=1, everything else 0: patch 0 = M[0], others 0.
	px := make([]float32, PixelCount)
	for y := range 4 {
		for x := range 4 {
			px[y*8+x] = 1
		}
	}
	hidden := ImageHidden([][]float32{px})[0]
	for k, v := range []float64{1, 0, 0.5, -0.25} {
		near(t, "ImageHidden[0]", hidden[0][k], v)
		near(t, "ImageHidden[3]", hidden[3][k], 0)
	}
	pooled := ImagePooled([][]float32{px})[0]
	for k, v := range []float64{0.25, 0, 0.125, -0.0625} {
		near(t, "ImagePooled", pooled[k], v)
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func cosine(a, b []float64) float64 { return dot(a, b) / math.Sqrt(dot(a, a)*dot(b, b)) }

// ranking returns, for each query, the best candidate and the 1-based rank
// of candidate i for query i; it fails on ties with the paired candidate or
// the top candidate.
func ranking(t *testing.T, name string, queries, cands [][]float64, sim func(a, b []float64) float64) (top, ranks []int) {
	t.Helper()
	for i, q := range queries {
		scores := make([]float64, len(cands))
		for j, c := range cands {
			scores[j] = sim(q, c)
		}
		best, rank := 0, 1
		for j, s := range scores {
			if s > scores[best] {
				best = j
			}
			if j != i && s > scores[i] {
				rank++
			}
			if j != i && math.Abs(s-scores[i]) < 1e-3 {
				t.Errorf("%s query %d: candidate %d ties the pair (%v)", name, i, j, scores)
			}
		}
		for j, s := range scores {
			if j != best && scores[best]-s < 1e-3 {
				t.Errorf("%s query %d: top %d not clear of %d (%v)", name, i, best, j, scores)
			}
		}
		top, ranks = append(top, best), append(ranks, rank)
	}
	return top, ranks
}

func TestDesignedRetrieval(t *testing.T) {
	var clipIDs, clipMask, sigIDs [][]int64
	for _, text := range RetrievalTexts {
		ids := CLIPExpectedIDs(text)
		clipIDs = append(clipIDs, ids)
		clipMask = append(clipMask, slices.Repeat([]int64{1}, len(ids)))
		sigIDs = append(sigIDs, SigLIPExpectedIDs(text))
	}
	var clipPix, sigPix [][]float32
	for _, c := range RetrievalImages {
		clipPix = append(clipPix, CLIPPixels(c))
		sigPix = append(sigPix, SigLIPPixels(c))
	}
	pairs := []struct {
		name        string
		text, image [][]float64
	}{
		{"clip", CLIPText(clipIDs, clipMask), CLIPVision(clipPix)},
		{"siglip", SigLIPText(sigIDs, SigLIPPositionIDs(len(sigIDs), SigLIPMaxLength)), SigLIPVision(sigPix)},
	}
	for _, p := range pairs {
		for simName, sim := range map[string]func(a, b []float64) float64{"dot": dot, "cosine": cosine} {
			name := p.name + "/" + simName
			top, ranks := ranking(t, name+" t2i", p.text, p.image, sim)
			if !slices.Equal(top, ExpectedTextToImageTop) || !slices.Equal(ranks, ExpectedTextToImageRanks) {
				t.Errorf("%s text→image: top %v ranks %v, want %v %v", name, top, ranks, ExpectedTextToImageTop, ExpectedTextToImageRanks)
			}
			top, ranks = ranking(t, name+" i2t", p.image, p.text, sim)
			if !slices.Equal(top, ExpectedImageToTextTop) || !slices.Equal(ranks, ExpectedImageToTextRanks) {
				t.Errorf("%s image→text: top %v ranks %v, want %v %v", name, top, ranks, ExpectedImageToTextTop, ExpectedImageToTextRanks)
			}
			if testing.Verbose() {
				for i, q := range p.text {
					var row []string
					for _, c := range p.image {
						row = append(row, fmt.Sprintf("%7.3f", sim(q, c)))
					}
					t.Logf("%-13s %-28q %s", name, RetrievalTexts[i], strings.Join(row, " "))
				}
			}
		}
	}
}

func TestImagesDecode(t *testing.T) {
	for name, data := range imageFiles() {
		img, format, err := image.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b := img.Bounds()
		r, g, bl, a := img.At(b.Max.X-1, b.Max.Y-1).RGBA()
		t.Logf("%s: %s %dx%d bottom-right %d,%d,%d,%d", name, format, b.Dx(), b.Dy(), r>>8, g>>8, bl>>8, a>>8)
		for _, c := range RetrievalImages {
			if name == c.Name+".png" {
				if r>>8 != uint32(c.R) || g>>8 != uint32(c.G) || bl>>8 != uint32(c.B) || a>>8 != 255 || b.Dx() != 8 || b.Dy() != 8 {
					t.Errorf("%s decodes to %d,%d,%d,%d", name, r>>8, g>>8, bl>>8, a>>8)
				}
			}
		}
	}
}
