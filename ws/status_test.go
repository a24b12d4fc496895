package ws_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ws"
)

// TestAttentionReachesEveryConnection: a session that starts waiting, and
// one that goes silent, tell every connection, attached or not, with the
// protocol's fields.
func TestAttentionReachesEveryConnection(t *testing.T) {
	e := newEnv(t, envOptions{timing: sessions.Timing{
		QuestionQuiet: time.Hour, IdleAfter: 200 * time.Millisecond, WarnAfter: 400 * time.Millisecond, ErrorAfter: time.Hour,
	}})
	bystander := e.dial(nil) // never attaches
	s := e.session("sh", "-c", `printf 'ready\a'; read x; echo "got $x"; sleep 60`)

	m := bystander.expect(ws.TypeSessionStatus, s.ID())
	for m.Status != "waiting" {
		m = bystander.expect(ws.TypeSessionStatus, s.ID())
	}
	if m.Running == nil || !*m.Running || !strings.Contains(m.Reason, "bell") {
		t.Errorf("waiting status = %+v, want running with the bell as reason", m)
	}
	ni := bystander.expect(ws.TypeSessionNeedsInput, s.ID())
	if !strings.Contains(ni.Message, "needs input") || !strings.Contains(ni.Message, "'custom 1'") {
		t.Errorf("needsInput message %q", ni.Message)
	}

	typist := e.dial(nil)
	typist.send(input(s.ID(), "hello\n"))
	if m := bystander.expect(ws.TypeSessionStatus, s.ID()); m.Status != "active" || m.Reason != "input from the user" {
		t.Errorf("after input: %+v, want active", m)
	}
	if m := bystander.expect(ws.TypeSessionStatus, s.ID()); m.Status != "idle" || m.Running == nil || !*m.Running {
		t.Errorf("after silence: %+v, want idle and running", m)
	}
	w := bystander.expect(ws.TypeSessionWarning, s.ID())
	if w.Severity != "warning" || !strings.Contains(w.Message, "No output for 400ms") {
		t.Errorf("warning = %+v", w)
	}
}
