//go:build amd64 && !purego

#include "textflag.h"

// The two passes of Quantise16's callers (int16.go) with AVX2 + FMA (VEX
// encoding only), for CPUs without AVX-512 (or with it turned off). Each
// reproduces its AVX-512 form in quant_amd64.s bit for bit: the 8 float64
// lanes of a zmm are held as two ymm (lanes 0–3 and 4–7), every lane sees
// the same elements in the same order through the same operations
// (VCVTPS2PD, VMULPD, round to nearest even, one FMA per term), and the
// outputs have the same layout, so the Go wrappers combine them alike.

// func absMaxSumSq32AVX2(x *float32, n int, mx *float32, ss *float64)
//
// absMaxSumSq32AVX512 over n ≥ 1 blocks of 16 values: mx[l] = max over
// blocks of |x_{16b+l}| (float32, l = 0…15) and ss[l] (l = 0…7) = c_l +
// c_{l+8}, where c_l is the FMA chain Σ_b x_{16b+l}² in float64 (started at
// +0). Y1, Y2 hold c_0…c_7 (the low half of the zmm Z1), Y3, Y4 c_8…c_15
// (Z2); Y12, Y13 the maxima (Z0), taken with the operand order of VMAXPS
// Z5, Z0, Z0.
TEXT ·absMaxSumSq32AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VPCMPEQD Y15, Y15, Y15
	VPSRLD $1, Y15, Y15 // 0x7fffffff: |x| as a mask
absloop:
	VANDPS (SI), Y15, Y5
	VANDPS 32(SI), Y15, Y6
	VMAXPS Y5, Y12, Y12
	VMAXPS Y6, Y13, Y13
	VCVTPS2PD (SI), Y7
	VCVTPS2PD 16(SI), Y8
	VCVTPS2PD 32(SI), Y9
	VCVTPS2PD 48(SI), Y10
	VFMADD231PD Y7, Y7, Y1
	VFMADD231PD Y8, Y8, Y2
	VFMADD231PD Y9, Y9, Y3
	VFMADD231PD Y10, Y10, Y4
	ADDQ $64, SI
	DECQ CX
	JNZ absloop
	MOVQ mx+16(FP), DI
	VMOVUPS Y12, (DI)
	VMOVUPS Y13, 32(DI)
	VADDPD Y3, Y1, Y1 // VADDPD Z2, Z1, Z1
	VADDPD Y4, Y2, Y2
	MOVQ ss+24(FP), DI
	VMOVUPD Y1, (DI)
	VMOVUPD Y2, 32(DI)
	VZEROUPPER
	RET

// func quant16AVX2(x *float32, n int, inv, sigma float64, q *int16, out *float64)
//
// quant16AVX512 over n ≥ 1 blocks of 8 values: for lane l = 0…7 of block
// b, f = float64(x_{8b+l}), Q = round-to-even(f·inv) (VMULPD, then
// VROUNDPD $0), δ = f − σ·Q by one FMA (VFNMADD231PD: −(Q·σ) + f, the
// math.FMA(−σ, Q, f) of quantise16Generic), q_{8b+l} = the low 16 bits of
// the int32 conversion of Q (VCVTPD2DQ, as VPMOVDW keeps them: no
// saturation), and the FMA chains out[l] = Σ_b Q², out[8+l] = Σ_b δ² from
// +0. Y0, Y1 hold the Q² chains of lanes 0–3, 4–7 (Z0), Y8, Y9 the δ²
// chains (Z1). The int16 words are the low halves of the int32 lanes,
// kept by VPAND with 0x0000ffff so that VPACKUSDW (unsigned saturation,
// here of values 0…65535) packs them unchanged.
TEXT ·quant16AVX2(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD inv+16(FP), Y10
	VBROADCASTSD sigma+24(FP), Y11
	MOVQ q+32(FP), DI
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VPCMPEQD X14, X14, X14
	VPSRLD $16, X14, X14 // 0x0000ffff: the low word of each int32
qloop:
	VCVTPS2PD (SI), Y2
	VCVTPS2PD 16(SI), Y3
	VMULPD Y10, Y2, Y4
	VMULPD Y10, Y3, Y5
	VROUNDPD $0, Y4, Y4
	VROUNDPD $0, Y5, Y5
	VFNMADD231PD Y11, Y4, Y2
	VFNMADD231PD Y11, Y5, Y3
	VFMADD231PD Y4, Y4, Y0
	VFMADD231PD Y5, Y5, Y1
	VFMADD231PD Y2, Y2, Y8
	VFMADD231PD Y3, Y3, Y9
	VCVTPD2DQY Y4, X6
	VCVTPD2DQY Y5, X7
	VPAND X14, X6, X6
	VPAND X14, X7, X7
	VPACKUSDW X7, X6, X6
	VMOVDQU X6, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ qloop
	MOVQ out+40(FP), DX
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	VMOVUPD Y8, 64(DX)
	VMOVUPD Y9, 96(DX)
	VZEROUPPER
	RET
