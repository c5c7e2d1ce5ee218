//go:build cgo

package onnx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/x448/float16"
	ort "github.com/yalue/onnxruntime_go"
)

// The ONNX Runtime environment is process-wide: one library, loaded once.
var env struct {
	sync.Mutex
	path, version string
}

// LoadRuntime loads the ONNX Runtime library (see ResolveLibrary) once per
// process and returns its version. Asking for a different library after one
// is loaded is an error.
func LoadRuntime(library string) (version string, err error) {
	path, err := ResolveLibrary(library)
	if err != nil {
		return "", err
	}
	env.Lock()
	defer env.Unlock()
	if env.path != "" {
		if sameFile(env.path, path) {
			return env.version, nil
		}
		return "", fmt.Errorf("ONNX Runtime is already loaded from %s; one process can load only one library (requested %s)", env.path, path)
	}
	ort.SetSharedLibraryPath(path)
	if err := ort.InitializeEnvironment(ort.WithLogLevelError()); err != nil {
		return "", fmt.Errorf("loading ONNX Runtime library %s: %w", path, err)
	}
	env.path, env.version = path, ort.GetVersion()
	return env.version, nil
}

func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// Session is one loaded ONNX model. Run may be called concurrently.
type Session struct {
	name            string // file path or caller-given name, for errors
	inputs, outputs []TensorInfo
	mu              sync.Mutex
	sessions        map[string]*ort.DynamicAdvancedSession // by output name
	options         *ort.SessionOptions
	model           []byte // for sessions opened from bytes
	path            string
	version         string
}

// OpenSession loads the model file at path.
func OpenSession(ctx context.Context, path string, rt Runtime) (*Session, error) {
	return openSession(ctx, path, nil, rt)
}

// OpenSessionBytes loads a model held in memory; name labels errors.
func OpenSessionBytes(ctx context.Context, name string, model []byte, rt Runtime) (*Session, error) {
	return openSession(ctx, name, model, rt)
}

func openSession(ctx context.Context, name string, model []byte, rt Runtime) (*Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := rt.validate(); err != nil {
		return nil, err
	}
	version, err := LoadRuntime(rt.Library)
	if err != nil {
		return nil, err
	}
	s := &Session{name: name, model: model, version: version, sessions: map[string]*ort.DynamicAdvancedSession{}}
	if model == nil {
		s.path = name
		if _, err := os.Stat(name); err != nil {
			return nil, fmt.Errorf("ONNX model %s: %w", name, err)
		}
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("ONNX Runtime session options: %w", err)
	}
	s.options = opts
	if rt.IntraOpThreads > 0 {
		if err := opts.SetIntraOpNumThreads(rt.IntraOpThreads); err != nil {
			s.Close()
			return nil, fmt.Errorf("intra_op_threads: %w", err)
		}
	}
	if rt.provider() == "cuda" {
		cuda, err := ort.NewCUDAProviderOptions()
		if err == nil {
			err = opts.AppendExecutionProviderCUDA(cuda)
			cuda.Destroy()
		}
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("execution_provider cuda: this ONNX Runtime library (%s) cannot use CUDA: %w", env.path, err)
		}
	}
	ins, outs, err := inputOutputInfo(name, model)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("ONNX model %s: %w", name, err)
	}
	if s.inputs, err = convertInfos(ins); err == nil {
		s.outputs, err = convertInfos(outs)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("ONNX model %s: %w", name, err)
	}
	return s, nil
}

// inputOutputInfo reads a model's signature through a throw-away session
// without graph optimisation, so that a large model is not optimised twice.
func inputOutputInfo(path string, model []byte) ([]ort.InputOutputInfo, []ort.InputOutputInfo, error) {
	if model != nil {
		return ort.GetInputOutputInfoWithONNXData(model)
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, nil, err
	}
	defer opts.Destroy()
	if err := opts.SetGraphOptimizationLevel(ort.GraphOptimizationLevelDisableAll); err != nil {
		return nil, nil, err
	}
	return ort.GetInputOutputInfoWithOptions(path, opts)
}

func convertInfos(in []ort.InputOutputInfo) ([]TensorInfo, error) {
	out := make([]TensorInfo, len(in))
	for i, t := range in {
		if t.OrtValueType != ort.ONNXTypeTensor {
			return nil, fmt.Errorf("%s is a %s, not a tensor", t.Name, t.OrtValueType)
		}
		out[i] = TensorInfo{Name: t.Name, Type: elemName(t.DataType), Shape: append([]int64(nil), t.Dimensions...)}
	}
	return out, nil
}

