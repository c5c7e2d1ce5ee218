//go:build amd64 && !purego

#include "textflag.h"

// func dotInt16AVX2(qa, ga *int32, np int, qs, gs, dst *float32, ldo int)
//
// The 12 × 32 tile of DotInt16 (int16.go) with AVX2 only, on the packed
// layouts of dotInt16VNNI (int16_amd64.s). 16 ymm registers hold 12
// int32 accumulators, so the tile runs as four passes over the np pairs,
// each 6 queries × 16 gallery lanes: queries 0–5 against group A, then
// group B, then queries 6–11 against A and B. In a pass Y(2i) and Y(2i+1)
// hold query i against lanes 0–7 and 8–15; Y12, Y13 the group's 16 lanes
// of pair p, Y14 the broadcast pair of the query, Y15 the products.
// VPMADDWD multiplies the two int16 halves of each lane and adds the two
// products into one int32 (wrapping: only −32768·−32768 twice overflows,
// to −2³¹), and VPADDD adds that to the accumulator, wrapping: the sums of
// DotInt16Row in another order, which are equal (addition modulo 2³²).
// The loop takes two pairs per iteration after one single pair when np is
// odd. The epilogue of each pass is ScaleInt16: VCVTDQ2PS, then × σ_g
// (per lane), then × σ_q (broadcast), each rounded to float32 under the
// default MXCSR (round to nearest even); no FMA, no AVX-512 or AVX-VNNI
// instruction. np ≥ 1 (dotInt16Tile).
TEXT ·dotInt16AVX2(SB), NOSPLIT, $0-56
	MOVQ qa+0(FP), SI // queries of the pass (0–5, then 6–11)
	MOVQ ga+8(FP), R8 // gallery group of the pass (A, then B)
	MOVQ np+16(FP), CX
	MOVQ qs+24(FP), BX // σ_q of the pass's queries
	MOVQ gs+32(FP), DX // σ_g of the pass's group
	MOVQ dst+40(FP), DI // first score of the pass
	MOVQ ldo+48(FP), R10
	SHLQ $2, R10 // row stride in bytes
	MOVQ CX, R9
	SHLQ $6, R9 // one group: np pairs × 16 lanes × 4 bytes
	MOVQ $4, R11 // passes left
