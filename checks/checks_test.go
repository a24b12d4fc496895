package checks

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reports collects what a Runner reports, and wakes a waiter on each.
type reports struct {
	mu       sync.Mutex
	got      []scripts.Result
	cps      []int
	sessions []string
	wake     chan struct{}
}

func newReports() *reports { return &reports{wake: make(chan struct{}, 64)} }

func (r *reports) add(session string, cp int, res scripts.Result) {
	r.mu.Lock()
	r.got = append(r.got, res)
	r.cps = append(r.cps, cp)
	r.sessions = append(r.sessions, session)
	r.mu.Unlock()
	r.wake <- struct{}{}
}

// until waits for the report of checkpoint cp with status.
func (r *reports) until(t testing.TB, cp int, status scripts.Status) scripts.Result {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		r.mu.Lock()
		for i, res := range r.got {
			if r.cps[i] == cp && res.Status == status {
				r.mu.Unlock()
				return res
			}
		}
		r.mu.Unlock()
		select {
		case <-r.wake:
		case <-deadline:
			t.Fatalf("no report of checkpoint %d %s; got %v %+v", cp, status, r.cps, r.got)
		}
	}
}

// newRunner returns a Runner of the check script text (from the server's
// flags, so approved), keeping results in a real bbolt file.
func newRunner(t testing.TB, text string, rep *reports) (*Runner, *store.Store) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "agentmux.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := scripts.NewTrust(scripts.TrustOptions{Root: dir, Overrides: scripts.Overrides{Check: text}, Approvals: st})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{
		Trust:  trust,
		Store:  st,
		Env:    func(string) ([]string, error) { return os.Environ(), nil },
		Report: rep.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		st.Close()
	})
	return r, st
}

// TestRunnerKeepsAndSupersedes: a check reports running, then how it
// ended, kept by checkpoint; one still running when the agent works again
// is superseded; Close stops what runs without a result.
func TestRunnerKeepsAndSupersedes(t *testing.T) {
	rep := newReports()
	r, _ := newRunner(t, `if [ -e slow ]; then exec sleep 60; fi; echo ok`, rep)
	dir := t.TempDir()
	r.Start("s1", dir, 1)
	rep.until(t, 1, scripts.Running)
	if res := rep.until(t, 1, scripts.Passed); res.Output != "ok\n" {
		t.Fatalf("checkpoint 1: %+v", res)
	}

	if err := os.WriteFile(filepath.Join(dir, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.Start("s1", dir, 2)
	rep.until(t, 2, scripts.Running)
	r.Supersede("s1")
	rep.until(t, 2, scripts.Superseded)
	results, err := r.Results("s1")
	if err != nil {
		t.Fatal(err)
	}
	if results[1].Status != scripts.Passed || results[2].Status != scripts.Superseded || len(results) != 2 {
		t.Fatalf("kept results: %+v", results)
	}

	// The agent went on before the checkpoint's check could start.
	r.Supersede("s1")
	r.opts.Busy = func(string) bool { return true }
	r.Start("s1", dir, 3)
	rep.until(t, 3, scripts.Superseded)
	r.opts.Busy = func(string) bool { return false }

	// Running when the Runner closes: stopped, neither reported nor kept.
	r.Start("s2", dir, 1)
	rep.until(t, 1, scripts.Running)
	r.Close()
	if results, _ := r.Results("s2"); len(results) != 0 {
		t.Fatalf("a check stopped by Close was kept: %+v", results)
	}
	r.Start("s2", dir, 2) // after Close: nothing
	rep.mu.Lock()
	defer rep.mu.Unlock()
	var s2 []scripts.Status
	for i, s := range rep.sessions {
		if s == "s2" {
			s2 = append(s2, rep.got[i].Status)
		}
	}
	if len(s2) != 1 || s2[0] != scripts.Running {
		t.Fatalf("s2's reports %v, want only its start", s2)
	}
}

// BenchmarkCheckOverhead is what agentmux adds to a check beyond the
// script's own run: reading the scripts in force and their approval,
// the environment, the run, storing the result in bbolt and reporting
// it, for a script that does nothing; BenchmarkExecOnly is the script's
// run alone, through the same Exec. Their difference is the overhead a
// check adds to a turn (the checkpoint before it is taken either way).
func BenchmarkCheckOverhead(b *testing.B) {
	rep := newReports()
	r, _ := newRunner(b, "true", rep)
	dir := b.TempDir()
	b.ResetTimer()
	for i := range b.N {
		r.Start("s", dir, i+1)
		rep.until(b, i+1, scripts.Passed)
	}
}

// BenchmarkExecOnly: see BenchmarkCheckOverhead.
func BenchmarkExecOnly(b *testing.B) {
	dir := b.TempDir()
	for range b.N {
		if res := scripts.Exec(context.Background(), scripts.Command{Text: "true", Dir: dir, Env: os.Environ()}); res.Status != scripts.Passed {
			b.Fatalf("%+v", res)
		}
	}
}
