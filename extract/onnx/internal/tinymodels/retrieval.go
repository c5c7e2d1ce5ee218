package tinymodels

// Color is a solid colour used for the generated images.
type Color struct {
	Name    string
	R, G, B uint8
}

// RetrievalTexts are the captions of the designed retrieval set; caption i
// is paired with image RetrievalImages[i].
var RetrievalTexts = []string{
	"a photo of a red square",
	"a photo of a green square",
	"a photo of a blue square",
	"a photo of a yellow square",
	"a photo of a purple square",
}

// RetrievalImages are the solid 8×8 images of the designed retrieval set,
// written as images/<Name>.png.
var RetrievalImages = []Color{
	{"red", 255, 0, 0},
	{"green", 0, 255, 0},
	{"blue", 0, 0, 255},
	{"yellow", 255, 255, 0},
	{"magenta", 255, 0, 255},
}

// ExpectedTextToImageTop and ExpectedImageToTextTop give, for every query of
// the retrieval set, the index of the best-scoring candidate. They hold for
// both dot-product and cosine similarity and for both the CLIP-style and the
// SigLIP-style model pairs.
//
// "purple" is deliberately learned as "mostly blue": the purple caption ranks
// the blue image first and its own (magenta) image second, while the magenta
// image still ranks the purple caption first.
var (
	ExpectedTextToImageTop = []int{0, 1, 2, 3, 2}
	ExpectedImageToTextTop = []int{0, 1, 2, 3, 4}
)

// ExpectedTextToImageRanks and ExpectedImageToTextRanks are the 1-based ranks
// of the paired item for every query (the quantity behind recall@k and MRR).
var (
	ExpectedTextToImageRanks = []int{1, 1, 1, 1, 2}
	ExpectedImageToTextRanks = []int{1, 1, 1, 1, 1}
)

// colorWords are the caption words that carry colour, and their target
// direction in the chromatic part (dimensions 0..2) of the shared embedding
// space. Image embeddings measure chroma as (2R-G-B, 2G-R-B, 2B-R-G) of the
// normalized channel means, so each target is the ideal chroma of the colour
// it names, except "purple", which points mostly at blue.
var colorWords = []struct {
	word   string
	target [3]float32
}{
	{"red", [3]float32{2, -1, -1}},
	{"green", [3]float32{-1, 2, -1}},
	{"blue", [3]float32{-1, -1, 2}},
	{"yellow", [3]float32{1, 1, -2}},
	{"purple", [3]float32{-0.5, -1.25, 1.75}},
}

// captionWords are the whole words every tokenizer knows as one token.
var captionWords = []string{"a", "photo", "of", "red", "green", "blue", "yellow", "purple", "square", "circle"}

func colorTarget(word string) ([3]float32, bool) {
	for _, c := range colorWords {
		if c.word == word {
			return c.target, true
		}
	}
	return [3]float32{}, false
}

// generic returns the embedding row of a token without colour meaning: an
// achromatic part (u,u,u), orthogonal to every image's chroma, and a
// positive fourth component, so that no text embedding is ever zero.
func generic(id int) []float32 {
	u := float32((id*5)%9-4) / 16
	w := float32(1+id%7) / 16
	return []float32{u, u, u, w}
}

// chromaWeights returns the [PixelCount, Dim] projection whose first three
// columns are the chroma contrasts (2c-others)/64 of the channel means and
// whose fourth column is a zero-sum spatial pattern given by spatial.
func chromaWeights(spatial func(c, y, x int) float32) [][]float32 {
	return matrix(PixelCount, Dim, func(r, k int) float32 {
		c, y, x := r/64, (r%64)/8, r%8
		if k < 3 {
			if k == c {
				return 2.0 / 64
			}
			return -1.0 / 64
		}
		return spatial(c, y, x)
	})
}
