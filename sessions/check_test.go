package sessions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
)

// TestCheckSurvivesRestart: the last turn's check and the choice to send
// failures are kept across a restart; a check that was running when the
// server went comes back superseded, saying why. A check of an earlier
// checkpoint than the last one noted is told but is not the last.
func TestCheckSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	m, rec, stop := restartable(t, dir, sessions.Options{Timing: fastTiming})
	s, err := m.Create(sessions.CreateOptions{Command: shell("sleep 30")})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if err := m.SetSendFailures(id, true); err != nil {
		t.Fatal(err)
	}
	passed := sessions.CheckOf(2, scripts.Result{Status: scripts.Passed, DurationMs: 12, Output: "ok\n", Hash: "h"})
	if err := m.NoteCheck(id, passed); err != nil {
		t.Fatal(err)
	}
	// The check of turn 1, superseded by turn 2's, ends late.
	if err := m.NoteCheck(id, sessions.CheckOf(1, scripts.Result{Status: scripts.Superseded, ExitCode: -1})); err != nil {
		t.Fatal(err)
	}
	if got := s.Info().Check; got == nil || *got != passed {
		t.Fatalf("last check %+v, want %+v", got, passed)
	}
	// Each is told, the late one too (its checkpoint's timeline says
	// superseded), and each event carries the session's last.
	var told []string
	for _, ev := range rec.snapshot() {
		if ev.Kind != sessions.EventCheck {
			continue
		}
		c := "none"
		if ev.Check != nil {
			c = fmt.Sprintf("%d:%s", ev.Check.Checkpoint, ev.Check.Status)
		}
		told = append(told, c)
		if ev.Check != nil && (ev.Session.Check == nil || *ev.Session.Check != passed) {
			t.Errorf("the event of %s says the last is %+v", c, ev.Session.Check)
		}
	}
	if got := strings.Join(told, " "); got != "none 2:passed 1:superseded" {
		t.Fatalf("check events %s, want sending on, then turn 2's and turn 1's checks", got)
	}
	running := sessions.CheckOf(3, scripts.Result{Status: scripts.Running, ExitCode: -1, Output: "partial\n"})
	if err := m.NoteCheck(id, running); err != nil {
		t.Fatal(err)
	}
	stop()

	m, _, stop = restartable(t, dir, sessions.Options{Timing: fastTiming})
	defer stop()
	s, err = m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if !info.SendFailures {
		t.Error("sending failures was turned off by the restart")
	}
	want := running
	want.Status, want.Output = scripts.Superseded, "partial\nagentmux stopped before the check ended\n"
	if info.Check == nil || *info.Check != want {
		t.Fatalf("check after the restart %+v, want %+v", info.Check, want)
	}
}

// TestSetupInterruptedByRestart: a server stopped during a worktree's
// setup brings the session back in error, its setup interrupted, and a
// retry runs the setup in force then, after which the agent starts.
func TestSetupInterruptedByRestart(t *testing.T) {
	dir := testutil.NewRepo(t, "Setup Tester", map[string]string{"a.txt": "a\n"})
	setup := scripts.Script{Name: scripts.Setup, Text: "echo setting-up; exec sleep 60"}
	opts := sessions.Options{Timing: fastTiming, SetupScript: func() (scripts.Script, bool) { return setup, true }}
	m, _, stop := restartable(t, dir, opts)
	s, err := m.Create(sessions.CreateOptions{Command: shell("echo agent-ran; exec sleep 60"), WorktreeBranch: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	if u := s.Info().Setup; u == nil || u.Status != sessions.SetupRunning {
		t.Fatalf("a new worktree session's setup: %+v", u)
	}
	stop()

	setup.Text = "echo fixed"
	m, _, stop = restartable(t, dir, opts)
	defer stop()
	s, err = m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if info.Setup == nil || info.Setup.Status != sessions.SetupInterrupted || info.Status != sessions.StatusError || !strings.Contains(info.Reason, "interrupted") {
		t.Fatalf("after the restart: status %s (%s), setup %+v", info.Status, info.Reason, info.Setup)
	}
	if _, err := m.RetrySetup(id); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, testTimeout, "the agent to start after the retried setup", func() bool {
		info := s.Info()
		return info.Running && info.Setup.Status == sessions.SetupPassed && info.Setup.AgentStarted
	})
	if got := s.Info().Setup.Script; got != "echo fixed" {
		t.Errorf("the retry ran %q, not the script in force", got)
	}
}

// TestRunSessionSurvivesRestart: a run session comes back after a
// restart as its session's, on its session's ports (which it holds no
// block of), and the next start of the run reuses it.
func TestRunSessionSurvivesRestart(t *testing.T) {
	dir := testutil.NewRepo(t, "Run Tester", map[string]string{"a.txt": "a\n"})
	opts := sessions.Options{Timing: fastTiming, PortBase: runTestBase}
	m, _, stop := restartable(t, dir, opts)
	p, err := m.Create(sessions.CreateOptions{Command: shell("exec sleep 60"), WorktreeBranch: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := m.StartRun(context.Background(), p.ID(), scripts.Script{Name: scripts.Run, Text: `echo "on $AGENTMUX_PORT"; exec sleep 60`}, scripts.Concurrent)
	if err != nil {
		t.Fatal(err)
	}
	ports := *p.Info().Ports
	if got := run.Info(); got.RunOf != p.ID() || got.Ports == nil || *got.Ports != ports {
		t.Fatalf("the run session: runOf %q ports %+v, want %q %+v", got.RunOf, got.Ports, p.ID(), ports)
	}
	stop()

	m, _, stop = restartable(t, dir, opts)
	defer stop()
	again, err := m.RunOf(p.ID())
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != run.ID() || *again.Info().Ports != ports {
		t.Fatalf("after the restart: %s %+v", again.ID(), again.Info().Ports)
	}
	if _, err := m.Resume(p.ID()); err != nil {
		t.Fatalf("resume the session, whose ports its run shares: %v", err)
	}
	restarted, err := m.StartRun(context.Background(), p.ID(), scripts.Script{Name: scripts.Run, Text: "exec sleep 60"}, scripts.Concurrent)
	if err != nil {
		t.Fatal(err)
	}
	if restarted.ID() != run.ID() || !restarted.Info().Running {
		t.Fatalf("the run started again in %s (running %v), want %s", restarted.ID(), restarted.Info().Running, run.ID())
	}
}
