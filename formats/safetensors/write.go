package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Tensor is one tensor to write: Data holds its elements little-endian, in
// C order.
type Tensor struct {
	Name  string
	DType string // "F16", "BF16", "F32", "F64", "I32", ...
	Shape []int
	Data  []byte
}

// Write writes tensors and optional metadata as a safetensors file. As the
// reference implementation does, the data is laid out by decreasing element
// size (then name) and the header is padded with spaces to a multiple of 8
// bytes, so every tensor is naturally aligned in a mapped file.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	seen := make(map[string]bool, len(tensors))
	for _, t := range tensors {
		if t.Name == metadataKey {
			return fmt.Errorf("safetensors: tensor name %q is reserved", t.Name)
		}
		if seen[t.Name] {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		bits, ok := dtypeBits[t.DType]
		if !ok {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		size, err := byteSize(t.Shape, bits)
		if err != nil {
			return fmt.Errorf("safetensors: tensor %q: shape %s: %w", t.Name, shapeString(t.Shape), err)
		}
		if size != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %q: shape %s of %s needs %d bytes, got %d",
				t.Name, shapeString(t.Shape), t.DType, size, len(t.Data))
		}
	}
	order := slices.Clone(tensors)
	slices.SortStableFunc(order, func(a, b Tensor) int {
		if d := dtypeBits[b.DType] - dtypeBits[a.DType]; d != 0 {
			return d
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})

	var h bytes.Buffer
	h.WriteByte('{')
	if len(metadata) > 0 {
		writeJSONString(&h, metadataKey)
		h.WriteString(":{")
		keys := make([]string, 0, len(metadata))
		for k := range metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				h.WriteByte(',')
			}
			writeJSONString(&h, k)
			h.WriteByte(':')
			writeJSONString(&h, metadata[k])
		}
		h.WriteByte('}')
	}
	offset := 0
	for i, t := range order {
		if i > 0 || len(metadata) > 0 {
			h.WriteByte(',')
		}
		writeJSONString(&h, t.Name)
		h.WriteString(`:{"dtype":`)
		writeJSONString(&h, t.DType)
		h.WriteString(`,"shape":[`)
		for j, d := range t.Shape {
			if j > 0 {
				h.WriteByte(',')
			}
			h.WriteString(strconv.Itoa(d))
		}
		fmt.Fprintf(&h, `],"data_offsets":[%d,%d]}`, offset, offset+len(t.Data))
		offset += len(t.Data)
	}
	h.WriteByte('}')
	for h.Len()%8 != 0 {
		h.WriteByte(' ')
	}

	var prefix [8]byte
	binary.LittleEndian.PutUint64(prefix[:], uint64(h.Len()))
	if _, err := w.Write(prefix[:]); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := w.Write(h.Bytes()); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, t := range order {
		if _, err := w.Write(t.Data); err != nil {
			return fmt.Errorf("safetensors: %w", err)
		}
	}
	return nil
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc, _ := json.Marshal(s) // a string always marshals
	b.Write(enc)
}

// WriteMatrix writes m as the only tensor of a safetensors file: float16 as
// F16 (bits kept), float32 as F32, float64 as F64.
func WriteMatrix(w io.Writer, name string, m *matrix.Dense) error {
	if m == nil {
		return errors.New("safetensors: nil matrix")
	}
	t := Tensor{Name: name, Shape: []int{m.Rows(), m.Cols()}}
	switch m.DType() {
	case matrix.Float16:
		t.DType = "F16"
		bits := m.Float16Bits()
		t.Data = make([]byte, 0, 2*len(bits))
		for _, b := range bits {
			t.Data = binary.LittleEndian.AppendUint16(t.Data, b)
		}
	case matrix.Float32:
		t.DType = "F32"
		vals := m.Float32Data()
		t.Data = make([]byte, 0, 4*len(vals))
		for _, v := range vals {
			t.Data = binary.LittleEndian.AppendUint32(t.Data, math.Float32bits(v))
		}
	case matrix.Float64:
		t.DType = "F64"
		vals := m.Float64Data()
		t.Data = make([]byte, 0, 8*len(vals))
		for _, v := range vals {
			t.Data = binary.LittleEndian.AppendUint64(t.Data, math.Float64bits(v))
		}
	default:
		return fmt.Errorf("safetensors: unsupported matrix dtype %v", m.DType())
	}
	return Write(w, []Tensor{t}, nil)
}
