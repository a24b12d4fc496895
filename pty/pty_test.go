//go:build linux

package pty_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/pty"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testTimeout = 10 * time.Second

// readAll collects everything p writes until EOF, failing the test if the
// stream does not end by the deadline.
func readAll(t *testing.T, p *pty.Process) string {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(p)
		ch <- result{b, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("read: %v", r.err)
		}
		return string(r.b)
	case <-time.After(testTimeout):
		_ = p.Signal(syscall.SIGKILL)
		t.Fatal("output did not end within the deadline")
		return ""
	}
}

func wait(t *testing.T, p *pty.Process) pty.ExitStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, err := p.Wait(ctx)
	if err != nil {
		t.Fatalf("wait: %v", err)
	}
	return st
}

func TestStartReadsOutputAndExitCode(t *testing.T) {
	p, err := pty.Start(pty.Options{Argv: []string{"sh", "-c", "printf 'hello\\n'; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := readAll(t, p)
	// The line discipline turns \n into \r\n on output.
	if out != "hello\r\n" {
		t.Fatalf("output = %q, want %q", out, "hello\r\n")
	}
	if st := wait(t, p); st.Code != 3 || st.Signal != 0 {
		t.Fatalf("status = %+v, want code 3 and no signal", st)
	}
}

func TestStartSizeDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	p, err := pty.Start(pty.Options{
		Argv: []string{"sh", "-c", `stty size; pwd; echo "$AGENTMUX_TEST"`},
		Dir:  dir,
		Env:  []string{"AGENTMUX_TEST=yes", "PATH=/usr/bin:/bin"},
		Cols: 123, Rows: 45,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := readAll(t, p)
	want := "45 123\r\n" + dir + "\r\nyes\r\n"
	if out != want {
		t.Fatalf("output = %q, want %q", out, want)
	}
	wait(t, p)
}

func TestWriteAndResize(t *testing.T) {
	// The shell reads a line, reports the size after a resize, then exits.
	p, err := pty.Start(pty.Options{
		Argv: []string{"sh", "-c", `read line; stty size; echo "got:$line"`},
		Cols: 80, Rows: 24,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Resize(100, 30); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write([]byte("ping\r")); err != nil {
		t.Fatal(err)
	}
	out := readAll(t, p)
	if !strings.Contains(out, "30 100\r\n") || !strings.Contains(out, "got:ping\r\n") {
		t.Fatalf("output = %q, want the new size and the echoed line", out)
	}
	wait(t, p)
}

// TryWrite hands a key to a program without waiting: it takes what the
// terminal takes now and reports a full input queue as 0, nil, never as
// an error and never by blocking.
func TestTryWriteNeverWaits(t *testing.T) {
	p, err := pty.Start(pty.Options{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if n, err := p.TryWrite([]byte("key\r")); n != 4 || err != nil {
		t.Fatalf("TryWrite(key) = %d, %v; want 4, nil", n, err)
	}
	// sleep reads nothing: lines pile up until the terminal refuses.
	line := []byte(strings.Repeat("x", 1023) + "\r")
	total := 0
	for {
		n, err := p.TryWrite(line)
		if err != nil {
			t.Fatalf("TryWrite after %d bytes: %v", total, err)
		}
		if n == 0 {
			break
		}
		total += n
		if total > 64<<20 {
			t.Fatal("the terminal took 64 MiB from a program that reads nothing")
		}
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
}

func TestSignalReachesProcessGroup(t *testing.T) {
	// The child shell starts a foreground sleep; signalling the group must
	// end both, so the output stream closes.
	p, err := pty.Start(pty.Options{Argv: []string{"sh", "-c", "echo ready; sleep 60; echo never"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	buf := make([]byte, 64)
	var got []byte
	deadline := time.Now().Add(testTimeout)
	for !bytes.Contains(got, []byte("ready")) {
		if time.Now().After(deadline) {
			t.Fatalf("no ready line, got %q", got)
		}
		n, err := p.Read(buf)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		got = append(got, buf[:n]...)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if rest := readAll(t, p); strings.Contains(rest, "never") {
		t.Fatalf("process kept running after the signal: %q", rest)
	}
	st := wait(t, p)
	if st.Signal != syscall.SIGTERM || st.Code != 128+int(syscall.SIGTERM) {
		t.Fatalf("status = %+v, want killed by SIGTERM", st)
	}
	// The group is gone; signalling it again is not an error.
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal after exit: %v", err)
	}
}

func TestStartMissingProgram(t *testing.T) {
	_, err := pty.Start(pty.Options{Argv: []string{"/nonexistent/agentmux-no-such-program"}})
	if err == nil {
		t.Fatal("start of a missing program succeeded")
	}
	if !strings.Contains(err.Error(), "agentmux-no-such-program") {
		t.Fatalf("error %q does not name the program", err)
	}
	if _, err := pty.Start(pty.Options{}); err == nil {
		t.Fatal("start with no command succeeded")
	}
}

func TestCloseIsIdempotentAndWaitHonoursContext(t *testing.T) {
	p, err := pty.Start(pty.Options{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("caller gave up")
	cancel(cause)
	if _, err := p.Wait(ctx); !errors.Is(err, cause) {
		t.Fatalf("wait with a cancelled context = %v, want the cause", err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestCloseEndsAPendingRead(t *testing.T) {
	p, err := pty.Start(pty.Options{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := p.Read(make([]byte, 16))
		readErr <- err
	}()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-readErr:
		if err != io.EOF {
			t.Fatalf("pending read after Close = %v, want io.EOF", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Close did not end the pending read")
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	wait(t, p)
}

func TestSignalSessionReachesBackgroundJobs(t *testing.T) {
	// An interactive shell with job control puts "sleep &" in a process
	// group of its own; signalling the agent's group alone would miss it.
	dir := t.TempDir()
	pidFile := dir + "/bg.pid"
	p, err := pty.Start(pty.Options{Argv: []string{"sh", "-ic", `set -m; sleep 60 & echo $! > ` + pidFile + `; echo started; wait`}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var bgPID int
	testutil.Eventually(t, testTimeout, "the background job's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		bgPID, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	if pgid, err := syscall.Getpgid(bgPID); err != nil || pgid == p.Pid() {
		t.Fatalf("background job's group = %d (%v); the test needs it outside the agent's group %d", pgid, err, p.Pid())
	}
	if err := p.SignalSession(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the background job to die", func() bool {
		return testutil.ProcessGone(bgPID)
	})
	wait(t, p)
}

// Unread counts what the program has not read yet, and what it has read
// no more; looking does not keep the terminal open, so the stream still
// ends when the program does.
func TestUnreadCountsInputTheProgramHasNotRead(t *testing.T) {
	dir := t.TempDir()
	ready, goAhead, took := dir+"/ready", dir+"/go", dir+"/took"
	p, err := pty.Start(pty.Options{Argv: []string{"sh", "-c",
		`stty raw -echo; touch "$0"; until [ -e "$1" ]; do sleep 0.01; done; head -c 6 >/dev/null; touch "$2"; exec sleep 60`,
		ready, goAhead, took}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	exists := func(f string) func() bool {
		return func() bool { _, err := os.Stat(f); return err == nil }
	}
	unread := func(want int) func() bool {
		return func() bool {
			n, err := p.Unread()
			if err != nil {
				t.Fatalf("Unread: %v", err)
			}
			return n == want
		}
	}
	testutil.Eventually(t, testTimeout, "the program in raw mode", exists(ready))
	if n, err := p.Unread(); n != 0 || err != nil {
		t.Fatalf("Unread before any input = %d, %v; want 0, nil", n, err)
	}
	if _, err := p.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "6 bytes unread while the program does not read", unread(6))
	if err := os.WriteFile(goAhead, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the program read its 6 bytes", exists(took))
	if n, err := p.Unread(); n != 0 || err != nil {
		t.Fatalf("Unread after the program read = %d, %v; want 0, nil", n, err)
	}
	if err := p.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	readAll(t, p) // ends: the looks left nothing holding the terminal
	wait(t, p)
	if _, err := p.Unread(); err != nil {
		t.Logf("Unread after the end: %v", err) // either way is fine; it must not hang
	}
}
