//go:build cgo

package tfjs

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/onnx"
)

// TestConvertedGraphRuns checks the converted test graph on ONNX Runtime
// against hand-computed values.
func TestConvertedGraphRuns(t *testing.T) {
	if _, err := onnx.ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	b, err := Convert(testGraph(t), Options{Outputs: []Output{
		{Tensor: "pack", Name: "pack", Shape: []int64{-1, 2}},
		{Tensor: "conv", Name: "conv", Shape: []int64{1, -1, 2, 1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := onnx.OpenSessionBytes(context.Background(), "test", b, onnx.Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// x rows (1,2), (3,-1), (0,0).
	x := []float32{1, 2, 3, -1, 0, 0}
	feed := []onnx.Feed{{Name: "x", Shape: []int64{3, 2}, Float32: x}}
	// relu(x·Wᵀ + b): (1, 2.5, 0), (3, 0, 0), (0, 0.5, 0); reversed:
	// (0, 2.5, 1), (0, 0, 3), (0, 0.5, 0); split:1 = (2.5, 1), (0, 3),
	// (0.5, 0); pack (col1, col0) = (1, 2.5), (3, 0), (0, 0.5).
	want := map[string][]float32{
		"pack": {1, 2.5, 3, 0, 0, 0.5},
		// 3x2 image [[1,2],[3,-1],[0,0]], kernel of ones with centre 2,
		// zero padding: each output = sum of the 3x3 neighbourhood + centre.
		"conv": {1 + (1 + 2 + 3 - 1), 2 + (1 + 2 + 3 - 1), 3 + (1 + 2 + 3 - 1), -1 + (1 + 2 + 3 - 1), 0 + (3 - 1), 0 + (3 - 1)},
	}
	for name, w := range want {
		out, err := s.Run(context.Background(), feed, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Data) != len(w) {
			t.Fatalf("%s: shape %v", name, out.Shape)
		}
		for k := range w {
			if math.Abs(float64(out.Data[k]-w[k])) > 1e-6 {
				t.Errorf("%s: got %v, want %v", name, out.Data, w)
				break
			}
		}
	}
}
