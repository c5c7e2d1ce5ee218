package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/encode"
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
	if !p.terminal {
		if done == total {
			fmt.Fprintf(p.w, "vertebrae: %s: %d rows in %.1fs (%.0f rows/s)\n", owner, total, elapsed, rate)
		}
		return
	}
	const width = 24
	filled := width * done / total
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d %.0f rows/s ETA %s\x1b[K", owner,
		strings.Repeat("#", filled), strings.Repeat("-", width-filled), 100*done/total, done, total, rate, eta)
	if done == total {
		fmt.Fprintln(p.w)
	}
}

var _ encode.Progress = (*progress)(nil).report
