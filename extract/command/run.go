package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

const (
	// stderrTailBytes and stderrTailLines bound the stderr quoted in errors;
	// only that much of the child's stderr is ever kept in memory.
	stderrTailBytes = 2048
	stderrTailLines = 20
	// waitDelay bounds how long Wait keeps reading pipes that a grandchild
	// still holds open after the program exited or was killed.
	waitDelay = 2 * time.Second
)

// batch is one process's worth of rows.
type batch struct {
	side, branch, modality string
	start, stride          int // item i is endpoint row start + i×stride
	items                  []Item
}

// row is the endpoint index of item i.
func (b batch) row(i int) int { return b.start + i*max(1, b.stride) }

// span names the batch's rows in messages.
func (b batch) span() string {
	if b.stride <= 1 || len(b.items) <= 1 {
		return fmt.Sprintf("[%d, %d)", b.start, b.start+len(b.items))
	}
	return fmt.Sprintf("%d to %d every %d", b.start, b.row(len(b.items)-1), b.stride)
}

// label names the batch in messages: extractor, side, row range and branch.
func (e *Extractor) label(b batch) string {
	s := fmt.Sprintf("command extractor %q: %s rows %s", e.cfg.Name, b.side, b.span())
	if b.branch != DefaultBranch {
		s += fmt.Sprintf(" (branch %q)", b.branch)
	}
	return s
}

// run encodes one batch with one process.
func (e *Extractor) run(ctx context.Context, b batch) (*matrix.Dense, error) {
	label := e.label(b)
	stdin, modality, err := encodeInput(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: canceled before start: %w", label, err)
	}
	runCtx := ctx
	if e.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
	}

	cmd := exec.CommandContext(runCtx, e.cfg.Argv[0], e.cfg.Argv[1:]...)
	cmd.Dir = e.cfg.Dir
	cmd.Env = e.environ(b.side, b.branch, modality)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: stderrTailBytes}
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	configureProcess(cmd)

	err = cmd.Run()
	if err != nil {
		var exitErr *exec.ExitError
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%s: canceled: %w", label, ctx.Err())
		case errors.Is(runCtx.Err(), context.DeadlineExceeded):
			return nil, fmt.Errorf("%s: %w after %v (per-batch timeout)%s", label, ErrTimeout, e.cfg.Timeout, stderr.quote())
		case errors.Is(err, exec.ErrWaitDelay):
			return nil, fmt.Errorf("%s: output pipes still open %v after the program exited (a child process kept them): %w%s",
				label, waitDelay, err, stderr.quote())
		case errors.As(err, &exitErr):
			return nil, fmt.Errorf("%s: program failed: %w%s", label, err, stderr.quoteOrEmpty())
		default:
			return nil, fmt.Errorf("%s: cannot run %q: %w", label, e.cfg.Argv[0], err)
		}
	}

	out := stdout.Bytes()
	ids := make([]string, len(b.items))
	for i, it := range b.items {
		ids[i] = it.ID
	}
	isNPY := bytes.HasPrefix(out, npyMagic)
	var m *matrix.Dense
	switch {
	case e.output == OutputNPY && !isNPY:
		err = fmt.Errorf("%w: stdout is not a .npy stream (output is %q)", ErrMalformed, OutputNPY)
	case e.output == OutputJSONL && isNPY:
		err = fmt.Errorf("%w: stdout is a .npy stream but output is %q", ErrMalformed, OutputJSONL)
	case isNPY:
		m, err = parseNPY(out, b.row, ids)
	default:
		m, err = parseJSONL(out, b.row, ids)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w%s", label, err, stderr.quote())
	}
	return m, nil
}

