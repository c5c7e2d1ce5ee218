package command

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/vertebrae-eval/vertebrae/matrix"
)

// Persistent mode (SPEC §9.4, `persistent: true`): one process per branch,
// started by the first batch and kept until Close. Each batch is one request
// line and one reply line; batches for a branch are serialised on its
// process (requests are never pipelined), which keeps the protocol a plain
// loop for the program and its replies trivially ordered. Different branches
// have different processes and may run concurrently.
//
// A failed batch (the process exited, timed out, answered out of turn or
// with malformed or non-finite embeddings) stops the process: its state is
// unknown. An {"error": ...} reply fails only its batch; the process stays,
// since the stream is still in step. A later batch after a stop starts a
// fresh process.

// cancelWait bounds how long a canceled batch waits for its killed process
// to be reaped before returning, so cancellation returns within a second.
const cancelWait = 500 * time.Millisecond

// ErrWorkerReply is wrapped by errors reporting a persistent worker's
// {"batch": n, "error": "..."} reply.
var ErrWorkerReply = errors.New("worker reported an error")

// errStopped marks a worker that must not take further batches.
var errStopped = errors.New("persistent worker stopped")

// worker is one live persistent process.
type worker struct {
	e      *Extractor
	branch string

	// mu is held for a whole request or shutdown: one batch at a time.
	mu         sync.Mutex
	next       int   // number of the next batch
	width      int   // columns of the first answered batch; 0 before it
	widthBatch int   // the batch that set width
	stopped    error // non-nil once the worker must not be used

	cmd     *exec.Cmd
	kill    context.CancelFunc // kills the process group (Cmd.Cancel)
	stdin   io.WriteCloser
	stdoutR *os.File
	stderrR *os.File
	stderr  *tailBuffer

	lines      chan []byte   // stdout lines; closed at EOF or read error
	discard    chan struct{} // closed at shutdown: the stdout reader drops lines
	exited     chan struct{} // closed once the process has been reaped
	waitErr    error         // cmd.Wait's result; read after exited
	stderrDone chan struct{} // closed at stderr EOF
	discardOne sync.Once
}

// workerLabel names a branch's persistent process in messages.
func (e *Extractor) workerLabel(branch string) string {
	s := fmt.Sprintf("command extractor %q: persistent worker", e.cfg.Name)
	if branch != DefaultBranch {
		s += fmt.Sprintf(" (branch %q)", branch)
	}
	return s
}

// workerFor returns the branch's live worker, starting one if needed.
func (e *Extractor) workerFor(branch, modality string) (*worker, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w := e.workers[branch]; w != nil {
		return w, nil
	}
	if modality == "" {
		modality = e.Modality() // rows of any modality: each says its own
	}
	w, err := e.startWorker(branch, modality)
	if err != nil {
		return nil, err
	}
	if e.workers == nil {
		e.workers = map[string]*worker{}
	}
	e.workers[branch] = w
	return w, nil
}

// forget drops w from the live workers, so the next batch starts afresh.
func (e *Extractor) forget(w *worker) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.workers[w.branch] == w {
		delete(e.workers, w.branch)
	}
}

// startWorker starts the program with pipes of its own: stdout and stderr
// are read by goroutines of the worker rather than by exec, so Cmd.Wait
// returns as soon as the process is reaped.
func (e *Extractor) startWorker(branch, modality string) (*worker, error) {
	procCtx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(procCtx, e.cfg.Argv[0], e.cfg.Argv[1:]...)
	cmd.Dir = e.cfg.Dir
	cmd.Env = e.environ("", branch, modality)
	configureProcess(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		kill()
		return nil, err
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		kill()
		stdin.Close()
		return nil, err
	}
	files = append(files, outR, outW)
	errR, errW, err := os.Pipe()
	if err != nil {
		kill()
		stdin.Close()
		closeAll()
		return nil, err
	}
	files = append(files, errR, errW)
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		kill()
		closeAll() // Start closed the stdin pipe
		return nil, fmt.Errorf("%s: cannot run %q: %w", e.workerLabel(branch), e.cfg.Argv[0], err)
	}
	outW.Close()
	errW.Close()
	w := &worker{
		e: e, branch: branch, cmd: cmd, kill: kill, stdin: stdin,
		stdoutR: outR, stderrR: errR, stderr: &tailBuffer{max: stderrTailBytes},
		lines: make(chan []byte), discard: make(chan struct{}),
		exited: make(chan struct{}), stderrDone: make(chan struct{}),
	}
	go func() {
		w.waitErr = cmd.Wait() // reaps the process: no zombie is left
		kill()
		close(w.exited)
	}()
	go func() {
		io.Copy(w.stderr, errR)
		close(w.stderrDone)
	}()
	go w.readStdout()
	return w, nil
}

