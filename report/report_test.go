package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vertebrae-eval/vertebrae/internal/numfmt"
	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
	"github.com/vertebrae-eval/vertebrae/retrieval"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// vals builds metric values for ks = [1] in canonical key order.
func vals(mrr, mapv, p1, r1, h1, n1 float64) metrics.Values {
	return metrics.Values{Keys: metrics.Keys([]int{1}), Vals: []float64{mrr, mapv, p1, r1, h1, n1}}
}

func score(primary string, m metrics.Values, rows ...results.QueryRow) *results.ScoreResult {
	s, _ := m.Get(primary)
	return &results.ScoreResult{Score: s, PrimaryMetric: primary, Metrics: results.MetricObject{Values: m}, PerQuery: rows}
}

func row(id string, m metrics.Values) results.QueryRow {
	return results.QueryRow{QueryID: id, Metrics: m}
}

// testBenchmark is a hand-built benchmark whose run order differs from its
// ranked order, with a bidirectional result, a compression variant, a
// no-op compression and warnings.
func testBenchmark() *results.Benchmark {
	plain := &results.ExtractorResult{
		Name:                "plain",
		Forward:             score("ndcg@1", vals(0.75, 0.625, 0.5, 0.5, 0.5, 0.5), row("q0", vals(1, 1, 1, 1, 1, 1)), row("q1", vals(0.5, 0.25, 0, 0, 0, 0))),
		Reverse:             score("ndcg@1", vals(1, 1, 1, 1, 1, 1), row("g0", vals(1, 1, 1, 1, 1, 1))),
		CompressionMetadata: map[string]any{"method": "none", "applied": false, "fit_side": "gallery"},
		Warnings:            []string{`Query "q1" has no negative candidates.`},
	}
	plain.PrimaryScore = 0.75
	pca := &results.ExtractorResult{
		Name:                "plain[pca_2]",
		Forward:             score("ndcg@1", vals(1, 1, 1, 1, 1, 1), row("q0", vals(1, 1, 1, 1, 1, 1)), row("q,1", vals(1e-7, 1, 1, 1, 1, 1))),
		PrimaryScore:        1,
		CompressionMetadata: map[string]any{"method": "pca", "applied": true, "fit_side": "gallery"},
	}
	noop := &results.ExtractorResult{
		Name:                "plain[pca_3]",
		Forward:             score("ndcg@1", vals(0.5, 0.5, 0, 0, 0, 0), row("q0", vals(0.5, 0.5, 0, 0, 0, 0)), row("q1", vals(0.5, 0.5, 0, 0, 0, 0))),
		CompressionMetadata: map[string]any{"method": "pca", "applied": false, "fit_side": "gallery"},
		Warnings:            []string{"Requested n_components=3 is greater than or equal to the original dimension 3; skipping compression."},
	}
	return &results.Benchmark{
		DatasetSummary: retrieval.Summary{
			Modality: "retrieval", QueryModality: "embeddings", GalleryModality: "embeddings",
			NQueries: 2, NGallery: 3, NRelevancePairs: 3, NExclusions: 1,
			Identity: map[string]any{"schema_version": 2, "mode": "declared", "key": "ab12", "dataset_id": "toy", "revision": "v1"},
			Metadata: map[string]any{"source": "unit <test>", "n": 1.5},
		},
		ExtractorResults: []*results.ExtractorResult{plain, pca, noop},
	}
}

func TestMarkdownGolden(t *testing.T) {
	got, err := Markdown(testBenchmark())
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Markdown differs from %s (run with -update to regenerate):\n%s", golden, got)
	}
	again, _ := Markdown(testBenchmark())
	if !bytes.Equal(got, again) {
		t.Error("Markdown is not deterministic")
	}
}