// environ is the program's environment: the parent's, then Config.Env, then
// the protocol variables. exec keeps the last of duplicate keys, so the
// protocol variables win. A persistent worker serves both sides, so side is
// "" for it and VERTEBRAE_SIDE is removed rather than set (each row carries
// its "side").
func (e *Extractor) environ(side, branch, modality string) []string {
	env := append(append(os.Environ(), e.cfg.Env...),
		"VERTEBRAE_BRANCH="+branch,
		"VERTEBRAE_MODALITY="+modality,
	)
	if side != "" {
		return append(env, "VERTEBRAE_SIDE="+side)
	}
	kept := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "VERTEBRAE_SIDE=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// inputRow is one stdin line. value carries what the modality encodes; the
// optional fields repeat the item's set fields for programs that prefer them.
type inputRow struct {
	Index    int       `json:"index"`
	ID       string    `json:"id"`
	Side     string    `json:"side"`
	Modality string    `json:"modality"`
	Value    any       `json:"value"`
	Text     *string   `json:"text,omitempty"`
	Path     string    `json:"path,omitempty"`
	Vector   []float64 `json:"vector,omitempty"`
}

// inferModality is the modality of an item when none is configured.
func inferModality(it Item) string {
	switch {
	case it.Vector != nil:
		return "embeddings"
	case it.Path != "":
		return "image"
	}
	return "text"
}

// encodeInput renders the batch as JSON Lines and returns the modality
// announced in VERTEBRAE_MODALITY.
func encodeInput(b batch) ([]byte, string, error) {
	modality := b.modality
	inferred := modality == ""
	if inferred {
		modality = inferModality(b.items[0])
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep texts readable; JSON does not need it
	for i, it := range b.items {
		index := b.row(i)
		fail := func(format string, args ...any) ([]byte, string, error) {
			return nil, "", fmt.Errorf("input row %d (ID %q): %s", index, it.ID, fmt.Sprintf(format, args...))
		}
		if inferred && inferModality(it) != modality {
			return fail("modality %s differs from the batch's %s (set Config.Modality)", inferModality(it), modality)
		}
		// JSON cannot carry invalid UTF-8; encoding/json would silently
		// replace it, so the program would embed something else.
		if !utf8.ValidString(it.ID) || !utf8.ValidString(it.Text) || !utf8.ValidString(it.Path) {
			return fail("ID, text or path is not valid UTF-8")
		}
		row := inputRow{Index: index, ID: it.ID, Side: b.side, Modality: modality, Vector: it.Vector}
		if it.Path != "" {
			// The program may run in another directory.
			abs, err := filepath.Abs(it.Path)
			if err != nil {
				return fail("cannot resolve path %q: %v", it.Path, err)
			}
			row.Path = abs
		}
		source := modality
		switch modality {
		case "text", "image", "embeddings":
		default: // custom modality: the most specific field that is set
			source = inferModality(it)
		}
		switch source {
		case "image":
			if row.Path == "" {
				return fail("image item has no path")
			}
			row.Value = row.Path
		case "embeddings":
			if it.Vector == nil {
				return fail("embeddings item has no vector")
			}
			row.Value = it.Vector
		default:
			row.Value = it.Text
		}
		if it.Text != "" || source == "text" {
			row.Text = &it.Text
		}
		if err := enc.Encode(row); err != nil {
			return fail("cannot encode as JSON: %v", err)
		}
	}
	return buf.Bytes(), modality, nil
}

// tailBuffer keeps the last max bytes written to it. It is safe for
// concurrent use: a persistent worker's stderr is copied into it while
// errors quote it.
type tailBuffer struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
	written   int64 // bytes written in all
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.written += int64(n)
	if len(p) >= t.max {
		t.truncated = t.truncated || len(t.buf) > 0 || len(p) > t.max
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return n, nil
	}
	if drop := len(t.buf) + len(p) - t.max; drop > 0 {
		t.buf = append(t.buf[:0], t.buf[drop:]...)
		t.truncated = true
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// size returns the number of bytes written in all.
func (t *tailBuffer) size() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.written
}

// tail returns at most the last stderrTailLines complete lines kept.
func (t *tailBuffer) tail() (lines []string, truncated bool) {
	t.mu.Lock()
	s := strings.TrimRight(string(t.buf), "\r\n")
	truncated = t.truncated
	t.mu.Unlock()
	if truncated {
		// The first kept line is probably cut: drop it when more follow.
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	if s == "" {
		return nil, truncated
	}
	lines = strings.Split(s, "\n")
	if len(lines) > stderrTailLines {
		lines = lines[len(lines)-stderrTailLines:]
		truncated = true
	}
	for i, l := range lines {
		lines[i] = strings.ToValidUTF8(strings.TrimRight(l, "\r"), "\uFFFD")
	}
	return lines, truncated
}

// quote renders the stderr tail for an error message ("" when empty).
func (t *tailBuffer) quote() string {
	lines, truncated := t.tail()
	if len(lines) == 0 {
		return ""
	}
	var sb strings.Builder
	sb.WriteString("\nstderr")
	if truncated {
		sb.WriteString(" (last lines)")
	}
	sb.WriteString(":")
	for _, l := range lines {
		sb.WriteString("\n  ")
		sb.WriteString(l)
	}
	return sb.String()
}

// quoteOrEmpty is quote, but says so when stderr was empty: after a failed
// exit that is worth knowing.
func (t *tailBuffer) quoteOrEmpty() string {
	if q := t.quote(); q != "" {
		return q
	}
	return " (stderr was empty)"
}
