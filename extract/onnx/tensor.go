package onnx

import (
	"fmt"
	"strings"
)

// TensorInfo describes a model input or output.
type TensorInfo struct {
	Name  string
	Type  string  // element type: "float32", "float16", "float64", "int64", "int32", ...
	Shape []int64 // -1 for a symbolic (dynamic) dimension
}

func (t TensorInfo) String() string {
	dims := make([]string, len(t.Shape))
	for i, d := range t.Shape {
		if d < 0 {
			dims[i] = "?"
		} else {
			dims[i] = fmt.Sprint(d)
		}
	}
	return fmt.Sprintf("%s %s[%s]", t.Name, t.Type, strings.Join(dims, ","))
}

// Feed is one input tensor. Exactly one of Float32 and Int64 is set; it is
// converted to the element type the model declares (float32/float16, or
// int64/int32).
type Feed struct {
	Name    string
	Shape   []int64
	Float32 []float32
	Int64   []int64
}

// Output is one output tensor, converted to float32.
type Output struct {
	Name  string
	Shape []int64
	Data  []float32
}

func findInfo(infos []TensorInfo, name string) (TensorInfo, bool) {
	for _, t := range infos {
		if t.Name == name {
			return t, true
		}
	}
	return TensorInfo{}, false
}

func names(infos []TensorInfo) string {
	s := make([]string, len(infos))
	for i, t := range infos {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}

// pickOutput returns the configured output, else the first present default,
// else the model's only output.
func pickOutput(outputs []TensorInfo, configured string, defaults ...string) (TensorInfo, error) {
	if configured != "" {
		if t, ok := findInfo(outputs, configured); ok {
			return t, nil
		}
		return TensorInfo{}, fmt.Errorf("model has no output %q (outputs: %s)", configured, names(outputs))
	}
	for _, d := range defaults {
		if t, ok := findInfo(outputs, d); ok {
			return t, nil
		}
	}
	if len(outputs) == 1 {
		return outputs[0], nil
	}
	return TensorInfo{}, fmt.Errorf("model has none of the outputs %s; name one with the output option (outputs: %s)",
		strings.Join(defaults, ", "), names(outputs))
}
