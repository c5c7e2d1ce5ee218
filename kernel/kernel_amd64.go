//go:build amd64 && !purego

package kernel

import "golang.org/x/sys/cpu"

// addSIMD offers the tile kernels this CPU can run. cpu.X86.HasAVX512F is
// only set when the OS also saves the zmm and mask registers.
func addSIMD() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		addChecked(simdImpl("avx2", &setAVX2))
	}
	if cpu.X86.HasAVX512F {
		m := simdImpl("avx512", &setAVX512)
		if cpu.X86.HasPOPCNT {
			m.maxFinite32, m.scan32 = maxFinite32AVX512Go, scan32AVX512Go
		}
		m.convertNorm64 = convertNorm64AVX512Go
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