func TestMarkdownStructure(t *testing.T) {
	b := testBenchmark()
	b.ExtractorResults[0].Name = "a|b\\c\n## injected <script>"
	b.ExtractorResults[0].Warnings = append(b.ExtractorResults[0].Warnings, "line1\r\nline2\rline3")
	out, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.HasSuffix(s, "\n") || strings.HasSuffix(s, "\n\n") {
		t.Error("report must end with exactly one LF")
	}
	if strings.Contains(s, "\r") {
		t.Error("report contains CR")
	}
	if strings.Contains(s, "<script>") {
		t.Error("raw <script> in report")
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for _, l := range lines {
		if strings.HasPrefix(l, "## injected") {
			t.Errorf("injected heading line %q", l)
		}
	}
	const esc = `a\|b\\c<br>## injected &lt;script&gt;`
	if !strings.Contains(s, "| 2 | "+esc+" | 0.7500 |") {
		t.Error("escaped name missing from the ranking table")
	}
	if !strings.Contains(s, "### 2. "+esc+"\n") {
		t.Error("escaped name missing from the details heading")
	}
	if !strings.Contains(s, "- Warning: line1<br>line2<br>line3\n") {
		t.Error("CRLF / CR not turned into <br>")
	}
	// The table is contiguous: header, separator, then one row per result.
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "| rank |") {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatal("no ranking table")
	}
	for i := 1; i <= 1+len(b.ExtractorResults); i++ {
		if !strings.HasPrefix(lines[start+i], "| ") {
			t.Errorf("table line %d is %q", i, lines[start+i])
		}
	}
	if lines[start+2+len(b.ExtractorResults)] != "" {
		t.Error("table not followed by a blank line")
	}
}

