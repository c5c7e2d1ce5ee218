//go:build amd64 && !purego

#include "textflag.h"

// Exact float32 chains of Dot32Pairs (int16.go) with AVX2 and FMA: lane l
// of a ymm accumulator is one pair's chain, acc = fma(q_k, g_k, acc) for
// k = 0, 1, …, d−1 in order from +0, the bits of DotRow32. A call runs
// 1–4 groups of 8 pairs (groups ≤ 4), one accumulator each (Y10–Y13), so
// up to four independent chains are in flight. Per block of 8 dimensions
// a group's 8 row chunks are transposed in registers: rows j and j+4 share
// a ymm (a 32-byte load and a 16-byte VINSERTF128, both inside the
// block), and one in-lane 4×4 transpose (TR4) per half gives the 8
// dimension vectors. The last d mod 8 dimensions are gathered one at a
// time (VGATHERDPS), so no load reaches past a row and no FMA runs on a
// padded dimension (fma(0, 0, −0) = +0 would change a −0 chain).

// LOADLO loads dims 0–3 of the rows at element offsets offs[0..7] from
// base: r_j = [row_j 0–3 | row_j+4 0–3].
#define LOADLO(base, offs, r0, r1, r2, r3) \
	MOVLQSX 0(offs), R11; MOVLQSX 16(offs), R12; \
	VMOVUPS (base)(R11*4), r0; VINSERTF128 $1, (base)(R12*4), r0, r0; \
	MOVLQSX 4(offs), R11; MOVLQSX 20(offs), R12; \
	VMOVUPS (base)(R11*4), r1; VINSERTF128 $1, (base)(R12*4), r1, r1; \
	MOVLQSX 8(offs), R11; MOVLQSX 24(offs), R12; \
	VMOVUPS (base)(R11*4), r2; VINSERTF128 $1, (base)(R12*4), r2, r2; \
	MOVLQSX 12(offs), R11; MOVLQSX 28(offs), R12; \
	VMOVUPS (base)(R11*4), r3; VINSERTF128 $1, (base)(R12*4), r3, r3

// LOADHI loads dims 4–7: r_j = [row_j 4–7 | row_j+4 4–7] (the 32-byte
// load of row j+4 covers dims 0–7, its low half is replaced).
#define LOADHI(base, offs, r0, r1, r2, r3) \
	MOVLQSX 0(offs), R11; MOVLQSX 16(offs), R12; \
	VMOVUPS (base)(R12*4), r0; VINSERTF128 $0, 16(base)(R11*4), r0, r0; \
	MOVLQSX 4(offs), R11; MOVLQSX 20(offs), R12; \
	VMOVUPS (base)(R12*4), r1; VINSERTF128 $0, 16(base)(R11*4), r1, r1; \
	MOVLQSX 8(offs), R11; MOVLQSX 24(offs), R12; \
	VMOVUPS (base)(R12*4), r2; VINSERTF128 $0, 16(base)(R11*4), r2, r2; \
	MOVLQSX 12(offs), R11; MOVLQSX 28(offs), R12; \
	VMOVUPS (base)(R12*4), r3; VINSERTF128 $0, 16(base)(R11*4), r3, r3

// TR4 transposes the 4×4 blocks of each 128-bit half of a, b, c, d (rows
// 0–3 of 4 dimensions) into dimension vectors: dim 0 → c, 1 → a, 2 → t,
// 3 → b; d is clobbered. Lane l of every result is pair l.
#define TR4(a, b, c, d, t) \
	VUNPCKLPS b, a, t; \
	VUNPCKHPS b, a, b; \
	VUNPCKLPS d, c, a; \
	VUNPCKHPS d, c, d; \
	VUNPCKLPD a, t, c; \
	VUNPCKHPD a, t, a; \
	VUNPCKLPD d, b, t; \
	VUNPCKHPD d, b, b

