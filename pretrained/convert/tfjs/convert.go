package tfjs

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// ONNX TensorProto data types used for Cast targets and graph inputs.
const (
	onnxFloat = 1
	onnxInt32 = 6
	onnxInt64 = 7
	onnxBool  = 9
)

// Opset is the ONNX opset the converter writes: 18 takes the axes of every
// Reduce* op as an input, which TensorFlow's reductions map onto directly.
const Opset = 18

// Output names one graph output: the TensorFlow tensor ("node" or
// "node:k") and the ONNX output name.
type Output struct {
	Tensor, Name string
	// Shape is the declared float32 output shape, -1 for a dynamic
	// dimension (named <Name>_dim<i>); nil declares no shape.
	Shape []int64
}

// Options configure ToONNX.
type Options struct {
	// Outputs are the graph outputs; empty = every node output nothing
	// consumes, under its TensorFlow name.
	Outputs []Output
	// Producer is written as the model's producer_name.
	Producer string
}

type converter struct {
	g      *GraphModel
	nodes  []onnxpb.NodeProto
	inits  []onnxpb.Tensor
	inputs []onnxpb.ValueInfo
	// materialised constants: TF name → ONNX tensor name.
	emitted map[string]string
	names   map[string]bool
}

// ToONNX converts the graph. Every node reachable from the outputs must be
// a supported op; the error names the first that is not.
func (g *GraphModel) ToONNX(o Options) (onnxpb.Model, error) {
	c := &converter{g: g, emitted: map[string]string{}, names: map[string]bool{}}
	byName := make(map[string]*Node, len(g.Nodes))
	for i := range g.Nodes {
		byName[g.Nodes[i].Name] = &g.Nodes[i]
	}
	outs := o.Outputs
	if len(outs) == 0 {
		used := map[string]bool{}
		for _, n := range g.Nodes {
			for _, in := range n.Inputs {
				used[nodeOf(in)] = true
			}
		}
		for _, n := range g.Nodes {
			if !used[n.Name] && n.Op != "Const" && n.Op != "Placeholder" {
				outs = append(outs, Output{Tensor: n.Name, Name: n.Name})
			}
		}
	}
	// Depth-first topological order from the outputs, inputs in their
	// listed order: deterministic and free of dead nodes.
	state := map[string]int{} // 1 visiting, 2 done
	var order []*Node
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("tfjs: graph has a cycle through %s", name)
		case 2:
			return nil
		}
		n, ok := byName[name]
		if !ok {
			return fmt.Errorf("tfjs: node %s is referenced but not defined", name)
		}
		state[name] = 1
		for _, in := range n.Inputs {
			if strings.HasPrefix(in, "^") {
				continue
			}
			if err := visit(nodeOf(in)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, n)
		return nil
	}
	for _, out := range outs {
		if err := visit(nodeOf(out.Tensor)); err != nil {
			return onnxpb.Model{}, err
		}
	}
	for _, n := range order {
		if n.Op == "Const" {
			continue // materialised on first use as data
		}
		if err := c.node(*n); err != nil {
			return onnxpb.Model{}, fmt.Errorf("tfjs: node %s (%s): %w", n.Name, n.Op, err)
		}
	}
	var outputs []onnxpb.ValueInfo
	for _, out := range outs {
		src := c.ref(out.Tensor)
		if _, isConst := c.g.consts[nodeOf(out.Tensor)]; isConst {
			return onnxpb.Model{}, fmt.Errorf("tfjs: output %s is a constant", out.Tensor)
		}
		if src != out.Name {
			c.add("Identity", []string{src}, []string{out.Name})
		}
		vi := onnxpb.ValueInfo{Name: out.Name, ElemType: onnxFloat}
		if out.Shape != nil {
			dims := make([]onnxpb.Dim, len(out.Shape))
			for i, d := range out.Shape {
				dims[i] = onnxpb.Fixed(d)
				if d < 0 {
					dims[i] = onnxpb.Sym(fmt.Sprintf("%s_dim%d", out.Name, i))
				}
			}
			vi = onnxpb.Output(out.Name, onnxFloat, dims...)
		}
		outputs = append(outputs, vi)
	}
	producer := o.Producer
	if producer == "" {
		producer = "vertebrae-tfjs"
	}
	return onnxpb.Model{
		OpsetVersion: Opset, ProducerName: producer,
		Graph: onnxpb.Graph{Name: "tfjs", Nodes: c.nodes, Initializers: c.inits, Inputs: c.inputs, Outputs: outputs},
	}, nil
}

