package keras

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vertebrae-eval/vertebrae/internal/onnxpb"
)

// DefaultInput is the ONNX graph input name: the one the onnx_image adapter
// feeds first (SPEC §9.4).
const DefaultInput = "pixel_values"

// ConverterVersion changes whenever the converter's output for the same
// model could change; preparers record it in their manifests.
const ConverterVersion = 1

// Options select what Convert emits.
type Options struct {
	// Output is the layer whose output becomes the ONNX graph output (and
	// names it); "" = the model's first output layer. Only the layers it
	// depends on are converted.
	Output string
	// Input names the graph input; "" = DefaultInput.
	Input string
	// Metadata is stored in the ModelProto's metadata_props.
	Metadata map[string]string
}

// Convert translates the model (with weights loaded) into an ONNX model
// (opset 17) computing the same function in NCHW layout: the graph input
// is [batch, C, H, W] float32 where the Keras model took NHWC, so the
// onnx_image adapter can feed it directly. Weights are the dequantised
// float32 values, re-laid out for ONNX but otherwise unchanged; batch
// normalisation stays a BatchNormalization node (ONNX Runtime folds it into
// the preceding convolution when it optimises the graph), so the file holds
// exactly the original parameters. The output bytes are a pure function of
// the model and options.
func (m *Model) Convert(opts Options) ([]byte, error) {
	if m.weights == nil {
		return nil, fmt.Errorf("%w: weights are not loaded", ErrModel)
	}
	if len(m.InputLayers) != 1 {
		return nil, fmt.Errorf("%w: %d input layers (one is converted)", ErrUnsupported, len(m.InputLayers))
	}
	out := opts.Output
	if out == "" {
		if len(m.OutputLayers) == 0 {
			return nil, fmt.Errorf("%w: the model declares no output layer", ErrModel)
		}
		out = m.OutputLayers[0]
	}
	input := opts.Input
	if input == "" {
		input = DefaultInput
	}
	index := map[string]int{}
	for i, l := range m.Layers {
		index[l.Name] = i
	}
	if _, ok := index[out]; !ok {
		return nil, fmt.Errorf("%w: no layer named %q", ErrModel, out)
	}
	needed, err := m.ancestors(out, index)
	if err != nil {
		return nil, err
	}
	b := &builder{m: m, shapes: map[string][]int64{}, tensor: map[string]string{}}
	for i, l := range m.Layers {
		if !needed[l.Name] {
			continue
		}
		if i > 0 && l.ClassName == "InputLayer" && l.Name != m.InputLayers[0] {
			return nil, fmt.Errorf("%w: layer %q is a second input", ErrUnsupported, l.Name)
		}
		if err := b.layer(l, input, l.Name == out); err != nil {
			return nil, fmt.Errorf("layer %q (%s): %w", l.Name, l.ClassName, err)
		}
	}
	if b.inputInfo.Name == "" {
		return nil, fmt.Errorf("%w: output %q does not depend on the input layer", ErrModel, out)
	}
	dims := []onnxpb.Dim{onnxpb.Sym("batch")}
	for _, d := range b.shapes[out] {
		dims = append(dims, onnxpb.Fixed(d))
	}
	model := onnxpb.Model{
		ProducerName: "vertebrae-keras",
		Graph: onnxpb.Graph{
			Name:         m.Name,
			Nodes:        b.nodes,
			Initializers: b.inits,
			Inputs:       []onnxpb.ValueInfo{b.inputInfo},
			Outputs:      []onnxpb.ValueInfo{onnxpb.Output(b.tensor[out], onnxpb.Float, dims...)},
		},
	}
	return model.MarshalWithMetadata(opts.Metadata), nil
}

// ancestors returns the layers the output depends on, checking that every
// inbound reference names an earlier layer.
func (m *Model) ancestors(out string, index map[string]int) (map[string]bool, error) {
	needed := map[string]bool{}
	stack := []string{out}
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if needed[name] {
			continue
		}
		needed[name] = true
		l := m.Layers[index[name]]
		ins, err := inboundNames(l)
		if err != nil {
			return nil, fmt.Errorf("layer %q: %w", l.Name, err)
		}
		for _, in := range ins {
			j, ok := index[in]
			if !ok {
				return nil, fmt.Errorf("%w: layer %q takes input from unknown layer %q", ErrModel, l.Name, in)
			}
			if j >= index[name] {
				return nil, fmt.Errorf("%w: layer %q takes input from later layer %q", ErrUnsupported, l.Name, in)
			}
			stack = append(stack, in)
		}
	}
	return needed, nil
}

