// Command asmgen writes the AVX2 and AVX-512 tile kernels of package kernel
// (internal/kernel, the SIMD code under the exact scorer): kernel_amd64.s,
// their Go declarations (kernel_amd64_stubs.go) and the table the driver
// picks them from (kernel_amd64_tables.go). Run it with
// `go generate ./internal/kernel`; the output is deterministic.
//
// Every tile kernel computes an MR×NR block of score accumulators, one per
// SIMD lane: MR gallery rows (read in place, one broadcast per row and k)
// against NR queries (a k-major packed panel, NV vectors of W lanes per k).
// Each lane walks k = 0…d−1 in order with one vector FMA per step, which is
// exactly the scalar fma chain of SPEC §4.2, so the results are the same bits
// as the row definition whatever the tile shape or lane.
//
// Tile contract (all strides in bytes):
//
//	a   gallery row 0 of the tile; row r starts at a + r*lda
//	p   packed queries: p[k*NR + l] = q[i0+l, k] (zero for padding lanes)
//	d   dimension, ≥ 1
//	c   out[i0, j0]; the score of (query i0+l, row r) goes to c + l*ldc + r*es
//	nq  queries to write, 1…NR;  ng  gallery rows to write, 1…MR
//
// The kernel reads MR full rows at a and d×NR elements at p (float32: it
// also prefetches the MR·lda bytes after its rows, the next tile's, as the
// drivers pack rows with lda = d·es; a prefetch never faults), and writes only
// the nq×ng valid scores: a full tile (nq = NR, ng = MR) is transposed in
// registers and written with vector stores (fullTileStore); other tiles go
// through a transposing copy from a stack tile.
//
// Squared L2 computes t = q − g exactly as written (VSUBPD with the query
// vector as minuend) and then fma(t, t, acc). The AVX-512 kernels use
// AVX512F only (VPXORQ rather than VXORPS, which needs DQ; no mask or
// byte/word instructions), so they run on every CPU with AVX512F.
package main
