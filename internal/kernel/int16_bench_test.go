package kernel

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDotInt16 and BenchmarkDot32Same time one 240 × 4096 × 768 block
// of the int16 screen and of the exact float32 kernel (pairs/s compare
// directly: b.SetBytes counts pairs).
func BenchmarkDotInt16(b *testing.B) {
	const qn, gn, d = 240, 4096, 768
	r := rand.New(rand.NewPCG(1, 2))
	q, g := int16Rows(r, qn, d), int16Rows(r, gn, d)
	qp := make([]int32, Int16QueryLen(qn, d))
	gp := make([]int32, Int16GalleryLen(gn, d))
	for i := range qn {
		PackInt16Query(q[i*d:(i+1)*d], i, qp)
	}
	for j := range gn {
		PackInt16Gallery(g[j*d:(j+1)*d], j, gp)
	}
	qs, gs := int16Scales(r, qn), int16Scales(r, gn)
	out := make([]float32, qn*gn)
	b.SetBytes(qn * gn)
	for b.Loop() {
		DotInt16(qp, qn, gp, gn, d, qs, gs, out)
	}
}

func BenchmarkDot32Same(b *testing.B) {
	const qn, gn, d = 240, 4096, 768
	r := rand.New(rand.NewPCG(1, 2))
	q, g := make([]float32, qn*d), make([]float32, gn*d)
	for i := range q {
		q[i] = float32(r.NormFloat64())
	}
	for i := range g {
		g[i] = float32(r.NormFloat64())
	}
	out := make([]float32, qn*gn)
	b.SetBytes(qn * gn)
	for b.Loop() {
		Dot32(q, qn, g, gn, d, out)
	}
}

// BenchmarkDotInt16Tile times one 12 × 32 tile at d = 768 with each tile
// this CPU has (the operands, 66 KB, stay in L2 as in DotInt16, which
// sweeps the query tiles against one gallery tile) and reports GMAC/s, one
// MAC being an int16 multiply-add: 12·32·768 per call.
func BenchmarkDotInt16Tile(b *testing.B) {
	const d = 768
	np := Int16Pairs(d)
	r := rand.New(rand.NewPCG(1, 2))
	qa := make([]int32, Int16QueryTile*np)
	ga := make([]int32, Int16GalleryTile*np)
	for i := range qa {
		qa[i] = int32(r.Uint32())
	}
	for i := range ga {
		ga[i] = int32(r.Uint32())
	}
	qs, gs := int16Scales(r, Int16QueryTile), int16Scales(r, Int16GalleryTile)
	out := make([]float32, Int16QueryTile*Int16GalleryTile)
	for _, k := range []int16TileKind{int16VNNI, int16AVX2, int16Generic} {
		b.Run(k.String(), func(b *testing.B) {
			needInt16Tile(b, k)
			for b.Loop() {
				dotInt16Tile(k, qa, ga, np, qs, gs, out, Int16GalleryTile)
			}
			b.ReportMetric(Int16QueryTile*Int16GalleryTile*d*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