// readStdout hands stdout lines to requests one at a time, or drops them
// after stopReading.
func (w *worker) readStdout() {
	defer close(w.lines)
	br := bufio.NewReaderSize(w.stdoutR, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			select {
			case w.lines <- line:
			case <-w.discard:
			}
		}
		if err != nil {
			return
		}
	}
}

// runPersistent encodes one batch as one request to the branch's process.
func (e *Extractor) runPersistent(ctx context.Context, b batch) (*matrix.Dense, error) {
	label := e.label(b)
	rows, _, err := encodeInput(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: canceled before start: %w", label, err)
	}
	w, err := e.workerFor(b.branch, b.modality)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	ids := make([]string, len(b.items))
	for i, it := range b.items {
		ids[i] = it.ID
	}
	return w.request(ctx, label, rows, b.row, ids)
}

// request sends one batch and waits for its reply.
func (w *worker) request(ctx context.Context, label string, rows []byte, row rowIndex, ids []string) (*matrix.Dense, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped != nil {
		return nil, fmt.Errorf("%s: %w", label, w.stopped)
	}
	n := w.next
	w.next++
	label = fmt.Sprintf("%s, batch %d", label, n)

	// The rows are JSON Lines, whose lines contain no raw newline (JSON
	// escapes it in strings): joined by commas they form the array.
	req := make([]byte, 0, len(rows)+32)
	req = fmt.Appendf(req, `{"batch":%d,"rows":[`, n)
	req = append(req, bytes.ReplaceAll(bytes.TrimSuffix(rows, []byte("\n")), []byte("\n"), []byte(","))...)
	req = append(req, "]}\n"...)
	// Written aside: a program that does not read (a full pipe) must not
	// keep the timeout or a cancellation from being noticed.
	written := make(chan error, 1)
	go func() {
		_, err := w.stdin.Write(req)
		written <- err
	}()

	var timeout <-chan time.Time
	if t := w.e.cfg.Timeout; t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeout = timer.C
	}
	var reply []byte
	lines, exited := w.lines, w.exited
	var grace <-chan time.Time
	for reply == nil || written != nil {
		select {
		case <-written:
			// A failed write means the program closed its stdin, most
			// likely by exiting: its stdout and exit status tell more.
			written = nil
		case line, ok := <-lines:
			if !ok {
				return nil, w.crashed(label)
			}
			if len(bytes.TrimSpace(line)) > 0 {
				reply, lines = line, nil
			}
		case <-exited:
			// Lines it wrote before exiting may still be in the pipe; a
			// helper holding stdout open must not stall us forever.
			exited = nil
			grace = time.After(waitDelay)
		case <-grace:
			if reply != nil {
				written = nil // it answered, then exited: a later batch fails
				continue
			}
			return nil, w.crashed(label)
		case <-timeout:
			w.stop(true)
			return nil, fmt.Errorf("%s: %w after %v (per-batch timeout)%s", label, ErrTimeout, w.e.cfg.Timeout, w.stderrTail())
		case <-ctx.Done():
			w.stop(false)
			return nil, fmt.Errorf("%s: canceled: %w", label, ctx.Err())
		}
	}

	m, err := parseReply(reply, n, row, ids)
	if err == nil && w.width != 0 && m.Cols() != w.width {
		err = fmt.Errorf("%w: inconsistent widths: %d columns, batch %d had %d", ErrMalformed, m.Cols(), w.widthBatch, w.width)
	}
	if err != nil {
		if errors.Is(err, ErrWorkerReply) {
			w.settleStderr() // the stream is in step: the process stays
		} else {
			w.stop(true) // out of step or broken: its state is unknown
		}
		return nil, fmt.Errorf("%s: %w%s", label, err, w.stderrTail())
	}
	if w.width == 0 {
		w.width, w.widthBatch = m.Cols(), n
	}
	return m, nil
}

// crashed reports a process that closed its stdout without answering: it
// gets a moment to exit so that its exit status can be quoted.
func (w *worker) crashed(label string) error {
	exitedItself := false
	select {
	case <-w.exited:
		exitedItself = true
	case <-time.After(waitDelay):
	}
	w.stop(true)
	status, cause := "closed its stdout", error(nil)
	if exitedItself {
		status, cause = "exited with status 0", w.waitErr
		if cause != nil {
			status = "exited: " + cause.Error()
		}
	}
	return &workerError{
		msg: fmt.Sprintf("%s: the program %s before answering%s", label, status, w.stderr.quoteOrEmpty()),
		err: cause,
	}
}

