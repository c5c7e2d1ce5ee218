package treceval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/formats"
	"github.com/vertebrae-eval/vertebrae/formats/qrels"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/report"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

func mustQrels(t testing.TB, text string) *Qrels {
	t.Helper()
	recs, err := qrels.ParseRecords("q.qrels", qrels.TREC, strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewQrels("q.qrels", recs)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func evaluate(t testing.TB, q *Qrels, run string, opts Options) (*Result, error) {
	t.Helper()
	return Evaluate(context.Background(), q, strings.NewReader(run), "r.run", opts)
}

func opts(ks []int, primary string, gain string, ties Ties) Options {
	o := DefaultOptions()
	o.Ks, o.PrimaryMetric, o.Gain, o.Ties = ks, primary, gain, ties
	return o
}

func get(t *testing.T, v metrics.Values, key string) float64 {
	t.Helper()
	x, ok := v.Get(key)
	if !ok {
		t.Fatalf("no metric %s in %v", key, v.Keys)
	}
	return x
}

// The trec_eval example of SPEC §4.11 by hand: trec_eval -c -m map -m
// recip_rank -m P.1,2,3,5 -m recall.1,2,3,5 -m success.1,2,3,5 -m
// ndcg_cut.1,2,3,5 computes these numbers (linear gain, docid-descending
// ties, missing queries scored 0).
const handQrels = `q1 0 d1 1
q1 0 d2 2
q1 0 d3 0
q2 0 d4 1
q2 0 d9 1
q3 0 d5 1
q4 0 d6 0
`

const handRun = `q1 Q0 d7 1 0.9 tagA
q1 Q0 d1 2 0.8 tagA
q1 Q0 d3 3 0.8 tagA
q1 Q0 d2 4 0.5 tagA
q2 Q0 d4 1 0.7 tagA
q2 Q0 d8 2 0.7 tagA
q2 Q0 d0 3 0.1 tagA
qX Q0 d1 1 1.0 tagA
qY Q0 d1 1 1.0 tagB
q4 Q0 d6 1 1.0 tagA
`

func TestHandComputedTRECTies(t *testing.T) {
	q := mustQrels(t, handQrels)
	res, err := evaluate(t, q, handRun, opts([]int{1, 2, 3, 5}, "ndcg@5", retrieval.GainLinear, TiesTREC))
	if err != nil {
		t.Fatal(err)
	}
	l := math.Log2
	// q1: d7 (0.9), then the 0.8 tie d3 before d1 (docid descending), d2.
	// Positives d1 (grade 1) at rank 3, d2 (grade 2) at rank 4; ideal [2, 1].
	q1 := map[string]float64{
		"mrr": 1.0 / 3, "map": (1.0/3 + 2.0/4) / 2,
		"precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0,
		"precision@2": 0, "recall@2": 0, "hit_rate@2": 0, "ndcg@2": 0,
		"precision@3": 1.0 / 3, "recall@3": 0.5, "hit_rate@3": 1, "ndcg@3": (1 / l(4)) / (2 + 1/l(3)),
		"precision@5": 2.0 / 5, "recall@5": 1, "hit_rate@5": 1, "ndcg@5": (1/l(4) + 2/l(5)) / (2 + 1/l(3)),
	}
	// q2: the 0.7 tie puts d8 before d4, so d4 has rank 2; d9 is not in the
	// run (never retrieved) but P = 2.
	q2 := map[string]float64{
		"mrr": 0.5, "map": (1.0 / 2) / 2,
		"precision@1": 0, "recall@1": 0, "hit_rate@1": 0, "ndcg@1": 0,
		"precision@2": 0.5, "recall@2": 0.5, "hit_rate@2": 1, "ndcg@2": (1 / l(3)) / (1 + 1/l(3)),
		"precision@3": 1.0 / 3, "recall@3": 0.5, "hit_rate@3": 1, "ndcg@3": (1 / l(3)) / (1 + 1/l(3)),
		"precision@5": 1.0 / 5, "recall@5": 0.5, "hit_rate@5": 1, "ndcg@5": (1 / l(3)) / (1 + 1/l(3)),
	}
	// q3 is not in the run: 0 everywhere. q4 has no positive: ignored.
	b := res.Benchmark
	fwd := b.ExtractorResults[0].Forward
	if len(fwd.PerQuery) != 3 {
		t.Fatalf("%d per-query rows, want 3", len(fwd.PerQuery))
	}
	for i, want := range []map[string]float64{q1, q2, nil} {
		row := fwd.PerQuery[i]
		if row.QueryID != []string{"q1", "q2", "q3"}[i] {
			t.Errorf("row %d is query %q", i, row.QueryID)
		}
		for j, k := range row.Metrics.Keys {
			if w := want[k]; math.Abs(row.Metrics.Vals[j]-w) > 1e-12 {
				t.Errorf("%s %s = %v, want %v", row.QueryID, k, row.Metrics.Vals[j], w)
			}
		}
	}
	for j, k := range fwd.Metrics.Keys {
		w := (q1[k] + q2[k]) / 3
		if math.Abs(fwd.Metrics.Vals[j]-w) > 1e-12 {
			t.Errorf("mean %s = %v, want %v", k, fwd.Metrics.Vals[j], w)
		}
	}
	if want := (q1["ndcg@5"] + q2["ndcg@5"]) / 3; math.Abs(fwd.Score-want) > 1e-12 || b.ExtractorResults[0].PrimaryScore != fwd.Score {
		t.Errorf("score %v, primary %v, want %v", fwd.Score, b.ExtractorResults[0].PrimaryScore, want)
	}
	wantWarn := []string{
		"1 evaluated query(ies) have no run lines and score 0 on every metric.",
		"1 qrels query(ies) without a positive grade were ignored.",
		`1 run line(s) have a tag other than "tagA" (first at line 9).`,
		"2 of 5 positive(s) are not in the run and count as never retrieved.",
		"2 run query(ies) absent from the qrels were ignored.",
	}
	if !slices.Equal(fwd.Warnings, wantWarn) || !slices.Equal(b.ExtractorResults[0].Warnings, wantWarn) {
		t.Errorf("warnings:\n%q\nwant\n%q", fwd.Warnings, wantWarn)
	}
	wantStats := Stats{Lines: 10, RunQueries: 5, EvaluatedQueries: 3, MissingQueries: 1, IgnoredRunQueries: 2,
		IgnoredQrelsQueries: 1, Positives: 5, MissingPositives: 2, Tag: "tagA", OtherTagLines: 1}
	if res.Stats != wantStats {
		t.Errorf("stats %+v\nwant  %+v", res.Stats, wantStats)
	}
	r := b.ExtractorResults[0]
	if r.Name != "tagA" || r.ExtractorType != "trec_run" || r.Reverse != nil {
		t.Errorf("result %q type %q", r.Name, r.ExtractorType)
	}
	s := b.DatasetSummary
	// n_gallery: the 8 distinct documents the run lists (d0-d4, d6-d8),
	// including those of queries the qrels do not know (SPEC §6.7).
	if s.NQueries != 3 || s.NGallery != 8 || s.NRelevancePairs != 5 || s.Modality != "retrieval" || fwd.Metadata.NGallery != 8 {
		t.Errorf("summary %+v", s)
	}
}

func TestHandComputedRankTies(t *testing.T) {
	q := mustQrels(t, handQrels)
	res, err := evaluate(t, q, handRun, opts([]int{1, 2}, "ndcg@2", retrieval.GainExponential, TiesRank))
	if err != nil {
		t.Fatal(err)
	}
	// The rank column breaks the 0.8 and 0.7 ties: q1 d1 rank 2, d2 rank 4;
	// q2 d4 rank 1. Exponential gains: d1 1, d2 3; ideal [3, 1].
	l := math.Log2
	want := map[string][]float64{
		"q1": {0.5, (1.0/2 + 2.0/4) / 2, 0, 0, 0, 0, 0.5, 0.5, 1, (1 / l(3)) / (3 + 1/l(3))},
		"q2": {1, 0.5, 1, 0.5, 1, 1, 0.5, 0.5, 1, 1 / (1 + 1/l(3))},
		"q3": make([]float64, 10),
	}
	for _, row := range res.Benchmark.ExtractorResults[0].Forward.PerQuery {
		for j, k := range row.Metrics.Keys {
			if w := want[row.QueryID][j]; math.Abs(row.Metrics.Vals[j]-w) > 1e-12 {
				t.Errorf("%s %s = %v, want %v", row.QueryID, k, row.Metrics.Vals[j], w)
			}
		}
	}
}

func TestReportsRender(t *testing.T) {
	q := mustQrels(t, handQrels)
	o := opts([]int{1, 2}, "ndcg@2", retrieval.GainLinear, TiesTREC)
	o.Name = "my run"
	res, err := evaluate(t, q, handRun, o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := res.Benchmark.MarshalReport()
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	r := rep["extractor_results"].([]any)[0].(map[string]any)
	if r["name"] != "my run" || r["reverse"] != nil {
		t.Errorf("result %v", r)
	}
	// Diagnostics need the full candidate set: omitted, not nulls (§6.7).
	if diag, ok := r["forward"].(map[string]any)["diagnostics"]; ok {
		t.Errorf("diagnostics %v present, want omitted", diag)
	}
	if rk := rep["ranking"].([]any); len(rk) != 1 {
		t.Errorf("ranking %v", rk)
	}
	md, err := report.Markdown(res.Benchmark)
	if err != nil || !bytes.Contains(md, []byte("| 1 | my run |")) {
		t.Errorf("markdown %v:\n%s", err, md)
	}
	var csv bytes.Buffer
	if err := report.CSV(&csv, res.Benchmark); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(csv.String(), "\n"); lines != 4 {
		t.Errorf("csv has %d lines:\n%s", lines, csv.String())
	}
	// Same qrels, same config: same identity and fingerprint, whatever the run.
	res2, err := evaluate(t, q, "q1 Q0 d1 1 1 other\n", o)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Benchmark.Metadata.ProtocolFingerprint != res.Benchmark.Metadata.ProtocolFingerprint ||
		res2.Benchmark.DatasetSummary.Identity["key"] != res.Benchmark.DatasetSummary.Identity["key"] {
		t.Error("fingerprint or identity depends on the run")
	}
	o.Ties = TiesRank
	res3, _ := evaluate(t, q, handRun, o)
	if res3.Benchmark.Metadata.ProtocolFingerprint == res.Benchmark.Metadata.ProtocolFingerprint {
		t.Error("the tie rule is not part of the fingerprint")
	}
}

func TestAcceptedSyntax(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\nb 0 y 1\n")
	want, err := evaluate(t, q, "a Q0 x 1 2 t\na Q0 z 2 1 t\nb Q0 y 1 0.5 t\n", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{
		"a\tQ0\tx\t1\t2\tt\r\na Q0 z 2 1 t\r\nb Q0 y 1 0.5 t",                // tabs, CRLF, no final LF
		"# header\n\n  a Q0 x 1 2e0 t  \n\t\na Q0 z 2 +1 t\nb Q0 y 1 .5 t\n", // comments, blanks, padding
		"a Q0 z 2 1 t\na Q0 x 1 2 t\nb Q0 y 1 0.5 t\n",                       // lines within a query in any order
		"a\u00a0Q0\u2003x 1 2 t\na Q0 z 2 1 t\nb Q0 y 1 0.5 t\n",             // Unicode white space
		"a Q0 x 1 2 t\na Q0 z 2 1 t\nb Q0 y 1 -0 t\nb Q0 w 2 -1e-400 t\n",    // −0 and underflow
	} {
		got, err := evaluate(t, q, run, DefaultOptions())
		if err != nil {
			t.Errorf("%q: %v", run, err)
			continue
		}
		if !slices.Equal(got.Benchmark.ExtractorResults[0].Forward.Metrics.Vals, want.Benchmark.ExtractorResults[0].Forward.Metrics.Vals) {
			t.Errorf("%q: metrics differ", run)
		}
	}
}

func TestRejectedInput(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\nb 0 y 1\n")
	// The rank column is read under --ties rank only (as trec_eval, which
	// ignores it); those cases say so with a "rank:" prefix.
	cases := []struct{ run, want string }{
		{"a Q0 x 1 2\n", "r.run:1: malformed run line: expected 6 whitespace-separated fields (qid Q0 docid rank score tag), got 5"},
		{"rank:a Q0 x 1.5 2 t\n", `r.run:1: malformed rank "1.5" for query "a", document "x": not an integer`},
		{"rank:a Q0 x one 2 t\n", `r.run:1: malformed rank "one"`},
		{"rank:a Q0 x 99999999999999999999 2 t\n", `r.run:1: malformed rank`},
		{"a Q0 x 1 abc t\n", `r.run:1: malformed score "abc" for query "a", document "x": not a decimal number`},
		{"a Q0 x 1 0x1p-2 t\n", `r.run:1: malformed score "0x1p-2"`},
		{"a Q0 x 1 1_0 t\n", `r.run:1: malformed score "1_0"`},
		{"a Q0 x 1 NaN t\n", `r.run:1: malformed score "NaN" for query "a", document "x": not finite`},
		{"a Q0 x 1 nan t\n", `not finite`},
		{"a Q0 x 1 2 t\na Q0 z 2 1 t\na Q0 x 3 0 t\n", `r.run:3: document "x" is listed twice for query "a" (lines 1 and 3)`},
		{"z Q0 x 1 2 t\nz Q0 x 1 2 t\n", `r.run:2: document "x" is listed twice for query "z" (lines 1 and 2)`},
		{"a Q0 x 1 2 t\nb Q0 y 1 1 t\na Q0 z 1 1 t\n", `r.run:3: run lines of query "a" are not contiguous: other queries' lines separate this line from its line 1;`},
		{"z Q0 x 1 2 t\nz Q0 w 1 2 t\nb Q0 y 1 1 t\nz Q0 v 1 1 t\n", `r.run:4: run lines of query "z" are not contiguous: other queries' lines separate this line from its lines 1-2;`},
		{"\ufeffa Q0 x 1 2 t\n", "r.run:1: file starts with a UTF-8 byte order mark"},
	}
	for _, c := range cases {
		o := DefaultOptions()
		if r, ok := strings.CutPrefix(c.run, "rank:"); ok {
			c.run, o.Ties = r, TiesRank
		}
		_, err := evaluate(t, q, c.run, o)
		var fe *formats.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &fe) {
			t.Errorf("%q: error %v, want %q", c.run, err, c.want)
		}
	}
}

func TestQrelsErrors(t *testing.T) {
	recs, err := qrels.ParseRecords("q.qrels", qrels.TREC, strings.NewReader("a 0 x 1\nb 0 y 1\na 0 x 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewQrels("q.qrels", recs)
	if err == nil || !strings.Contains(err.Error(), "q.qrels:3: Duplicate query/gallery relevance records are not allowed") ||
		!strings.Contains(err.Error(), "first given at q.qrels:1") {
		t.Errorf("duplicate qrels: %v", err)
	}
	_, err = NewQrels("q.qrels", []qrels.Record{{QueryID: "a", GalleryID: "x", Grade: math.NaN(), Line: 1}})
	if err == nil || !strings.Contains(err.Error(), "Relevance grades must be finite and non-negative") {
		t.Errorf("NaN grade: %v", err)
	}
	q := mustQrels(t, "a 0 x 0\n")
	if _, err := evaluate(t, q, "", DefaultOptions()); err == nil || !strings.Contains(err.Error(), "no query has a positive grade") {
		t.Errorf("no positives: %v", err)
	}
}

func TestOptionErrors(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\n")
	for _, c := range []struct {
		o    Options
		want string
	}{
		{opts([]int{1, 5}, "ndcg@10", "exponential", TiesTREC), `RetrievalConfig.primary_metric must be one of mrr, map, precision@1, recall@1, hit_rate@1, ndcg@1, precision@5, recall@5, hit_rate@5, ndcg@5; got "ndcg@10"`},
		{opts([]int{0}, "ndcg@0", "exponential", TiesTREC), "RetrievalConfig.ks entries must be >= 1"},
		{opts(nil, "ndcg@10", "exponential", TiesTREC), "RetrievalConfig.ks must not be empty"},
		{opts([]int{1}, "ndcg@1", "cubic", TiesTREC), "RetrievalConfig.gain must be exponential or linear"},
		{opts([]int{1}, "ndcg@1", "linear", Ties(7)), "unknown tie rule"},
	} {
		_, err := evaluate(t, q, "", c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
		var ce *retrieval.ConfigError
		if strings.HasPrefix(c.want, "RetrievalConfig") && !errors.As(err, &ce) {
			t.Errorf("%v is not a ConfigError", err)
		}
	}
}

func TestEmptyRunAndLongLine(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\n")
	res, err := evaluate(t, q, "", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Benchmark.ExtractorResults[0]; r.Name != "trec_run" || r.PrimaryScore != 0 {
		t.Errorf("empty run: %q %v", r.Name, r.PrimaryScore)
	}
	// A document ID longer than the read buffer.
	long := strings.Repeat("d", 3*readBufSize)
	q = mustQrels(t, "a 0 "+long+" 1\n")
	res, err = evaluate(t, q, "a Q0 other 1 2 t\na Q0 "+long+" 2 1 t\n", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := res.Benchmark.ExtractorResults[0].Forward.Metrics.Get("mrr"); v != 0.5 {
		t.Errorf("mrr %v with a long line", v)
	}
	_, err = evaluate(t, q, "a Q0 "+strings.Repeat("x", maxLineBytes+readBufSize), DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "r.run:1: run line longer than") {
		t.Errorf("huge line: %v", err)
	}
}

func TestCancel(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\n")
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "a Q0 d%d 1 1 t\n", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Evaluate(ctx, q, strings.NewReader(b.String()), "r.run", DefaultOptions())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// reference evaluates a run the slow, obvious way: every line split with
// strings.Fields, each query's candidates fully sorted. It mirrors the
// validation rules so differential tests can compare errors too.
func reference(q *Qrels, run string, o Options) ([]metrics.Values, error) {
	if strings.HasPrefix(run, "\ufeff") {
		return nil, errors.New("bom")
	}
	type c struct {
		doc   string
		rank  int64
		score float64
	}
	blocks := map[string][]c{}
	var order []string
	prev := ""
	for i, line := range strings.Split(run, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) < 6 { // fields after the tag are ignored, as by trec_eval
			return nil, fmt.Errorf("line %d: fields", i+1)
		}
		var r int64
		if o.Ties == TiesRank { // trec_eval never reads the rank column
			var err error
			if r, err = strconv.ParseInt(f[3], 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: rank", i+1)
			}
		}
		s, err := strconv.ParseFloat(f[4], 64)
		if ne := (*strconv.NumError)(nil); err != nil && !(errors.As(err, &ne) && ne.Err == strconv.ErrRange) ||
			math.IsNaN(s) || strings.ContainsAny(f[4], "xX_") {
			return nil, fmt.Errorf("line %d: score", i+1)
		}
		if f[0] != prev {
			if _, seen := blocks[f[0]]; seen {
				return nil, fmt.Errorf("line %d: not contiguous", i+1)
			}
			order = append(order, f[0])
			prev = f[0]
		}
		for _, x := range blocks[f[0]] {
			if x.doc == f[2] {
				return nil, fmt.Errorf("line %d: duplicate", i+1)
			}
		}
		blocks[f[0]] = append(blocks[f[0]], c{f[2], r, s + 0})
	}
	rows := make([]metrics.Values, q.NumQueries())
	gain := metrics.Exponential
	if o.Gain == retrieval.GainLinear {
		gain = metrics.Linear
	}
	for ev, id := range q.ids {
		cs := blocks[id]
		sort.Slice(cs, func(a, b int) bool {
			if cs[a].score != cs[b].score {
				return cs[a].score > cs[b].score
			}
			if o.Ties == TiesRank && cs[a].rank != cs[b].rank {
				return cs[a].rank < cs[b].rank
			}
			return cs[a].doc > cs[b].doc
		})
		rank := map[string]int{}
		for i, x := range cs {
			rank[x.doc] = i + 1
		}
		var ranks []int
		var grades, missing []float64
		lo, hi := q.positives(int32(ev))
		for j := lo; j < hi; j++ {
			if r, ok := rank[q.posDoc[j]]; ok {
				ranks, grades = append(ranks, r), append(grades, q.posGrade[j])
			} else {
				missing = append(missing, q.posGrade[j])
			}
		}
		rows[ev] = metrics.QueryWithMissing(ranks, grades, missing, o.Ks, gain)
	}
	return rows, nil
}

// checkAgainstReference runs Evaluate and reference on one input and fails
// when they disagree on acceptance or on any bit of any per-query metric;
// it returns the result (nil on an input error).
func checkAgainstReference(t *testing.T, q *Qrels, run string, o Options) *Result {
	t.Helper()
	res, err := Evaluate(context.Background(), q, strings.NewReader(run), "r.run", o)
	want, refErr := reference(q, run, o)
	if err != nil {
		var fe *formats.Error
		if !errors.As(err, &fe) || fe.Path != "r.run" || fe.Line < 1 {
			t.Fatalf("error %q is not a run line error", err)
		}
		if refErr == nil {
			t.Fatalf("Evaluate fails (%v) where the reference accepts", err)
		}
		return nil
	}
	if refErr != nil {
		t.Fatalf("Evaluate accepts where the reference fails: %v", refErr)
	}
	rows := res.Benchmark.ExtractorResults[0].Forward.PerQuery
	for i, row := range rows {
		for j, v := range row.Metrics.Vals {
			if math.Float64bits(v) != math.Float64bits(want[i].Vals[j]) {
				t.Fatalf("query %q %s = %v, reference %v", row.QueryID, row.Metrics.Keys[j], v, want[i].Vals[j])
			}
		}
	}
	return res
}

// randomRun draws a run with many score ties, shuffled lines within each
// query, some judged documents missing and some unknown queries.
func randomRun(r *rand.Rand) (qrelsText, run string) {
	var qb, rb strings.Builder
	nq := 1 + r.IntN(6)
	for qi := 0; qi < nq; qi++ {
		nd := 1 + r.IntN(12)
		docs := r.Perm(20)[:nd]
		for _, d := range docs {
			if r.IntN(3) == 0 {
				fmt.Fprintf(&qb, "q%d 0 d%d %d\n", qi, d, r.IntN(4))
			}
		}
		if r.IntN(5) == 0 {
			fmt.Fprintf(&qb, "q%d 0 unretrieved%d 1\n", qi, qi)
		}
		if r.IntN(6) == 0 {
			continue // a query the run lacks
		}
		lines := make([]string, 0, nd)
		for i, d := range docs {
			lines = append(lines, fmt.Sprintf("q%d Q0 d%d %d %d t", qi, d, i+1-r.IntN(2), r.IntN(4)))
		}
		r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
		for _, l := range lines {
			rb.WriteString(l + "\n")
		}
	}
	if r.IntN(3) == 0 {
		rb.WriteString("unknown Q0 d1 1 1 t\n")
	}
	fmt.Fprintf(&qb, "q0 0 always 1\n") // at least one positive
	return qb.String(), rb.String()
}

func TestAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for it := 0; it < 1500; it++ {
		qt, run := randomRun(r)
		q := mustQrels(t, qt)
		for _, ties := range []Ties{TiesTREC, TiesRank} {
			for _, gain := range []string{retrieval.GainExponential, retrieval.GainLinear} {
				res := checkAgainstReference(t, q, run, opts([]int{1, 3, 5, 20}, "ndcg@5", gain, ties))
				if it%100 == 0 {
					if _, err := res.Benchmark.MarshalReport(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}

func TestSplitFieldsMatchesStringsFields(t *testing.T) {
	for _, s := range []string{"", " ", "a", " a\tb \r\n", "a\u00a0b\u0085c\u2028d", "a\x85b", "\xc2", "a\xffb c", "\u3000x\u3000"} {
		var f [runFields][]byte
		n := splitFields([]byte(s), &f)
		want := strings.Fields(s)
		if n != len(want) {
			t.Errorf("%q: %d fields, want %d", s, n, len(want))
			continue
		}
		for i := 0; i < min(n, runFields); i++ {
			if string(f[i]) != want[i] {
				t.Errorf("%q: field %d %q, want %q", s, i, f[i], want[i])
			}
		}
	}
}

// TestTRECEvalHabits: what trec_eval accepts is accepted: fields after the
// tag, any rank text under --ties trec, and inf/-inf (or overflowing)
// scores, which order as the extreme values they are.
func TestTRECEvalHabits(t *testing.T) {
	q := mustQrels(t, "a 0 x 1\nb 0 y 1\n")
	want, err := evaluate(t, q, "a Q0 z 1 3 t\na Q0 x 2 2 t\na Q0 w 3 1 t\nb Q0 y 1 1 t\n", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{
		"a Q0 z 1 3 t extra fields\na Q0 x 2 2 t 7\na Q0 w 3 1 t\nb Q0 y 1 1 t\n",
		"a Q0 z 1.0 3 t\na Q0 x two 2 t\na Q0 w - 1 t\nb Q0 y 1e0 1 t\n",
		"a Q0 z 1 inf t\na Q0 x 2 2 t\na Q0 w 3 -inf t\nb Q0 y 1 1 t\n",
		"a Q0 z 1 1e400 t\na Q0 x 2 2 t\na Q0 w 3 -1e400 t\nb Q0 y 1 -Infinity t\n",
	} {
		got, err := evaluate(t, q, run, DefaultOptions())
		if err != nil {
			t.Errorf("%q: %v", run, err)
			continue
		}
		if !slices.Equal(got.Benchmark.ExtractorResults[0].Forward.Metrics.Vals, want.Benchmark.ExtractorResults[0].Forward.Metrics.Vals) {
			t.Errorf("%q: metrics differ", run)
		}
	}
	// x is ranked 2nd in every run above: MRR of a = 1/2, of b = 1.
	if mrr, _ := want.Benchmark.ExtractorResults[0].Forward.Metrics.Get("mrr"); mrr != 0.75 {
		t.Errorf("mrr = %v, want 0.75", mrr)
	}
}