// nodeOf strips the output index and control marker of a tensor reference.
func nodeOf(ref string) string {
	ref = strings.TrimPrefix(ref, "^")
	if i := strings.LastIndexByte(ref, ':'); i >= 0 {
		if _, err := strconv.Atoi(ref[i+1:]); err == nil {
			return ref[:i]
		}
	}
	return ref
}

// ref is the ONNX tensor name of a TF tensor reference ("n", "n:0" → n;
// "n:k" → "n:k").
func (c *converter) ref(r string) string {
	if n := nodeOf(r); n != r && r == n+":0" {
		return n
	}
	return r
}

func (c *converter) add(op string, in, out []string, attrs ...onnxpb.Attribute) {
	c.nodes = append(c.nodes, onnxpb.NodeProto{Name: fmt.Sprintf("%s_%d", op, len(c.nodes)), OpType: op, Inputs: in, Outputs: out, Attrs: attrs})
}

// tmp returns a fresh tensor name derived from base.
func (c *converter) tmp(base, what string) string {
	name := base + "/onnx_" + what
	for i := 1; c.names[name]; i++ {
		name = fmt.Sprintf("%s/onnx_%s_%d", base, what, i)
	}
	c.names[name] = true
	return name
}

// in returns the ONNX name of a data input, materialising constants.
func (c *converter) in(r string) string {
	name := nodeOf(r)
	k, isConst := c.g.consts[name]
	if !isConst {
		return c.ref(r)
	}
	if e, ok := c.emitted[name]; ok {
		return e
	}
	switch k.dtype {
	case dtFloat:
		c.inits = append(c.inits, onnxpb.FloatTensor(name, k.dims, k.floats))
	case dtInt64:
		c.inits = append(c.inits, onnxpb.Int64Tensor(name, k.dims, k.ints))
	default:
		// int32 and bool constants: stored as int64 and cast, since the
		// writer's initializers are float32 or int64.
		raw := c.tmp(name, "int64")
		c.inits = append(c.inits, onnxpb.Int64Tensor(raw, k.dims, k.ints))
		to := int64(onnxInt32)
		if k.dtype == dtBool {
			to = onnxBool
		}
		c.add("Cast", []string{raw}, []string{name}, onnxpb.IntAttr("to", to))
	}
	c.emitted[name] = name
	return name
}

// constInts reads a constant integer input used as a static argument.
func (c *converter) constInts(r string) ([]int64, error) {
	k, ok := c.g.consts[nodeOf(r)]
	if !ok || k.dtype == dtFloat {
		return nil, fmt.Errorf("argument %s must be a constant integer tensor", r)
	}
	return k.ints, nil
}

// int64Const adds an int64 initializer and returns its name.
func (c *converter) int64Const(base, what string, v []int64, dims ...int64) string {
	name := c.tmp(base, what)
	if dims == nil {
		dims = []int64{int64(len(v))}
	}
	c.inits = append(c.inits, onnxpb.Int64Tensor(name, dims, v))
	return name
}

// scalarInt64 adds a 0-D int64 initializer and returns its name.
func (c *converter) scalarInt64(base, what string, v int64) string {
	name := c.tmp(base, what)
	c.inits = append(c.inits, onnxpb.Int64Tensor(name, []int64{}, []int64{v}))
	return name
}

// asInt64 casts a tensor to int64 (ONNX index and shape inputs).
func (c *converter) asInt64(base, t string) string {
	out := c.tmp(base, "i64")
	c.add("Cast", []string{t}, []string{out}, onnxpb.IntAttr("to", onnxInt64))
	return out
}

