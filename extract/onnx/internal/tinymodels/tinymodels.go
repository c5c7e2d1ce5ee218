package tinymodels

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Dim is the hidden and embedding width of every tiny model.
const Dim = 4

// Image geometry shared by the vision models: pixel_values is
// [batch, Channels, ImageSize, ImageSize].
const (
	Channels  = 3
	ImageSize = 8
	// PixelCount is the length of one flattened CHW image.
	PixelCount = Channels * ImageSize * ImageSize
)

// matrix returns a rows×cols matrix filled by f.
func matrix(rows, cols int, f func(r, c int) float32) [][]float32 {
	m := make([][]float32, rows)
	for r := range m {
		m[r] = make([]float32, cols)
		for c := range m[r] {
			m[r][c] = f(r, c)
		}
	}
	return m
}

// flat returns the row-major concatenation of m.
func flat(m [][]float32) []float32 {
	var out []float32
	for _, row := range m {
		out = append(out, row...)
	}
	return out
}

// project returns v @ w in float64.
func project(v []float64, w [][]float32) []float64 {
	out := make([]float64, len(w[0]))
	for i, x := range v {
		for j, y := range w[i] {
			out[j] += x * float64(y)
		}
	}
	return out
}

// projectPixels returns pixels @ w in float64 for a flattened image.
func projectPixels(pixels []float32, w [][]float32) []float64 {
	if len(pixels) != len(w) {
		panic(fmt.Sprintf("tinymodels: image has %d values, want %d", len(pixels), len(w)))
	}
	v := make([]float64, len(pixels))
	for i, p := range pixels {
		v[i] = float64(p)
	}
	return project(v, w)
}

func row64(r []float32) []float64 {
	out := make([]float64, len(r))
	for i, x := range r {
		out[i] = float64(x)
	}
	return out
}

// orderedObject is a JSON object whose keys keep their insertion order.
type orderedObject struct {
	keys   []string
	values map[string]any
}

func newObject() *orderedObject { return &orderedObject{values: map[string]any{}} }

func (o *orderedObject) set(key string, value any) *orderedObject {
	if _, ok := o.values[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.values[key] = value
	return o
}

// obj builds an ordered object from alternating keys and values.
func obj(kv ...any) *orderedObject {
	o := newObject()
	for i := 0; i < len(kv); i += 2 {
		o.set(kv[i].(string), kv[i+1])
	}
	return o
}

// MarshalJSON implements json.Marshaler.
func (o *orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshalNoEscape(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalNoEscape(o.values[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// jsonFile renders v as indented JSON with a trailing newline and without
// HTML escaping (so "<|endoftext|>" stays readable).
func jsonFile(v any) []byte {
	raw, err := marshalNoEscape(v)
	if err != nil {
		panic(err)
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		panic(err)
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// words splits a fixed caption on single spaces.
func words(s string) []string { return strings.Split(s, " ") }