// inboundNames lists the layers feeding l's single call.
func inboundNames(l Layer) ([]string, error) {
	if l.ClassName == "InputLayer" {
		return nil, nil
	}
	if len(l.InboundNodes) != 1 {
		return nil, fmt.Errorf("%w: the layer is called %d times (shared layers are not converted)", ErrUnsupported, len(l.InboundNodes))
	}
	var out []string
	for _, ref := range l.InboundNodes[0] {
		name, ok := refAt(ref, 0).(string)
		if !ok {
			return nil, fmt.Errorf("%w: inbound reference %v is not [layer, node, tensor, kwargs]", ErrModel, ref)
		}
		node, _ := refAt(ref, 1).(float64)
		tensor, _ := refAt(ref, 2).(float64)
		if node != 0 || tensor != 0 {
			return nil, fmt.Errorf("%w: input %q node %v tensor %v (only single-output, single-call layers)", ErrUnsupported, name, refAt(ref, 1), refAt(ref, 2))
		}
		if kw, ok := refAt(ref, 3).(map[string]any); ok && len(kw) > 0 {
			return nil, fmt.Errorf("%w: call arguments %v", ErrUnsupported, kw)
		}
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the layer has no inputs", ErrModel)
	}
	return out, nil
}

// builder accumulates the ONNX graph. Shapes exclude the batch dimension:
// [C, H, W] for images, [F] for vectors.
type builder struct {
	m         *Model
	nodes     []onnxpb.NodeProto
	inits     []onnxpb.Tensor
	shapes    map[string][]int64 // by layer name
	tensor    map[string]string  // layer name → ONNX tensor name
	inputInfo onnxpb.ValueInfo
}

func (b *builder) node(name, op string, in []string, out string, attrs ...onnxpb.Attribute) {
	n := onnxpb.Node(op, in, []string{out}, attrs...)
	n.Name = name
	b.nodes = append(b.nodes, n)
}

func (b *builder) floats(name string, dims []int64, data []float32) string {
	b.inits = append(b.inits, onnxpb.FloatTensor(name, dims, data))
	return name
}

func (b *builder) int64s(name string, dims []int64, data []int64) string {
	b.inits = append(b.inits, onnxpb.Int64Tensor(name, dims, data))
	return name
}

// weight fetches layer/param and checks its Keras shape.
func (b *builder) weight(layer, param string, shape ...int) (Tensor, error) {
	name := layer + "/" + param
	t, ok := b.m.weights[name]
	if !ok {
		return Tensor{}, fmt.Errorf("%w: weight %q is missing from the manifest", ErrModel, name)
	}
	if !slices.Equal(t.Shape, shape) {
		return Tensor{}, fmt.Errorf("%w: weight %q has shape %v, the layer needs %v", ErrModel, name, t.Shape, shape)
	}
	return t, nil
}

func (b *builder) layer(l Layer, input string, isOutput bool) error {
	if l.ClassName == "InputLayer" {
		var c struct {
			BatchInputShape []*int `json:"batch_input_shape"`
			DType           string `json:"dtype"`
		}
		if err := json.Unmarshal(l.Config, &c); err != nil {
			return fmt.Errorf("%w: config: %v", ErrModel, err)
		}
		if len(c.BatchInputShape) != 4 || c.BatchInputShape[1] == nil || c.BatchInputShape[2] == nil || c.BatchInputShape[3] == nil {
			return fmt.Errorf("%w: input shape must be [batch, H, W, C] with fixed H, W and C", ErrUnsupported)
		}
		if c.DType != "" && c.DType != "float32" {
			return fmt.Errorf("%w: input dtype %q", ErrUnsupported, c.DType)
		}
		h, w, ch := int64(*c.BatchInputShape[1]), int64(*c.BatchInputShape[2]), int64(*c.BatchInputShape[3])
		if h <= 0 || w <= 0 || ch <= 0 {
			return fmt.Errorf("%w: input shape %d×%d×%d", ErrModel, h, w, ch)
		}
		b.shapes[l.Name] = []int64{ch, h, w}
		b.tensor[l.Name] = input
		b.inputInfo = onnxpb.Input(input, onnxpb.Float, onnxpb.Sym("batch"), onnxpb.Fixed(ch), onnxpb.Fixed(h), onnxpb.Fixed(w))
		return nil
	}
	ins, err := inboundNames(l)
	if err != nil {
		return err
	}
	inTensors := make([]string, len(ins))
	inShapes := make([][]int64, len(ins))
	for i, n := range ins {
		inTensors[i], inShapes[i] = b.tensor[n], b.shapes[n]
	}
	out := l.Name
	b.tensor[l.Name] = out
	conv, ok := converters[l.ClassName]
	if !ok {
		return fmt.Errorf("%w: layer class %s", ErrUnsupported, l.ClassName)
	}
	shape, err := conv(b, l, inTensors, inShapes, out)
	if err != nil {
		return err
	}
	b.shapes[l.Name] = shape
	return nil
}