func (c *converter) attrInt(n Node, key string, def int64) int64 {
	if a, ok := n.Attr[key]; ok {
		if v, ok := a.int(); ok {
			return v
		}
	}
	return def
}

func (c *converter) attrBool(n Node, key string) bool {
	a, ok := n.Attr[key]
	return ok && a.B != nil && *a.B
}

func (c *converter) attrType(n Node, key string) (int, bool) {
	a, ok := n.Attr[key]
	if !ok || a.Type == nil {
		return 0, false
	}
	return *a.Type, true
}

func onnxType(dt int) (int64, error) {
	switch dt {
	case dtFloat:
		return onnxFloat, nil
	case dtInt32:
		return onnxInt32, nil
	case dtInt64:
		return onnxInt64, nil
	case dtBool:
		return onnxBool, nil
	}
	return 0, fmt.Errorf("unsupported data type %d", dt)
}

func (c *converter) wantInputs(n Node, k int) error {
	got := 0
	for _, in := range n.Inputs {
		if !strings.HasPrefix(in, "^") {
			got++
		}
	}
	if got != k {
		return fmt.Errorf("has %d inputs, want %d", got, k)
	}
	return nil
}

var unary = map[string]string{
	"Relu": "Relu", "Tanh": "Tanh", "Sin": "Sin", "Cos": "Cos", "LogicalNot": "Not",
	"Sqrt": "Sqrt", "Exp": "Exp", "Neg": "Neg", "Identity": "Identity", "Sigmoid": "Sigmoid",
}

var binaryOps = map[string]string{
	"Add": "Add", "AddV2": "Add", "BiasAdd": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div",
	"Maximum": "Max", "Minimum": "Min", "Less": "Less", "Greater": "Greater",
}

var reductions = map[string]string{
	"Max": "ReduceMax", "Mean": "ReduceMean", "Sum": "ReduceSum", "Prod": "ReduceProd",
}

// arity is the number of data inputs of each fixed-arity op (ConcatV2
// and Pack take any number ≥ 1).
var arity = map[string]int{
	"Placeholder": 0, "Square": 1, "Rsqrt": 1, "Softmax": 1, "Cast": 1, "Shape": 1, "Where": 1,
	"Reshape": 2, "GatherV2": 3, "GatherNd": 2, "ScatterNd": 3, "SparseToDense": 4, "StridedSlice": 4,
	"Slice": 3, "ExpandDims": 2, "Squeeze": 1, "Transpose": 2, "SplitV": 3, "Range": 3, "MatMul": 2,
	"BatchMatMul": 2, "BatchMatMulV2": 2, "Conv2D": 2,
}

