//go:build linux

package pty_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/pty"
)

// detached starts, inside the child, a daemon that leaves the terminal's
// session (setsid) and closes the terminal, as Codex's app-server does,
// and writes its pid to the returned path. With wrap ("env -i"), setsid
// runs under that command.
func detached(t *testing.T, tag, wrap string) (*pty.Process, int) {
	t.Helper()
	pidFile := t.TempDir() + "/daemon.pid"
	// A background job of sh -c is in sh's group, not its leader, so
	// setsid need not fork: the daemon stays sh's child (sh then execs
	// sleep, keeping its pid).
	p, err := pty.Start(pty.Options{
		Argv: []string{"sh", "-c", wrap + ` setsid sh -c 'echo $$ > "$0"; exec sleep 600' "$0" </dev/null >/dev/null 2>&1 & exec sleep 600`, pidFile},
		Env:  append(os.Environ(), tag),
		Tag:  tag,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	daemon := testutil.ReadPID(t, testTimeout, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(daemon, syscall.SIGKILL) })
	// The pid is written before the exec of sleep, and a process in the
	// middle of an exec can show no environment: a busy machine caught
	// SignalTagged there, looking for the tag in nothing.
	testutil.Eventually(t, testTimeout, "the daemon to become sleep", func() bool {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", daemon))
		return err == nil && strings.TrimSpace(string(comm)) == "sleep"
	})
	if sid, err := unix.Getsid(daemon); err != nil || sid == p.Pid() {
		t.Fatalf("the daemon's session is %d (%v); the test needs it outside the child's %d", sid, err, p.Pid())
	}
	return p, daemon
}

// TestSignalSessionReachesTaggedDaemons: a process that left the
// terminal's session still carries the child's tag, and is signalled with
// the rest.
func TestSignalSessionReachesTaggedDaemons(t *testing.T) {
	p, daemon := detached(t, "PTY_TEST_TAG="+strconv.Itoa(os.Getpid())+"-a", "")
	if err := p.SignalSession(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the daemon to die", func() bool { return testutil.ProcessGone(daemon) })
	wait(t, p)
}

// TestSignalTagged: what an earlier run left, found by its tag alone.
func TestSignalTagged(t *testing.T) {
	tag := "PTY_TEST_TAG=" + strconv.Itoa(os.Getpid()) + "-b"
	p, daemon := detached(t, tag, "")
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	if testutil.ProcessGone(daemon) {
		t.Fatal("the daemon died with the child's group: the test shows nothing")
	}
	if err := pty.SignalTagged("PTY_TEST_TAG=other", syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if testutil.ProcessGone(daemon) {
		t.Fatal("another tag killed the daemon")
	}
	if err := pty.SignalTagged(tag, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the daemon to die", func() bool { return testutil.ProcessGone(daemon) })
}

// ignoredHelperEnv makes the test binary start a child in a terminal and
// print what it reads of its own signal dispositions.
const ignoredHelperEnv = "PTY_TEST_PRINT_CHILD_SIGIGN"

// TestChildrenStartWithDefaultSignals: a program started with SIGHUP,
// SIGINT and SIGQUIT ignored (nohup, a background job of a script) starts
// its children with every signal at its default action, so a hangup of
// their terminal still ends them.
func TestChildrenStartWithDefaultSignals(t *testing.T) {
	if os.Getenv(ignoredHelperEnv) != "" {
		p, err := pty.Start(pty.Options{Argv: []string{"sh", "-c", "grep SigIgn /proc/self/status"}})
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		fmt.Print(readAll(t, p))
		wait(t, p)
		return
	}
	// trap "" makes sh ignore them, and exec keeps them ignored.
	cmd := exec.Command("sh", "-c", `trap "" HUP INT QUIT; grep SigIgn /proc/self/status; exec "$0" -test.run='^TestChildrenStartWithDefaultSignals$'`, os.Args[0])
	cmd.Env = append(os.Environ(), ignoredHelperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var masks []uint64
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "SigIgn:" {
			m, err := strconv.ParseUint(f[1], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			masks = append(masks, m)
		}
	}
	if len(masks) != 2 {
		t.Fatalf("output %q: want the wrapper's and the child's SigIgn lines", out)
	}
	bit := func(sig syscall.Signal) uint64 { return 1 << (uint(sig) - 1) }
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT} {
		if masks[0]&bit(sig) == 0 {
			t.Fatalf("the wrapper does not ignore %v (SigIgn %x): the test shows nothing", sig, masks[0])
		}
		if masks[1]&bit(sig) != 0 {
			t.Errorf("the child in the terminal ignores %v (SigIgn %x), inherited from its parent", sig, masks[1])
		}
	}
}

// TestSignalSessionReachesUntaggedDescendants: a process that left the
// terminal's session and cleared its environment, so that neither the
// session id nor the tag finds it, is still the child's descendant, and
// is signalled with the rest.
func TestSignalSessionReachesUntaggedDescendants(t *testing.T) {
	tag := "PTY_TEST_TAG=" + strconv.Itoa(os.Getpid()) + "-c"
	p, daemon := detached(t, tag, "env -i")
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", daemon))
	if err != nil {
		t.Fatal(err)
	}
	if sid, err := unix.Getsid(daemon); err != nil || sid == p.Pid() || strings.Contains(string(env), tag) {
		t.Fatalf("the daemon's session is %d (%v) and its environment %q; the test needs it outside the child's session %d and untagged", sid, err, env, p.Pid())
	}
	if err := p.SignalSession(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the daemon to die", func() bool { return testutil.ProcessGone(daemon) })
	wait(t, p)
}
