//go:build amd64 && !purego

#include "textflag.h"

// func absMaxSumSq32AVX512(x *float32, n int, mx *float32, ss *float64)
//
// Pass 1 of Quantise16's callers (int16.go) over n blocks of 16 values: the
// 16 lane maxima of |x_i| and 8 float64 partial sums of x_i² (two FMA
// chains per lane pair, added at the end).
TEXT ·absMaxSumSq32AVX512(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z3
absloop:
	VMOVUPS (SI), Z4
	VPANDD Z3, Z4, Z5
	VMAXPS Z5, Z0, Z0
	VCVTPS2PD Y4, Z6
	VEXTRACTF32X8 $1, Z4, Y7
	VCVTPS2PD Y7, Z7
	VFMADD231PD Z6, Z6, Z1
	VFMADD231PD Z7, Z7, Z2
	ADDQ $64, SI
	DECQ CX
	JNZ absloop
	MOVQ mx+16(FP), DI
	VMOVUPS Z0, (DI)
	VADDPD Z2, Z1, Z1
	MOVQ ss+24(FP), DI
	VMOVUPD Z1, (DI)
	VZEROUPPER
	RET

// func quant16AVX512(x *float32, n int, inv, sigma float64, q *int16, out *float64)
//
// Quantise16 (int16.go) over n blocks of 8 values, in float64 lanes:
// Q = round-to-even(x·inv), δ = x − σ·Q by one FMA (exact, screen.md §7.1),
// Q as int16 to q, and 8 lane sums of Q² (exact integers) and of δ² (FMA
// chains) to out[0:8] and out[8:16].
TEXT ·quant16AVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSD inv+16(FP), Z10
	VBROADCASTSD sigma+24(FP), Z11
	MOVQ q+32(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
qloop:
	VCVTPS2PD (SI), Z2
	VMULPD Z10, Z2, Z3
	VRNDSCALEPD $0, Z3, Z3
	VMOVAPD Z2, Z4
	VFNMADD231PD Z11, Z3, Z4
	VFMADD231PD Z3, Z3, Z0
	VFMADD231PD Z4, Z4, Z1
	VCVTPD2DQ Z3, Y5
	VPMOVDW Y5, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	DECQ CX
	JNZ qloop
	MOVQ out+40(FP), DX
	VMOVUPD Z0, (DX)
	VMOVUPD Z1, 64(DX)
	VZEROUPPER
	RET
