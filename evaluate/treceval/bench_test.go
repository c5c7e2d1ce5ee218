package treceval

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats/qrels"
)

// writeBenchRun writes a run of nq queries × depth documents (one line
// each, in rank order, distinct scores) and returns its path and qrels with
// three positives per query: two somewhere in the run, one never retrieved.
func writeBenchRun(tb testing.TB, dir string, nq, depth int) (string, *Qrels, int64) {
	tb.Helper()
	path := filepath.Join(dir, "bench.run")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 1))
	const corpus = 2_000_003 // prime: base + i·stride is distinct for i < depth
	var recs []qrels.Record
	var line []byte
	for qi := 0; qi < nq; qi++ {
		qid := "q" + strconv.Itoa(qi)
		base := r.IntN(corpus)
		doc := func(i int) string { return "doc" + strconv.Itoa((base+i*7919)%corpus) }
		for _, i := range []int{r.IntN(depth), r.IntN(depth)} {
			recs = append(recs, qrels.Record{QueryID: qid, GalleryID: doc(i), Grade: 1, Line: len(recs) + 1})
		}
		recs = append(recs, qrels.Record{QueryID: qid, GalleryID: "unretrieved-" + qid, Grade: 2, Line: len(recs) + 1})
		score := 40 + r.Float64()
		for i := 0; i < depth; i++ {
			score -= r.Float64() * 0.03
			line = append(line[:0], qid...)
			line = append(line, " Q0 "...)
			line = append(line, doc(i)...)
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(i+1), 10)
			line = append(line, ' ')
			line = strconv.AppendFloat(line, score, 'g', -1, 64)
			line = append(line, " bench\n"...)
			if _, err := w.Write(line); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	q, err := NewQrels("bench.qrels", dedupe(recs))
	if err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return path, q, st.Size()
}

// dedupe drops a second pick of the same positive (r.IntN twice).
func dedupe(recs []qrels.Record) []qrels.Record {
	seen := map[[2]string]bool{}
	out := recs[:0]
	for _, r := range recs {
		k := [2]string{r.QueryID, r.GalleryID}
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	return out
}

// BenchmarkEvaluate scores a 7,000-query × 1,000-document run (7 M lines).
// Measure peak memory with
//
//	go test -c -o /tmp/runeval.test ./runeval
//	/usr/bin/time -v /tmp/runeval.test -test.run '^$' -test.bench Evaluate -test.benchtime 3x
func BenchmarkEvaluate(b *testing.B) {
	nq, depth := 7000, 1000
	if testing.Short() {
		nq = 700
	}
	path, q, size := writeBenchRun(b, b.TempDir(), nq, depth)
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		res, err := Evaluate(context.Background(), q, f, path, DefaultOptions())
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		if res.Stats.Lines != nq*depth {
			b.Fatalf("%d lines", res.Stats.Lines)
		}
	}
	b.ReportMetric(float64(nq*depth)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mlines/s")
}

func ExampleEvaluate() {
	q, err := NewQrels("example.qrels", []qrels.Record{
		{QueryID: "q1", GalleryID: "d1", Grade: 1, Line: 1},
		{QueryID: "q1", GalleryID: "d2", Grade: 1, Line: 2},
	})
	if err != nil {
		panic(err)
	}
	run := "q1 Q0 d3 1 0.9 bm25\nq1 Q0 d1 2 0.8 bm25\n" // d2 is never retrieved
	res, err := Evaluate(context.Background(), q, strings.NewReader(run), "example.run", DefaultOptions())
	if err != nil {
		panic(err)
	}
	fwd := res.Benchmark.ExtractorResults[0].Forward
	mrr, _ := fwd.Metrics.Get("mrr")
	mapv, _ := fwd.Metrics.Get("map")
	fmt.Println(res.Benchmark.ExtractorResults[0].Name, mrr, mapv, fwd.Warnings)
	// Output: bm25 0.5 0.25 [1 of 2 positive(s) are not in the run and count as never retrieved.]
}
