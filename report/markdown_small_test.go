package report

import (
	"bytes"
	"testing"

	"github.com/vertebrae-eval/vertebrae/metrics"
	"github.com/vertebrae-eval/vertebrae/results"
)

// TestFixed4SmallValues: values below 0.001 keep 3 significant digits
// instead of collapsing to 0.0000.
func TestFixed4SmallValues(t *testing.T) {
	for f, want := range map[float64]string{
		0: "0.0000", 0.5: "0.5000", 0.0017: "0.0017", 0.001: "0.0010", 0.000042: "4.2e-05",
		0.0005: "0.0005", -0.00012345: "-0.000123", 1: "1.0000",
	} {
		if got, err := fixed4(f, "r", "m"); err != nil || got != want {
			t.Errorf("fixed4(%v) = %q, %v; want %q", f, got, err, want)
		}
	}
}

// TestMarginsInMarkdown: the similarity diagnostics the README advertises
// appear in the details; unavailable ones (null summaries) are left out.
func TestMarginsInMarkdown(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := &results.ScoreResult{Diagnostics: results.Diagnostics{
		PositiveSimilarity:        metrics.Summary{Mean: f(0.9), Median: f(0.95), Min: f(0.1), Max: f(1)},
		NearestNegativeSimilarity: metrics.Summary{Mean: f(0.6), Median: f(0.5), Min: f(0), Max: f(0.9)},
		RetrievalMargin:           metrics.Summary{Mean: f(0.3), Median: f(0.00002), Min: f(-0.2), Max: f(0.8)},
	}}
	var buf bytes.Buffer
	if err := writeMargins(&buf, "Forward", s, "r"); err != nil {
		t.Fatal(err)
	}
	want := "- Forward similarity: positive similarity mean=0.9000 median=0.9500; nearest negative mean=0.6000 median=0.5000; margin mean=0.3000 median=2e-05\n"
	if buf.String() != want {
		t.Errorf("got  %q\nwant %q", buf.String(), want)
	}
	buf.Reset()
	if err := writeMargins(&buf, "Forward", &results.ScoreResult{}, "r"); err != nil || buf.Len() != 0 {
		t.Errorf("null summaries rendered %q (%v)", buf.String(), err)
	}
}
