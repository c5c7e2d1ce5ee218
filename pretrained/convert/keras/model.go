package keras

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// ErrModel reports a model topology or weight manifest the converter cannot
// read; ErrUnsupported a valid model using a layer or option it does not
// implement.
var (
	ErrModel       = errors.New("keras: invalid model")
	ErrUnsupported = errors.New("keras: unsupported")
)

// Layer is one entry of a functional Keras model's layer list.
type Layer struct {
	Name      string          `json:"name"`
	ClassName string          `json:"class_name"`
	Config    json.RawMessage `json:"config"`
	// InboundNodes: one list per call of the layer; each element is
	// [layer name, node index, tensor index, kwargs].
	InboundNodes [][][]any `json:"inbound_nodes"`
}

// WeightSpec is one entry of a TF.js weights manifest.
type WeightSpec struct {
	Name         string        `json:"name"`
	Shape        []int         `json:"shape"`
	DType        string        `json:"dtype"`
	Quantization *Quantization `json:"quantization"`
}

// Quantization is a TF.js weight quantisation: value = q·scale + min.
type Quantization struct {
	Min   float64 `json:"min"`
	Scale float64 `json:"scale"`
	DType string  `json:"dtype"`
}

// WeightGroup is one manifest group: shard file names and the weights
// stored, in order, across their concatenated bytes.
type WeightGroup struct {
	Paths   []string     `json:"paths"`
	Weights []WeightSpec `json:"weights"`
}

// Model is a TF.js Keras layers model (model.json): a functional model's
// topology and its weights manifest. Weights are attached by LoadWeights.
type Model struct {
	KerasVersion string
	Backend      string
	Name         string
	Layers       []Layer
	InputLayers  []string // names of the model's input layers
	OutputLayers []string // names of the model's output layers
	Manifest     []WeightGroup

	weights map[string]Tensor
}

// Tensor is a dequantised float32 weight with its Keras shape.
type Tensor struct {
	Shape []int
	Data  []float32
}

// modelJSON mirrors TF.js model.json for a layers model.
type modelJSON struct {
	ModelTopology *struct {
		KerasVersion string `json:"keras_version"`
		Backend      string `json:"backend"`
		ModelConfig  struct {
			ClassName string `json:"class_name"`
			Config    struct {
				Name         string  `json:"name"`
				Layers       []Layer `json:"layers"`
				InputLayers  [][]any `json:"input_layers"`
				OutputLayers [][]any `json:"output_layers"`
			} `json:"config"`
		} `json:"model_config"`
	} `json:"modelTopology"`
	WeightsManifest []WeightGroup `json:"weightsManifest"`
}

// ParseModelJSON reads a TF.js layers model.json.
func ParseModelJSON(data []byte) (*Model, error) {
	var mj modelJSON
	if err := json.Unmarshal(data, &mj); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	t := mj.ModelTopology
	if t == nil {
		return nil, fmt.Errorf("%w: no modelTopology (a graph model, not a layers model?)", ErrModel)
	}
	if c := t.ModelConfig.ClassName; c != "Model" && c != "Functional" {
		return nil, fmt.Errorf("%w: model_config.class_name %q (only functional models are converted)", ErrUnsupported, c)
	}
	cfg := t.ModelConfig.Config
	m := &Model{KerasVersion: t.KerasVersion, Backend: t.Backend, Name: cfg.Name, Layers: cfg.Layers, Manifest: mj.WeightsManifest}
	var err error
	if m.InputLayers, err = layerRefs("input_layers", cfg.InputLayers); err != nil {
		return nil, err
	}
	if m.OutputLayers, err = layerRefs("output_layers", cfg.OutputLayers); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, l := range m.Layers {
		if l.Name == "" {
			return nil, fmt.Errorf("%w: layer %d has no name", ErrModel, i)
		}
		if seen[l.Name] {
			return nil, fmt.Errorf("%w: layer name %q is used twice", ErrModel, l.Name)
		}
		seen[l.Name] = true
	}
	return m, nil
}

