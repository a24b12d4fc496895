package procgroup

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestKill: the group's leader is killed, even while it waits for a
// child of its group; a group that is gone is os.ErrProcessDone.
func TestKill(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := Kill(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the leader ended with %v, want killed", err)
	}

	done := exec.Command("true")
	done.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	if err := Kill(done.Process.Pid); !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("kill of a group that is gone: %v", err)
	}
}