func (c *converter) node(n Node) error {
	out := n.Name
	data := n.Inputs[:0:0]
	for _, in := range n.Inputs {
		if !strings.HasPrefix(in, "^") {
			data = append(data, in)
		}
	}
	n.Inputs = data // control inputs carry no data
	if k, ok := arity[n.Op]; ok {
		if err := c.wantInputs(n, k); err != nil {
			return err
		}
	}
	if (n.Op == "ConcatV2" && len(n.Inputs) < 2) || (n.Op == "Pack" && len(n.Inputs) < 1) {
		return fmt.Errorf("has %d inputs", len(n.Inputs))
	}
	if op, ok := unary[n.Op]; ok {
		if err := c.wantInputs(n, 1); err != nil {
			return err
		}
		c.add(op, []string{c.in(n.Inputs[0])}, []string{out})
		return nil
	}
	if op, ok := binaryOps[n.Op]; ok {
		if err := c.wantInputs(n, 2); err != nil {
			return err
		}
		if n.Op == "BiasAdd" {
			if f, ok := n.Attr["data_format"]; ok && len(f.S) > 0 && string(f.S) != "NHWC" {
				return fmt.Errorf("data_format %s is not supported", f.S)
			}
		}
		c.add(op, []string{c.in(n.Inputs[0]), c.in(n.Inputs[1])}, []string{out})
		return nil
	}
	if op, ok := reductions[n.Op]; ok {
		if err := c.wantInputs(n, 2); err != nil {
			return err
		}
		axes, err := c.constInts(n.Inputs[1])
		if err != nil {
			return err
		}
		keep := int64(0)
		if c.attrBool(n, "keep_dims") {
			keep = 1
		}
		c.add(op, []string{c.in(n.Inputs[0]), c.int64Const(out, "axes", axes)}, []string{out}, onnxpb.IntAttr("keepdims", keep))
		return nil
	}
	switch n.Op {
	case "Placeholder":
		return c.placeholder(n)
	case "Square":
		x := c.in(n.Inputs[0])
		c.add("Mul", []string{x, x}, []string{out})
	case "Rsqrt":
		s := c.tmp(out, "sqrt")
		c.add("Sqrt", []string{c.in(n.Inputs[0])}, []string{s})
		c.add("Reciprocal", []string{s}, []string{out})
	case "Softmax":
		c.add("Softmax", []string{c.in(n.Inputs[0])}, []string{out}, onnxpb.IntAttr("axis", -1))
	case "Cast":
		dt, ok := c.attrType(n, "DstT")
		if !ok {
			return fmt.Errorf("no DstT")
		}
		to, err := onnxType(dt)
		if err != nil {
			return err
		}
		c.add("Cast", []string{c.in(n.Inputs[0])}, []string{out}, onnxpb.IntAttr("to", to))
	case "Shape":
		dt, _ := c.attrType(n, "out_type")
		if dt == dtInt64 {
			c.add("Shape", []string{c.in(n.Inputs[0])}, []string{out})
			break
		}
		s := c.tmp(out, "shape")
		c.add("Shape", []string{c.in(n.Inputs[0])}, []string{s})
		c.add("Cast", []string{s}, []string{out}, onnxpb.IntAttr("to", onnxInt32))
	case "Where":
		if err := c.wantInputs(n, 1); err != nil {
			return fmt.Errorf("only the one-input form (coordinates of true elements) is supported: %w", err)
		}
		nz := c.tmp(out, "nonzero")
		c.add("NonZero", []string{c.in(n.Inputs[0])}, []string{nz})
		c.add("Transpose", []string{nz}, []string{out}, onnxpb.IntsAttr("perm", 1, 0))
	case "Reshape":
		c.add("Reshape", []string{c.in(n.Inputs[0]), c.asInt64(out, c.in(n.Inputs[1]))}, []string{out}, onnxpb.IntAttr("allowzero", 1))
	case "GatherV2":
		axis, err := c.constInts(n.Inputs[2])
		if err != nil || len(axis) != 1 {
			return fmt.Errorf("axis must be a constant scalar")
		}
		if c.attrInt(n, "batch_dims", 0) != 0 {
			return fmt.Errorf("batch_dims is not supported")
		}
		c.add("Gather", []string{c.in(n.Inputs[0]), c.in(n.Inputs[1])}, []string{out}, onnxpb.IntAttr("axis", axis[0]))
	case "GatherNd":
		c.add("GatherND", []string{c.in(n.Inputs[0]), c.asInt64(out, c.in(n.Inputs[1]))}, []string{out})
	case "ScatterNd":
		// TF scatters into zeros; ONNX ScatterND updates a data tensor.
		// Indices produced by Where are unique, where the two agree (TF
		// would sum duplicates).
		dt, _ := c.attrType(n, "T")
		zero, err := c.zeroScalar(out, dt)
		if err != nil {
			return err
		}
		data := c.tmp(out, "zeros")
		c.add("Expand", []string{zero, c.asInt64(out, c.in(n.Inputs[2]))}, []string{data})
		c.add("ScatterND", []string{data, c.asInt64(out, c.in(n.Inputs[0])), c.in(n.Inputs[1])}, []string{out})
	case "SparseToDense":
		if err := c.wantInputs(n, 4); err != nil {
			return err
		}
		data := c.tmp(out, "dense")
		c.add("Expand", []string{c.in(n.Inputs[3]), c.asInt64(out, c.in(n.Inputs[1]))}, []string{data})
		c.add("ScatterND", []string{data, c.asInt64(out, c.in(n.Inputs[0])), c.in(n.Inputs[2])}, []string{out})
	case "StridedSlice":
		return c.stridedSlice(n)
	case "Slice":
		begin, err := c.constInts(n.Inputs[1])
		if err != nil {
			return err
		}
		size, err := c.constInts(n.Inputs[2])
		if err != nil || len(size) != len(begin) {
			return fmt.Errorf("size must be a constant of the length of begin")
		}
		ends := make([]int64, len(begin))
		axes := make([]int64, len(begin))
		for i := range begin {
			axes[i] = int64(i)
			ends[i] = begin[i] + size[i]
			if size[i] == -1 {
				ends[i] = math.MaxInt64
			}
		}
		c.add("Slice", []string{c.in(n.Inputs[0]), c.int64Const(out, "starts", begin), c.int64Const(out, "ends", ends), c.int64Const(out, "axes", axes)}, []string{out})
	case "ConcatV2":
		k := len(n.Inputs) - 1
		axis, err := c.constInts(n.Inputs[k])
		if err != nil || len(axis) != 1 {
			return fmt.Errorf("axis must be a constant scalar")
		}
		ins := make([]string, k)
		for i := range k {
			ins[i] = c.in(n.Inputs[i])
		}
		c.add("Concat", ins, []string{out}, onnxpb.IntAttr("axis", axis[0]))
	case "Pack":
		axis := c.attrInt(n, "axis", 0)
		ins := make([]string, len(n.Inputs))
		ax := c.int64Const(out, "axis", []int64{axis})
		for i, in := range n.Inputs {
			ins[i] = c.tmp(out, "unsqueeze")
			c.add("Unsqueeze", []string{c.in(in), ax}, []string{ins[i]})
		}
		c.add("Concat", ins, []string{out}, onnxpb.IntAttr("axis", axis))
	case "ExpandDims":
		dim, err := c.constInts(n.Inputs[1])
		if err != nil || len(dim) != 1 {
			return fmt.Errorf("dim must be a constant scalar")
		}
		c.add("Unsqueeze", []string{c.in(n.Inputs[0]), c.int64Const(out, "axes", dim)}, []string{out})
	case "Squeeze":
		dims := n.Attr["squeeze_dims"].ints()
		if len(dims) == 0 {
			c.add("Squeeze", []string{c.in(n.Inputs[0])}, []string{out})
			break
		}
		c.add("Squeeze", []string{c.in(n.Inputs[0]), c.int64Const(out, "axes", dims)}, []string{out})
	case "Transpose":
		perm, err := c.constInts(n.Inputs[1])
		if err != nil {
			return err
		}
		c.add("Transpose", []string{c.in(n.Inputs[0])}, []string{out}, onnxpb.IntsAttr("perm", perm...))
	case "SplitV":
		sizes, err := c.constInts(n.Inputs[1])
		if err != nil {
			return err
		}
		axis, err := c.constInts(n.Inputs[2])
		if err != nil || len(axis) != 1 {
			return fmt.Errorf("axis must be a constant scalar")
		}
		for _, s := range sizes {
			if s < 0 {
				return fmt.Errorf("inferred split sizes (-1) are not supported")
			}
		}
		outs := make([]string, len(sizes))
		for i := range outs {
			outs[i] = c.ref(fmt.Sprintf("%s:%d", out, i))
		}
		c.add("Split", []string{c.in(n.Inputs[0]), c.int64Const(out, "split", sizes)}, outs, onnxpb.IntAttr("axis", axis[0]))
	case "Range":
		c.add("Range", []string{c.in(n.Inputs[0]), c.in(n.Inputs[1]), c.in(n.Inputs[2])}, []string{out})
	case "MatMul":
		a, b := c.in(n.Inputs[0]), c.in(n.Inputs[1])
		if c.attrBool(n, "transpose_a") {
			a = c.transpose2(out, a)
		}
		if c.attrBool(n, "transpose_b") {
			b = c.transpose2(out, b)
		}
		c.add("MatMul", []string{a, b}, []string{out})
	case "BatchMatMul", "BatchMatMulV2":
		// Einsum transposes the last two axes of operands of any rank.
		lhs, rhs := "...ij", "...jk"
		if c.attrBool(n, "adj_x") {
			lhs = "...ji"
		}
		if c.attrBool(n, "adj_y") {
			rhs = "...kj"
		}
		if lhs == "...ij" && rhs == "...jk" {
			c.add("MatMul", []string{c.in(n.Inputs[0]), c.in(n.Inputs[1])}, []string{out})
			break
		}
		c.add("Einsum", []string{c.in(n.Inputs[0]), c.in(n.Inputs[1])}, []string{out}, onnxpb.StringAttr("equation", lhs+","+rhs+"->...ik"))
	case "Conv2D":
		return c.conv2D(n)
	default:
		return fmt.Errorf("unsupported op %s", n.Op)
	}
	return nil
}

