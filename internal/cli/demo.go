package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/matrix"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// imageItems are the demo's raw 28×28 images as endpoint inputs.
type imageItems [][]byte

func (im imageItems) Len() int                         { return len(im) }
func (im imageItems) Modality() string                 { return "image" }
func (im imageItems) Slice(lo, hi int) retrieval.Items { return im[lo:hi] }

func newDemoCmd(stdout, stderr io.Writer) *cobra.Command {
	var out outputFlags
	var threads int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Rank frozen image backbones on an embedded Fashion-MNIST subset",
		Long: "Runs the standard retrieval job on 1,000 Fashion-MNIST test images (queries) against\n" +
			"5,000 training images (gallery), relevance = same class, comparing pure-Go backbones.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.check(cmd); err != nil {
				return err
			}
			ds, backbones, err := DemoSetup()
			if err != nil {
				return err
			}
			b, err := evaluate.Run(cmd.Context(), ds, retrieval.DefaultConfig(), backbones, evaluate.Options{Threads: threads, RunDepth: -1})
			if err != nil {
				return err
			}
			return out.emit(b, ds, stdout, stderr)
		},
	}
	out.register(cmd, false)
	cmd.Flags().IntVar(&threads, "threads", 0, "worker goroutines, 0 = GOMAXPROCS (performance only)")
	return cmd
}

// DemoSetup builds the demo dataset (declared identity vertebrae-demo/1,
// label-derived relevance) and its backbones.
func DemoSetup() (*retrieval.Dataset, []evaluate.Backbone, error) {
	data, err := demo.Load()
	if err != nil {
		return nil, nil, err
	}
	ds, err := retrieval.NewDataset(retrieval.DatasetInputs{
		Queries: imageItems(data.QueryImages), Gallery: imageItems(data.GalleryImages),
		QueryIDs: data.QueryIDs, GalleryIDs: data.GalleryIDs,
		Identity: retrieval.Declared("vertebrae-demo", "1"),
		Metadata: map[string]any{"source": "Fashion-MNIST (MIT licence): first 1000 test images vs first 5000 training images"},
	}, retrieval.LabelRelevance(data.QueryLabels, data.GalleryLabels))
	if err != nil {
		return nil, nil, err
	}
	var backbones []evaluate.Backbone
	for _, bb := range demo.Backbones() {
		bb := bb
		var variants []compress.Config
		if bb.Name == "avg-pool-4x4" {
			// One paired-compression variant (SPEC §6.2): PCA of the small
			// pooled descriptor keeps the demo within seconds.
			pca, err := compress.ParseSpec("pca:16", compress.DefaultRandomState, false)
			if err != nil {
				return nil, nil, err
			}
			variants = []compress.Config{compress.Default(), pca}
		}
		backbones = append(backbones, evaluate.Backbone{
			Variants: variants,
			Name:     bb.Name, Type: bb.Type, Recipe: withName(bb.Recipe, bb.Name, bb.Type),
			Encode: func(_ context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
				im, ok := items.(imageItems)
				if !ok {
					return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", bb.Name, items.Modality())
				}
				return bb.Embed(im)
			},
		})
	}
	return ds, backbones, nil
}

func withName(recipe map[string]any, name, typ string) map[string]any {
	out := map[string]any{"name": name, "extractor_type": typ}
	for k, v := range recipe {
		out[k] = v
	}
	return out
}
