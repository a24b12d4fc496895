package testutil

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/procfs"
)

// ReadPID waits until the file at path holds a whole line with a pid (the
// test's program writes it) and returns the pid.
func ReadPID(t testing.TB, timeout time.Duration, path string) int {
	t.Helper()
	var pid int
	Eventually(t, timeout, "a pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	return pid
}

// ProcessGone reports whether pid has ended: no such process, or a zombie
// left to an init the test does not control.
func ProcessGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	st, err := procfs.ReadStat(procfs.Root, pid)
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	return st.State == 'Z'
}
