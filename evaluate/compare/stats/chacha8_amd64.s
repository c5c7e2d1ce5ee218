//go:build amd64 && !purego

#include "textflag.h"

// A ChaCha8 quarter round on the 16 lanes of four zmm registers.
#define QR(a, b, c, d) \
	VPADDD b, a, a; VPXORD a, d, d; VPROLD $16, d, d; \
	VPADDD d, c, c; VPXORD c, b, b; VPROLD $12, b, b; \
	VPADDD b, a, a; VPXORD a, d, d; VPROLD $8, d, d;  \
	VPADDD d, c, c; VPXORD c, b, b; VPROLD $7, b, b

// Word w of the 16 blocks (lane L = counter L) goes to uint32 index
// m*64 + w*4 + i of out, L = 4m + i: the layout of four consecutive
// internal/chacha8rand block calls (counters 0, 4, 8, 12).
#define STORE(z, w) \
	VEXTRACTI32X4 $0, z, (w*16)(DI);     \
	VEXTRACTI32X4 $1, z, (256+w*16)(DI); \
	VEXTRACTI32X4 $2, z, (512+w*16)(DI); \
	VEXTRACTI32X4 $3, z, (768+w*16)(DI)

// func chacha8EpochAVX512(seed *[4]uint64, out *[128]uint64)
// Requires: AVX512F
TEXT ·chacha8EpochAVX512(SB), NOSPLIT, $0-16
	MOVQ seed+0(FP), SI
	MOVQ out+8(FP), DI

	MOVL $0x61707865, AX
	VPBROADCASTD AX, Z0
	MOVL $0x3320646e, AX
	VPBROADCASTD AX, Z1
	MOVL $0x79622d32, AX
	VPBROADCASTD AX, Z2
	MOVL $0x6b206574, AX
	VPBROADCASTD AX, Z3

	VPBROADCASTD 0(SI), Z4
	VPBROADCASTD 4(SI), Z5
	VPBROADCASTD 8(SI), Z6
	VPBROADCASTD 12(SI), Z7
	VPBROADCASTD 16(SI), Z8
	VPBROADCASTD 20(SI), Z9
	VPBROADCASTD 24(SI), Z10
	VPBROADCASTD 28(SI), Z11
	VMOVDQU32 Z4, Z16
	VMOVDQU32 Z5, Z17
	VMOVDQU32 Z6, Z18
	VMOVDQU32 Z7, Z19
	VMOVDQU32 Z8, Z20
	VMOVDQU32 Z9, Z21
	VMOVDQU32 Z10, Z22
	VMOVDQU32 Z11, Z23

	VMOVDQU32 ·lanes<>(SB), Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

	MOVQ $4, CX

loop:
	QR(Z0, Z4, Z8, Z12)
	QR(Z1, Z5, Z9, Z13)
	QR(Z2, Z6, Z10, Z14)
	QR(Z3, Z7, Z11, Z15)
	QR(Z0, Z5, Z10, Z15)
	QR(Z1, Z6, Z11, Z12)
	QR(Z2, Z7, Z8, Z13)
	QR(Z3, Z4, Z9, Z14)
	DECQ CX
	JNZ  loop

	// Only the key words get the input added back (as internal/chacha8rand).
	VPADDD Z16, Z4, Z4
	VPADDD Z17, Z5, Z5
	VPADDD Z18, Z6, Z6
	VPADDD Z19, Z7, Z7
	VPADDD Z20, Z8, Z8
	VPADDD Z21, Z9, Z9
	VPADDD Z22, Z10, Z10
	VPADDD Z23, Z11, Z11

	STORE(Z0, 0)
	STORE(Z1, 1)
	STORE(Z2, 2)
	STORE(Z3, 3)
	STORE(Z4, 4)
	STORE(Z5, 5)
	STORE(Z6, 6)
	STORE(Z7, 7)
	STORE(Z8, 8)
	STORE(Z9, 9)
	STORE(Z10, 10)
	STORE(Z11, 11)
	STORE(Z12, 12)
	STORE(Z13, 13)
	STORE(Z14, 14)
	STORE(Z15, 15)
	VZEROUPPER
	RET

DATA ·lanes<>+0(SB)/4, $0
DATA ·lanes<>+4(SB)/4, $1
DATA ·lanes<>+8(SB)/4, $2
DATA ·lanes<>+12(SB)/4, $3
DATA ·lanes<>+16(SB)/4, $4
DATA ·lanes<>+20(SB)/4, $5
DATA ·lanes<>+24(SB)/4, $6
DATA ·lanes<>+28(SB)/4, $7
DATA ·lanes<>+32(SB)/4, $8
DATA ·lanes<>+36(SB)/4, $9
DATA ·lanes<>+40(SB)/4, $10
DATA ·lanes<>+44(SB)/4, $11
DATA ·lanes<>+48(SB)/4, $12
DATA ·lanes<>+52(SB)/4, $13
DATA ·lanes<>+56(SB)/4, $14
DATA ·lanes<>+60(SB)/4, $15
GLOBL ·lanes<>(SB), RODATA|NOPTR, $64
