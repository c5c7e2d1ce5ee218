//go:build amd64 && !purego

#include "textflag.h"

// Exact float64 chains of Dot64PairsQuery (pairs64.go) with AVX2 and FMA:
// one query row q against gallery rows at element offsets goff[l]. Lane
// l of a ymm accumulator is one pair's chain, acc = fma(q_k, g_k, acc) for
// k = 0, 1, …, d−1 in order from +0, the bits of DotRow64. A call runs
// 1–4 groups of 4 pairs (groups ≤ 4), one accumulator each (Y12–Y15), so
// up to four independent chains are in flight. Per block of 4 dimensions
// q_0..q_3 are broadcast once (Y8–Y11) and each group's 4 row chunks
// (rows a, b, c, d) are transposed in registers: a 16-byte load and a
// VINSERTF128 from memory give [a_k a_k+1 | c_k c_k+1] and
// [b_k b_k+1 | d_k d_k+1], and VUNPCKLPD / VUNPCKHPD of the two give the
// dimension vectors [a_k b_k c_k d_k] and [a_k+1 b_k+1 c_k+1 d_k+1]
// (one in-lane shuffle per FMA). The last d mod 4 dimensions are
// gathered one at a time (VGATHERDPD), so no load reaches past a row and
// no FMA runs on a padded dimension (fma(0, 0, −0) = +0 would change a
// −0 chain).

// OFFS loads the 4 int32 offsets at gp of a group's rows a, b, c, d
// into R11, R12, R13, DX.
#define OFFS(gp) \
	MOVLQSX 0(gp), R11; \
	MOVLQSX 4(gp), R12; \
	MOVLQSX 8(gp), R13; \
	MOVLQSX 12(gp), DX

// DIMS2 runs dimensions k, k+1 (at byte offset off from R8, which points
// at the block's first dimension in row 0) of the group whose rows OFFS
// loaded: [a_k a_k+1 | c_k c_k+1] and [b_k b_k+1 | d_k d_k+1], unpacked
// into [a_k b_k c_k d_k] and [a_k+1 b_k+1 c_k+1 d_k+1], times the
// broadcast q_k (qa) and q_k+1 (qb).
#define DIMS2(off, qa, qb, acc) \
	VMOVUPD off(R8)(R11*8), X0; \
	VINSERTF128 $1, off(R8)(R13*8), Y0, Y0; \
	VMOVUPD off(R8)(R12*8), X1; \
	VINSERTF128 $1, off(R8)(DX*8), Y1, Y1; \
	VUNPCKLPD Y1, Y0, Y2; \
	VFMADD231PD Y2, qa, acc; \
	VUNPCKHPD Y1, Y0, Y3; \
	VFMADD231PD Y3, qb, acc

// GROUP8 runs a block of 8 dimensions of the group at gp (q_k..q_k+7 in
// Y4–Y11), GROUP4 one of 4 (q_k..q_k+3 in Y4–Y7).
#define GROUP8(gp, acc) \
	OFFS(gp); \
	DIMS2(0, Y4, Y5, acc); \
	DIMS2(16, Y6, Y7, acc); \
	DIMS2(32, Y8, Y9, acc); \
	DIMS2(48, Y10, Y11, acc)

#define GROUP4(gp, acc) \
	OFFS(gp); \
	DIMS2(0, Y4, Y5, acc); \
	DIMS2(16, Y6, Y7, acc)

// GATHER loads dimension k (R8 points at it in row 0) of the 4 rows at
// the int32 element offsets of memory operand offs into dst (Y6 mask, X7
// indices; dst is neither).
#define GATHER(offs, dst) \
	VMOVDQU offs, X7; \
	VPCMPEQD Y6, Y6, Y6; \
	VGATHERDPD Y6, (R8)(X7*8), dst

// func dot64PairsQ4(q *float64, rows *float64, goff *int32, d int, groups int, out *float64)
//
// groups×4 pairs of the query row q, pair l's gallery row at goff[l];
// d ≥ 1; writes out[0..4·groups−1].
TEXT ·dot64PairsQ4(SB), NOSPLIT, $0-48
	MOVQ q+0(FP), SI
	MOVQ rows+8(FP), R8
	MOVQ goff+16(FP), BX
	MOVQ d+24(FP), CX
	MOVQ groups+32(FP), AX
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VXORPD Y14, Y14, Y14
	VXORPD Y15, Y15, Y15
	MOVQ CX, R10
	SHRQ $3, R10 // blocks of 8
	ANDQ $7, CX  // rem
	TESTQ R10, R10
	JZ block4

block8:
	VBROADCASTSD 0(SI), Y4
	VBROADCASTSD 8(SI), Y5
	VBROADCASTSD 16(SI), Y6
	VBROADCASTSD 24(SI), Y7
	VBROADCASTSD 32(SI), Y8
	VBROADCASTSD 40(SI), Y9
	VBROADCASTSD 48(SI), Y10
	VBROADCASTSD 56(SI), Y11
	GROUP8(BX, Y12)
	CMPQ AX, $2
	JLT next8
	LEAQ 16(BX), DI
	GROUP8(DI, Y13)
	CMPQ AX, $3
	JLT next8
	LEAQ 32(BX), DI
	GROUP8(DI, Y14)
	CMPQ AX, $4
	JLT next8
	LEAQ 48(BX), DI
	GROUP8(DI, Y15)

next8:
	ADDQ $64, SI
	ADDQ $64, R8
	DECQ R10
	JNZ block8

block4:
	CMPQ CX, $4
	JLT tail
	VBROADCASTSD 0(SI), Y4
	VBROADCASTSD 8(SI), Y5
	VBROADCASTSD 16(SI), Y6
	VBROADCASTSD 24(SI), Y7
	GROUP4(BX, Y12)
	CMPQ AX, $2
	JLT next4
	LEAQ 16(BX), DI
	GROUP4(DI, Y13)
	CMPQ AX, $3
	JLT next4
	LEAQ 32(BX), DI
	GROUP4(DI, Y14)
	CMPQ AX, $4
	JLT next4
	LEAQ 48(BX), DI
	GROUP4(DI, Y15)

next4:
	ADDQ $32, SI
	ADDQ $32, R8
	SUBQ $4, CX

tail:
	TESTQ CX, CX
	JZ done

dim:
	VBROADCASTSD (SI), Y8
	GATHER(0(BX), Y0)
	VFMADD231PD Y0, Y8, Y12
	CMPQ AX, $2
	JLT dnext
	GATHER(16(BX), Y1)
	VFMADD231PD Y1, Y8, Y13
	CMPQ AX, $3
	JLT dnext
	GATHER(32(BX), Y2)
	VFMADD231PD Y2, Y8, Y14
	CMPQ AX, $4
	JLT dnext
	GATHER(48(BX), Y3)
	VFMADD231PD Y3, Y8, Y15

dnext:
	ADDQ $8, SI
	ADDQ $8, R8
	DECQ CX
	JNZ dim

done:
	MOVQ out+40(FP), DI
	VMOVUPD Y12, 0(DI)
	CMPQ AX, $2
	JLT end
	VMOVUPD Y13, 32(DI)
	CMPQ AX, $3
	JLT end
	VMOVUPD Y14, 64(DI)
	CMPQ AX, $4
	JLT end
	VMOVUPD Y15, 96(DI)

end:
	VZEROUPPER
	RET