func elemName(t ort.TensorElementDataType) string {
	switch t {
	case ort.TensorElementDataTypeFloat:
		return "float32"
	case ort.TensorElementDataTypeFloat16:
		return "float16"
	case ort.TensorElementDataTypeDouble:
		return "float64"
	case ort.TensorElementDataTypeInt64:
		return "int64"
	case ort.TensorElementDataTypeInt32:
		return "int32"
	}
	return t.String()
}

// Inputs lists the model's inputs.
func (s *Session) Inputs() []TensorInfo { return s.inputs }

// Outputs lists the model's outputs.
func (s *Session) Outputs() []TensorInfo { return s.outputs }

// RuntimeVersion is the loaded ONNX Runtime's version.
func (s *Session) RuntimeVersion() string { return s.version }

// Close releases the runtime sessions.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for k, x := range s.sessions {
		errs = append(errs, x.Destroy())
		delete(s.sessions, k)
	}
	if s.options != nil {
		errs = append(errs, s.options.Destroy())
		s.options = nil
	}
	return errors.Join(errs...)
}

// session returns the runtime session computing output from every input,
// creating it on first use (a dynamic session fixes its output names).
func (s *Session) session(output string) (*ort.DynamicAdvancedSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.sessions[output]; ok {
		return x, nil
	}
	if s.options == nil {
		return nil, fmt.Errorf("ONNX model %s: session is closed", s.name)
	}
	in := make([]string, len(s.inputs))
	for i, t := range s.inputs {
		in[i] = t.Name
	}
	var x *ort.DynamicAdvancedSession
	var err error
	if s.model != nil {
		x, err = ort.NewDynamicAdvancedSessionWithONNXData(s.model, in, []string{output}, s.options)
	} else {
		x, err = ort.NewDynamicAdvancedSession(s.path, in, []string{output}, s.options)
	}
	if err != nil {
		return nil, fmt.Errorf("ONNX model %s: %w", s.name, err)
	}
	s.sessions[output] = x
	return x, nil
}

// Run feeds every model input (each exactly once) and returns one output.
// Cancelling ctx terminates a running inference.
func (s *Session) Run(ctx context.Context, feeds []Feed, output string) (Output, error) {
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	if _, ok := findInfo(s.outputs, output); !ok {
		return Output{}, fmt.Errorf("ONNX model %s has no output %q (outputs: %s)", s.name, output, names(s.outputs))
	}
	x, err := s.session(output)
	if err != nil {
		return Output{}, err
	}
	values := make([]ort.Value, len(s.inputs))
	defer func() {
		for _, v := range values {
			if v != nil {
				v.Destroy()
			}
		}
	}()
	for _, f := range feeds {
		i := -1
		for j, t := range s.inputs {
			if t.Name == f.Name {
				i = j
			}
		}
		if i < 0 {
			return Output{}, fmt.Errorf("ONNX model %s has no input %q (inputs: %s)", s.name, f.Name, names(s.inputs))
		}
		if values[i] != nil {
			return Output{}, fmt.Errorf("ONNX model %s: input %q fed twice", s.name, f.Name)
		}
		if values[i], err = makeValue(s.inputs[i], f); err != nil {
			return Output{}, fmt.Errorf("ONNX model %s: input %s: %w", s.name, f.Name, err)
		}
	}
	for i, v := range values {
		if v == nil {
			return Output{}, fmt.Errorf("ONNX model %s: input %s was not fed", s.name, s.inputs[i])
		}
	}
	ro, err := ort.NewRunOptions()
	if err != nil {
		return Output{}, fmt.Errorf("ONNX Runtime run options: %w", err)
	}
	defer ro.Destroy()
	info, _ := findInfo(s.outputs, output)
	outs := []ort.Value{nil} // nil: allocated by the runtime
	if info.Type == "float16" {
		// onnxruntime_go copies too few bytes when it allocates a float16
		// output itself, so its buffer is allocated here.
		if outs[0], err = float16Output(info, feeds); err != nil {
			return Output{}, fmt.Errorf("ONNX model %s: %w", s.name, err)
		}
	}
	preallocated := outs[0] != nil
	stop := context.AfterFunc(ctx, func() { ro.Terminate() })
	runErr := x.RunWithOptions(values, outs, ro)
	stop()
	// A failed run can leave a typed nil pointer in a runtime-allocated slot.
	if preallocated || runErr == nil {
		defer outs[0].Destroy()
	}
	if err := ctx.Err(); err != nil {
		return Output{}, err
	}
	if runErr != nil {
		return Output{}, fmt.Errorf("ONNX model %s: %w", s.name, runErr)
	}
	data, err := float32Data(outs[0])
	if err != nil {
		return Output{}, fmt.Errorf("ONNX model %s: output %s: %w", s.name, output, err)
	}
	return Output{Name: output, Shape: append([]int64(nil), outs[0].GetShape()...), Data: data}, nil
}

