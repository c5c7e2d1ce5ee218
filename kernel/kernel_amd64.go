//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// addSIMD offers the tile kernels this CPU can run. cpu.X86.HasAVX512F is
// only set when the OS also saves the zmm and mask registers.
func addSIMD() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		m := scanAVX2.withScans(simdImpl("avx2", &setAVX2))
		m.rows = &rowsAVX2
		addChecked(m)
	}
	if cpu.X86.HasAVX512F {
		m := simdImpl("avx512", &setAVX512)
		if cpu.X86.HasPOPCNT { // scan32AVX512 counts its hits with POPCNT
			scanAVX512.withScans(m)
		} else {
			scanAVX2.withScans(m)
		}
		m.rows = &rowsAVX512
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