// TGROUP: one block of one group, the query rows at element offsets
// qo[0..7] (transposed like the gallery rows), the gallery rows at
// go[0..7].
#define TGROUP(qo, gp, acc) \
	LOADLO(SI, qo, Y0, Y1, Y2, Y3); \
	LOADLO(R8, gp, Y4, Y5, Y6, Y7); \
	TR4(Y0, Y1, Y2, Y3, Y8); \
	TR4(Y4, Y5, Y6, Y7, Y3); \
	VFMADD231PS Y6, Y2, acc; \
	VFMADD231PS Y4, Y0, acc; \
	VFMADD231PS Y3, Y8, acc; \
	VFMADD231PS Y5, Y1, acc; \
	LOADHI(SI, qo, Y0, Y1, Y2, Y3); \
	LOADHI(R8, gp, Y4, Y5, Y6, Y7); \
	TR4(Y0, Y1, Y2, Y3, Y8); \
	TR4(Y4, Y5, Y6, Y7, Y3); \
	VFMADD231PS Y6, Y2, acc; \
	VFMADD231PS Y4, Y0, acc; \
	VFMADD231PS Y3, Y8, acc; \
	VFMADD231PS Y5, Y1, acc

// QGROUP: one block of one group whose 8 pairs share the query row at
// element offset R13: q_k is broadcast.
#define QGROUP(gp, acc) \
	LOADLO(R8, gp, Y0, Y1, Y2, Y3); \
	LOADHI(R8, gp, Y4, Y5, Y6, Y7); \
	TR4(Y0, Y1, Y2, Y3, Y8); \
	VBROADCASTSS 0(SI)(R13*4), Y3; \
	VFMADD231PS Y3, Y2, acc; \
	VBROADCASTSS 4(SI)(R13*4), Y9; \
	VFMADD231PS Y9, Y0, acc; \
	VBROADCASTSS 8(SI)(R13*4), Y3; \
	VFMADD231PS Y3, Y8, acc; \
	VBROADCASTSS 12(SI)(R13*4), Y9; \
	VFMADD231PS Y9, Y1, acc; \
	TR4(Y4, Y5, Y6, Y7, Y3); \
	VBROADCASTSS 16(SI)(R13*4), Y7; \
	VFMADD231PS Y7, Y6, acc; \
	VBROADCASTSS 20(SI)(R13*4), Y9; \
	VFMADD231PS Y9, Y4, acc; \
	VBROADCASTSS 24(SI)(R13*4), Y7; \
	VFMADD231PS Y7, Y3, acc; \
	VBROADCASTSS 28(SI)(R13*4), Y9; \
	VFMADD231PS Y9, Y5, acc

// GATHER loads dimension k (the base register points at it) of the rows
// at the element offsets of the 8 int32s at memory operand offs into dst
// (Y14 mask, Y15 indices).
#define GATHER(base, offs, dst) \
	VMOVDQU offs, Y15; \
	VPCMPEQD Y14, Y14, Y14; \
	VGATHERDPS Y14, (base)(Y15*4), dst

