package artifact

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// hostLittleEndian lets the readers copy file bytes straight into element
// slices: .npy data is little-endian, as is every common host.
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func asBytes[T uint16 | float32 | float64](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

func putLE16(dst []uint16, b []byte) {
	if hostLittleEndian {
		copy(asBytes(dst), b)
		return
	}
	for i := range dst {
		dst[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
}

func putLE32(dst []float32, b []byte) {
	if hostLittleEndian {
		copy(asBytes(dst), b)
		return
	}
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
}

func putLE64(dst []float64, b []byte) {
	if hostLittleEndian {
		copy(asBytes(dst), b)
		return
	}
	for i := range dst {
		dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
}
