package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/encode"
	"github.com/vertebrae-eval/vertebrae/rank"
)

// progress reports endpoint encoding on stderr (SPEC §6.1): a redrawn bar
// with rate and ETA per endpoint on a terminal, one line per endpoint when it
// finishes otherwise.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	start    map[string]time.Time
	now      func() time.Time
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, start: map[string]time.Time{}, now: time.Now}
	if f, ok := w.(*os.File); ok {
		p.terminal = isTerminal(f)
	}
	return p
}

// report implements encode.Progress.
func (p *progress) report(owner string, done, total int) {
	p.reportUnit(owner, "rows", int64(done), int64(total))
}

// scoring implements rank.Progress: pairs scored (SPEC §6.1). Each pass
// (forward, reverse, every backbone) is timed from its first report.
func (p *progress) scoring(done, total int64) { p.reportUnit("scoring", "pairs", done, total) }

// withScoring returns ctx with scoring progress drawn on w when w is a
// terminal; otherwise ctx is returned as it is, so logs and tests capturing
// stderr see no scoring lines.
func withScoring(ctx context.Context, w io.Writer) context.Context {
	p := newProgress(w)
	if !p.terminal {
		return ctx
	}
	return rank.WithProgress(ctx, p.scoring)
}

func (p *progress) reportUnit(owner, unit string, done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	t0, ok := p.start[owner]
	if !ok {
		t0 = now
		p.start[owner] = now
	}
	if done == 0 {
		return // the start signal: nothing done yet to report
	}
	elapsed := now.Sub(t0).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed
	}
	if done == total {
		delete(p.start, owner) // a later pass of the same owner starts afresh
	}
	if !p.terminal {
		if done == total {
			fmt.Fprintf(p.w, "vertebrae: %s: %d %s in %.1fs (%.0f %s/s)\n", owner, total, unit, elapsed, rate, unit)
		}
		return
	}
	const width = 24
	filled := int(width * done / total)
	speed := "" // no rate yet (no time has passed): say nothing rather than "0/s ETA ?"
	if rate > 0 {
		eta := (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second)
		speed = fmt.Sprintf(" %.0f %s/s ETA %s", rate, unit, eta)
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d%s\x1b[K", owner,
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), 100*done/total, done, total, speed)
	if done == total {
		fmt.Fprintln(p.w)
	}
}

var (
	_ encode.Progress = (*progress)(nil).report
	_ rank.Progress   = (*progress)(nil).scoring
)
