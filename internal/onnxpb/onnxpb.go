package onnxpb

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Defaults written by Marshal when the corresponding Model field is zero.
const (
	DefaultIRVersion    = 8
	DefaultOpsetVersion = 17
	DefaultProducerName = "vertebrae-onnxpb"
)

// DataType is a TensorProto.DataType value.
type DataType int32

// Tensor element types used by the tiny models.
const (
	Float DataType = 1
	Int64 DataType = 7
)

// AttrType is an AttributeProto.AttributeType value.
type AttrType int32

// Attribute types supported by this writer.
const (
	AttrFloat  AttrType = 1
	AttrInt    AttrType = 2
	AttrString AttrType = 3
	AttrInts   AttrType = 7
)

// Dim is one dimension of a graph input or output: a fixed size, or a
// symbolic name such as "batch" when Param is not empty.
type Dim struct {
	Value int64
	Param string
}

// Fixed returns a fixed-size dimension.
func Fixed(n int64) Dim { return Dim{Value: n} }

// Sym returns a symbolic dimension.
func Sym(name string) Dim { return Dim{Param: name} }

// ValueInfo describes a tensor-typed graph input or output.
type ValueInfo struct {
	Name     string
	ElemType DataType
	Dims     []Dim
}

// Input returns a graph input description.
func Input(name string, elemType DataType, dims ...Dim) ValueInfo {
	return ValueInfo{Name: name, ElemType: elemType, Dims: dims}
}

// Output returns a graph output description; it is the same as Input.
func Output(name string, elemType DataType, dims ...Dim) ValueInfo {
	return Input(name, elemType, dims...)
}

// Tensor is an initializer. Exactly one of Floats and Int64s is used,
// according to DataType.
type Tensor struct {
	Name     string
	DataType DataType
	Dims     []int64
	Floats   []float32
	Int64s   []int64
	// External, when set, stores the data in an external file instead
	// (TensorProto.external_data, data_location EXTERNAL).
	External *External
}

// External locates a tensor's little-endian bytes in a file next to the
// model.
type External struct {
	Location       string
	Offset, Length int64
}

// WithExternalData moves the data of every float initializer into one
// external file named location (as onnx.save_model with
// save_as_external_data does) and returns the model and that file's bytes.
func (m Model) WithExternalData(location string) (Model, []byte) {
	var data []byte
	inits := make([]Tensor, len(m.Graph.Initializers))
	for i, t := range m.Graph.Initializers {
		if t.DataType == Float {
			off := int64(len(data))
			for _, v := range t.Floats {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(v))
			}
			t.External = &External{Location: location, Offset: off, Length: int64(len(data)) - off}
			t.Floats = nil
		}
		inits[i] = t
	}
	m.Graph.Initializers = inits
	return m, data
}

// FloatTensor returns a float32 initializer. It panics if len(data) does not
// match dims.
func FloatTensor(name string, dims []int64, data []float32) Tensor {
	checkLen(name, dims, len(data))
	return Tensor{Name: name, DataType: Float, Dims: dims, Floats: data}
}

// Int64Tensor returns an int64 initializer. It panics if len(data) does not
// match dims.
func Int64Tensor(name string, dims []int64, data []int64) Tensor {
	checkLen(name, dims, len(data))
	return Tensor{Name: name, DataType: Int64, Dims: dims, Int64s: data}
}

func checkLen(name string, dims []int64, n int) {
	want := int64(1)
	for _, d := range dims {
		want *= d
	}
	if want != int64(n) {
		panic(fmt.Sprintf("onnxpb: tensor %q has %d elements, dims %v need %d", name, n, dims, want))
	}
}

// Attribute is a node attribute.
type Attribute struct {
	Name string
	Type AttrType
	F    float32
	I    int64
	S    string
	Ints []int64
}

// IntAttr returns an INT attribute.
func IntAttr(name string, v int64) Attribute { return Attribute{Name: name, Type: AttrInt, I: v} }

// IntsAttr returns an INTS attribute.
func IntsAttr(name string, v ...int64) Attribute {
	return Attribute{Name: name, Type: AttrInts, Ints: v}
}

// FloatAttr returns a FLOAT attribute.
func FloatAttr(name string, v float32) Attribute { return Attribute{Name: name, Type: AttrFloat, F: v} }

// StringAttr returns a STRING attribute.
func StringAttr(name, v string) Attribute { return Attribute{Name: name, Type: AttrString, S: v} }

// NodeProto is one operator application. An empty Name is replaced by
// "<op_type>_<index>" when the graph is marshalled.
type NodeProto struct {
	Name    string
	OpType  string
	Domain  string
	Inputs  []string
	Outputs []string
	Attrs   []Attribute
}

// Node returns a node of the default ("ai.onnx") domain.
func Node(op string, inputs, outputs []string, attrs ...Attribute) NodeProto {
	return NodeProto{OpType: op, Inputs: inputs, Outputs: outputs, Attrs: attrs}
}

// Graph is the model's main graph.
type Graph struct {
	Name         string
	Nodes        []NodeProto
	Initializers []Tensor
	Inputs       []ValueInfo
	Outputs      []ValueInfo
}

