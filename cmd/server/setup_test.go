package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// createIn makes a worktree session on branch running command.
func createIn(t *testing.T, e *apiEnv, branch string, command ...string) wire.Session {
	t.Helper()
	b, err := json.Marshal(map[string]any{"worktree": map[string]string{"branch": branch}, "command": command})
	if err != nil {
		t.Fatal(err)
	}
	return e.create(string(b))
}

// TestSetupRunsBeforeTheAgent: a new worktree session runs the setup
// script in its own terminal, with the session's environment, and its
// agent starts once it succeeded; the setup's question and silence end no
// turn.
func TestSetupRunsBeforeTheAgent(t *testing.T) {
	setup := `echo "setting up $AGENTMUX_BRANCH on port $AGENTMUX_PORT"; cp "$AGENTMUX_ROOT_PATH/.env" .env; printf 'Continue? '; sleep 0.6; echo yes`
	e := newShipAPI(t, "--setup-script", setup, "--question-quiet", "100ms")
	writeIn(t, e.dir, ".env", "SECRET=1\n")
	conn := watchWS(t, e)
	s := createIn(t, e, "feat/s", "sh", "-c", `echo "agent sees $(cat .env)"; exec sleep 60`)
	if s.Setup == nil || s.Setup.Status != sessions.SetupRunning || s.Setup.AgentStarted {
		t.Fatalf("the new session's setup: %+v", s.Setup)
	}
	got := collectUntil(t, conn, "the setup to pass", func(ev watchEvent) bool {
		return ev.Type == wire.TypeSessionSetup && ev.SessionID == s.ID && strings.Contains(string(ev.Raw), `"status":"passed"`)
	})
	for _, ev := range got {
		if ev.Type == wire.TypeSessionCheckpoint || ev.Type == wire.TypeSessionStatus && strings.Contains(string(ev.Raw), `"status":"waiting"`) {
			t.Errorf("the setup ended a turn: %s", ev.Raw)
		}
	}
	e.waitScreen(s.ID, "agent sees SECRET=1")
	out := screen(t, e, s.ID)
	order := []string{
		"[agentmux] Setting up the worktree: echo",
		"setting up feat/s on port " + strconv.Itoa(s.Ports.First),
		"Continue? yes",
		"Setup done in",
		"agent sees SECRET=1",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("the screen lacks %q after offset %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}
	now := e.get(s.ID)
	if now.Setup == nil || now.Setup.Status != sessions.SetupPassed || now.Setup.ExitCode != 0 || !now.Setup.AgentStarted || now.Setup.DurationMs < 600 || !now.Running {
		t.Fatalf("after the setup: running %v, setup %+v", now.Running, now.Setup)
	}
	if strings.Contains(strings.Join(now.Command, " "), "setting up") {
		t.Errorf("the session's command is the setup's: %q", now.Command)
	}

	// A session in the workspace itself has no setup: it is the user's
	// own checkout.
	w := e.createCommand([]string{"sh", "-c", "echo plain; exec sleep 60"})
	if w.Setup != nil {
		t.Errorf("a session in the workspace got a setup: %+v", w.Setup)
	}
}

// TestSetupFailureWaits: a setup that fails leaves the session in error,
// its agent not started, until a retry succeeds (and the agent starts)
// or the agent is started without it; a shell can be opened in the
// worktree meanwhile.
func TestSetupFailureWaits(t *testing.T) {
	e := newShipAPI(t, "--setup-script", `test -e "$AGENTMUX_ROOT_PATH/ok" || { echo "no ok file"; exit 7; }; echo fine`)
	agent := []string{"sh", "-c", "echo agent-ran; exec sleep 60"}
	s := createIn(t, e, "feat/f", agent...)
	testutil.Eventually(t, waitTimeout, "the setup to fail", func() bool {
		u := e.get(s.ID).Setup
		return u != nil && u.Status == sessions.SetupFailed
	})
	now := e.get(s.ID)
	if now.Status != "error" || now.Running || now.Setup.ExitCode != 7 || now.Setup.AgentStarted {
		t.Fatalf("after a failed setup: %+v, setup %+v", now, now.Setup)
	}
	if out := screen(t, e, s.ID); !strings.Contains(out, "no ok file") || strings.Contains(out, "agent-ran") {
		t.Fatalf("the screen after a failed setup:\n%s", out)
	}

	// A shell in its worktree, to look.
	resp, b := e.do(http.MethodPost, "/api/sessions", `{"command":["sh","-c","pwd; exec sleep 60"],"cwd":`+strconv.Quote(s.Worktree.Path)+`}`)
	wantStatus(t, "a shell in the worktree", resp, b, http.StatusCreated)

	// Retry, once the cause is fixed: the agent starts after it.
	writeIn(t, e.dir, "ok", "")
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/setup", "")
	wantStatus(t, "retry the setup", resp, b, http.StatusOK)
	e.waitScreen(s.ID, "agent-ran")
	if u := e.get(s.ID).Setup; u.Status != sessions.SetupPassed || !u.AgentStarted {
		t.Fatalf("after the retry: %+v", u)
	}
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/setup", "")
	wantStatus(t, "retry while the agent runs", resp, b, http.StatusConflict)

	// Started without it: the agent's first start, said so.
	if err := os.Remove(filepath.Join(e.dir, "ok")); err != nil {
		t.Fatal(err)
	}
	f := createIn(t, e, "feat/g", agent...)
	testutil.Eventually(t, waitTimeout, "the second setup to fail", func() bool {
		u := e.get(f.ID).Setup
		return u != nil && u.Status == sessions.SetupFailed
	})
	e.resume(f.ID)
	e.waitScreen(f.ID, "agent-ran")
	if out := screen(t, e, f.ID); !strings.Contains(out, "Starting the agent without the setup (it failed with exit code 7).") {
		t.Errorf("the start without the setup says nothing of it:\n%s", out)
	}
	if u := e.get(f.ID).Setup; u.Status != sessions.SetupFailed || !u.AgentStarted {
		t.Fatalf("started without the setup: %+v", u)
	}

	// No worktree, no setup to retry.
	w := e.createCommand([]string{"sh", "-c", "exit 0"})
	resp, b = e.do(http.MethodPost, "/api/sessions/"+w.ID+"/setup", "")
	wantStatus(t, "retry the setup of a session without a worktree", resp, b, http.StatusBadRequest)
}

// TestSetupNeedsApproval: the repository's setup script does not run
// until approved; a session made before runs its agent at once.
func TestSetupNeedsApproval(t *testing.T) {
	e := newShipAPI(t)
	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"setup": "echo set-up-ran"}}`)
	s := createIn(t, e, "feat/a", "sh", "-c", "echo agent-ran; exec sleep 60")
	e.waitScreen(s.ID, "agent-ran")
	if s.Setup != nil || strings.Contains(screen(t, e, s.ID), "set-up-ran") {
		t.Fatalf("an unapproved setup ran: %+v", s.Setup)
	}
	resp, b := e.do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	wantStatus(t, "approve", resp, b, http.StatusOK)
	d := createIn(t, e, "feat/b", "sh", "-c", "echo agent-ran; exec sleep 60")
	e.waitScreen(d.ID, "agent-ran")
	if out := screen(t, e, d.ID); !strings.Contains(out, "set-up-ran") {
		t.Fatalf("the approved setup did not run:\n%s", out)
	}
}

// TestConductorRepository: a repository set up for Conductor, with a
// conductor.json and no agentmux.json, works unchanged: its setup runs in
// a new worktree once approved, with Conductor's variables, and its run
// script runs on the session's port.
func TestConductorRepository(t *testing.T) {
	e := newShipAPI(t)
	writeIn(t, e.dir, "conductor.json", `{
  "scripts": {
    "setup": "echo \"set up $CONDUCTOR_WORKSPACE_PATH from $CONDUCTOR_ROOT_PATH\"",
    "run": "echo \"serving on $CONDUCTOR_PORT\"; exec sleep 60",
    "archive": "true"
  },
  "runScriptMode": "nonconcurrent",
  "somethingOfConductors": {"kept": true}
}`)
	resp, b := e.do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	wantStatus(t, "approve", resp, b, http.StatusOK)
	if !strings.Contains(string(b), `"runMode":"exclusive"`) || !strings.Contains(string(b), `"source":"conductor.json"`) {
		t.Fatalf("the scripts of conductor.json: %s", b)
	}
	s := createIn(t, e, "feat/c", "sh", "-c", "echo agent-ran; exec sleep 60")
	e.waitScreen(s.ID, "agent-ran")
	e.waitScreen(s.ID, "set up "+s.Worktree.Path+" from "+e.dir)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/run", "")
	wantStatus(t, "run", resp, b, http.StatusOK)
	var reply struct{ Session wire.Session }
	decodeJSON(t, b, &reply)
	e.waitScreen(reply.Session.ID, "serving on "+strconv.Itoa(s.Ports.First))
}
