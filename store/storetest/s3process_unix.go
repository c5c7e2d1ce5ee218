//go:build unix

package storetest

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Stop stalls the server (SIGSTOP) and returns once it is stopped: the
// signal is delivered asynchronously, and a request sent before the
// process has stopped could still be answered.
func (p *S3Process) Stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		p.t.Fatalf("SIGSTOP the S3 server: %v", err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		data, err := os.ReadFile(stat)
		if err != nil { // no procfs: give the signal a moment
			time.Sleep(50 * time.Millisecond)
			return
		}
		// "pid (comm) S …": the state follows the last ')'.
		if i := bytes.LastIndexByte(data, ')'); i >= 0 && i+2 < len(data) && (data[i+2] == 'T' || data[i+2] == 't') {
			return
		}
	}
	p.t.Fatalf("the S3 server (pid %d) did not stop within 5 s of SIGSTOP", p.cmd.Process.Pid)
}

// Continue resumes a stopped server (SIGCONT).
func (p *S3Process) Continue() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		p.t.Fatalf("SIGCONT the S3 server: %v", err)
	}
}

// resume continues a possibly stopped server before it is told to exit.
func (p *S3Process) resume() { p.cmd.Process.Signal(syscall.SIGCONT) }
