//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// addSIMD offers the tile kernels this CPU can run. cpu.X86.HasAVX512F is
// only set when the OS also saves the zmm and mask registers.
func addSIMD() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		m := withScans(simdImpl("avx2", &setAVX2), vecAVX2)
		m.rows = vecAVX2
		addChecked(m)
	}
	if cpu.X86.HasAVX512F {
		m := simdImpl("avx512", &setAVX512)
		if cpu.X86.HasPOPCNT { // scan32AVX512 counts its hits with POPCNT
			withScans(m, vecAVX512)
		} else {
			withScans(m, vecAVX2)
		}
		m.rows = vecAVX512
		addChecked(m)
	}
}

func addChecked(m *impl) {
	if selfCheck(m) {
		usable = append(usable, m)
	} else {
		failed = append(failed, m.name)
	}
}
