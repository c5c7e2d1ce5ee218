//go:build cgo

package onnx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// requireRuntime skips a test when no ONNX Runtime library can be found,
// unless VERTEBRAE_REQUIRE_ONNXRUNTIME is set (.ci/run installs the library
// from the npm package onnxruntime-node and sets it, so CI never skips).
func requireRuntime(t testing.TB) {
	t.Helper()
	if _, err := ResolveLibrary(""); err != nil {
		if os.Getenv("VERTEBRAE_REQUIRE_ONNXRUNTIME") != "" {
			t.Fatalf("VERTEBRAE_REQUIRE_ONNXRUNTIME is set but: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	if _, err := LoadRuntime(""); err != nil {
		t.Fatal(err)
	}
}

// tensorProto decodes the fields of an ONNX TensorProto that the model zoo's
// test files use: dims (1), data_type (2, 1 = float), float_data (4) and
// raw_data (9).
func tensorProto(t *testing.T, path string) (dims []int64, data []float32) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: bad tag", path)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			dims, b = append(dims, int64(v)), b[n:]
		case num == 1 && typ == protowire.BytesType:
			p, n := protowire.ConsumeBytes(b)
			for len(p) > 0 {
				v, m := protowire.ConsumeVarint(p)
				dims, p = append(dims, int64(v)), p[m:]
			}
			b = b[n:]
		case (num == 9 || num == 4) && typ == protowire.BytesType:
			p, n := protowire.ConsumeBytes(b)
			for i := 0; i+4 <= len(p); i += 4 {
				data = append(data, math.Float32frombits(binary.LittleEndian.Uint32(p[i:])))
			}
			b = b[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				t.Fatalf("%s: bad field %d", path, num)
			}
			b = b[n:]
		}
	}
	return dims, data
}

// TestMNISTReference runs the real MNIST classifier shipped with the demo
// on the model zoo's three reference inputs and compares the logits.
func TestMNISTReference(t *testing.T) {
	requireRuntime(t)
	dir := filepath.Join("..", "..", "demo", "data")
	s, err := OpenSession(context.Background(), filepath.Join(dir, "mnist-8.onnx"), Runtime{IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := fmt.Sprint(s.Inputs(), s.Outputs()); got != "[Input3 float32[1,1,28,28]] [Plus214_Output_0 float32[1,10]]" {
		t.Fatalf("model signature = %s", got)
	}
	for i := 0; i < 3; i++ {
		set := filepath.Join(dir, "mnist-8-testdata", fmt.Sprintf("test_data_set_%d", i))
		inDims, in := tensorProto(t, filepath.Join(set, "input_0.pb"))
		_, want := tensorProto(t, filepath.Join(set, "output_0.pb"))
		out, err := s.Run(context.Background(), []Feed{{Name: "Input3", Shape: inDims, Float32: in}}, "Plus214_Output_0")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(out.Shape) != "[1 10]" || len(want) != 10 {
			t.Fatalf("set %d: output shape %v, reference has %d values", i, out.Shape, len(want))
		}
		for j := range want {
			if d := math.Abs(float64(out.Data[j] - want[j])); d > 1e-3*math.Max(1, math.Abs(float64(want[j]))) {
				t.Errorf("set %d logit %d = %g, reference %g", i, j, out.Data[j], want[j])
			}
		}
	}
}

func TestSessionErrors(t *testing.T) {
	requireRuntime(t)
	ctx := context.Background()
	model := filepath.Join("..", "..", "demo", "data", "mnist-8.onnx")
	s, err := OpenSession(ctx, model, Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	img := make([]float32, 784)
	cases := []struct {
		name  string
		feeds []Feed
		out   string
		want  string
	}{
		{"unknown output", []Feed{{Name: "Input3", Shape: []int64{1, 1, 28, 28}, Float32: img}}, "logits", `has no output "logits"`},
		{"unknown input", []Feed{{Name: "pixels", Shape: []int64{1, 1, 28, 28}, Float32: img}}, "Plus214_Output_0", `has no input "pixels"`},
		{"missing input", nil, "Plus214_Output_0", "input Input3 float32[1,1,28,28] was not fed"},
		{"wrong shape", []Feed{{Name: "Input3", Shape: []int64{2, 1, 28, 28}, Float32: append(img, img...)}}, "Plus214_Output_0", "does not match the declared shape"},
		{"wrong kind", []Feed{{Name: "Input3", Shape: []int64{1, 1, 28, 28}, Int64: make([]int64, 784)}}, "Plus214_Output_0", "vertebrae feeds integer values"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Run(ctx, c.feeds, c.out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want %q", err, c.want)
			}
		})
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Run(cctx, []Feed{{Name: "Input3", Shape: []int64{1, 1, 28, 28}, Float32: img}}, "Plus214_Output_0"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
	if _, err := OpenSession(ctx, "no/such/model.onnx", Runtime{}); err == nil || !strings.Contains(err.Error(), "no/such/model.onnx") {
		t.Fatalf("missing model: %v", err)
	}
	// One process loads one library: asking for another one afterwards is
	// an error naming both (any existing file stands in for it here).
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	os.WriteFile(other, nil, 0o644)
	if _, err := LoadRuntime(other); err == nil || !strings.Contains(err.Error(), "ONNX Runtime is already loaded from") || !strings.Contains(err.Error(), other) {
		t.Fatalf("second library: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.onnx")
	os.WriteFile(bad, []byte("not a model"), 0o644)
	if _, err := OpenSession(ctx, bad, Runtime{}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("corrupt model: %v", err)
	}
}

// TestRunCancellation cancels a long inference (50 chained 1024×1024
// matrix products, about 100 GFLOP) shortly after it starts: ONNX Runtime
// is told to terminate and Run reports the context's error.
func TestRunCancellation(t *testing.T) {
	requireRuntime(t)
	const n, layers = 1024, 50
	w := make([]float32, n*n)
	for i := range w {
		w[i] = float32(i%7-3) / 1024
	}
	nodes := []onnxpb.NodeProto{}
	prev := "x"
	for l := 0; l < layers; l++ {
		out := "h" + strconv.Itoa(l)
		if l == layers-1 {
			out = "y"
		}
		nodes = append(nodes, onnxpb.Node("MatMul", []string{prev, "w"}, []string{out}))
		prev = out
	}
	m := onnxpb.Model{Graph: onnxpb.Graph{
		Name: "slow", Nodes: nodes,
		Initializers: []onnxpb.Tensor{onnxpb.FloatTensor("w", []int64{n, n}, w)},
		Inputs:       []onnxpb.ValueInfo{onnxpb.Input("x", onnxpb.Float, onnxpb.Fixed(n), onnxpb.Fixed(n))},
		Outputs:      []onnxpb.ValueInfo{onnxpb.Output("y", onnxpb.Float, onnxpb.Fixed(n), onnxpb.Fixed(n))},
	}}
	s, err := OpenSessionBytes(context.Background(), "slow.onnx", m.Marshal(), Runtime{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err = s.Run(ctx, []Feed{{Name: "x", Shape: []int64{n, n}, Float32: make([]float32, n*n)}}, "y")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v after %v, want context.Canceled", err, time.Since(start))
	}
	t.Logf("cancelled after %v", time.Since(start))
}
