//go:build amd64 && !purego

#include "textflag.h"

// func dot32Gather4(q *float32, rows *float32, d int, off *int32, out *float32)
//
// 64 exact float32 chains of Dot32Gather (int16.go): lane l of chain c
// walks the dimension of row off[16c+l] in index order with one
// VFMADD231PS per step, acc = fma(q_k, g_k, acc) from +0: the bits of
// DotRow32. The rows are gathered (VGATHERDPS) straight from g.
TEXT ·dot32Gather4(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), R8
	MOVQ d+16(FP), CX
	MOVQ off+24(FP), DX
	VMOVDQU32 0(DX), Z8
	VPXORD Z0, Z0, Z0
	VMOVDQU32 64(DX), Z9
	VPXORD Z1, Z1, Z1
	VMOVDQU32 128(DX), Z10
	VPXORD Z2, Z2, Z2
	VMOVDQU32 192(DX), Z11
	VPXORD Z3, Z3, Z3
dot32Gather4_loop:
	VBROADCASTSS (SI), Z16
	KXNORW K0, K0, K1
	VGATHERDPS (R8)(Z8*4), K1, Z20
	KXNORW K0, K0, K2
	VGATHERDPS (R8)(Z9*4), K2, Z21
	KXNORW K0, K0, K3
	VGATHERDPS (R8)(Z10*4), K3, Z22
	KXNORW K0, K0, K4
	VGATHERDPS (R8)(Z11*4), K4, Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z16, Z21, Z1
	VFMADD231PS Z16, Z22, Z2
	VFMADD231PS Z16, Z23, Z3
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ dot32Gather4_loop
	MOVQ out+32(FP), DI
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VZEROUPPER
	RET

// func dot32Gather1(q *float32, rows *float32, d int, off *int32, out *float32)
//
// 16 exact float32 chains of Dot32Gather (int16.go): lane l of chain c
// walks the dimension of row off[16c+l] in index order with one
// VFMADD231PS per step, acc = fma(q_k, g_k, acc) from +0: the bits of
// DotRow32. The rows are gathered (VGATHERDPS) straight from g.
TEXT ·dot32Gather1(SB), NOSPLIT, $0-40
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), R8
	MOVQ d+16(FP), CX
	MOVQ off+24(FP), DX
	VMOVDQU32 0(DX), Z8
	VPXORD Z0, Z0, Z0
dot32Gather1_loop:
	VBROADCASTSS (SI), Z16
	KXNORW K0, K0, K1
	VGATHERDPS (R8)(Z8*4), K1, Z20
	VFMADD231PS Z16, Z20, Z0
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ dot32Gather1_loop
	MOVQ out+32(FP), DI
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET
