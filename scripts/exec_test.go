package scripts

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExecPassesAndFails(t *testing.T) {
	dir := t.TempDir()
	env := append(os.Environ(), "GREETING=hello")
	r := Exec(context.Background(), Command{Text: `echo "$GREETING from $(pwd)"; echo warn >&2`, Dir: dir, Env: env})
	if r.Status != Passed || r.ExitCode != 0 {
		t.Fatalf("result %+v", r)
	}
	if want := "hello from " + dir + "\nwarn\n"; r.Output != want {
		t.Fatalf("output %q, want %q", r.Output, want)
	}
	if r.Hash != Hash(`echo "$GREETING from $(pwd)"; echo warn >&2`) {
		t.Fatalf("hash %q", r.Hash)
	}

	r = Exec(context.Background(), Command{Text: "echo 3 tests failed; exit 3", Dir: dir, Env: env})
	if r.Status != Failed || r.ExitCode != 3 || r.Output != "3 tests failed\n" {
		t.Fatalf("result %+v", r)
	}

	r = Exec(context.Background(), Command{Text: "true", Dir: filepath.Join(dir, "gone"), Env: env})
	if r.Status != Failed || r.ExitCode != -1 || !strings.Contains(r.Output, "could not start") {
		t.Fatalf("a missing directory: %+v", r)
	}
}

func TestExecKeepsTheTail(t *testing.T) {
	// 2000 numbered lines, about 12 KB: the tail keeps the last, from a
	// whole line.
	r := Exec(context.Background(), Command{Text: `i=1; while [ $i -le 2000 ]; do echo "line $i"; i=$((i+1)); done`, Dir: t.TempDir(), Tail: 1000})
	if r.Status != Passed {
		t.Fatalf("result %+v", r)
	}
	if len(r.Output) > 1000 || !strings.HasSuffix(r.Output, "line 2000\n") || !strings.HasPrefix(r.Output, "line ") {
		t.Fatalf("tail of %d bytes: %q…%q", len(r.Output), r.Output[:min(20, len(r.Output))], r.Output[max(0, len(r.Output)-20):])
	}
}

func TestExecTimesOutAndIsSuperseded(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// A child in the background, as a test runner's server: it goes with
	// the script.
	script := `sleep 60 & echo $! > ` + pidFile + `; echo started; wait`

	r := Exec(context.Background(), Command{Text: script, Dir: dir, Limit: 300 * time.Millisecond})
	if r.Status != Timeout || r.ExitCode != -1 || r.Output != "started\n" {
		t.Fatalf("result %+v", r)
	}
	if r.DurationMs < 300 || r.DurationMs > 10_000 {
		t.Fatalf("ran %d ms for a 300 ms limit", r.DurationMs)
	}
	waitGone(t, pidFile)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r = Exec(ctx, Command{Text: script, Dir: dir, Limit: time.Minute})
	if r.Status != Superseded || r.ExitCode != -1 {
		t.Fatalf("result %+v", r)
	}
	waitGone(t, pidFile)
}

func TestExecEndsWhatTheScriptLeft(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The script exits at once; its child, with the output closed, would
	// run on.
	r := Exec(context.Background(), Command{Text: `sleep 60 >/dev/null 2>&1 & echo $! > ` + pidFile, Dir: dir})
	if r.Status != Passed {
		t.Fatalf("result %+v", r)
	}
	waitGone(t, pidFile)
}

// waitGone waits until the process whose pid is in file has ended.
func waitGone(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Killed, it is a zombie until the shell that started it is
		// reaped; once Exec returned, the shell was, and so the child is
		// gone or reparented and reaped.
		if err := syscall.Kill(pid, 0); err != nil {
			return
		}
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