func TestEscapeMarkdown(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a|b\\c\n## injected <script>", `a\|b\\c<br>## injected &lt;script&gt;`},
		{"x\r\ny\rz\n", "x<br>y<br>z<br>"},
		{"\r\r\n", "<br><br>"},
		{"&lt;", "&amp;lt;"},
		{`\|`, `\\\|`},
		{"plain-name_1", "plain-name_1"},
	}
	for _, tc := range tests {
		if got := EscapeMarkdown(tc.in); got != tc.want {
			t.Errorf("EscapeMarkdown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestMarkdownErrors(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*results.Benchmark)
		want   string
	}{
		{"no forward", func(b *results.Benchmark) { b.ExtractorResults[1].Forward = nil }, "no forward score result"},
		{"non-finite", func(b *results.Benchmark) { b.ExtractorResults[2].PrimaryScore = math.NaN() }, "non-finite"},
		{"missing primary", func(b *results.Benchmark) { b.ExtractorResults[1].Forward.PrimaryMetric = "ndcg@10" }, `no forward metric "ndcg@10"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := testBenchmark()
			tc.mutate(b)
			_, err := Markdown(b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMarkdownEmpty(t *testing.T) {
	b := &results.Benchmark{}
	b.Metadata.RetrievalConfig.PrimaryMetric = "ndcg@10"
	out, err := Markdown(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("| rank | extractor | primary score | ndcg@10 | mrr | map |\n| ---: |")) ||
		!bytes.HasSuffix(out, []byte("\n\n## Details\n")) {
		t.Errorf("unexpected empty report:\n%s", out)
	}
}

func TestFormatFloat(t *testing.T) {
	tests := []float64{0, 1, -1, 0.5, 2.5, 1e-7, 1e-6, 1.5e-7, 1e-300, 5e-324, 1e20, 1e21, 1e300,
		123456789, 0.1, 1.0 / 3, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1)}
	for _, f := range tests {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatFloat(f); got != string(want) {
			t.Errorf("FormatFloat(%v) = %q, encoding/json gives %q", f, got, want)
		}
	}
	for _, f := range []float32{1e-7, 0.1, 1.5, 3e38, 1e21, 7.006492e-45} {
		want, _ := json.Marshal(f)
		if got := string(numfmt.AppendJSON(nil, float64(f), 32)); got != string(want) {
			t.Errorf("float32 %v = %q, encoding/json gives %q", f, got, want)
		}
	}
	if got := FormatFloat(1e-7); got != "1e-7" {
		t.Errorf("FormatFloat(1e-7) = %q", got)
	}
}

func TestCSV(t *testing.T) {
	var buf bytes.Buffer
	if err := CSV(&buf, testBenchmark()); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"extractor,direction,query_id,mrr,map,precision@1,recall@1,hit_rate@1,ndcg@1",
		"plain,forward,q0,1,1,1,1,1,1",
		"plain,forward,q1,0.5,0.25,0,0,0,0",
		"plain,reverse,g0,1,1,1,1,1,1",
		"plain[pca_2],forward,q0,1,1,1,1,1,1",
		`plain[pca_2],forward,"q,1",1e-7,1,1,1,1,1`,
		"plain[pca_3],forward,q0,0.5,0.5,0,0,0,0",
		"plain[pca_3],forward,q1,0.5,0.5,0,0,0,0",
		"",
	}, "\n")
	if buf.String() != want {
		t.Errorf("CSV =\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestCSVField(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{" leading space", " leading space"},
		{"a,b", `"a,b"`},
		{`say "hi"`, `"say ""hi"""`},
		{"cr\rx", "\"cr\rx\""},
		{"lf\nx", "\"lf\nx\""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := string(appendCSVField(nil, tc.in)); got != tc.want {
			t.Errorf("field %q = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCSVErrors(t *testing.T) {
	b := testBenchmark()
	b.ExtractorResults[2].Forward.PerQuery[1].Metrics = metrics.Values{Keys: []string{"mrr", "map"}, Vals: []float64{1, 1}}
	if err := CSV(&bytes.Buffer{}, b); err == nil || !strings.Contains(err.Error(), "differ from the header") {
		t.Errorf("err = %v", err)
	}
	b = testBenchmark()
	b.ExtractorResults[0].Forward.PerQuery[0].Metrics.Vals[3] = math.Inf(1)
	if err := CSV(&bytes.Buffer{}, b); err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("err = %v", err)
	}
}

func TestTRECRun(t *testing.T) {
	run := &results.Run{
		QueryIDs:   []string{"q0", "q1", "q2"},
		GalleryIDs: []string{"g0", "g1", "g2"},
		Candidates: [][]results.RankedCandidate{
			{{Index: 2, Score: 0.9}, {Index: 0, Score: 0.5}, {Index: 1, Score: 1e-7}},
			{},
			{{Index: 1, Score: 3}, {Index: 0, Score: math.Copysign(0, -1)}, {Index: 2, Score: -2.5}},
		},
	}
	tests := []struct {
		name    string
		float32 bool
		tag     string
		want    string
	}{
		{"float64", false, "my model\tv2", "q0 Q0 g2 1 0.9 my_model_v2\nq0 Q0 g0 2 0.5 my_model_v2\nq0 Q0 g1 3 1e-7 my_model_v2\n" +
			"q2 Q0 g1 1 3 my_model_v2\nq2 Q0 g0 2 0 my_model_v2\nq2 Q0 g2 3 -2.5 my_model_v2\n"},
		// 0.9 and 1e-7 are not float32 values; the float32 form is the
		// shortest that round-trips the rounded float32.
		{"float32", true, "m[pca_2]", "q0 Q0 g2 1 0.9 m[pca_2]\nq0 Q0 g0 2 0.5 m[pca_2]\nq0 Q0 g1 3 1e-7 m[pca_2]\n" +
			"q2 Q0 g1 1 3 m[pca_2]\nq2 Q0 g0 2 0 m[pca_2]\nq2 Q0 g2 3 -2.5 m[pca_2]\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := *run
			r.Float32 = tc.float32
			if tc.float32 {
				r.Candidates = [][]results.RankedCandidate{
					{{Index: 2, Score: float64(float32(0.9))}, {Index: 0, Score: 0.5}, {Index: 1, Score: float64(float32(1e-7))}},
					{}, run.Candidates[2],
				}
			}
			var buf bytes.Buffer
			if err := TRECRun(&buf, &r, tc.tag); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Errorf("run =\n%s\nwant\n%s", buf.String(), tc.want)
			}
		})
	}
}

func TestTRECRunScoresRoundTrip(t *testing.T) {
	for _, s := range []float64{0.1, 1.0 / 3, 1e-300, 123456.789, -0.7071067811865476} {
		line := string(appendScore(nil, s, 64))
		var back float64
		if err := json.Unmarshal([]byte(line), &back); err != nil || back != s {
			t.Errorf("float64 %v -> %q -> %v (%v)", s, line, back, err)
		}
		f32 := float32(s)
		line = string(appendScore(nil, float64(f32), 32))
		var back32 float32
		if err := json.Unmarshal([]byte(line), &back32); err != nil || back32 != f32 {
			t.Errorf("float32 %v -> %q -> %v (%v)", f32, line, back32, err)
		}
	}
}

func TestRunTag(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a b\tc\nd\u00a0e\u2003f", "a_b_c_d_e_f"},
		{"x[pca_2]", "x[pca_2]"},
	}
	for _, tc := range tests {
		if got := RunTag(tc.in); got != tc.want {
			t.Errorf("RunTag(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTRECWhitespaceIDs(t *testing.T) {
	const frag = "contains whitespace; cannot be written to a TREC file"
	tests := []struct {
		name     string
		qids     []string
		gids     []string
		wantSide string
		wantID   string
	}{
		{"query", []string{"q 0"}, []string{"g0"}, "query ID", `"q 0"`},
		{"gallery", []string{"q0"}, []string{"g\t0"}, "gallery ID", `"g\t0"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			check := func(what string, err error, buf *bytes.Buffer) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s: want error", what)
				}
				msg := err.Error()
				if !strings.Contains(msg, frag) || !strings.Contains(msg, tc.wantSide) || !strings.Contains(msg, tc.wantID) {
					t.Errorf("%s: err = %q", what, msg)
				}
				if buf.Len() != 0 {
					t.Errorf("%s: wrote %q before failing", what, buf.String())
				}
			}
			var buf bytes.Buffer
			run := &results.Run{QueryIDs: tc.qids, GalleryIDs: tc.gids, Candidates: [][]results.RankedCandidate{{{Index: 0, Score: 1}}}}
			check("run", TRECRun(&buf, run, "t"), &buf)
			buf.Reset()
			check("qrels", TRECQrels(context.Background(), &buf, tc.qids, tc.gids, lists([][]retrieval.Positive{{{Index: 0, Grade: 1}}})), &buf)
		})
	}
}