// converter emits the nodes of one layer, writing its result to out, and
// returns the result's shape.
type converter func(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error)

var converters map[string]converter

func init() {
	converters = map[string]converter{
		"Conv2D":                 convConv2D,
		"DepthwiseConv2D":        convDepthwise,
		"BatchNormalization":     convBatchNorm,
		"ReLU":                   convReLU,
		"Activation":             convActivation,
		"Add":                    convAdd,
		"Concatenate":            convConcat,
		"ZeroPadding2D":          convZeroPad,
		"AveragePooling2D":       convPool("AveragePool"),
		"MaxPooling2D":           convPool("MaxPool"),
		"GlobalAveragePooling2D": convGlobalPool("GlobalAveragePool"),
		"GlobalMaxPooling2D":     convGlobalPool("GlobalMaxPool"),
		"Flatten":                convFlatten,
		"Dense":                  convDense,
		"Dropout":                convIdentity,
	}
}

func decodeConfig(l Layer, v any) error {
	if err := json.Unmarshal(l.Config, v); err != nil {
		return fmt.Errorf("%w: config: %v", ErrModel, err)
	}
	return nil
}

func one(shapes [][]int64, rank int) ([]int64, error) {
	if len(shapes) != 1 {
		return nil, fmt.Errorf("%w: %d inputs, want 1", ErrModel, len(shapes))
	}
	if rank > 0 && len(shapes[0]) != rank {
		return nil, fmt.Errorf("%w: input of rank %d (batch excluded), want %d", ErrUnsupported, len(shapes[0]), rank)
	}
	return shapes[0], nil
}

// pair is a Keras 2-tuple option given as a number or a list.
type pair [2]int

func (p *pair) UnmarshalJSON(data []byte) error {
	var n int
	if err := json.Unmarshal(data, &n); err == nil {
		*p = pair{n, n}
		return nil
	}
	var l []int
	if err := json.Unmarshal(data, &l); err != nil || len(l) != 2 {
		return fmt.Errorf("want a number or two numbers, got %s", data)
	}
	*p = pair{l[0], l[1]}
	return nil
}

type spatialConfig struct {
	KernelSize      pair   `json:"kernel_size"`
	PoolSize        pair   `json:"pool_size"`
	Strides         *pair  `json:"strides"`
	Padding         string `json:"padding"`
	DataFormat      string `json:"data_format"`
	DilationRate    *pair  `json:"dilation_rate"`
	Activation      string `json:"activation"`
	UseBias         bool   `json:"use_bias"`
	Filters         int    `json:"filters"`
	DepthMultiplier int    `json:"depth_multiplier"`
	Groups          int    `json:"groups"`
}

func (c spatialConfig) check() error {
	if c.DataFormat != "" && c.DataFormat != "channels_last" {
		return fmt.Errorf("%w: data_format %q", ErrUnsupported, c.DataFormat)
	}
	if c.Padding != "valid" && c.Padding != "same" {
		return fmt.Errorf("%w: padding %q", ErrUnsupported, c.Padding)
	}
	return nil
}

func (c spatialConfig) stride(def pair) pair {
	if c.Strides == nil {
		return def
	}
	return *c.Strides
}

func (c spatialConfig) dilation() pair {
	if c.DilationRate == nil {
		return pair{1, 1}
	}
	return *c.DilationRate
}