// ParseModelModule reads model.json from a JavaScript module wrapper (such
// as nsfwjs's model.min.js).
func ParseModelModule(src []byte) (*Model, error) {
	v, err := ParseModule(src)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	return ParseModelJSON(data)
}

func layerRefs(field string, refs [][]any) ([]string, error) {
	out := make([]string, len(refs))
	for i, r := range refs {
		name, ok := refAt(r, 0).(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s[%d] is not [layer name, node, tensor]", ErrModel, field, i)
		}
		out[i] = name
	}
	return out, nil
}

func refAt(r []any, i int) any {
	if i < len(r) {
		return r[i]
	}
	return nil
}

// LoadWeights dequantises the weights stored in shards, which hold the
// manifest groups' files in manifest order (group by group, each group's
// paths in order). Dequantisation follows TF.js (io_utils decodeWeights):
// q·scale + min evaluated in float64, then rounded once to float32.
func (m *Model) LoadWeights(shards [][]byte) error {
	n := 0
	for _, g := range m.Manifest {
		n += len(g.Paths)
	}
	if len(shards) != n {
		return fmt.Errorf("%w: the manifest names %d weight files, got %d", ErrModel, n, len(shards))
	}
	m.weights = map[string]Tensor{}
	next := 0
	for gi, g := range m.Manifest {
		var buf []byte
		for range g.Paths {
			buf = append(buf, shards[next]...)
			next++
		}
		off := 0
		for _, w := range g.Weights {
			t, size, err := decodeWeight(w, buf[off:])
			if err != nil {
				return fmt.Errorf("weight group %d: %w", gi, err)
			}
			if _, dup := m.weights[w.Name]; dup {
				return fmt.Errorf("%w: weight %q appears twice in the manifest", ErrModel, w.Name)
			}
			m.weights[w.Name] = t
			off += size
		}
		if off != len(buf) {
			return fmt.Errorf("%w: weight group %d: the manifest describes %d bytes, the files hold %d", ErrModel, gi, off, len(buf))
		}
	}
	return nil
}

func decodeWeight(w WeightSpec, buf []byte) (Tensor, int, error) {
	count := 1
	for _, d := range w.Shape {
		if d < 0 || (d > 0 && count > math.MaxInt32/d) {
			return Tensor{}, 0, fmt.Errorf("%w: weight %q has shape %v", ErrModel, w.Name, w.Shape)
		}
		count *= d
	}
	if w.DType != "float32" {
		return Tensor{}, 0, fmt.Errorf("%w: weight %q has dtype %q (only float32 weights are converted)", ErrUnsupported, w.Name, w.DType)
	}
	width, q := 4, w.Quantization
	if q != nil {
		switch q.DType {
		case "uint8":
			width = 1
		case "uint16":
			width = 2
		default:
			return Tensor{}, 0, fmt.Errorf("%w: weight %q is quantised as %q (uint8 and uint16 are converted)", ErrUnsupported, w.Name, q.DType)
		}
	}
	size := count * width
	if size > len(buf) {
		return Tensor{}, 0, fmt.Errorf("%w: weight %q needs %d bytes, %d left in the weight files", ErrModel, w.Name, size, len(buf))
	}
	data := make([]float32, count)
	for i := range data {
		switch width {
		case 4:
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		case 2:
			data[i] = dequantize(float64(binary.LittleEndian.Uint16(buf[2*i:])), q)
		default:
			data[i] = dequantize(float64(buf[i]), q)
		}
	}
	return Tensor{Shape: append([]int(nil), w.Shape...), Data: data}, size, nil
}

// dequantize is TF.js's v*scale + min in float64; the explicit conversion
// of the product keeps the compiler from fusing it into a multiply-add.
func dequantize(v float64, q *Quantization) float32 {
	return float32(float64(v*q.Scale) + q.Min)
}

// Weight returns a loaded weight by its manifest name ("Conv1/kernel").
func (m *Model) Weight(name string) (Tensor, bool) {
	t, ok := m.weights[name]
	return t, ok
}
