package sessions_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// ignoredHangupEnv marks a run of this test binary whose parent made it
// ignore SIGHUP, as nohup does.
const ignoredHangupEnv = "SESSIONS_TEST_SIGHUP_IGNORED"

// TestStopsWithSIGHUPIgnored runs the tests that stop agents by hanging
// up their terminal in a copy of this binary started with SIGHUP ignored,
// as under nohup or a process manager that ignores it: agents must still
// start with SIGHUP at its default action, or every stop waits out the
// grace period and ends in SIGKILL.
func TestStopsWithSIGHUPIgnored(t *testing.T) {
	if os.Getenv(ignoredHangupEnv) != "" {
		t.Skip("already running with SIGHUP ignored")
	}
	cmd := exec.Command("sh", "-c", `trap "" HUP; exec "$0" -test.count=1 -test.v -test.run="$1"`,
		os.Args[0], "^(TestDestroyStopsRunningSession|TestShutdown|TestRunEndTakesDetachedHelpers|TestHangupReachesAgents)$")
	cmd.Env = append(os.Environ(), ignoredHangupEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("with SIGHUP ignored: %v\n%s", err, out)
	}
	for _, name := range []string{"TestDestroyStopsRunningSession", "TestShutdown", "TestRunEndTakesDetachedHelpers", "TestHangupReachesAgents"} {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass with SIGHUP ignored:\n%s", name, out)
		}
	}
}

// TestHangupReachesAgents: an agent gets SIGHUP at its default action,
// whatever the server inherited.
func TestHangupReachesAgents(t *testing.T) {
	if os.Getenv(ignoredHangupEnv) != "" {
		if ignored, err := hangupIgnored(os.Getpid()); err != nil || !ignored {
			t.Fatalf("this run should ignore SIGHUP: %v, %v", ignored, err)
		}
	}
	m, _ := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	ignored, err := hangupIgnored(s.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if ignored {
		t.Errorf("the agent ignores SIGHUP")
	}
}

// hangupIgnored reports whether process pid ignores SIGHUP.
func hangupIgnored(pid int) (bool, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(string(b)) {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			var m uint64
			for _, c := range strings.TrimSpace(mask) {
				m = m<<4 | uint64(strings.IndexRune("0123456789abcdef", c))
			}
			return m&(1<<(syscall.SIGHUP-1)) != 0, nil
		}
	}
	return false, os.ErrNotExist
}

// TestRunEndTakesDetachedHelpers: what an agent started and left running
// when it exited, even a daemon that left its terminal's session, ends
// with the run; and a destroyed session's do too.
func TestRunEndTakesDetachedHelpers(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	daemonCmd := func(pidFile, after string) []string {
		return []string{"sh", "-c", `setsid sh -c 'echo $$ > "$0"; exec sleep 600' "$0" </dev/null >/dev/null 2>&1 & ` + after, pidFile}
	}
	dir := t.TempDir()
	ended := create(t, m, sessions.CreateOptions{Command: daemonCmd(filepath.Join(dir, "a"), "sleep 0.2; exit 0")})
	a := testutil.ReadPID(t, testTimeout, filepath.Join(dir, "a"))
	destroyed := create(t, m, sessions.CreateOptions{Command: daemonCmd(filepath.Join(dir, "b"), "exec sleep 600")})
	b := testutil.ReadPID(t, testTimeout, filepath.Join(dir, "b"))
	t.Cleanup(func() {
		_ = syscall.Kill(a, syscall.SIGKILL)
		_ = syscall.Kill(b, syscall.SIGKILL)
	})
	testutil.Eventually(t, testTimeout, "the first agent's run to end", func() bool { return !ended.Info().Running })
	testutil.Eventually(t, testTimeout, "its daemon to die", func() bool { return testutil.ProcessGone(a) })
	if testutil.ProcessGone(b) {
		t.Fatal("the other session's daemon died with the first run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Destroy(ctx, destroyed.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the destroyed session's daemon to die", func() bool { return testutil.ProcessGone(b) })
}
