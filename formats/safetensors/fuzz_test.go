package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

func FuzzDecode(f *testing.F) {
	seed := func(tensors []Tensor, meta map[string]string) {
		var buf bytes.Buffer
		if err := Write(&buf, tensors, meta); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	m32, _ := matrix.NewDense32(2, 2, []float32{1, 2, 3, 4})
	var buf bytes.Buffer
	if err := WriteMatrix(&buf, "emb", m32); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	seed([]Tensor{
		{Name: "q", DType: "F16", Shape: []int{1, 2}, Data: le16(0x3c00, 0xc000)},
		{Name: "g", DType: "BF16", Shape: []int{2, 1}, Data: le16(0x3f80, 0x4000)},
		{Name: "d", DType: "F64", Shape: []int{1, 1}, Data: binary.LittleEndian.AppendUint64(nil, math.Float64bits(1))},
		{Name: "i", DType: "I32", Shape: []int{3}, Data: make([]byte, 12)},
		{Name: "z", DType: "F32", Shape: []int{0, 5}},
	}, map[string]string{"format": "pt"})
	f.Add(rawFile(`{"t":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}} `, make([]byte, 8)))
	f.Add(rawFile(`{}`, nil))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode("fuzz.safetensors", data)
		if err != nil {
			return
		}
		for _, name := range append(file.Names(), "", "missing") {
			m, err := file.Matrix(name)
			if err != nil {
				continue
			}
			// Touch every element so a bad view or size shows up here.
			row := make([]float64, m.Cols())
			for r := 0; r < m.Rows(); r++ {
				m.RowFloat64(r, row)
			}
		}
		if err := file.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