func (c *converter) transpose2(base, t string) string {
	o := c.tmp(base, "t")
	c.add("Transpose", []string{t}, []string{o}, onnxpb.IntsAttr("perm", 1, 0))
	return o
}

func (c *converter) zeroScalar(base string, dt int) (string, error) {
	switch dt {
	case dtFloat:
		name := c.tmp(base, "zero")
		c.inits = append(c.inits, onnxpb.FloatTensor(name, nil, []float32{0}))
		return name, nil
	case dtInt64:
		return c.scalarInt64(base, "zero", 0), nil
	case dtInt32:
		z := c.scalarInt64(base, "zero64", 0)
		name := c.tmp(base, "zero")
		c.add("Cast", []string{z}, []string{name}, onnxpb.IntAttr("to", onnxInt32))
		return name, nil
	}
	return "", fmt.Errorf("unsupported data type %d", dt)
}

func (c *converter) placeholder(n Node) error {
	dt, ok := c.attrType(n, "dtype")
	if !ok {
		return fmt.Errorf("no dtype")
	}
	et, err := onnxType(dt)
	if err != nil {
		return err
	}
	var shape struct {
		Dim []struct {
			Size json.Number `json:"size"`
		} `json:"dim"`
		UnknownRank bool `json:"unknownRank"`
	}
	if raw, ok := n.Attr["shape"].raw["shape"]; ok {
		if err := json.Unmarshal(raw, &shape); err != nil {
			return fmt.Errorf("shape: %w", err)
		}
	}
	if shape.UnknownRank || len(shape.Dim) == 0 {
		return fmt.Errorf("input shape must have a known rank")
	}
	dims := make([]onnxpb.Dim, len(shape.Dim))
	for i, d := range shape.Dim {
		v, err := strconv.ParseInt(d.Size.String(), 10, 64)
		if err != nil {
			return fmt.Errorf("shape: %w", err)
		}
		if v < 0 {
			dims[i] = onnxpb.Sym(fmt.Sprintf("%s_dim%d", n.Name, i))
		} else {
			dims[i] = onnxpb.Fixed(v)
		}
	}
	c.inputs = append(c.inputs, onnxpb.Input(n.Name, onnxpb.DataType(et), dims...))
	return nil
}

