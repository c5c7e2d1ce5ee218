package onnxpb

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// fields decodes one protobuf message into its fields: varints as uint64,
// fixed32 as uint32, length-delimited as []byte.
func fields(t *testing.T, b []byte) map[protowire.Number][]any {
	t.Helper()
	out := map[protowire.Number][]any{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		var v any
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			v, n = protowire.ConsumeFixed32(b)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			t.Fatalf("unexpected wire type %d for field %d", typ, num)
		}
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
		out[num] = append(out[num], v)
	}
	return out
}

func str(v any) string { return string(v.([]byte)) }

func strs(vs []any) []string {
	var out []string
	for _, v := range vs {
		out = append(out, str(v))
	}
	return out
}

func sample() Model {
	return Model{Graph: Graph{
		Name: "g",
		Nodes: []NodeProto{
			Node("Gather", []string{"E", "ids"}, []string{"h"}, IntAttr("axis", 0)),
			Node("ReduceMean", []string{"h"}, []string{"out"}, IntsAttr("axes", 1), IntAttr("keepdims", 0)),
		},
		Initializers: []Tensor{
			FloatTensor("E", []int64{2, 2}, []float32{0.5, -0.25, 1, 2}),
			Int64Tensor("k", []int64{2}, []int64{-1, 3}),
		},
		Inputs:  []ValueInfo{Input("ids", Int64, Sym("batch"), Fixed(3))},
		Outputs: []ValueInfo{Output("out", Float, Sym("batch"), Fixed(2))},
	}}
}

func TestMarshalStructure(t *testing.T) {
	m := fields(t, sample().Marshal())
	if m[1][0].(uint64) != 8 {
		t.Errorf("ir_version = %v", m[1])
	}
	if str(m[2][0]) != DefaultProducerName {
		t.Errorf("producer_name = %q", m[2][0])
	}
	opset := fields(t, m[8][0].([]byte))
	if str(opset[1][0]) != "" || opset[2][0].(uint64) != 17 {
		t.Errorf("opset_import = %v", opset)
	}
	g := fields(t, m[7][0].([]byte))
	if str(g[2][0]) != "g" || len(g[1]) != 2 || len(g[5]) != 2 || len(g[11]) != 1 || len(g[12]) != 1 {
		t.Fatalf("graph fields: %d nodes, %d initializers, %d inputs, %d outputs", len(g[1]), len(g[5]), len(g[11]), len(g[12]))
	}

	n := fields(t, g[1][1].([]byte))
	if str(n[4][0]) != "ReduceMean" || str(n[3][0]) != "ReduceMean_1" ||
		!slices.Equal(strs(n[1]), []string{"h"}) || !slices.Equal(strs(n[2]), []string{"out"}) || len(n[7]) != 0 {
		t.Errorf("node 1 = %v", n)
	}
	axes := fields(t, n[5][0].([]byte))
	if str(axes[1][0]) != "axes" || axes[20][0].(uint64) != uint64(AttrInts) || axes[8][0].(uint64) != 1 {
		t.Errorf("axes attribute = %v", axes)
	}

	e := fields(t, g[5][0].([]byte))
	if str(e[8][0]) != "E" || e[2][0].(uint64) != uint64(Float) || e[1][0].(uint64) != 2 || e[1][1].(uint64) != 2 {
		t.Errorf("initializer E = %v", e)
	}
	raw := e[4][0].([]byte)
	var got []float32
	for len(raw) > 0 {
		v, n := protowire.ConsumeFixed32(raw)
		got, raw = append(got, math.Float32frombits(v)), raw[n:]
	}
	if !slices.Equal(got, []float32{0.5, -0.25, 1, 2}) {
		t.Errorf("float_data = %v", got)
	}
	k := fields(t, g[5][1].([]byte))
	raw = k[7][0].([]byte)
	var ints []int64
	for len(raw) > 0 {
		v, n := protowire.ConsumeVarint(raw)
		ints, raw = append(ints, int64(v)), raw[n:]
	}
	if k[2][0].(uint64) != uint64(Int64) || !slices.Equal(ints, []int64{-1, 3}) {
		t.Errorf("int64_data = %v", ints)
	}

	in := fields(t, g[11][0].([]byte))
	tensorType := fields(t, fields(t, in[2][0].([]byte))[1][0].([]byte))
	shape := fields(t, tensorType[2][0].([]byte))
	d0, d1 := fields(t, shape[1][0].([]byte)), fields(t, shape[1][1].([]byte))
	if str(in[1][0]) != "ids" || tensorType[1][0].(uint64) != uint64(Int64) ||
		str(d0[2][0]) != "batch" || d1[1][0].(uint64) != 3 {
		t.Errorf("input ids: elem %v dims %v %v", tensorType[1], d0, d1)
	}
}

func TestMarshalDeterministic(t *testing.T) {
	if !bytes.Equal(sample().Marshal(), sample().Marshal()) {
		t.Error("Marshal is not deterministic")
	}
}

func TestTensorLengthMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	FloatTensor("x", []int64{2, 3}, make([]float32, 5))
}
