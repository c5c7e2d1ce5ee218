package tfjs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// graphBuilder writes a small TF.js graph model (model.json + one shard).
type graphBuilder struct {
	nodes   []map[string]any
	weights []map[string]any
	shard   bytes.Buffer
}

func (b *graphBuilder) op(name, op string, inputs []string, attr map[string]any) {
	if attr == nil {
		attr = map[string]any{}
	}
	b.nodes = append(b.nodes, map[string]any{"name": name, "op": op, "input": inputs, "attr": attr})
}

func (b *graphBuilder) floats(name string, shape []int, v ...float32) {
	b.op(name, "Const", nil, map[string]any{"dtype": map[string]any{"type": "DT_FLOAT"}})
	b.weights = append(b.weights, map[string]any{"name": name, "shape": shape, "dtype": "float32"})
	for _, x := range v {
		binary.Write(&b.shard, binary.LittleEndian, math.Float32bits(x))
	}
}

func (b *graphBuilder) ints(name string, shape []int, v ...int32) {
	b.op(name, "Const", nil, map[string]any{"dtype": map[string]any{"type": 3}})
	b.weights = append(b.weights, map[string]any{"name": name, "shape": shape, "dtype": "int32"})
	for _, x := range v {
		binary.Write(&b.shard, binary.LittleEndian, x)
	}
}

