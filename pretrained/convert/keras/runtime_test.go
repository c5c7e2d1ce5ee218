//go:build cgo

package keras

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/vertebrae-eval/vertebrae/extract/onnx"
)

// TestTinyModelOnRuntime runs the converted tiny model on ONNX Runtime and
// compares every head with a plain float64 NHWC evaluation of the Keras
// layers (TensorFlow semantics written out in refTiny): the layout change,
// weight re-layout, padding rules, pooling and flatten order must all be
// right for this to pass.
func TestTinyModelOnRuntime(t *testing.T) {
	if _, err := onnx.ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatalf("VERTEBRAE_REQUIRE_ONNXRUNTIME is set but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	m := loadTiny(t, tinyModel())
	const n = 3
	imgs := make([][]float64, n)
	nchw := make([]float32, 0, n*2*81)
	for i := range imgs {
		imgs[i] = make([]float64, 81*2)
		for j := range imgs[i] {
			imgs[i][j] = float64(float32(math.Sin(float64(j*(i+3))) * 1.5))
		}
		for c := range 2 {
			for p := range 81 {
				nchw = append(nchw, float32(imgs[i][p*2+c]))
			}
		}
	}
	ctx := context.Background()
	for _, head := range []string{"fl", "d1", "gap"} {
		model, err := m.Convert(Options{Output: head})
		if err != nil {
			t.Fatal(err)
		}
		sess, err := onnx.OpenSessionBytes(ctx, head+".onnx", model, onnx.Runtime{IntraOpThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		out, err := sess.Run(ctx, []onnx.Feed{{Name: DefaultInput, Shape: []int64{n, 2, 9, 9}, Float32: nchw}}, head)
		sess.Close()
		if err != nil {
			t.Fatal(err)
		}
		width := len(out.Data) / n
		for i := range n {
			fl, d1, gap := refTiny(m, imgs[i])
			want := map[string][]float64{"fl": fl, "d1": d1, "gap": gap}[head]
			if len(want) != width {
				t.Fatalf("%s: width %d, reference %d", head, width, len(want))
			}
			for j, w := range want {
				if g := float64(out.Data[i*width+j]); math.Abs(g-w) > 1e-4*math.Max(1, math.Abs(w)) {
					t.Errorf("%s image %d [%d]: runtime %v, reference %v", head, i, j, g, w)
				}
			}
		}
	}
}
