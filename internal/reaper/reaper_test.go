package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTimeout bounds every wait; generous, for -race on a busy machine.
const testTimeout = 10 * time.Second

// start makes the test process a subreaper, running Run until the test
// ends, when it stops being one again.
func start(t *testing.T) (*Reaper, *testutil.SyncBuffer) {
	t.Helper()
	var logs testutil.SyncBuffer
	r := Start(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if !r.canReap {
		t.Fatalf("no reaping here: %s", logs.String())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		r.Stop()
		if t.Failed() {
			t.Logf("reaper's log:\n%s", logs.String())
		}
	})
	return r, &logs
}

// gone reports whether no process has this pid: a zombie still counts,
// as it is what reaping is for.
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// zombieChildren lists this process's children that have exited and wait
// to be reaped.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	all, err := procfs.Processes(procfs.Root)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, st := range all {
		if st.PPID == os.Getpid() && st.State == 'Z' {
			out = append(out, st.PID)
		}
	}
	return out
}

// TestStartedChildrenHoldPidfds checks the premise the reaping rests on:
// os holds a pidfd for each child it starts, from the start, while the
// child is a zombie, until its Wait has reaped it.
func TestStartedChildrenHoldPidfds(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	testutil.Eventually(t, testTimeout, "the child to exit", func() bool {
		st, err := procfs.ReadStat(procfs.Root, pid)
		return err == nil && st.State == 'Z'
	})
	held, err := heldPidfds()
	if err != nil {
		t.Fatal(err)
	}
	if !held[pid] {
		t.Errorf("no pidfd held for the zombie child %d (held: %v)", pid, held)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if held, err = heldPidfds(); err != nil || held[pid] {
		t.Errorf("a pidfd for %d is still held after Wait (%v)", pid, err)
	}
	if ok, err := goHoldsPidfds(); !ok || err != nil {
		t.Errorf("goHoldsPidfds() = %v, %v; want true, as children get pidfds here", ok, err)
	}
}

// TestStartAndStop: the test process is a subreaper between Start and
// Stop, and not after.
func TestStartAndStop(t *testing.T) {
	if was, err := isSubreaper(); err != nil || was {
		t.Fatalf("isSubreaper() = %v, %v before Start; the test needs false", was, err)
	}
	r := Start(slog.New(slog.DiscardHandler))
	if is, err := isSubreaper(); err != nil || !is {
		t.Errorf("isSubreaper() = %v, %v after Start, want true", is, err)
	}
	r.Stop()
	if is, err := isSubreaper(); err != nil || is {
		t.Errorf("isSubreaper() = %v, %v after Stop, want false", is, err)
	}
}

// TestReapsAdoptedOnly: orphans that the test process adopts are reaped
// when they exit, while children it starts itself keep getting their own
// exit statuses from Wait, never ECHILD, however the two interleave.
func TestReapsAdoptedOnly(t *testing.T) {
	start(t)

	// One orphan watched closely: adopted, then reaped.
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	if out, err := exec.Command("sh", "-c", `sh -c 'echo $$ > "$0"; exec sleep 0.3' "$0" & :`, pidFile).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	orphan := testutil.ReadPID(t, testTimeout, pidFile)
	if st, err := procfs.ReadStat(procfs.Root, orphan); err == nil && st.PPID != os.Getpid() {
		t.Fatalf("the orphan's parent is %d, not the test process %d: not adopted", st.PPID, os.Getpid())
	}
	testutil.Eventually(t, testTimeout, "the adopted orphan to be reaped", func() bool { return gone(orphan) })

	// Many orphans exiting while started children exit too.
	stop := make(chan struct{})
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		runs int
	)
	for i := range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				want := 3 + i
				err := exec.Command("sh", "-c", fmt.Sprintf("exit %d", want)).Run()
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) || exitErr.ExitCode() != want {
					mu.Lock()
					errs = append(errs, fmt.Errorf("exit %d: got %v", want, err))
					mu.Unlock()
				}
				mu.Lock()
				runs++
				mu.Unlock()
			}
		})
	}
	for range 20 {
		// Each ( true & ) leaves an orphan that exits at once.
		script := strings.Repeat("( true & ); ", 10)
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
			t.Errorf("orphan maker: %v: %s", err, out)
		}
	}
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("%d of %d started children lost their exit status; first: %v", len(errs), runs, errs[0])
	}
	t.Logf("%d started children ran beside 200 orphans", runs)
	testutil.Eventually(t, testTimeout, "no zombie child", func() bool { return len(zombieChildren(t)) == 0 })
}

// TestKillAllEndsEverything: KillAll ends an orphan that left the
// session and cleared its environment, adopted and so still a
// descendant, reaps it, and ends a started child whose Wait then reports
// the kill.
func TestKillAllEndsEverything(t *testing.T) {
	r, logs := start(t)
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	if out, err := exec.Command("sh", "-c", `env -i setsid -f sh -c 'echo $$ > "$0"; exec sleep 600' "$0" </dev/null >/dev/null 2>&1`, pidFile).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	orphan := testutil.ReadPID(t, testTimeout, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(orphan, syscall.SIGKILL) })
	if st, err := procfs.ReadStat(procfs.Root, orphan); err != nil || st.PPID != os.Getpid() {
		t.Fatalf("the orphan's stat is %+v (%v): want the test process %d as its parent", st, err, os.Getpid())
	}

	child := exec.Command("sleep", "600")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- child.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := r.KillAll(ctx); err != nil {
		t.Fatal(err)
	}
	// No waiting: KillAll returns once the orphan is reaped.
	if !gone(orphan) {
		t.Errorf("orphan %d is still there after KillAll", orphan)
	}
	select {
	case err := <-waited:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) || exitErr.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Errorf("the started child's Wait: %v, want killed by SIGKILL", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the started child's Wait did not return")
	}
	if !strings.Contains(logs.String(), "killed processes left behind") {
		t.Errorf("KillAll did not say what it killed")
	}
}
