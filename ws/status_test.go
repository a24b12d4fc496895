package ws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
)

// TestAttentionReachesEveryConnection: a session that starts waiting, and
// one that goes silent, tell every connection, attached or not, with the
// protocol's fields.
func TestAttentionReachesEveryConnection(t *testing.T) {
	e := newEnv(t, envOptions{timing: sessions.Timing{
		QuestionQuiet: time.Hour, IdleAfter: 200 * time.Millisecond, WarnAfter: 400 * time.Millisecond, ErrorAfter: time.Hour,
	}})
	bystander := e.dial(nil) // never attaches
	bystander.sync()
	s := e.session("sh", "-c", `printf 'ready\a'; read x; echo "got $x"; sleep 60`)

	m := bystander.expect(wire.TypeSessionStatus, s.ID())
	for m.Status != "waiting" {
		m = bystander.expect(wire.TypeSessionStatus, s.ID())
	}
	if m.Running == nil || !*m.Running || !strings.Contains(m.Reason, "bell") {
		t.Errorf("waiting status = %+v, want running with the bell as reason", m)
	}
	ni := bystander.expect(wire.TypeSessionNeedsInput, s.ID())
	if !strings.Contains(ni.Message, "needs input") || !strings.Contains(ni.Message, "'custom 1'") {
		t.Errorf("needsInput message %q", ni.Message)
	}

	typist := e.dial(nil)
	typist.send(input(s.ID(), "hello\n"))
	if m := bystander.expect(wire.TypeSessionStatus, s.ID()); m.Status != "active" || m.Reason != "input from the user" {
		t.Errorf("after input: %+v, want active", m)
	}
	if m := bystander.expect(wire.TypeSessionStatus, s.ID()); m.Status != "idle" || m.Running == nil || !*m.Running {
		t.Errorf("after silence: %+v, want idle and running", m)
	}
	w := bystander.expect(wire.TypeSessionWarning, s.ID())
	if w.Severity != "warning" || !strings.Contains(w.Message, "No output for 400ms") {
		t.Errorf("warning = %+v", w)
	}
}

// TestOneLayoutShiftPerWrite: a document reported as added and then, once
// its write settles, as changed is suggested once; another document, or
// the same one in a session's worktree, gets its own suggestion.
func TestOneLayoutShiftPerWrite(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	c.sync()
	now := time.Now()
	e.app.OnFile(watcher.FileEvent{Path: "/w/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileAdded, Time: now})
	e.app.OnFile(watcher.FileEvent{Path: "/w/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileChanged, Time: now})
	e.app.OnFile(watcher.FileEvent{Path: "/w/docs/arch.md", Rel: "docs/arch.md", Op: watcher.FileAdded, Time: now})
	e.app.OnSessionFile("s1", ".worktrees/a/", watcher.FileEvent{Path: "/w/.worktrees/a/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileAdded, Time: now})
	e.app.OnSessionFile("s1", ".worktrees/a/", watcher.FileEvent{Path: "/w/.worktrees/a/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileChanged, Time: now})
	var shifts []string
	for _, m := range c.sync() {
		if m.Type == wire.TypeLayoutShift {
			shifts = append(shifts, m.SessionID+":"+m.Path)
		}
	}
	want := []string{":docs/prd.md", ":docs/arch.md", "s1:.worktrees/a/docs/prd.md"}
	if strings.Join(shifts, " ") != strings.Join(want, " ") {
		t.Errorf("layout.shift for %q, want %q", shifts, want)
	}
}
