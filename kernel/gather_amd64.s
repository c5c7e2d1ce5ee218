//go:build amd64 && !purego

#include "textflag.h"

// func dot32Pairs4(q *float32, qoff *int32, rows *float32, goff *int32, d int, out *float32)
//
// 64 exact float32 chains of Dot32Pairs (int16.go): lane l of chain c
// walks the dimension of query row qoff[16c+l] and gallery row goff[16c+l]
// in index order with one VFMADD231PS per step, acc = fma(q_k, g_k, acc)
// from +0: the bits of DotRow32. Both rows are read by gathers.
TEXT ·dot32Pairs4(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ qoff+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ goff+24(FP), BX
	MOVQ d+32(FP), CX
	VMOVDQU32 0(DX), Z8
	VMOVDQU32 0(BX), Z12
	VPXORD Z0, Z0, Z0
	VMOVDQU32 64(DX), Z9
	VMOVDQU32 64(BX), Z13
	VPXORD Z1, Z1, Z1
	VMOVDQU32 128(DX), Z10
	VMOVDQU32 128(BX), Z14
	VPXORD Z2, Z2, Z2
	VMOVDQU32 192(DX), Z11
	VMOVDQU32 192(BX), Z15
	VPXORD Z3, Z3, Z3
dot32Pairs4_loop:
	KXNORW K0, K0, K1
	VGATHERDPS (SI)(Z8*4), K1, Z16
	KXNORW K0, K0, K5
	VGATHERDPS (R8)(Z12*4), K5, Z20
	KXNORW K0, K0, K2
	VGATHERDPS (SI)(Z9*4), K2, Z17
	KXNORW K0, K0, K6
	VGATHERDPS (R8)(Z13*4), K6, Z21
	KXNORW K0, K0, K3
	VGATHERDPS (SI)(Z10*4), K3, Z18
	KXNORW K0, K0, K7
	VGATHERDPS (R8)(Z14*4), K7, Z22
	KXNORW K0, K0, K4
	VGATHERDPS (SI)(Z11*4), K4, Z19
	KXNORW K0, K0, K5
	VGATHERDPS (R8)(Z15*4), K5, Z23
	VFMADD231PS Z16, Z20, Z0
	VFMADD231PS Z17, Z21, Z1
	VFMADD231PS Z18, Z22, Z2
	VFMADD231PS Z19, Z23, Z3
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ dot32Pairs4_loop
	MOVQ out+40(FP), DI
	VMOVUPS Z0, 0(DI)
	VMOVUPS Z1, 64(DI)
	VMOVUPS Z2, 128(DI)
	VMOVUPS Z3, 192(DI)
	VZEROUPPER
	RET

// func dot32Pairs1(q *float32, qoff *int32, rows *float32, goff *int32, d int, out *float32)
//
// 16 exact float32 chains of Dot32Pairs (int16.go): lane l of chain c
// walks the dimension of query row qoff[16c+l] and gallery row goff[16c+l]
// in index order with one VFMADD231PS per step, acc = fma(q_k, g_k, acc)
// from +0: the bits of DotRow32. Both rows are read by gathers.
TEXT ·dot32Pairs1(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ qoff+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ goff+24(FP), BX
	MOVQ d+32(FP), CX
	VMOVDQU32 0(DX), Z8
	VMOVDQU32 0(BX), Z12
	VPXORD Z0, Z0, Z0
dot32Pairs1_loop:
	KXNORW K0, K0, K1
	VGATHERDPS (SI)(Z8*4), K1, Z16
	KXNORW K0, K0, K5
	VGATHERDPS (R8)(Z12*4), K5, Z20
	VFMADD231PS Z16, Z20, Z0
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ dot32Pairs1_loop
	MOVQ out+40(FP), DI
	VMOVUPS Z0, 0(DI)
	VZEROUPPER
	RET
