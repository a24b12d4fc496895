package sessions_test

import (
	"testing"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
)

// TestCheckSurvivesRestart: the last turn's check and the choice to send
// failures are kept across a restart; a check that was running when the
// server went comes back superseded, saying why. A check of an earlier
// checkpoint than the last one noted changes nothing.
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
	checks := 0
	for _, ev := range rec.snapshot() {
		if ev.Kind == sessions.EventCheck {
			checks++
		}
	}
	if checks != 2 {
		t.Fatalf("%d check events, want 2 (sending on, turn 2's check)", checks)
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