func (b *graphBuilder) write(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m := map[string]any{
		"format":          "graph-model",
		"modelTopology":   map[string]any{"node": b.nodes},
		"weightsManifest": []any{map[string]any{"paths": []string{"shard"}, "weights": b.weights}},
	}
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "model.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "shard"), b.shard.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func i(v int64) map[string]any { return map[string]any{"i": v} }
func bl(v bool) map[string]any { return map[string]any{"b": v} }
func ty(v int) map[string]any  { return map[string]any{"type": v} }
func list(v ...int) map[string]any {
	s := make([]string, len(v))
	for k, x := range v {
		s[k] = itoa(x)
	}
	return map[string]any{"list": map[string]any{"i": s}}
}
func itoa(x int) string { b, _ := json.Marshal(x); return string(b) }
func str(s string) map[string]any {
	bs := make([]int, len(s))
	for k := range s {
		bs[k] = int(s[k])
	}
	return map[string]any{"s": bs}
}

func placeholder(shape ...int) map[string]any {
	dims := make([]any, len(shape))
	for k, d := range shape {
		dims[k] = map[string]any{"size": itoa(d)}
	}
	return map[string]any{"dtype": ty(dtFloat), "shape": map[string]any{"shape": map[string]any{"dim": dims}}}
}

// testGraph: y = Relu(x · Wᵀ + b) (MatMul with transpose_b), then a
// reversed StridedSlice of its columns, a Pack and a SplitV second output,
// plus a 3×3 SAME Conv2D on an NHWC view. Dead nodes are not converted.
func testGraph(t *testing.T) string {
	b := &graphBuilder{}
	b.op("x", "Placeholder", nil, placeholder(-1, 2))
	b.floats("w", []int{3, 2}, 1, 0, 0, 1, 1, -1) // rows: (1,0) (0,1) (1,-1)
	b.floats("bias", []int{3}, 0, 0.5, -10)
	b.op("mm", "MatMul", []string{"x", "w"}, map[string]any{"transpose_a": bl(false), "transpose_b": bl(true), "T": ty(dtFloat)})
	b.op("ba", "BiasAdd", []string{"mm", "bias"}, map[string]any{"data_format": str("NHWC")})
	b.op("relu", "Relu", []string{"ba"}, nil)
	// relu[:, ::-1] (begin/end masks, stride -1)
	b.ints("ss_b", []int{2}, 0, 0)
	b.ints("ss_e", []int{2}, 0, 0)
	b.ints("ss_s", []int{2}, 1, -1)
	b.op("rev", "StridedSlice", []string{"relu", "ss_b", "ss_e", "ss_s"}, map[string]any{"begin_mask": i(3), "end_mask": i(3), "shrink_axis_mask": i(0), "ellipsis_mask": i(0), "new_axis_mask": i(0)})
	// SplitV of rev into columns [1, 2]; keep the second part.
	b.ints("sizes", []int{2}, 1, 2)
	b.ints("axis1", []int{}, 1)
	b.op("split", "SplitV", []string{"rev", "sizes", "axis1"}, map[string]any{"num_split": i(2)})
	// Pack the two columns of split:1 along a new last axis → [n, 2, 1] → Squeeze.
	b.op("col0", "StridedSlice", []string{"split:1", "ss_b", "c1_e", "c_s"}, map[string]any{"begin_mask": i(1), "end_mask": i(1), "shrink_axis_mask": i(2)})
	b.ints("c1_e", []int{2}, 0, 1)
	b.ints("c_s", []int{2}, 1, 1)
	b.ints("c2_b", []int{2}, 0, 1)
	b.ints("c2_e", []int{2}, 0, 2)
	b.op("col1", "StridedSlice", []string{"split:1", "c2_b", "c2_e", "c_s"}, map[string]any{"begin_mask": i(1), "end_mask": i(1), "shrink_axis_mask": i(2)})
	b.op("pack", "Pack", []string{"col1", "col0"}, map[string]any{"axis": i(1), "N": i(2)})
	b.op("dead", "Tanh", []string{"pack"}, nil) // not an output: dropped
	// Conv2D: x viewed as an NHWC image [1, n, 2, 1], kernel 3x3 all ones
	// except centre 2, SAME padding.
	b.ints("img_shape", []int{4}, 1, -1, 2, 1)
	b.op("img", "Reshape", []string{"x", "img_shape"}, nil)
	b.floats("k", []int{3, 3, 1, 1}, 1, 1, 1, 1, 2, 1, 1, 1, 1)
	b.op("conv", "Conv2D", []string{"img", "k"}, map[string]any{"strides": list(1, 1, 1, 1), "dilations": list(1, 1, 1, 1), "padding": str("SAME"), "data_format": str("NHWC")})
	return b.write(t)
}

func TestConvertUnsupported(t *testing.T) {
	b := &graphBuilder{}
	b.op("x", "Placeholder", nil, placeholder(-1, 2))
	b.op("y", "Erfinv", []string{"x"}, nil)
	g, err := LoadGraphModel(b.write(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.ToONNX(Options{})
	if err == nil || !strings.Contains(err.Error(), "node y (Erfinv): unsupported op Erfinv") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	b := &graphBuilder{}
	b.op("x", "Placeholder", nil, placeholder(-1, 2))
	b.floats("w", []int{2}, 1, 2)
	dir := b.write(t)
	os.WriteFile(filepath.Join(dir, "shard"), []byte{1, 2, 3}, 0o644)
	if _, err := LoadGraphModel(dir); err == nil || !strings.Contains(err.Error(), "shorter than its manifest") {
		t.Fatalf("short shard: %v", err)
	}
	if _, err := LoadGraphModel(t.TempDir()); err == nil || !strings.Contains(err.Error(), "model.json") {
		t.Fatalf("missing: %v", err)
	}
}

func TestConvertDeterministic(t *testing.T) {
	dir := testGraph(t)
	o := Options{Outputs: []Output{{Tensor: "pack", Name: "pack"}, {Tensor: "conv", Name: "conv"}}}
	a, err := Convert(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Convert(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two conversions differ")
	}
	if bytes.Contains(a, []byte("dead")) {
		t.Fatal("a node no output depends on was converted")
	}
	// Without outputs, every unconsumed node is one.
	all, err := Convert(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(all, []byte("dead")) {
		t.Fatal("default outputs miss the sink dead")
	}
}

// FuzzGraphModel parses arbitrary model.json bytes (weights: one shard of
// 64 zero bytes) and converts them: errors are fine, panics are not.
func FuzzGraphModel(f *testing.F) {
	b := &graphBuilder{}
	b.op("x", "Placeholder", nil, placeholder(-1, 2))
	b.floats("w", []int{2, 2}, 1, 2, 3, 4)
	b.ints("axes", []int{1}, 1)
	b.op("mm", "MatMul", []string{"x", "w"}, nil)
	b.op("s", "Sum", []string{"mm", "axes"}, map[string]any{"keep_dims": bl(true)})
	b.op("g", "GatherV2", []string{"s"}, nil)
	seed, _ := json.Marshal(map[string]any{
		"modelTopology":   map[string]any{"node": b.nodes},
		"weightsManifest": []any{map[string]any{"paths": []string{"shard"}, "weights": b.weights}},
	})
	f.Add(seed)
	f.Add([]byte(`{"modelTopology":{"node":[{"name":"a","op":"StridedSlice","input":["a","a","a","a"]}]}}`))
	shard := make([]byte, 64)
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := parseGraphModel("model.json", data, func(string) ([]byte, error) { return shard, nil })
		if err != nil {
			return
		}
		_, _ = g.ToONNX(Options{})
	})
}
