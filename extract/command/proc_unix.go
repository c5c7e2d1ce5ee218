//go:build unix

package command

import (
	"os/exec"
	"syscall"
)

// configureProcess starts the program in its own process group and kills the
// whole group on cancellation or timeout, so helpers it started (a wrapper
// shell's python, data-loader workers) die with it instead of holding the
// output pipes open.
func configureProcess(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		groupErr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		// Kill the leader directly too, in case it left the group; this
		// also yields os.ErrProcessDone when it had already exited.
		if err := cmd.Process.Kill(); err != nil && groupErr != nil {
			return err
		}
		return nil
	}
}