// stridedSlice maps constant begin/end/strides and the begin, end and
// shrink-axis masks onto Slice (+ Squeeze). Ellipsis and new-axis masks are
// not supported.
func (c *converter) stridedSlice(n Node) error {
	if err := c.wantInputs(n, 4); err != nil {
		return err
	}
	begin, err := c.constInts(n.Inputs[1])
	if err != nil {
		return err
	}
	end, err := c.constInts(n.Inputs[2])
	if err != nil {
		return err
	}
	strides, err := c.constInts(n.Inputs[3])
	if err != nil {
		return err
	}
	if len(end) != len(begin) || len(strides) != len(begin) {
		return fmt.Errorf("begin, end and strides differ in length")
	}
	if c.attrInt(n, "ellipsis_mask", 0) != 0 || c.attrInt(n, "new_axis_mask", 0) != 0 {
		return fmt.Errorf("ellipsis_mask and new_axis_mask are not supported")
	}
	bm, em, sm := c.attrInt(n, "begin_mask", 0), c.attrInt(n, "end_mask", 0), c.attrInt(n, "shrink_axis_mask", 0)
	k := len(begin)
	starts, ends, axes, steps := make([]int64, k), make([]int64, k), make([]int64, k), make([]int64, k)
	var shrink []int64
	for i := range k {
		s, e, st := begin[i], end[i], strides[i]
		if st == 0 {
			return fmt.Errorf("stride 0 on axis %d", i)
		}
		axes[i], steps[i] = int64(i), st
		switch {
		case sm&(1<<i) != 0:
			st, steps[i] = 1, 1
			e = s + 1
			if s == -1 {
				e = math.MaxInt64
			}
			shrink = append(shrink, int64(i))
		default:
			if bm&(1<<i) != 0 {
				s = 0
				if st < 0 {
					s = math.MaxInt64
				}
			}
			if em&(1<<i) != 0 {
				e = math.MaxInt64
				if st < 0 {
					e = math.MinInt64
				}
			}
		}
		starts[i], ends[i] = s, e
	}
	out := n.Name
	sliced := out
	if len(shrink) > 0 {
		sliced = c.tmp(out, "slice")
	}
	c.add("Slice", []string{c.in(n.Inputs[0]), c.int64Const(out, "starts", starts), c.int64Const(out, "ends", ends),
		c.int64Const(out, "axes", axes), c.int64Const(out, "steps", steps)}, []string{sliced})
	if len(shrink) > 0 {
		c.add("Squeeze", []string{sliced, c.int64Const(out, "shrink", shrink)}, []string{out})
	}
	return nil
}

