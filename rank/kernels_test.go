package rank

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/kernel"
	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Every kernel this CPU runs, every block size and every thread count give
// the same results to the bit, with ties, zero vectors (dot, squared_l2) and
// widths that are not multiples of any vector width.
func TestKernelsBlocksThreadsBitIdentical(t *testing.T) {
	defer kernel.Use("auto")
	r := rand.New(rand.NewPCG(31, 32))
	for _, d := range []int{1, 3, 17, 769} {
		for _, ties := range []bool{false, true} {
			p := randomProblem(r, 9, 41, d, ties)
			sims := []Similarity{Dot, SquaredL2}
			if !ties { // cosine needs nonzero rows
				sims = append(sims, Cosine)
			}
			for _, sim := range sims {
				for _, prec := range []Precision{Float64, Float32} {
					if err := kernel.Use("generic"); err != nil {
						t.Fatal(err)
					}
					want, err := Score(context.Background(), p, Options{Similarity: sim, Precision: prec, QueryBatch: 128, GalleryBatch: 10000, Threads: 1, TopN: 5})
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range kernel.Available() {
						if err := kernel.Use(k); err != nil {
							t.Fatal(err)
						}
						for _, blocks := range [][2]int{{1, 1}, {7, 13}, {128, 10000}} {
							for _, threads := range []int{1, 3} {
								got, err := Score(context.Background(), p, Options{Similarity: sim, Precision: prec,
									QueryBatch: blocks[0], GalleryBatch: blocks[1], Threads: threads, TopN: 5})
								if err != nil {
									t.Fatal(err)
								}
								if !reflect.DeepEqual(got, want) {
									t.Fatalf("d=%d ties=%v sim=%d prec=%d kernel=%s blocks=%v threads=%d: results differ", d, ties, sim, prec, k, blocks, threads)
								}
							}
						}
					}
				}
			}
		}
	}
}

// Input element type does not matter when the values are the same: a
// float32 gallery scored in float64 equals the same values stored as float64.
func TestStorageTypeDoesNotMatter(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	p := randomProblem(r, 6, 30, 17, false)
	g64 := make([]float64, 30*17)
	g32 := make([]float32, 30*17)
	row := make([]float64, 17)
	for i := 0; i < 30; i++ {
		p.Gallery.RowFloat64(i, row)
		for j, v := range row {
			g32[i*17+j] = float32(v)
			g64[i*17+j] = float64(float32(v))
		}
	}
	a, _ := matrix.NewDense64(30, 17, g64)
	b, _ := matrix.NewDense32(30, 17, g32)
	for _, sim := range []Similarity{Cosine, Dot, SquaredL2} {
		p.Gallery = a
		ra, err := Score(context.Background(), p, Options{Similarity: sim, QueryBatch: 4, GalleryBatch: 7})
		if err != nil {
			t.Fatal(err)
		}
		p.Gallery = b
		rb, err := Score(context.Background(), p, Options{Similarity: sim, QueryBatch: 4, GalleryBatch: 7})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("similarity %d: float32 storage changed the results", sim)
		}
	}
}