func TestTRECQrels(t *testing.T) {
	qids := []string{"q0", "q1", "q2"}
	gids := []string{"g0", "g1", "g2"}
	eligible := [][]retrieval.Positive{
		{{Index: 0, Grade: 1}, {Index: 2, Grade: 2.5}},
		nil, // no eligible positive: no line
		{{Index: 1, Grade: 1e-300}, {Index: 2, Grade: 3}},
	}
	var buf bytes.Buffer
	if err := TRECQrels(context.Background(), &buf, qids, gids, lists(eligible)); err != nil {
		t.Fatal(err)
	}
	want := "q0 0 g0 1\nq0 0 g2 2.5\nq2 0 g1 1e-300\nq2 0 g2 3\n"
	if buf.String() != want {
		t.Errorf("qrels =\n%s\nwant\n%s", buf.String(), want)
	}
	buf.Reset()
	err := TRECQrels(context.Background(), &buf, []string{"#q"}, gids, lists([][]retrieval.Positive{{{Index: 0, Grade: 1}}}))
	if err == nil || !strings.Contains(err.Error(), "comment") {
		t.Errorf("'#' query ID: err = %v", err)
	}
	// A cancelled write stops between queries.
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err = TRECQrels(ctx, io.Discard, qids, gids, func(q int) []retrieval.Positive {
		if calls++; calls == 2 {
			cancel()
		}
		return eligible[q]
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Errorf("cancelled after query 1: err = %v after %d queries", err, calls)
	}
}

func lists(eligible [][]retrieval.Positive) func(int) []retrieval.Positive {
	return func(q int) []retrieval.Positive { return eligible[q] }
}

func TestRunFileName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain.run"},
		{"x[pca_2]", "x_pca_2_.run"},
		{"a b/c\\d:é", "a_b_c_d__.run"},
		{"v1.2-final_3", "v1.2-final_3.run"},
	}
	for _, tc := range tests {
		if got := RunFileName(tc.in); got != tc.want {
			t.Errorf("RunFileName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRunTargets(t *testing.T) {
	named := func(names ...string) []*results.ExtractorResult {
		out := make([]*results.ExtractorResult, len(names))
		for i, n := range names {
			out[i] = &results.ExtractorResult{Name: n}
		}
		return out
	}
	tests := []struct {
		name    string
		results []*results.ExtractorResult
		want    []string
		wantErr bool
	}{
		{"single is the path", named("x y"), []string{"out/run.txt"}, false},
		{"several go to the directory", named("a", "a[pca_2]"), []string{"out/run.txt/a.run", "out/run.txt/a_pca_2_.run"}, false},
		{"collision", named("a b", "a_b"), nil, true},
		{"collision of brackets", named("m[pca_2]", "m_pca_2_"), nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RunTargets(tc.results, "out/run.txt")
			if tc.wantErr {
				if !errors.Is(err, ErrRunFileCollision) || !strings.Contains(err.Error(), "run file name collision") {
					t.Errorf("err = %v, want run file name collision", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				tc.want[i] = filepath.FromSlash(tc.want[i])
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("targets = %v, want %v", got, tc.want)
			}
		})
	}
}
