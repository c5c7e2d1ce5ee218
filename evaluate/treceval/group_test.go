package treceval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/retrieval"
)

// groupStable is the reference grouping: LC_ALL=C sort -s -k1,1.
func groupStable(run string) string {
	var lines []string
	for _, l := range strings.Split(run, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			lines = append(lines, l)
		}
	}
	slices.SortStableFunc(lines, func(a, b string) int {
		return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0])
	})
	return strings.Join(lines, "\n") + "\n"
}

// TestEvaluateUngroupedEqualsGrouped: for random runs whose query lines are
// interleaved, grouping in bounded memory (chunks of a few lines, so many
// temporary files are merged) gives exactly the report of the run grouped by
// a stable sort, and removes its temporary files.
func TestEvaluateUngroupedEqualsGrouped(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\na 0 y 2\nb 0 z 1\nb 0 v 3\nc 0 w 1\nd 0 x 2\n")
	rng := rand.New(rand.NewPCG(6, 14))
	docs := []string{"x", "y", "z", "v", "w", "u", "t"}
	for trial := 0; trial < 60; trial++ {
		var lines []string
		for _, qid := range []string{"a", "b", "c", "zz", "d"} {
			for _, i := range rng.Perm(len(docs))[:1+rng.IntN(len(docs))] {
				lines = append(lines, fmt.Sprintf("%s Q0 %s %d %d t", qid, docs[i], rng.IntN(5), rng.IntN(4)))
			}
		}
		rng.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		if trial%3 == 0 {
			lines = append([]string{"# comment", ""}, lines...)
		}
		run := strings.Join(lines, "\n") + "\n"
		for _, ties := range []Ties{TiesTREC, TiesRank} {
			o := opts([]int{1, 3}, "ndcg@3", retrieval.GainExponential, ties)
			want, err := Evaluate(context.Background(), q, strings.NewReader(groupStable(run)), "r.run", o)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			got, err := EvaluateUngrouped(context.Background(), q, strings.NewReader(run), "r.run", o, tmp, 1+rng.IntN(80))
			if err != nil {
				t.Fatalf("%q: %v", run, err)
			}
			gf, wf := got.Benchmark.ExtractorResults[0].Forward, want.Benchmark.ExtractorResults[0].Forward
			if !slices.Equal(gf.Metrics.Vals, wf.Metrics.Vals) || got.Stats.Lines != want.Stats.Lines || gf.Metadata.NGallery != wf.Metadata.NGallery {
				t.Fatalf("%q: ungrouped %v, grouped %v", run, gf.Metrics.Vals, wf.Metrics.Vals)
			}
			if names, _ := os.ReadDir(tmp); len(names) != 0 {
				t.Fatalf("temporary files left: %v", names)
			}
		}
	}
}

// TestEvaluateUngroupedMessages: errors name the original line, and the
// digest is that of the original bytes.
func TestEvaluateUngroupedMessages(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\nb 0 y 1\n")
	run := "a Q0 x 1 2 t\nb Q0 y 1 1 t\na Q0 z 2 1 t\nb Q0 y 2 0 t\n"
	_, err := EvaluateUngrouped(context.Background(), q, strings.NewReader(run), "r.run", DefaultOptions(), t.TempDir(), 10)
	if err == nil || !strings.Contains(err.Error(), `r.run:4: document "y" is listed twice for query "b" (lines 2 and 4)`) {
		t.Fatalf("err = %v", err)
	}
	ok := "b Q0 y 1 1 t\na Q0 x 1 2 t\nb Q0 q 2 0 t\n"
	got, err := EvaluateUngrouped(context.Background(), q, strings.NewReader(ok), "r.run", DefaultOptions(), t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Evaluate(context.Background(), q, strings.NewReader(ok), "r.run", DefaultOptions()); err == nil || !strings.Contains(err.Error(), "not contiguous") {
		t.Fatalf("the grouped evaluator must refuse this run: %v", err)
	}
	sum := sha256.Sum256([]byte(ok))
	if want := hex.EncodeToString(sum[:]); got.RunSHA256 != want {
		t.Errorf("run_sha256 %s, want the original bytes' %s", got.RunSHA256, want)
	}
	if _, err := EvaluateUngrouped(context.Background(), q, bytes.NewReader(append([]byte("\ufeff"), ok...)), "r.run", DefaultOptions(), t.TempDir(), 0); err == nil ||
		!strings.Contains(err.Error(), "r.run:1: file starts with a UTF-8 byte order mark") {
		t.Errorf("BOM: %v", err)
	}
}

// FuzzEvaluateUngrouped: grouping in bounded memory never panics and agrees
// with the grouped evaluator on the stably sorted run: both accept with
// bit-identical metrics, or both refuse.
func FuzzEvaluateUngrouped(f *testing.F) {
	for _, s := range []string{
		"a Q0 x 1 0.5 t\nb Q0 z 1 1 t\na Q0 y 2 0.5 t\n",
		"# c\n\nb Q0 y 3 2 t\r\na Q0 x 1 2 t\r\n",
		"a Q0 x 1 2 t\nb Q0 z 1 1 t\na Q0 x 1 1 t\n",
		"a Q0 x 1 inf t extra\nc Q0 w one -inf t\n",
	} {
		f.Add([]byte(s), uint8(7))
	}
	q := mustQrels(f, "a 0 x 1\na 0 y 2\nb 0 z 1\nc 0 w 1\n")
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		if bytes.HasPrefix(data, []byte("\ufeff")) || bytes.ContainsRune(data, '\r') && !bytes.Contains(data, []byte("\r\n")) {
			return // a BOM or bare CRs move with the sort: the reference differs by design
		}
		o := opts([]int{1, 2}, "ndcg@2", retrieval.GainExponential, TiesTREC)
		got, gerr := EvaluateUngrouped(context.Background(), q, bytes.NewReader(data), "r.run", o, t.TempDir(), int(chunk)+1)
		want, werr := Evaluate(context.Background(), q, strings.NewReader(groupStable(string(data))), "r.run", o)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("ungrouped err %v, grouped err %v", gerr, werr)
		}
		if gerr == nil && !slices.Equal(got.Benchmark.ExtractorResults[0].Forward.Metrics.Vals, want.Benchmark.ExtractorResults[0].Forward.Metrics.Vals) {
			t.Fatal("metrics differ")
		}
	})
}
