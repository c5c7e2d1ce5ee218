package keras

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// tinyLayer is one layer of a synthetic model: class, config, inbound
// layer names and its weights (name → Keras shape).
type tinyLayer struct {
	name, class string
	config      map[string]any
	inbound     []string
	weights     [][2]any // {param, shape}
}

// tinyModel is a small functional model exercising every converted layer
// on a 9×9×2 input: odd sizes, asymmetric zero padding, stride-2 "same"
// convolution (TensorFlow's extra pixel at the end), batch norm without
// scale, a depthwise convolution with multiplier 2, ReLU6, a residual Add,
// "same" average pooling (padding excluded from the mean), a channels-last
// Flatten of a 3×3 map (needs a transpose in NCHW) and a softmax Dense; a
// second head uses global average pooling.
func tinyModel() []tinyLayer {
	return []tinyLayer{
		{"in", "InputLayer", map[string]any{"batch_input_shape": []any{nil, 9, 9, 2}, "dtype": "float32"}, nil, nil},
		{"zp", "ZeroPadding2D", map[string]any{"padding": [][]int{{1, 0}, {0, 1}}, "data_format": "channels_last"}, []string{"in"}, nil},
		{"c1", "Conv2D", map[string]any{"filters": 3, "kernel_size": []int{3, 3}, "strides": []int{2, 2}, "padding": "same",
			"dilation_rate": []int{1, 1}, "activation": "relu", "use_bias": true, "data_format": "channels_last"}, []string{"zp"},
			[][2]any{{"kernel", []int{3, 3, 2, 3}}, {"bias", []int{3}}}},
		{"bn", "BatchNormalization", map[string]any{"axis": -1, "epsilon": 0.001, "center": true, "scale": false}, []string{"c1"},
			[][2]any{{"beta", []int{3}}, {"moving_mean", []int{3}}, {"moving_variance", []int{3}}}},
		{"dw", "DepthwiseConv2D", map[string]any{"kernel_size": 3, "strides": 1, "padding": "same", "depth_multiplier": 2,
			"activation": "linear", "use_bias": true}, []string{"bn"},
			[][2]any{{"depthwise_kernel", []int{3, 3, 3, 2}}, {"bias", []int{6}}}},
		{"r6", "ReLU", map[string]any{"max_value": 6, "negative_slope": 0, "threshold": 0}, []string{"dw"}, nil},
		{"c2", "Conv2D", map[string]any{"filters": 6, "kernel_size": []int{1, 1}, "strides": []int{1, 1}, "padding": "valid",
			"activation": "linear", "use_bias": false}, []string{"r6"}, [][2]any{{"kernel", []int{1, 1, 6, 6}}}},
		{"add", "Add", map[string]any{}, []string{"r6", "c2"}, nil},
		{"ap", "AveragePooling2D", map[string]any{"pool_size": []int{2, 2}, "strides": nil, "padding": "same"}, []string{"add"}, nil},
		{"fl", "Flatten", map[string]any{"data_format": "channels_last"}, []string{"ap"}, nil},
		{"drop", "Dropout", map[string]any{"rate": 0.5}, []string{"fl"}, nil},
		{"d1", "Dense", map[string]any{"units": 4, "activation": "softmax", "use_bias": true}, []string{"drop"},
			[][2]any{{"kernel", []int{54, 4}}, {"bias", []int{4}}}},
		{"gap", "GlobalAveragePooling2D", map[string]any{"data_format": "channels_last"}, []string{"add"}, nil},
	}
}

