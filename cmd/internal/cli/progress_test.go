package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// fakeProgress is a progress on buf with a settable clock.
func fakeProgress(buf *bytes.Buffer, terminal bool, clock *time.Time) *progress {
	return &progress{w: buf, terminal: terminal, start: map[string]time.Time{}, last: map[string]time.Time{},
		now: func() time.Time { return *clock }, after: 5 * time.Second, every: 10 * time.Second}
}

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := fakeProgress(&buf, false, &clock)
	p.report("Retriever 'x' query embeddings", 50, 100)
	clock = clock.Add(2 * time.Second)
	p.report("Retriever 'x' query embeddings", 100, 100)
	if got := buf.String(); got != "vertebrae: Retriever 'x' query embeddings: 100 rows in 2.0 s (50 rows/s)\n" {
		t.Errorf("line mode: %q", got)
	}
	buf.Reset()
	p = fakeProgress(&buf, true, &clock)
	p.report("q", 10, 40)
	clock = clock.Add(time.Second)
	p.report("q", 20, 40)
	out := buf.String()
	if !strings.Contains(out, "\rq [############------------]  50% 20/40 rows, 20 rows/s, ETA 1 s\x1b[K") || strings.HasSuffix(out, "\n") {
		t.Errorf("bar mode: %q", out)
	}
	// The first frame has no rate yet: it shows none (not "0 rows/s ETA ?").
	if first := "\rq [######------------------]  25% 10/40 rows\x1b[K"; !strings.HasPrefix(out, first) || strings.Contains(out, " 0 rows/s") {
		t.Errorf("first frame: %q, want %q", out, first)
	}
}

// TestProgressClockStartsBeforeFirstBatch: the encoder's start signal
// (done = 0) starts the clock, so a single-batch endpoint reports its real
// rate instead of "0 rows/s".
func TestProgressClockStartsBeforeFirstBatch(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := fakeProgress(&buf, false, &clock)
	p.report("q", 0, 30)
	clock = clock.Add(3 * time.Second)
	p.report("q", 30, 30)
	if got := buf.String(); got != "vertebrae: q: 30 rows in 3.0 s (10 rows/s)\n" {
		t.Errorf("got %q", got)
	}
}