// Model is an ONNX model with a single default-domain opset import.
type Model struct {
	IRVersion    int64  // DefaultIRVersion when zero
	OpsetVersion int64  // DefaultOpsetVersion when zero
	ProducerName string // DefaultProducerName when empty
	Graph        Graph
}

// Marshal encodes the model as an ONNX ModelProto. The output is a pure
// function of m.
func (m Model) Marshal() []byte {
	ir := m.IRVersion
	if ir == 0 {
		ir = DefaultIRVersion
	}
	opset := m.OpsetVersion
	if opset == 0 {
		opset = DefaultOpsetVersion
	}
	producer := m.ProducerName
	if producer == "" {
		producer = DefaultProducerName
	}
	var b []byte
	b = appendVarintField(b, 1, uint64(ir))
	b = appendStringField(b, 2, producer)
	b = appendMessage(b, 7, m.Graph.marshal())
	var os []byte
	os = appendStringField(os, 1, "")
	os = appendVarintField(os, 2, uint64(opset))
	b = appendMessage(b, 8, os)
	return b
}

func (g Graph) marshal() []byte {
	var b []byte
	for i, n := range g.Nodes {
		b = appendMessage(b, 1, n.marshal(i))
	}
	b = appendStringField(b, 2, g.Name)
	for _, t := range g.Initializers {
		b = appendMessage(b, 5, t.marshal())
	}
	for _, v := range g.Inputs {
		b = appendMessage(b, 11, v.marshal())
	}
	for _, v := range g.Outputs {
		b = appendMessage(b, 12, v.marshal())
	}
	return b
}

func (n NodeProto) marshal(index int) []byte {
	var b []byte
	for _, in := range n.Inputs {
		b = appendStringField(b, 1, in)
	}
	for _, out := range n.Outputs {
		b = appendStringField(b, 2, out)
	}
	name := n.Name
	if name == "" {
		name = fmt.Sprintf("%s_%d", n.OpType, index)
	}
	b = appendStringField(b, 3, name)
	b = appendStringField(b, 4, n.OpType)
	for _, a := range n.Attrs {
		b = appendMessage(b, 5, a.marshal())
	}
	if n.Domain != "" {
		b = appendStringField(b, 7, n.Domain)
	}
	return b
}

func (a Attribute) marshal() []byte {
	var b []byte
	b = appendStringField(b, 1, a.Name)
	switch a.Type {
	case AttrFloat:
		b = protowire.AppendTag(b, 2, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.F))
	case AttrInt:
		b = appendVarintField(b, 3, uint64(a.I))
	case AttrString:
		b = appendStringField(b, 4, a.S)
	case AttrInts:
		// Repeated int64 fields of proto2 onnx.proto are not packed.
		for _, v := range a.Ints {
			b = appendVarintField(b, 8, uint64(v))
		}
	default:
		panic(fmt.Sprintf("onnxpb: attribute %q has unsupported type %d", a.Name, a.Type))
	}
	b = appendVarintField(b, 20, uint64(a.Type))
	return b
}

func (t Tensor) marshal() []byte {
	var b []byte
	for _, d := range t.Dims {
		b = appendVarintField(b, 1, uint64(d))
	}
	b = appendVarintField(b, 2, uint64(t.DataType))
	if e := t.External; e != nil {
		b = appendStringField(b, 8, t.Name)
		for _, kv := range [][2]string{{"location", e.Location}, {"offset", fmt.Sprint(e.Offset)}, {"length", fmt.Sprint(e.Length)}} {
			var entry []byte
			entry = appendStringField(entry, 1, kv[0])
			entry = appendStringField(entry, 2, kv[1])
			b = appendMessage(b, 13, entry)
		}
		return appendVarintField(b, 14, 1) // data_location = EXTERNAL
	}
	switch t.DataType {
	case Float:
		var p []byte
		for _, v := range t.Floats {
			p = protowire.AppendFixed32(p, math.Float32bits(v))
		}
		b = appendMessage(b, 4, p)
	case Int64:
		var p []byte
		for _, v := range t.Int64s {
			p = protowire.AppendVarint(p, uint64(v))
		}
		b = appendMessage(b, 7, p)
	default:
		panic(fmt.Sprintf("onnxpb: tensor %q has unsupported data type %d", t.Name, t.DataType))
	}
	b = appendStringField(b, 8, t.Name)
	return b
}

func (v ValueInfo) marshal() []byte {
	var shape []byte
	for _, d := range v.Dims {
		var db []byte
		if d.Param != "" {
			db = appendStringField(db, 2, d.Param)
		} else {
			db = appendVarintField(db, 1, uint64(d.Value))
		}
		shape = appendMessage(shape, 1, db)
	}
	var tensor []byte
	tensor = appendVarintField(tensor, 1, uint64(v.ElemType))
	tensor = appendMessage(tensor, 2, shape)
	var typ []byte
	typ = appendMessage(typ, 1, tensor)
	var b []byte
	b = appendStringField(b, 1, v.Name)
	b = appendMessage(b, 2, typ)
	return b
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}