// workerError keeps the *exec.ExitError of a crash reachable by errors.As.
type workerError struct {
	msg string
	err error
}

func (e *workerError) Error() string { return e.msg }
func (e *workerError) Unwrap() error { return e.err }

// stop kills the process and retires the worker. With wait it waits for the
// process to be reaped and, briefly, for the rest of its stderr, so that the
// error can quote it; without, it waits at most cancelWait and cleans up in
// the background.
func (w *worker) stop(wait bool) {
	if w.stopped == nil {
		w.stopped = errStopped
	}
	w.e.forget(w)
	w.kill()
	if !wait {
		select {
		case <-w.exited:
		case <-time.After(cancelWait):
		}
		go w.release()
		return
	}
	<-w.exited
	w.release()
}

// stopReading makes the stdout reader drop what it reads from now on, so a
// program printing more cannot block on a full pipe instead of exiting.
func (w *worker) stopReading() { w.discardOne.Do(func() { close(w.discard) }) }

// release frees the pipes once the process is gone, after its stderr reached
// EOF or, when a helper holds it open, after waitDelay. Closing twice is
// harmless.
func (w *worker) release() {
	w.stopReading()
	select {
	case <-w.stderrDone:
	case <-time.After(waitDelay):
	}
	w.stdin.Close()
	w.stdoutR.Close()
	w.stderrR.Close()
}

// settleStderr gives a live process's stderr a moment to arrive (what it
// logged just before its reply may still be in the pipe): it waits until
// nothing new came for settleQuiet, at most settleMax.
func (w *worker) settleStderr() {
	const settleQuiet, settleMax = 20 * time.Millisecond, 200 * time.Millisecond
	deadline := time.Now().Add(settleMax)
	for last := w.stderr.size(); time.Now().Before(deadline); {
		select {
		case <-w.stderrDone:
			return
		case <-time.After(settleQuiet):
		}
		n := w.stderr.size()
		if n == last {
			return
		}
		last = n
	}
}

// stderrTail quotes the stderr kept so far.
func (w *worker) stderrTail() string { return w.stderr.quote() }

// shutdown closes the program's stdin and waits, at most Timeout, for it to
// exit with status 0.
func (w *worker) shutdown(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped != nil {
		return nil // already killed; the failure was reported then
	}
	w.stopped = errStopped
	label := w.e.workerLabel(w.branch)
	w.stopReading() // output after the last reply is ignored
	w.stdin.Close()
	var timeout <-chan time.Time
	if t := w.e.cfg.Timeout; t > 0 {
		timer := time.NewTimer(t)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-w.exited:
	case <-timeout:
		w.kill()
		<-w.exited
		w.release()
		return fmt.Errorf("%s: %w: still running %v after its stdin was closed%s", label, ErrTimeout, w.e.cfg.Timeout, w.stderrTail())
	case <-ctx.Done():
		w.kill()
		select {
		case <-w.exited:
		case <-time.After(cancelWait):
		}
		go w.release()
		return fmt.Errorf("%s: canceled: %w", label, ctx.Err())
	}
	w.release()
	if w.waitErr != nil {
		return &workerError{msg: fmt.Sprintf("%s: the program failed at exit: %v%s", label, w.waitErr, w.stderr.quoteOrEmpty()), err: w.waitErr}
	}
	return nil
}

// Close ends the persistent processes (Shutdown without a deadline of its
// own: each process gets Timeout to exit). It waits for batches in flight.
// Without Persistent, or when no batch ran, it does nothing. The extractor
// stays usable: a later batch starts a new process.
func (e *Extractor) Close() error { return e.Shutdown(context.Background()) }

// Shutdown closes the stdin of every persistent process and waits for each
// to exit 0 within Timeout; a non-zero exit status, a timeout (the process
// is then killed) or ctx ending first (likewise) is an error quoting the
// stderr tail. Processes already stopped by a failed batch are not reported
// again.
func (e *Extractor) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	branches := make([]string, 0, len(e.workers))
	for b := range e.workers {
		branches = append(branches, b)
	}
	slices.Sort(branches)
	workers := make([]*worker, len(branches))
	for i, b := range branches {
		workers[i] = e.workers[b]
	}
	e.workers = nil
	e.mu.Unlock()
	var errs []error
	for _, w := range workers {
		if err := w.shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