// window computes one axis of a convolution or pooling window: the output
// size and the (begin, end) padding. "same" pads as TensorFlow does, the
// odd pixel at the end.
func window(size int64, k, s, d int, padding string) (out, begin, end int64, err error) {
	if k < 1 || s < 1 || d < 1 {
		return 0, 0, 0, fmt.Errorf("%w: window %d, stride %d, dilation %d", ErrModel, k, s, d)
	}
	span := int64((k-1)*d + 1)
	if padding == "valid" {
		if size < span {
			return 0, 0, 0, fmt.Errorf("%w: input %d is smaller than the window %d", ErrModel, size, span)
		}
		return (size-span)/int64(s) + 1, 0, 0, nil
	}
	out = (size + int64(s) - 1) / int64(s)
	total := max((out-1)*int64(s)+span-size, 0)
	return out, total / 2, total - total/2, nil
}

func spatialAttrs(k, s, d pair, pads [4]int64) []onnxpb.Attribute {
	return []onnxpb.Attribute{
		onnxpb.IntsAttr("kernel_shape", int64(k[0]), int64(k[1])),
		onnxpb.IntsAttr("strides", int64(s[0]), int64(s[1])),
		onnxpb.IntsAttr("dilations", int64(d[0]), int64(d[1])),
		onnxpb.IntsAttr("pads", pads[0], pads[1], pads[2], pads[3]),
	}
}

// spatial resolves the output size and ONNX pads (top, left, bottom, right)
// of a 2-D window over a [C, H, W] input.
func spatial(in []int64, k, s, d pair, padding string) (h, w int64, pads [4]int64, err error) {
	var t, bt, lf, rt int64
	if h, t, bt, err = window(in[1], k[0], s[0], d[0], padding); err != nil {
		return
	}
	if w, lf, rt, err = window(in[2], k[1], s[1], d[1], padding); err != nil {
		return
	}
	return h, w, [4]int64{t, lf, bt, rt}, nil
}

func convConv2D(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 3)
	if err != nil {
		return nil, err
	}
	var c spatialConfig
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.Groups > 1 {
		return nil, fmt.Errorf("%w: groups %d", ErrUnsupported, c.Groups)
	}
	if c.Filters < 1 {
		return nil, fmt.Errorf("%w: filters %d", ErrModel, c.Filters)
	}
	k, s, d := c.KernelSize, c.stride(pair{1, 1}), c.dilation()
	h, w, pads, err := spatial(x, k, s, d, c.Padding)
	if err != nil {
		return nil, err
	}
	cin, cout := int(x[0]), c.Filters
	kernel, err := b.weight(l.Name, "kernel", k[0], k[1], cin, cout)
	if err != nil {
		return nil, err
	}
	// Keras [kh, kw, in, out] → ONNX [out, in, kh, kw].
	wt := make([]float32, len(kernel.Data))
	for y := range k[0] {
		for xx := range k[1] {
			for i := range cin {
				for o := range cout {
					wt[((o*cin+i)*k[0]+y)*k[1]+xx] = kernel.Data[((y*k[1]+xx)*cin+i)*cout+o]
				}
			}
		}
	}
	inputs := []string{in[0], b.floats(l.Name+"/kernel", []int64{int64(cout), int64(cin), int64(k[0]), int64(k[1])}, wt)}
	if c.UseBias {
		bias, err := b.weight(l.Name, "bias", cout)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, b.floats(l.Name+"/bias", []int64{int64(cout)}, bias.Data))
	}
	pre, err := b.activationTarget(c.Activation, out)
	if err != nil {
		return nil, err
	}
	b.node(l.Name, "Conv", inputs, pre, spatialAttrs(k, s, d, pads)...)
	b.activation(l.Name, c.Activation, pre, out)
	return []int64{int64(cout), h, w}, nil
}