pass:
	MOVQ SI, AX // query cursor: 12 pairs (48 bytes) per step
	MOVQ R8, R12 // gallery cursor: 16 pairs (64 bytes) per step
	LEAQ (R8)(R9*1), R13 // end of the group
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8
	VPXOR Y9, Y9, Y9
	VPXOR Y10, Y10, Y10
	VPXOR Y11, Y11, Y11
	TESTQ $1, CX
	JZ pairs
	VMOVDQU 0(R12), Y12
	VMOVDQU 32(R12), Y13
	VPBROADCASTD 0(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y0, Y0
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y1, Y1
	VPBROADCASTD 4(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y2, Y2
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y3, Y3
	VPBROADCASTD 8(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y4, Y4
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y5, Y5
	VPBROADCASTD 12(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y6, Y6
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y7, Y7
	VPBROADCASTD 16(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y8, Y8
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y9, Y9
	VPBROADCASTD 20(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y10, Y10
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y11, Y11
	ADDQ $48, AX
	ADDQ $64, R12
	CMPQ R12, R13
	JEQ scale
pairs:
	VMOVDQU 0(R12), Y12
	VMOVDQU 32(R12), Y13
	VPBROADCASTD 0(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y0, Y0
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y1, Y1
	VPBROADCASTD 4(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y2, Y2
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y3, Y3
	VPBROADCASTD 8(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y4, Y4
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y5, Y5
	VPBROADCASTD 12(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y6, Y6
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y7, Y7
	VPBROADCASTD 16(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y8, Y8
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y9, Y9
	VPBROADCASTD 20(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y10, Y10
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y11, Y11
	VMOVDQU 64(R12), Y12
	VMOVDQU 96(R12), Y13
	VPBROADCASTD 48(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y0, Y0
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y1, Y1
	VPBROADCASTD 52(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y2, Y2
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y3, Y3
	VPBROADCASTD 56(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y4, Y4
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y5, Y5
	VPBROADCASTD 60(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y6, Y6
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y7, Y7
	VPBROADCASTD 64(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y8, Y8
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y9, Y9
	VPBROADCASTD 68(AX), Y14
	VPMADDWD Y14, Y12, Y15
	VPADDD Y15, Y10, Y10
	VPMADDWD Y14, Y13, Y15
	VPADDD Y15, Y11, Y11
	ADDQ $96, AX
	ADDQ $128, R12
	CMPQ R12, R13
	JNE pairs
scale:
	VMOVUPS (DX), Y12
	VMOVUPS 32(DX), Y13
	MOVQ DI, AX
	VBROADCASTSS 0(BX), Y14
	VCVTDQ2PS Y0, Y0
	VMULPS Y12, Y0, Y0
	VMULPS Y14, Y0, Y0
	VCVTDQ2PS Y1, Y1
	VMULPS Y13, Y1, Y1
	VMULPS Y14, Y1, Y1
	VMOVUPS Y0, (AX)
	VMOVUPS Y1, 32(AX)
	ADDQ R10, AX
	VBROADCASTSS 4(BX), Y14
	VCVTDQ2PS Y2, Y2
	VMULPS Y12, Y2, Y2
	VMULPS Y14, Y2, Y2
	VCVTDQ2PS Y3, Y3
	VMULPS Y13, Y3, Y3
	VMULPS Y14, Y3, Y3
	VMOVUPS Y2, (AX)
	VMOVUPS Y3, 32(AX)
	ADDQ R10, AX
	VBROADCASTSS 8(BX), Y14
	VCVTDQ2PS Y4, Y4
	VMULPS Y12, Y4, Y4
	VMULPS Y14, Y4, Y4
	VCVTDQ2PS Y5, Y5
	VMULPS Y13, Y5, Y5
	VMULPS Y14, Y5, Y5
	VMOVUPS Y4, (AX)
	VMOVUPS Y5, 32(AX)
	ADDQ R10, AX
	VBROADCASTSS 12(BX), Y14
	VCVTDQ2PS Y6, Y6
	VMULPS Y12, Y6, Y6
	VMULPS Y14, Y6, Y6
	VCVTDQ2PS Y7, Y7
	VMULPS Y13, Y7, Y7
	VMULPS Y14, Y7, Y7
	VMOVUPS Y6, (AX)
	VMOVUPS Y7, 32(AX)
	ADDQ R10, AX
	VBROADCASTSS 16(BX), Y14
	VCVTDQ2PS Y8, Y8
	VMULPS Y12, Y8, Y8
	VMULPS Y14, Y8, Y8
	VCVTDQ2PS Y9, Y9
	VMULPS Y13, Y9, Y9
	VMULPS Y14, Y9, Y9
	VMOVUPS Y8, (AX)
	VMOVUPS Y9, 32(AX)
	ADDQ R10, AX
	VBROADCASTSS 20(BX), Y14
	VCVTDQ2PS Y10, Y10
	VMULPS Y12, Y10, Y10
	VMULPS Y14, Y10, Y10
	VCVTDQ2PS Y11, Y11
	VMULPS Y13, Y11, Y11
	VMULPS Y14, Y11, Y11
	VMOVUPS Y10, (AX)
	VMOVUPS Y11, 32(AX)
	ADDQ R10, AX
	DECQ R11
	JZ done
	TESTQ $1, R11
	JZ nexthalf // R11 even: queries 0–5 are done
	// from group A to group B: its lanes, scales and columns 16–31
	ADDQ R9, R8
	ADDQ $64, DX
	ADDQ $64, DI
	JMP pass
nexthalf:
	// to queries 6–11 and back to group A: columns 0–15 of rows 6–11
	SUBQ R9, R8
	SUBQ $64, DX
	SUBQ $64, DI
	LEAQ (R10)(R10*2), R12
	LEAQ (DI)(R12*2), DI
	ADDQ $24, SI
	ADDQ $24, BX
	JMP pass
done:
	VZEROUPPER
	RET
