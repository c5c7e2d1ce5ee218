//go:build !amd64 || purego

package kernel

// No implementation carries vector row loops here (impl.rows is noVec).

func div32to64Vec(vecISA, *float32, int, float64, *float64) { panic("unreachable") }

func div64Vec(vecISA, *float64, int, float64, *float64) { panic("unreachable") }

func div32to32Vec(vecISA, *float32, int, float64, *float32) { panic("unreachable") }

func maxAbs32Vec(vecISA, *float32, int, *float32) { panic("unreachable") }

func maxAbs64Vec(vecISA, *float64, int, *float64) { panic("unreachable") }