// TestProgressHumanUnits: counts, rates and durations in SI prefixes and
// words, checked against hand-computed strings.
func TestProgressHumanUnits(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1.0 k"}, {1500, "1.5 k"}, {-1500, "-1.5 k"}, {99_949, "99.9 k"},
		{99_960, "100 k"}, {999_499, "999 k"}, {999_600, "1.0 M"}, {30_600_000, "30.6 M"},
		{306_471_573, "306 M"}, {4_000_000_000, "4.0 G"}, {1_234_000_000_000, "1.2 T"},
	} {
		if got := humanCount(c.n); got != c.want {
			t.Errorf("humanCount(%d) = %q, want %q", c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 s"}, {400 * time.Millisecond, "0 s"}, {2600 * time.Millisecond, "3 s"}, {59 * time.Second, "59 s"},
		{125 * time.Second, "2 min 5 s"}, {time.Hour + 3*time.Minute + 20*time.Second, "1 h 3 min"},
	} {
		if got := humanDuration(c.d); got != c.want {
			t.Errorf("humanDuration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := elapsedString(2500 * time.Millisecond); got != "2.5 s" {
		t.Errorf("elapsedString = %q", got)
	}
}

// Scoring progress: human units with rate and ETA on a terminal
// ("3.1 G/4.0 G pairs, 306 M pairs/s, ETA 3 s", not raw integers), a fresh
// clock for every pass.
func TestScoringProgress(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := fakeProgress(&buf, true, &clock)
	p.reportUnit("scoring", "pairs", 0, 4_000_000_000)
	clock = clock.Add(10 * time.Second)
	// 3,064,715,730 pairs in 10 s: 306,471,573 pairs/s; 935,284,270 left: 3.05 s.
	p.scoring(3_064_715_730, 4_000_000_000)
	if out := buf.String(); out != "\rscoring [##################------]  76% 3.1 G/4.0 G pairs, 306 M pairs/s, ETA 3 s\x1b[K" {
		t.Errorf("bar: %q", out)
	}
	buf.Reset()
	clock = clock.Add(3 * time.Second) // 4.0 G in 13 s: 307.7 M pairs/s
	p.scoring(4_000_000_000, 4_000_000_000)
	if out := buf.String(); out != "\rscoring [########################] 100% 4.0 G/4.0 G pairs, 308 M pairs/s\x1b[K\n" {
		t.Errorf("finished bar: %q", out)
	}
	if _, ok := p.start["scoring"]; ok {
		t.Error("a finished pass keeps its start time")
	}
}

// TestProgressPeriodicNonTerminal: on a stderr that is not a terminal a
// pass longer than 5 s prints one plain line (no carriage return) after
// 5 s, then one per 10 s, and a final line; a short pass prints nothing.
func TestProgressPeriodicNonTerminal(t *testing.T) {
	var buf bytes.Buffer
	clock := time.Unix(0, 0)
	p := fakeProgress(&buf, false, &clock)
	p.minFinal = p.after // as withScoring
	const total = 4_000_000_000
	steps := []struct {
		at   time.Duration
		done int64
	}{{0, 0}, {time.Second, 100_000_000}, {6 * time.Second, 600_000_000}, {12 * time.Second, 1_200_000_000},
		{16 * time.Second, 1_600_000_000}, {25 * time.Second, 2_500_000_000}, {40 * time.Second, total}}
	for _, s := range steps {
		clock = time.Unix(0, 0).Add(s.at)
		p.scoring(s.done, total)
	}
	want := "vertebrae: scoring: 15% 600 M/4.0 G pairs, 100 M pairs/s, ETA 34 s\n" +
		"vertebrae: scoring: 40% 1.6 G/4.0 G pairs, 100 M pairs/s, ETA 24 s\n" +
		"vertebrae: scoring: 4.0 G pairs in 40.0 s (100 M pairs/s)\n"
	if got := buf.String(); got != want {
		t.Errorf("periodic lines:\n%q\nwant\n%q", got, want)
	}
	// A short pass (1 s) prints nothing at all.
	buf.Reset()
	p.scoring(1_000_000_000, total)
	clock = clock.Add(time.Second)
	p.scoring(total, total)
	if buf.Len() != 0 {
		t.Errorf("short pass printed %q", buf.String())
	}
}

// TestProgressNonTerminalCLI: through the CLI (stderr a buffer, not a
// terminal) with the cadence shortened, scoring progress appears as plain
// lines; --quiet turns it off.
func TestProgressNonTerminalCLI(t *testing.T) {
	after, every := progressAfter, progressEvery
	progressAfter, progressEvery = 0, time.Nanosecond
	t.Cleanup(func() { progressAfter, progressEvery = after, every })
	f := newFixture(t)
	args := []string{"retrieval", "run", "--queries", f.q, "--gallery", f.g, "--qrels", f.qrels(t), "--k", "1,2", "--primary", "ndcg@2"}
	code, _, stderr := run(t, args...)
	if code != 0 || !strings.Contains(stderr, "vertebrae: scoring: 6 pairs in ") || strings.Contains(stderr, "\r") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = run(t, append(args, "--quiet")...)
	if code != 0 || strings.Contains(stderr, "scoring") {
		t.Errorf("--quiet: exit %d, stderr %q", code, stderr)
	}
	// With the default cadence a short run prints no progress.
	progressAfter, progressEvery = after, every
	if code, _, stderr = run(t, args...); code != 0 || strings.Contains(stderr, "scoring") {
		t.Errorf("short run: exit %d, stderr %q", code, stderr)
	}
	ctx := context.Background()
	if withScoring(ctx, &bytes.Buffer{}) == ctx {
		t.Error("no scoring progress for a writer that is not a terminal")
	}
}