// conv2D maps an NHWC Conv2D with a constant HWIO kernel onto ONNX's NCHW
// Conv between two transposes.
func (c *converter) conv2D(n Node) error {
	if f, ok := n.Attr["data_format"]; ok && len(f.S) > 0 && string(f.S) != "NHWC" {
		return fmt.Errorf("data_format %s is not supported", f.S)
	}
	k, ok := c.g.consts[nodeOf(n.Inputs[1])]
	if !ok || k.dtype != dtFloat || len(k.dims) != 4 {
		return fmt.Errorf("the kernel must be a constant 4-D float tensor")
	}
	h, w, ci, co := k.dims[0], k.dims[1], k.dims[2], k.dims[3]
	oihw := make([]float32, len(k.floats))
	for y := range h {
		for x := range w {
			for i := range ci {
				for o := range co {
					oihw[((o*ci+i)*h+y)*w+x] = k.floats[((y*w+x)*ci+i)*co+o]
				}
			}
		}
	}
	out := n.Name
	wName := c.tmp(out, "kernel_oihw")
	c.inits = append(c.inits, onnxpb.FloatTensor(wName, []int64{co, ci, h, w}, oihw))
	strides := n.Attr["strides"].ints()
	dil := n.Attr["dilations"].ints()
	if len(strides) != 4 || strides[0] != 1 || strides[3] != 1 {
		return fmt.Errorf("strides %v are not supported", strides)
	}
	if len(dil) == 0 {
		dil = []int64{1, 1, 1, 1}
	}
	attrs := []onnxpb.Attribute{
		onnxpb.IntsAttr("strides", strides[1], strides[2]), onnxpb.IntsAttr("dilations", dil[1], dil[2]),
		onnxpb.IntsAttr("kernel_shape", h, w),
	}
	switch pad := string(n.Attr["padding"].S); pad {
	case "VALID":
	case "SAME":
		attrs = append(attrs, onnxpb.StringAttr("auto_pad", "SAME_UPPER"))
	default:
		return fmt.Errorf("padding %q is not supported", pad)
	}
	nchw := c.tmp(out, "nchw")
	c.add("Transpose", []string{c.in(n.Inputs[0])}, []string{nchw}, onnxpb.IntsAttr("perm", 0, 3, 1, 2))
	conv := c.tmp(out, "conv")
	c.add("Conv", []string{nchw, wName}, []string{conv}, attrs...)
	c.add("Transpose", []string{conv}, []string{out}, onnxpb.IntsAttr("perm", 0, 2, 3, 1))
	return nil
}