func convDepthwise(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 3)
	if err != nil {
		return nil, err
	}
	var c spatialConfig
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	mult := max(c.DepthMultiplier, 1)
	k, s, d := c.KernelSize, c.stride(pair{1, 1}), c.dilation()
	h, w, pads, err := spatial(x, k, s, d, c.Padding)
	if err != nil {
		return nil, err
	}
	cin := int(x[0])
	kernel, err := b.weight(l.Name, "depthwise_kernel", k[0], k[1], cin, mult)
	if err != nil {
		return nil, err
	}
	// Keras [kh, kw, in, mult] → ONNX [in·mult, 1, kh, kw]; output channel
	// i·mult + j, as TensorFlow orders a depthwise convolution's outputs.
	cout := cin * mult
	wt := make([]float32, len(kernel.Data))
	for y := range k[0] {
		for xx := range k[1] {
			for i := range cin {
				for j := range mult {
					wt[((i*mult+j)*k[0]+y)*k[1]+xx] = kernel.Data[((y*k[1]+xx)*cin+i)*mult+j]
				}
			}
		}
	}
	inputs := []string{in[0], b.floats(l.Name+"/depthwise_kernel", []int64{int64(cout), 1, int64(k[0]), int64(k[1])}, wt)}
	if c.UseBias {
		bias, err := b.weight(l.Name, "bias", cout)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, b.floats(l.Name+"/bias", []int64{int64(cout)}, bias.Data))
	}
	pre, err := b.activationTarget(c.Activation, out)
	if err != nil {
		return nil, err
	}
	attrs := append(spatialAttrs(k, s, d, pads), onnxpb.IntAttr("group", int64(cin)))
	b.node(l.Name, "Conv", inputs, pre, attrs...)
	b.activation(l.Name, c.Activation, pre, out)
	return []int64{int64(cout), h, w}, nil
}

// activationTarget is where the layer's linear part writes: out itself when
// there is no activation.
func (b *builder) activationTarget(act, out string) (string, error) {
	switch act {
	case "", "linear":
		return out, nil
	case "relu", "relu6", "sigmoid", "tanh", "softmax":
		return out + "/linear", nil
	}
	return "", fmt.Errorf("%w: activation %q", ErrUnsupported, act)
}

func (b *builder) activation(layer, act, in, out string) {
	switch act {
	case "relu":
		b.node(layer+"/relu", "Relu", []string{in}, out)
	case "relu6":
		b.clip(layer+"/relu6", in, out, 6)
	case "sigmoid":
		b.node(layer+"/sigmoid", "Sigmoid", []string{in}, out)
	case "tanh":
		b.node(layer+"/tanh", "Tanh", []string{in}, out)
	case "softmax":
		b.node(layer+"/softmax", "Softmax", []string{in}, out, onnxpb.IntAttr("axis", -1))
	}
}

func (b *builder) clip(name, in, out string, hi float32) {
	lo := b.floats(name+"/min", nil, []float32{0})
	top := b.floats(name+"/max", nil, []float32{hi})
	b.node(name, "Clip", []string{in, lo, top}, out)
}

func convActivation(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 0)
	if err != nil {
		return nil, err
	}
	var c struct {
		Activation string `json:"activation"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if c.Activation == "softmax" && len(x) != 1 {
		return nil, fmt.Errorf("%w: softmax over a rank-%d input", ErrUnsupported, len(x))
	}
	pre, err := b.activationTarget(c.Activation, out)
	if err != nil {
		return nil, err
	}
	if pre == out {
		b.node(l.Name, "Identity", in, out)
	} else {
		b.activation(l.Name, c.Activation, in[0], out)
	}
	return x, nil
}

func convBatchNorm(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 0)
	if err != nil {
		return nil, err
	}
	var c struct {
		Axis    json.RawMessage `json:"axis"`
		Epsilon float64         `json:"epsilon"`
		Center  *bool           `json:"center"`
		Scale   *bool           `json:"scale"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	var axis int
	if err := json.Unmarshal(c.Axis, &axis); err != nil {
		var axes []int
		if err := json.Unmarshal(c.Axis, &axes); err != nil || len(axes) != 1 {
			return nil, fmt.Errorf("%w: axis %s", ErrUnsupported, c.Axis)
		}
		axis = axes[0]
	}
	// Keras counts the batch axis; the channel axis is the last one.
	if axis != -1 && axis != len(x) {
		return nil, fmt.Errorf("%w: batch normalisation over axis %d (only the channel axis)", ErrUnsupported, axis)
	}
	n := int(x[0])
	param := func(name string, present *bool, def float32) (string, error) {
		if present != nil && !*present {
			data := make([]float32, n)
			for i := range data {
				data[i] = def
			}
			return b.floats(l.Name+"/"+name, []int64{int64(n)}, data), nil
		}
		t, err := b.weight(l.Name, name, n)
		if err != nil {
			return "", err
		}
		return b.floats(l.Name+"/"+name, []int64{int64(n)}, t.Data), nil
	}
	yes := true
	var names [4]string
	for i, p := range []struct {
		name    string
		present *bool
		def     float32
	}{{"gamma", c.Scale, 1}, {"beta", c.Center, 0}, {"moving_mean", &yes, 0}, {"moving_variance", &yes, 0}} {
		if names[i], err = param(p.name, p.present, p.def); err != nil {
			return nil, err
		}
	}
	b.node(l.Name, "BatchNormalization", append([]string{in[0]}, names[:]...), out,
		onnxpb.FloatAttr("epsilon", float32(c.Epsilon)))
	return x, nil
}

