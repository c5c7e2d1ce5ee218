package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/vertebrae-eval/vertebrae/compress"
	"github.com/vertebrae-eval/vertebrae/demo"
	"github.com/vertebrae-eval/vertebrae/evaluate"
	"github.com/vertebrae-eval/vertebrae/extract/onnx"
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
	var withONNX bool
	var onnxLib string
	var text textDemoFlags
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
			if err := out.checkTargets(1); err != nil {
				return err
			}
			if text.enabled {
				return runTextDemo(cmd, text, onnxLib, threads, out, withONNX, stdout, stderr)
			}
			if text.models != "" && !withONNX {
				return usagef("--models is for --text, or for the MobileNetV2 row of --onnx; pass one of them too")
			}
			ds, backbones, err := DemoSetup()
			if err != nil {
				return err
			}
			if withONNX {
				bb, closeFn, err := demoONNXBackbone(cmd.Context(), onnxLib)
				if err != nil {
					return err
				}
				defer closeFn()
				backbones = append(backbones, bb)
				if dir := demoModelsDir(text.models); dir == "" {
					if !out.quiet {
						demoCNNUnavailable(stderr)
					}
				} else {
					cnn, closeCNN, err := demoCNNBackbone(cmd.Context(), dir, onnxLib)
					if err != nil {
						return err
					}
					defer closeCNN()
					backbones = append(backbones, cnn)
				}
			}
			ctx := cmd.Context()
			if !out.quiet {
				ctx = withProgress(ctx, stderr) // encoding and scoring (progress.go)
			}
			b, err := evaluate.Run(ctx, ds, retrieval.DefaultConfig(), backbones, evaluate.Options{Threads: threads, RunDepth: -1})
			if err != nil {
				return err
			}
			return out.emit(cmd.Context(), b, ds, stdout, stderr)
		},
	}
	out.register(cmd, false)
	cmd.Flags().IntVar(&threads, "threads", 0, "worker goroutines, 0 = GOMAXPROCS (performance only)")
	cmd.Flags().BoolVar(&withONNX, "onnx", false, "add ONNX Runtime backbones: the logits of the ONNX model zoo's MNIST classifier and, with a prepared models directory, MobileNetV2 features")
	cmd.Flags().StringVar(&onnxLib, "onnxruntime-lib", "", "ONNX Runtime shared library for --onnx (default $ONNXRUNTIME_LIB, then standard locations)")
	text.register(cmd)
	return cmd
}

// DemoSetup builds the demo dataset (declared identity vertebrae-demo/1,
// label-derived relevance) and its backbones.
func DemoSetup() (*retrieval.Dataset, []evaluate.Backbone, error) {
	data, err := demo.Load()
	if err != nil {
		return nil, nil, err
	}
	if demoDataHook != nil {
		demoDataHook(data)
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

// demoONNXBackbone is the --onnx row: the real MNIST digit classifier
// (mnist-8) applied to Fashion-MNIST, its ten logits used as the embedding.
// The model's batch dimension is fixed at 1, so images run one at a time.
func demoONNXBackbone(ctx context.Context, library string) (evaluate.Backbone, func() error, error) {
	model := demo.MNISTModel()
	sess, err := onnx.OpenSessionBytes(ctx, "mnist-8.onnx", model, onnx.Runtime{Library: library})
	if err != nil {
		return evaluate.Backbone{}, nil, fmt.Errorf("demo --onnx: %w", err)
	}
	const name, typ = "mnist-cnn-onnx", "onnx_image"
	sum := sha256.Sum256(model)
	recipe := map[string]any{
		"model":           "mnist-8 (ONNX model zoo, CNTK 2.5.1)",
		"input":           "28x28 uint8 grayscale as float32 0..255, NCHW [1,1,28,28]",
		"output":          "Plus214_Output_0 (10 logits)",
		"dim":             10,
		"runtime_version": sess.RuntimeVersion(),
		"path_identities": map[string]any{"model": "sha256:" + hex.EncodeToString(sum[:])},
	}
	bb := evaluate.Backbone{
		Name: name, Type: typ, Recipe: withName(recipe, name, typ),
		Encode: func(ctx context.Context, side string, items retrieval.Items) (matrix.Matrix, error) {
			im, ok := items.(imageItems)
			if !ok {
				return nil, fmt.Errorf("Extractor %s does not support retrieval modality %s", name, items.Modality())
			}
			out := make([]float32, 0, 10*len(im))
			pix := make([]float32, demo.ImageSide*demo.ImageSide)
			for i, img := range im {
				for j, p := range img {
					pix[j] = float32(p)
				}
				o, err := sess.Run(ctx, []onnx.Feed{{Name: "Input3", Shape: []int64{1, 1, demo.ImageSide, demo.ImageSide}, Float32: pix}}, "Plus214_Output_0")
				if err != nil {
					return nil, fmt.Errorf("%s image %d: %w", side, i, err)
				}
				out = append(out, o.Data...)
			}
			return matrix.NewDense32(len(im), 10, out)
		},
	}
	return bb, sess.Close, nil
}
