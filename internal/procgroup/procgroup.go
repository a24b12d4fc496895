// Package procgroup ends a process started in a group of its own
// (SysProcAttr.Setpgid or Setsid) together with everything it started
// that stayed in the group: killing the leader alone would leave a
// script's or git's children running.
package procgroup

import (
	"errors"
	"os"
	"syscall"
)

// Kill sends SIGKILL to the process group led by pid. A group already
// gone is os.ErrProcessDone, as exec.Cmd.Cancel expects.
func Kill(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
	return nil
}
