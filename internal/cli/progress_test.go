package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &buf, start: map[string]time.Time{}, now: func() time.Time { return clock }}
	p.report("Retriever 'x' query embeddings", 50, 100)
	clock = clock.Add(2 * time.Second)
	p.report("Retriever 'x' query embeddings", 100, 100)
	if got := buf.String(); got != "vertebrae: Retriever 'x' query embeddings: 100 rows in 2.0s (50 rows/s)\n" {
		t.Errorf("line mode: %q", got)
	}
	buf.Reset()
	p = &progress{w: &buf, terminal: true, start: map[string]time.Time{}, now: func() time.Time { return clock }}
	p.report("q", 10, 40)
	clock = clock.Add(time.Second)
	p.report("q", 20, 40)
	out := buf.String()
	if !strings.Contains(out, "\rq [############------------]  50% 20/40 20 rows/s ETA 1s") || strings.HasSuffix(out, "\n") {
		t.Errorf("bar mode: %q", out)
	}
	// The first frame has no rate yet: it shows none (not "0 rows/s ETA ?").
	if first := "\rq [######------------------]  25% 10/40\x1b[K"; !strings.HasPrefix(out, first) || strings.Contains(out, " 0 rows/s") {
		t.Errorf("first frame: %q, want %q", out, first)
	}
}

// TestProgressClockStartsBeforeFirstBatch: the encoder's start signal
// (done = 0) starts the clock, so a single-batch endpoint reports its real
// rate instead of "0 rows/s".
func TestProgressClockStartsBeforeFirstBatch(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &buf, start: map[string]time.Time{}, now: func() time.Time { return clock }}
	p.report("q", 0, 30)
	clock = clock.Add(3 * time.Second)
	p.report("q", 30, 30)
	if got := buf.String(); got != "vertebrae: q: 30 rows in 3.0s (10 rows/s)\n" {
		t.Errorf("got %q", got)
	}
}

// Scoring progress: pairs with rate and ETA on a terminal, a fresh clock for
// every pass, and nothing at all when stderr is not a terminal.
func TestScoringProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := &progress{w: &buf, terminal: true, start: map[string]time.Time{}, now: func() time.Time { return clock }}
	p.scoring(1000, 4000)
	clock = clock.Add(time.Second)
	p.scoring(2000, 4000)
	if out := buf.String(); !strings.Contains(out, "\rscoring [############------------]  50% 2000/4000 2000 pairs/s ETA 1s") {
		t.Errorf("bar: %q", out)
	}
	clock = clock.Add(time.Second)
	p.scoring(4000, 4000)
	if !strings.HasSuffix(buf.String(), "\n") {
		t.Errorf("the finished bar ends its line: %q", buf.String())
	}
	if _, ok := p.start["scoring"]; ok {
		t.Error("a finished pass keeps its start time")
	}
	ctx := context.Background()
	if withScoring(ctx, &buf) != ctx {
		t.Error("scoring progress installed for a writer that is not a terminal")
	}
}