func convReLU(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 0)
	if err != nil {
		return nil, err
	}
	var c struct {
		MaxValue      *float64 `json:"max_value"`
		NegativeSlope float64  `json:"negative_slope"`
		Threshold     float64  `json:"threshold"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if c.NegativeSlope != 0 || c.Threshold != 0 {
		return nil, fmt.Errorf("%w: ReLU with negative_slope %v, threshold %v", ErrUnsupported, c.NegativeSlope, c.Threshold)
	}
	if c.MaxValue == nil {
		b.node(l.Name, "Relu", in, out)
	} else {
		if *c.MaxValue <= 0 {
			return nil, fmt.Errorf("%w: ReLU max_value %v", ErrModel, *c.MaxValue)
		}
		b.clip(l.Name, in[0], out, float32(*c.MaxValue))
	}
	return x, nil
}

func convAdd(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("%w: Add of %d inputs", ErrModel, len(in))
	}
	for _, s := range shapes[1:] {
		if !slices.Equal(s, shapes[0]) {
			return nil, fmt.Errorf("%w: Add of shapes %v and %v", ErrModel, shapes[0], s)
		}
	}
	op := "Add"
	if len(in) > 2 {
		op = "Sum"
	}
	b.node(l.Name, op, in, out)
	return shapes[0], nil
}

func convConcat(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	var c struct {
		Axis int `json:"axis"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	rank := len(shapes[0])
	if c.Axis != -1 && c.Axis != rank {
		return nil, fmt.Errorf("%w: concatenation over axis %d (only the channel axis)", ErrUnsupported, c.Axis)
	}
	res := slices.Clone(shapes[0])
	for _, s := range shapes[1:] {
		if len(s) != rank || !slices.Equal(s[1:], shapes[0][1:]) {
			return nil, fmt.Errorf("%w: Concatenate of shapes %v and %v", ErrModel, shapes[0], s)
		}
		res[0] += s[0]
	}
	b.node(l.Name, "Concat", in, out, onnxpb.IntAttr("axis", 1))
	return res, nil
}