func makeValue(info TensorInfo, f Feed) (ort.Value, error) {
	shape := ort.NewShape(f.Shape...)
	if err := checkShape(info.Shape, f.Shape); err != nil {
		return nil, err
	}
	switch {
	case f.Float32 != nil && info.Type == "float32":
		return value(ort.NewTensor(shape, f.Float32))
	case f.Float32 != nil && info.Type == "float16":
		raw := make([]byte, 2*len(f.Float32))
		for i, v := range f.Float32 {
			binary.LittleEndian.PutUint16(raw[2*i:], float16.Fromfloat32(v).Bits())
		}
		return value(ort.NewCustomDataTensor(shape, raw, ort.TensorElementDataTypeFloat16))
	case f.Int64 != nil && info.Type == "int64":
		return value(ort.NewTensor(shape, f.Int64))
	case f.Int64 != nil && info.Type == "int32":
		v := make([]int32, len(f.Int64))
		for i, x := range f.Int64 {
			v[i] = int32(x)
		}
		return value(ort.NewTensor(shape, v))
	}
	kind := "float"
	if f.Int64 != nil {
		kind = "integer"
	}
	return nil, fmt.Errorf("the model declares %s; vertebrae feeds %s values here", info, kind)
}

// float16Output allocates a float16 output tensor. Its dynamic dimensions
// are resolved from the feeds: the first is the batch (every feed's first
// dimension), the second, of a 3-D output, the sequence length of a 2-D
// integer feed.
func float16Output(info TensorInfo, feeds []Feed) (ort.Value, error) {
	shape := append([]int64(nil), info.Shape...)
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			switch {
			case i == 0 && len(feeds) > 0 && len(feeds[0].Shape) > 0:
				d = feeds[0].Shape[0]
			case i == 1 && len(shape) == 3:
				for _, f := range feeds {
					if f.Int64 != nil && len(f.Shape) == 2 {
						d = f.Shape[1]
					}
				}
			}
			if d < 0 {
				return nil, fmt.Errorf("float16 output %s: cannot infer its dimension %d", info, i)
			}
			shape[i] = d
		}
		n *= d
	}
	return value(ort.NewCustomDataTensor(ort.NewShape(shape...), make([]byte, 2*n), ort.TensorElementDataTypeFloat16))
}

// value converts a constructor's result to an ort.Value, keeping a failed
// constructor's typed nil pointer out of the interface (where it would look
// like a value to destroy).
func value[T ort.Value](v T, err error) (ort.Value, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}

// checkShape compares a feed's shape with the declared one (-1 = any).
func checkShape(declared, got []int64) error {
	if len(declared) != len(got) {
		return fmt.Errorf("shape %v does not match the declared rank %d (%v)", got, len(declared), declared)
	}
	for i, d := range declared {
		if d >= 0 && d != got[i] {
			return fmt.Errorf("shape %v does not match the declared shape %v (dimension %d)", got, declared, i)
		}
	}
	return nil
}

func float32Data(v ort.Value) ([]float32, error) {
	switch t := v.(type) {
	case *ort.Tensor[float32]:
		return append([]float32(nil), t.GetData()...), nil
	case *ort.Tensor[float64]:
		d := t.GetData()
		out := make([]float32, len(d))
		for i, x := range d {
			out[i] = float32(x)
		}
		return out, nil
	case *ort.CustomDataTensor:
		if t.DataType() == ort.TensorElementDataTypeFloat16 {
			raw := t.GetData()
			out := make([]float32, len(raw)/2)
			for i := range out {
				out[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("output is not a float tensor")
}

// Compiled reports whether this build includes the ONNX Runtime adapters.
const Compiled = true
