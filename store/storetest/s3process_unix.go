//go:build unix

package storetest

import "syscall"

// Stop stalls the server (SIGSTOP).
func (p *S3Process) Stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		p.t.Fatalf("SIGSTOP the S3 server: %v", err)
	}
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