// tinyJSON builds model.json and the weight bytes (uint8-quantised with a
// deterministic pattern; variances stay positive).
func tinyJSON(layers []tinyLayer) ([]byte, []byte) {
	var ls []any
	var specs []any
	var data []byte
	seed := uint32(7)
	for _, l := range layers {
		var inbound []any
		if l.inbound != nil {
			var refs []any
			for _, in := range l.inbound {
				refs = append(refs, []any{in, 0, 0, map[string]any{}})
			}
			inbound = []any{refs}
		} else {
			inbound = []any{}
		}
		cfg := map[string]any{"name": l.name}
		for k, v := range l.config {
			cfg[k] = v
		}
		ls = append(ls, map[string]any{"name": l.name, "class_name": l.class, "config": cfg, "inbound_nodes": inbound})
		for _, w := range l.weights {
			shape := w[1].([]int)
			n := 1
			for _, d := range shape {
				n *= d
			}
			q := map[string]any{"min": -0.9, "scale": 0.007, "dtype": "uint8"}
			if w[0] == "moving_variance" {
				q = map[string]any{"min": 0.2, "scale": 0.01, "dtype": "uint8"}
			}
			specs = append(specs, map[string]any{"name": l.name + "/" + w[0].(string), "shape": shape, "dtype": "float32", "quantization": q})
			for range n {
				seed = seed*1664525 + 1013904223
				data = append(data, byte(seed>>24))
			}
		}
	}
	m := map[string]any{
		"modelTopology": map[string]any{"keras_version": "2.2.4", "backend": "tensorflow", "model_config": map[string]any{
			"class_name": "Model", "config": map[string]any{"name": "tiny", "layers": ls,
				"input_layers": []any{[]any{"in", 0, 0}}, "output_layers": []any{[]any{"d1", 0, 0}}}}},
		"weightsManifest": []any{map[string]any{"paths": []string{"group1-shard1of1"}, "weights": specs}},
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b, data
}

func loadTiny(t testing.TB, layers []tinyLayer) *Model {
	t.Helper()
	mj, w := tinyJSON(layers)
	m, err := ParseModelJSON(mj)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadWeights([][]byte{w}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDequantize(t *testing.T) {
	// TF.js: v*scale + min in float64, one rounding to float32.
	q := &Quantization{Min: -0.87334511607301, Scale: 0.006666756611244351, DType: "uint8"}
	for _, v := range []float64{0, 1, 131, 255} {
		want := float32(v*q.Scale + q.Min)
		if got := dequantize(v, q); got != want {
			t.Errorf("dequantize(%v) = %v, want %v", v, got, want)
		}
	}
	if got := dequantize(0, q); got != float32(-0.87334511607301) {
		t.Errorf("q=0 gives min: %v", got)
	}
	// uint8, uint16 and plain float32 weights in one group.
	mj := []byte(`{"modelTopology":{"model_config":{"class_name":"Model","config":{"name":"m","layers":[],"input_layers":[],"output_layers":[]}}},
		"weightsManifest":[{"paths":["a","b"],"weights":[
		{"name":"u8","shape":[2],"dtype":"float32","quantization":{"min":-1,"scale":0.5,"dtype":"uint8"}},
		{"name":"u16","shape":[1],"dtype":"float32","quantization":{"min":0,"scale":0.25,"dtype":"uint16"}},
		{"name":"f32","shape":[1],"dtype":"float32"}]}]}`)
	m, err := ParseModelJSON(mj)
	if err != nil {
		t.Fatal(err)
	}
	// Shards are concatenated: the uint16 straddles the two files.
	if err := m.LoadWeights([][]byte{{4, 1, 8}, {0, 0, 0, 0xc0, 0x3f}}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float32{"u8": {1, -0.5}, "u16": {2}, "f32": {1.5}} {
		got, _ := m.Weight(name)
		if fmt.Sprint(got.Data) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", name, got.Data, want)
		}
	}
	if err := m.LoadWeights([][]byte{{4, 1, 8}, {0, 0, 0, 0xc0}}); err == nil || !strings.Contains(err.Error(), "needs 4 bytes") {
		t.Errorf("short shard: %v", err)
	}
	if err := m.LoadWeights([][]byte{{4, 1, 8}, {0, 0, 0, 0xc0, 0x3f, 9}}); err == nil || !strings.Contains(err.Error(), "the files hold 9") {
		t.Errorf("long shard: %v", err)
	}
	if err := m.LoadWeights([][]byte{{4}}); err == nil || !strings.Contains(err.Error(), "names 2 weight files, got 1") {
		t.Errorf("missing shard: %v", err)
	}
}

// TestConvertDeterministic: the converter's bytes are a pure function of
// the model (same bytes twice, also from a freshly parsed copy), and the
// emitted graph is the expected node sequence.
func TestConvertDeterministic(t *testing.T) {
	opts := Options{Output: "d1", Metadata: map[string]string{"b": "2", "a": "1"}}
	first, err := loadTiny(t, tinyModel()).Convert(opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := loadTiny(t, tinyModel()).Convert(opts)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatal("Convert gave different bytes for the same model")
		}
	}
	for _, s := range []string{"pixel_values", "Pad", "Conv", "BatchNormalization", "Clip", "Add", "AveragePool", "Transpose", "Flatten", "Gemm", "Softmax", "vertebrae-keras"} {
		if !bytes.Contains(first, []byte(s)) {
			t.Errorf("model has no %q", s)
		}
	}
	if bytes.Contains(first, []byte("GlobalAveragePool")) {
		t.Error("the gap head does not feed d1 and must not be converted")
	}
	// Metadata props are sorted by key.
	if i, j := bytes.Index(first, []byte("\x12\x011")), bytes.Index(first, []byte("\x12\x012")); i < 0 || j < i {
		t.Errorf("metadata order: %d %d", i, j)
	}
}

func TestConvertErrors(t *testing.T) {
	edit := func(f func([]tinyLayer) []tinyLayer) []tinyLayer { return f(tinyModel()) }
	cases := []struct {
		name   string
		layers []tinyLayer
		output string
		want   error
		msg    string
	}{
		{"unknown output", tinyModel(), "nope", ErrModel, `no layer named "nope"`},
		{"unsupported layer", edit(func(l []tinyLayer) []tinyLayer { l[5].class = "PReLU"; return l }), "d1", ErrUnsupported, `layer "r6" (PReLU): keras: unsupported: layer class PReLU`},
		{"unsupported activation", edit(func(l []tinyLayer) []tinyLayer { l[2].config["activation"] = "elu"; return l }), "d1", ErrUnsupported, `activation "elu"`},
		{"leaky relu", edit(func(l []tinyLayer) []tinyLayer { l[5].config["negative_slope"] = 0.1; return l }), "d1", ErrUnsupported, "negative_slope 0.1"},
		{"channels first", edit(func(l []tinyLayer) []tinyLayer { l[2].config["data_format"] = "channels_first"; return l }), "d1", ErrUnsupported, `data_format "channels_first"`},
		{"wrong kernel shape", edit(func(l []tinyLayer) []tinyLayer { l[2].config["filters"] = 4; return l }), "d1", ErrModel, `weight "c1/kernel" has shape [3 3 2 3], the layer needs [3 3 2 4]`},
		{"unknown inbound", edit(func(l []tinyLayer) []tinyLayer { l[7].inbound = []string{"r6", "zz"}; return l }), "d1", ErrModel, `unknown layer "zz"`},
		{"dense on a map", edit(func(l []tinyLayer) []tinyLayer { l[11].inbound = []string{"ap"}; return l }), "d1", ErrUnsupported, "input of rank 3"},
		{"add shapes", edit(func(l []tinyLayer) []tinyLayer { l[7].inbound = []string{"r6", "bn"}; return l }), "d1", ErrModel, "Add of shapes"},
		{"dynamic input", edit(func(l []tinyLayer) []tinyLayer {
			l[0].config["batch_input_shape"] = []any{nil, nil, nil, 2}
			return l
		}), "d1", ErrUnsupported, "fixed H, W and C"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadTiny(t, c.layers)
			_, err := m.Convert(Options{Output: c.output})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
	// Shared layers (called twice) are refused.
	layers := tinyModel()
	mj, w := tinyJSON(layers)
	var raw map[string]any
	json.Unmarshal(mj, &raw)
	ls := raw["modelTopology"].(map[string]any)["model_config"].(map[string]any)["config"].(map[string]any)["layers"].([]any)
	r6 := ls[5].(map[string]any)
	r6["inbound_nodes"] = append(r6["inbound_nodes"].([]any), r6["inbound_nodes"].([]any)[0])
	mj, _ = json.Marshal(raw)
	m, err := ParseModelJSON(mj)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadWeights([][]byte{w}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Convert(Options{}); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "called 2 times") {
		t.Fatalf("shared layer: %v", err)
	}
	if _, err := (&Model{}).Convert(Options{}); !errors.Is(err, ErrModel) {
		t.Fatalf("no weights: %v", err)
	}
}

func TestParseModelJSONErrors(t *testing.T) {
	cases := []struct{ json, msg string }{
		{`{"format":"graph-model","modelTopology":null}`, "no modelTopology"},
		{`{"modelTopology":{"model_config":{"class_name":"Sequential","config":{}}}}`, `class_name "Sequential"`},
		{`{"modelTopology":{"model_config":{"class_name":"Model","config":{"layers":[{"name":"a"},{"name":"a"}]}}}}`, `"a" is used twice`},
		{`{"modelTopology":{"model_config":{"class_name":"Model","config":{"input_layers":[[1]]}}}}`, "input_layers[0]"},
		{`[`, "invalid model"},
	}
	for _, c := range cases {
		if _, err := ParseModelJSON([]byte(c.json)); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: error %v, want %q", c.json, err, c.msg)
		}
	}
}

// ---- a plain NHWC reference of the tiny model, for the runtime test ----

type nhwc struct {
	h, w, c int
	d       []float64
}

func (x nhwc) at(y, xx, c int) float64 {
	if y < 0 || xx < 0 || y >= x.h || xx >= x.w {
		return 0
	}
	return x.d[(y*x.w+xx)*x.c+c]
}

// tfSame is TensorFlow's "same" padding for one axis.
func tfSame(size, k, s int) (out, before int) {
	out = (size + s - 1) / s
	total := max((out-1)*s+k-size, 0)
	return out, total / 2
}

func refPad(x nhwc, top, bottom, left, right int) nhwc {
	o := nhwc{x.h + top + bottom, x.w + left + right, x.c, nil}
	o.d = make([]float64, o.h*o.w*o.c)
	for y := range o.h {
		for xx := range o.w {
			for c := range o.c {
				o.d[(y*o.w+xx)*o.c+c] = x.at(y-top, xx-left, c)
			}
		}
	}
	return o
}

// refConv is a grouped convolution: depthwise when mult > 0 (kernel
// [k,k,cin,mult]), dense otherwise (kernel [k,k,cin,cout]).
func refConv(x nhwc, kernel []float32, k, s, cout, mult int, same bool, bias []float32) nhwc {
	oh, ow, pt, pl := (x.h-k)/s+1, (x.w-k)/s+1, 0, 0
	if same {
		oh, pt = tfSame(x.h, k, s)
		ow, pl = tfSame(x.w, k, s)
	}
	o := nhwc{oh, ow, cout, make([]float64, oh*ow*cout)}
	for y := range oh {
		for xx := range ow {
			for oc := range cout {
				sum := 0.0
				if bias != nil {
					sum = float64(bias[oc])
				}
				for ky := range k {
					for kx := range k {
						iy, ix := y*s+ky-pt, xx*s+kx-pl
						if mult > 0 {
							ic, j := oc/mult, oc%mult
							sum += x.at(iy, ix, ic) * float64(kernel[((ky*k+kx)*x.c+ic)*mult+j])
							continue
						}
						for ic := range x.c {
							sum += x.at(iy, ix, ic) * float64(kernel[((ky*k+kx)*x.c+ic)*cout+oc])
						}
					}
				}
				o.d[(y*ow+xx)*cout+oc] = sum
			}
		}
	}
	return o
}

func refMap(x nhwc, f func(c int, v float64) float64) nhwc {
	o := nhwc{x.h, x.w, x.c, make([]float64, len(x.d))}
	for i, v := range x.d {
		o.d[i] = f(i%x.c, v)
	}
	return o
}

// refTiny evaluates tinyModel on one NHWC image and returns flatten,
// dense-softmax and global-average-pool outputs.
func refTiny(m *Model, img []float64) (fl, d1, gap []float64) {
	w := func(n string) []float32 { t, _ := m.Weight(n); return t.Data }
	x := nhwc{9, 9, 2, img}
	x = refPad(x, 1, 0, 0, 1)
	x = refConv(x, w("c1/kernel"), 3, 2, 3, 0, true, w("c1/bias"))
	x = refMap(x, func(_ int, v float64) float64 { return math.Max(v, 0) })
	beta, mean, vr := w("bn/beta"), w("bn/moving_mean"), w("bn/moving_variance")
	x = refMap(x, func(c int, v float64) float64 {
		return (v-float64(mean[c]))/math.Sqrt(float64(vr[c])+0.001) + float64(beta[c])
	})
	x = refConv(x, w("dw/depthwise_kernel"), 3, 1, 6, 2, true, w("dw/bias"))
	r6 := refMap(x, func(_ int, v float64) float64 { return math.Min(math.Max(v, 0), 6) })
	c2 := refConv(r6, w("c2/kernel"), 1, 1, 6, 0, false, nil)
	add := refMap(r6, func(int, float64) float64 { return 0 })
	for i := range add.d {
		add.d[i] = r6.d[i] + c2.d[i]
	}
	// "same" 2×2/2 average pooling over 5×5: windows at the edge average
	// only the real pixels.
	oh, pt := tfSame(add.h, 2, 2)
	ow, pl := tfSame(add.w, 2, 2)
	for y := range oh {
		for xx := range ow {
			for c := range add.c {
				sum, n := 0.0, 0
				for ky := range 2 {
					for kx := range 2 {
						iy, ix := y*2+ky-pt, xx*2+kx-pl
						if iy >= 0 && ix >= 0 && iy < add.h && ix < add.w {
							sum += add.at(iy, ix, c)
							n++
						}
					}
				}
				fl = append(fl, sum/float64(n)) // NHWC order = Keras Flatten
			}
		}
	}
	kernel, bias := w("d1/kernel"), w("d1/bias")
	logits := make([]float64, 4)
	for u := range 4 {
		logits[u] = float64(bias[u])
		for i, v := range fl {
			logits[u] += v * float64(kernel[i*4+u])
		}
	}
	top := math.Inf(-1)
	for _, v := range logits {
		top = math.Max(top, v)
	}
	total := 0.0
	for _, v := range logits {
		total += math.Exp(v - top)
	}
	for _, v := range logits {
		d1 = append(d1, math.Exp(v-top)/total)
	}
	gap = make([]float64, add.c)
	for i, v := range add.d {
		gap[i%add.c] += v / float64(add.h*add.w)
	}
	return fl, d1, gap
}
