package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/memory/admit"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// Progress cadence on a stderr that is not a terminal (SPEC §6.1): a pass
// that has run for progressAfter prints one line, then one every
// progressEvery, with no carriage returns.
// (Variables so that tests can shorten them.)
var (
	progressAfter = 5 * time.Second
	progressEvery = 10 * time.Second
)

// progress reports endpoint encoding and scoring on stderr (SPEC §6.1): a
// redrawn bar with rate and ETA per pass on a terminal; otherwise a plain
// line every progressEvery for a pass that runs longer than progressAfter,
// and one line when a pass finishes (for passes shorter than minFinal, none).
// Counts and rates are in human units ("4.0 G pairs, 306 M pairs/s, ETA 3 s").
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	start    map[string]time.Time
	last     map[string]time.Time // last periodic line per owner (non-terminal)
	now      func() time.Time
	after    time.Duration // first periodic line once a pass has run this long
	every    time.Duration // then one line per this interval
	minFinal time.Duration // no final line for a pass shorter than this
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: map[string]time.Time{}, last: map[string]time.Time{}, now: time.Now,
		after: progressAfter, every: progressEvery}
	if f, ok := w.(*os.File); ok {
		p.terminal = isTerminal(f)
	}
	return p
}

// report implements admit.Progress.
func (p *progress) report(owner string, done, total int) {
	p.reportUnit(owner, "rows", int64(done), int64(total))
}

// scoring implements rank.Progress: pairs scored (SPEC §6.1). Each pass
// (forward, reverse, every backbone) is timed from its first report.
func (p *progress) scoring(done, total int64) { p.reportUnit("scoring", "pairs", done, total) }

// withScoring returns ctx with scoring progress on w: a bar on a terminal,
// otherwise periodic lines for passes longer than progressAfter only, so
// logs and tests capturing stderr of short runs see no scoring lines.
func withScoring(ctx context.Context, w io.Writer) context.Context {
	p := newProgress(w)
	p.minFinal = p.after
	return rank.WithProgress(ctx, p.scoring)
}

// withProgress returns ctx with encoding and scoring progress on w, both
// silent on a non-terminal w for passes shorter than progressAfter (for
// commands such as demo whose short runs print only the report).
func withProgress(ctx context.Context, w io.Writer) context.Context {
	p := newProgress(w)
	p.minFinal = p.after
	return rank.WithProgress(admit.WithProgress(ctx, p.report), p.scoring)
}

func (p *progress) reportUnit(owner, unit string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	t0, ok := p.start[owner]
	if !ok {
		t0 = now
		p.start[owner] = now
		if p.last != nil {
			delete(p.last, owner)
		}
	}
	if done == 0 || total <= 0 {
		return // the start signal: nothing done yet to report
	}
	elapsed := now.Sub(t0)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	finished := done >= total
	if finished {
		delete(p.start, owner) // a later pass of the same owner starts afresh
	}
	if !p.terminal {
		p.line(owner, unit, done, total, elapsed, rate, now, finished)
		return
	}
	const width = 24
	filled := int(width * done / total)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %s%s\x1b[K", owner,
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), 100*done/total,
		progressCounts(unit, done, total), progressSpeed(unit, done, total, rate))
	if finished {
		fmt.Fprintln(p.w)
	}
}

// line is the non-terminal form: periodic lines and the final one.
func (p *progress) line(owner, unit string, done, total int64, elapsed time.Duration, rate float64, now time.Time, finished bool) {
	if finished {
		if p.last != nil {
			delete(p.last, owner)
		}
		if elapsed >= p.minFinal {
			fmt.Fprintf(p.w, "vertebrae: %s: %s %s in %s (%s %s/s)\n", owner, humanCount(total), unit,
				elapsedString(elapsed), humanCount(int64(math.Round(rate))), unit)
		}
		return
	}
	if p.every <= 0 || elapsed < p.after {
		return
	}
	if p.last == nil {
		p.last = map[string]time.Time{}
	}
	if t, ok := p.last[owner]; ok && now.Sub(t) < p.every {
		return
	}
	p.last[owner] = now
	fmt.Fprintf(p.w, "vertebrae: %s: %d%% %s%s\n", owner, 100*done/total,
		progressCounts(unit, done, total), progressSpeed(unit, done, total, rate))
}

// progressCounts is "2.0 k/4.0 k pairs".
func progressCounts(unit string, done, total int64) string {
	return humanCount(done) + "/" + humanCount(total) + " " + unit
}

// progressSpeed is ", 306 M pairs/s, ETA 3 s", or nothing before any time
// has passed (rather than "0/s ETA ?").
func progressSpeed(unit string, done, total int64, rate float64) string {
	if rate <= 0 {
		return ""
	}
	s := ", " + humanCount(int64(math.Round(rate))) + " " + unit + "/s"
	if done < total {
		s += ", ETA " + humanDuration(time.Duration(float64(total-done)/rate*float64(time.Second)))
	}
	return s
}

// humanCount writes n with an SI prefix and three significant figures at
// most: 950, 1.5 k, 30.6 M, 306 M, 4.0 G.
func humanCount(n int64) string {
	if n < 1000 && n > -1000 {
		return fmt.Sprint(n)
	}
	v := float64(n)
	for _, prefix := range []string{"k", "M", "G", "T", "P"} {
		v /= 1000
		if math.Abs(v) < 99.95 {
			return fmt.Sprintf("%.1f %s", v, prefix)
		}
		if math.Abs(v) < 999.5 {
			return fmt.Sprintf("%.0f %s", v, prefix)
		}
	}
	return fmt.Sprintf("%.0f E", v/1000)
}

// humanDuration rounds d to whole seconds: "3 s", "42 s", "2 min 5 s",
// "1 h 3 min".
func humanDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int64(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		s := int64(d.Round(time.Second) / time.Second)
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	}
	m := int64(d.Round(time.Minute) / time.Minute)
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

// elapsedString is humanDuration with tenths of a second below a minute.
func elapsedString(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return humanDuration(d)
}

var (
	_ admit.Progress = (*progress)(nil).report
	_ rank.Progress  = (*progress)(nil).scoring
)
