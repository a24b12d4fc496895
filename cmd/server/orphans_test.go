package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// TestRunShutdownKillsOrphans: a process an agent started with
// env -i setsid -f left the terminal's session, dropped the session's tag
// and lost its parent at once, so nothing but its ancestry ties it to the
// server. It still dies when the server shuts down, and is reaped: run
// leaves neither the process nor its zombie behind.
func TestRunShutdownKillsOrphans(t *testing.T) {
	dir := t.TempDir()
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", dir,
		"--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", "500ms")
	hc := newHTTPClient(t)

	pidFile := filepath.Join(dir, "orphan.pid")
	postSession(t, hc, r, []string{"sh", "-c",
		`env -i setsid -f sh -c 'echo $$ > "$0"; exec sleep 600' "$0" </dev/null >/dev/null 2>&1; exec sleep 60`, pidFile})
	orphan := testutil.ReadPID(t, waitTimeout, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
	// The pid is written before the exec of sleep; the environment is
	// only worth reading once the exec is done.
	testutil.Eventually(t, waitTimeout, "the orphan to become sleep", func() bool {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", orphan))
		return err == nil && strings.TrimSpace(string(comm)) == "sleep"
	})
	st, err := procfs.ReadStat(procfs.Root, orphan)
	if err != nil {
		t.Fatal(err)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", orphan))
	if err != nil {
		t.Fatal(err)
	}
	if st.Session != orphan || bytes.Contains(env, []byte(sessions.EnvSessionID+"=")) {
		t.Fatalf("the orphan's session is %d and its environment %q: the test needs it in a session of its own and untagged", st.Session, env)
	}
	t.Logf("orphan %d has parent %d; the server is %d", orphan, st.PPID, os.Getpid())

	r.signal(syscall.SIGTERM)
	if code := r.wait(); code != 0 {
		t.Errorf("run returned %d, want 0", code)
	}
	// No waiting here: run returns once it has killed and reaped it.
	if !processGone(orphan) {
		state := "running"
		if st, err := procfs.ReadStat(procfs.Root, orphan); err == nil && st.State == 'Z' {
			state = "a zombie"
		}
		t.Errorf("process %d (env -i setsid -f) outlived the server's shutdown: it is %s", orphan, state)
	}
	if len(linesWith(r.log.String(), "killed processes left behind", fmt.Sprint(orphan))) == 0 {
		t.Error("the log does not say which processes were left behind and killed")
	}
}