func convZeroPad(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 3)
	if err != nil {
		return nil, err
	}
	var c struct {
		Padding    json.RawMessage `json:"padding"`
		DataFormat string          `json:"data_format"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if c.DataFormat != "" && c.DataFormat != "channels_last" {
		return nil, fmt.Errorf("%w: data_format %q", ErrUnsupported, c.DataFormat)
	}
	var top, bottom, left, right int
	var nested [][]int
	var p pair
	if err := json.Unmarshal(c.Padding, &nested); err == nil && len(nested) == 2 && len(nested[0]) == 2 && len(nested[1]) == 2 {
		top, bottom, left, right = nested[0][0], nested[0][1], nested[1][0], nested[1][1]
	} else if err := json.Unmarshal(c.Padding, &p); err == nil {
		top, bottom, left, right = p[0], p[0], p[1], p[1]
	} else {
		return nil, fmt.Errorf("%w: padding %s", ErrModel, c.Padding)
	}
	if top < 0 || bottom < 0 || left < 0 || right < 0 {
		return nil, fmt.Errorf("%w: negative padding %s", ErrModel, c.Padding)
	}
	pads := b.int64s(l.Name+"/pads", []int64{8}, []int64{0, 0, int64(top), int64(left), 0, 0, int64(bottom), int64(right)})
	b.node(l.Name, "Pad", []string{in[0], pads}, out, onnxpb.StringAttr("mode", "constant"))
	return []int64{x[0], x[1] + int64(top+bottom), x[2] + int64(left+right)}, nil
}

func convPool(op string) converter {
	return func(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
		x, err := one(shapes, 3)
		if err != nil {
			return nil, err
		}
		var c spatialConfig
		if err := decodeConfig(l, &c); err != nil {
			return nil, err
		}
		if err := c.check(); err != nil {
			return nil, err
		}
		k, s := c.PoolSize, c.stride(c.PoolSize)
		h, w, pads, err := spatial(x, k, s, pair{1, 1}, c.Padding)
		if err != nil {
			return nil, err
		}
		// TensorFlow's average pooling divides by the number of real
		// pixels, which is ONNX's count_include_pad=0 (its default).
		attrs := []onnxpb.Attribute{
			onnxpb.IntsAttr("kernel_shape", int64(k[0]), int64(k[1])),
			onnxpb.IntsAttr("strides", int64(s[0]), int64(s[1])),
			onnxpb.IntsAttr("pads", pads[0], pads[1], pads[2], pads[3]),
		}
		b.node(l.Name, op, in, out, attrs...)
		return []int64{x[0], h, w}, nil
	}
}

func convGlobalPool(op string) converter {
	return func(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
		x, err := one(shapes, 3)
		if err != nil {
			return nil, err
		}
		var c struct {
			KeepDims   bool   `json:"keepdims"`
			DataFormat string `json:"data_format"`
		}
		if err := decodeConfig(l, &c); err != nil {
			return nil, err
		}
		if c.DataFormat != "" && c.DataFormat != "channels_last" {
			return nil, fmt.Errorf("%w: data_format %q", ErrUnsupported, c.DataFormat)
		}
		if c.KeepDims {
			b.node(l.Name, op, in, out)
			return []int64{x[0], 1, 1}, nil
		}
		b.node(l.Name, op, in, out+"/pooled")
		b.node(l.Name+"/flatten", "Flatten", []string{out + "/pooled"}, out, onnxpb.IntAttr("axis", 1))
		return []int64{x[0]}, nil
	}
}

func convFlatten(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 0)
	if err != nil {
		return nil, err
	}
	var c struct {
		DataFormat string `json:"data_format"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if c.DataFormat != "" && c.DataFormat != "channels_last" {
		return nil, fmt.Errorf("%w: data_format %q", ErrUnsupported, c.DataFormat)
	}
	switch {
	case len(x) == 1:
		b.node(l.Name, "Identity", in, out)
		return x, nil
	case len(x) == 3 && x[1]*x[2] != 1:
		// Keras flattens channels-last (H, W, C) order.
		b.node(l.Name+"/nhwc", "Transpose", in, out+"/nhwc", onnxpb.IntsAttr("perm", 0, 2, 3, 1))
		in = []string{out + "/nhwc"}
	}
	b.node(l.Name, "Flatten", in, out, onnxpb.IntAttr("axis", 1))
	n := int64(1)
	for _, d := range x {
		n *= d
	}
	return []int64{n}, nil
}

func convDense(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 1)
	if err != nil {
		return nil, err
	}
	var c struct {
		Units      int    `json:"units"`
		Activation string `json:"activation"`
		UseBias    bool   `json:"use_bias"`
	}
	if err := decodeConfig(l, &c); err != nil {
		return nil, err
	}
	if c.Units < 1 {
		return nil, fmt.Errorf("%w: units %d", ErrModel, c.Units)
	}
	kernel, err := b.weight(l.Name, "kernel", int(x[0]), c.Units)
	if err != nil {
		return nil, err
	}
	inputs := []string{in[0], b.floats(l.Name+"/kernel", []int64{x[0], int64(c.Units)}, kernel.Data)}
	if c.UseBias {
		bias, err := b.weight(l.Name, "bias", c.Units)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, b.floats(l.Name+"/bias", []int64{int64(c.Units)}, bias.Data))
	}
	pre, err := b.activationTarget(c.Activation, out)
	if err != nil {
		return nil, err
	}
	b.node(l.Name, "Gemm", inputs, pre)
	b.activation(l.Name, c.Activation, pre, out)
	return []int64{int64(c.Units)}, nil
}

func convIdentity(b *builder, l Layer, in []string, shapes [][]int64, out string) ([]int64, error) {
	x, err := one(shapes, 0)
	if err != nil {
		return nil, err
	}
	b.node(l.Name, "Identity", in, out)
	return x, nil
}
