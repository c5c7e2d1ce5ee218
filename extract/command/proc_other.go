//go:build !unix

package command

import "os/exec"

// configureProcess keeps exec's default: cancellation kills the program
// itself; Cmd.WaitDelay bounds waiting for any helpers it started.
func configureProcess(cmd *exec.Cmd) {}