// func dot32PairsT8(q *float32, qoff *int32, rows *float32, goff *int32, d int, groups int, out *float32)
//
// groups×8 pairs (query at qoff[l], gallery row at goff[l]); d ≥ 1.
TEXT ·dot32PairsT8(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ qoff+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ goff+24(FP), BX
	MOVQ d+32(FP), CX
	MOVQ groups+40(FP), AX
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	MOVQ CX, R10
	SHRQ $3, R10 // full blocks
	ANDQ $7, CX  // rem
	TESTQ R10, R10
	JZ ttail

tblock:
	TGROUP(DX, BX, Y10)
	CMPQ AX, $2
	JLT tnext
	LEAQ 32(DX), R9
	LEAQ 32(BX), DI
	TGROUP(R9, DI, Y11)
	CMPQ AX, $3
	JLT tnext
	LEAQ 64(DX), R9
	LEAQ 64(BX), DI
	TGROUP(R9, DI, Y12)
	CMPQ AX, $4
	JLT tnext
	LEAQ 96(DX), R9
	LEAQ 96(BX), DI
	TGROUP(R9, DI, Y13)

tnext:
	ADDQ $32, SI
	ADDQ $32, R8
	DECQ R10
	JNZ tblock

ttail:
	TESTQ CX, CX
	JZ tdone

tdim:
	GATHER(SI, 0(DX), Y0)
	GATHER(R8, 0(BX), Y1)
	VFMADD231PS Y1, Y0, Y10
	CMPQ AX, $2
	JLT tdnext
	GATHER(SI, 32(DX), Y0)
	GATHER(R8, 32(BX), Y1)
	VFMADD231PS Y1, Y0, Y11
	CMPQ AX, $3
	JLT tdnext
	GATHER(SI, 64(DX), Y0)
	GATHER(R8, 64(BX), Y1)
	VFMADD231PS Y1, Y0, Y12
	CMPQ AX, $4
	JLT tdnext
	GATHER(SI, 96(DX), Y0)
	GATHER(R8, 96(BX), Y1)
	VFMADD231PS Y1, Y0, Y13

tdnext:
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ tdim

tdone:
	MOVQ out+48(FP), DI
	VMOVUPS Y10, 0(DI)
	CMPQ AX, $2
	JLT tend
	VMOVUPS Y11, 32(DI)
	CMPQ AX, $3
	JLT tend
	VMOVUPS Y12, 64(DI)
	CMPQ AX, $4
	JLT tend
	VMOVUPS Y13, 96(DI)

tend:
	VZEROUPPER
	RET

// func dot32PairsQ8(q *float32, qoff *int32, rows *float32, goff *int32, d int, groups int, out *float32)
//
// groups×8 pairs; the 8 pairs of group g share the query row at qoff[g]
// (one offset per group), pair l's gallery row is at goff[l]; d ≥ 1.
TEXT ·dot32PairsQ8(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ qoff+8(FP), DX
	MOVQ rows+16(FP), R8
	MOVQ goff+24(FP), BX
	MOVQ d+32(FP), CX
	MOVQ groups+40(FP), AX
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	MOVQ CX, R10
	SHRQ $3, R10 // full blocks
	ANDQ $7, CX  // rem
	TESTQ R10, R10
	JZ qtail

qblock:
	MOVLQSX 0(DX), R13
	QGROUP(BX, Y10)
	CMPQ AX, $2
	JLT qnext
	MOVLQSX 4(DX), R13
	LEAQ 32(BX), DI
	QGROUP(DI, Y11)
	CMPQ AX, $3
	JLT qnext
	MOVLQSX 8(DX), R13
	LEAQ 64(BX), DI
	QGROUP(DI, Y12)
	CMPQ AX, $4
	JLT qnext
	MOVLQSX 12(DX), R13
	LEAQ 96(BX), DI
	QGROUP(DI, Y13)

qnext:
	ADDQ $32, SI
	ADDQ $32, R8
	DECQ R10
	JNZ qblock

qtail:
	TESTQ CX, CX
	JZ qdone

qdim:
	MOVLQSX 0(DX), R13
	VBROADCASTSS (SI)(R13*4), Y0
	GATHER(R8, 0(BX), Y1)
	VFMADD231PS Y1, Y0, Y10
	CMPQ AX, $2
	JLT qdnext
	MOVLQSX 4(DX), R13
	VBROADCASTSS (SI)(R13*4), Y0
	GATHER(R8, 32(BX), Y1)
	VFMADD231PS Y1, Y0, Y11
	CMPQ AX, $3
	JLT qdnext
	MOVLQSX 8(DX), R13
	VBROADCASTSS (SI)(R13*4), Y0
	GATHER(R8, 64(BX), Y1)
	VFMADD231PS Y1, Y0, Y12
	CMPQ AX, $4
	JLT qdnext
	MOVLQSX 12(DX), R13
	VBROADCASTSS (SI)(R13*4), Y0
	GATHER(R8, 96(BX), Y1)
	VFMADD231PS Y1, Y0, Y13

qdnext:
	ADDQ $4, SI
	ADDQ $4, R8
	DECQ CX
	JNZ qdim

qdone:
	MOVQ out+48(FP), DI

	VMOVUPS Y10, 0(DI)
	CMPQ AX, $2
	JLT qend
	VMOVUPS Y11, 32(DI)
	CMPQ AX, $3
	JLT qend
	VMOVUPS Y12, 64(DI)
	CMPQ AX, $4
	JLT qend
	VMOVUPS Y13, 96(DI)

qend:
	VZEROUPPER
	RET
