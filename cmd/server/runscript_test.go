package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// TestRunScript: a session's run script runs in a session of its own, in
// the session's tree on its ports, uncounted against --max-sessions and
// ending no turn; posting again restarts it, DELETE stops it, the
// exclusive run mode stops the others' first, and it goes with its
// session.
func TestRunScript(t *testing.T) {
	script := `printf 'serving %s on %s in %s\nready? ' "$AGENTMUX_BRANCH" "$AGENTMUX_PORT" "$(pwd)"; exec sleep 60`
	e := newShipAPI(t, "--run-script", script, "--run-mode", "exclusive", "--max-sessions", "2", "--question-quiet", "100ms")
	conn := watchWS(t, e)
	a := createIn(t, e, "feat/a", "sh", "-c", "exec sleep 60")

	resp, b := e.do(http.MethodPost, "/api/sessions/"+a.ID+"/run", "")
	wantStatus(t, "start the run", resp, b, http.StatusOK)
	var reply struct{ Session wire.Session }
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatal(err)
	}
	run := reply.Session
	if run.RunOf != a.ID || run.Name != "feat/a · run" || !run.Running || run.Cwd != a.Worktree.Path {
		t.Fatalf("the run session: %s", b)
	}
	e.waitScreen(run.ID, "serving feat/a on "+strconv.Itoa(a.Ports.First)+" in "+a.Worktree.Path)

	// Not counted: with the limit at 2 and one agent running, a second
	// agent still starts beside the run.
	bs := createIn(t, e, "feat/b", "sh", "-c", "exec sleep 60")
	// Its "ready?" and silence end no turn.
	got := collectUntil(t, conn, "the second session created", func(ev watchEvent) bool {
		return ev.Type == wire.TypeSessionCreated && strings.Contains(string(ev.Raw), bs.ID)
	})
	testutil.Eventually(t, waitTimeout, "the run's question to be on its screen", func() bool { return strings.Contains(screen(t, e, run.ID), "ready? ") })
	for _, ev := range got {
		if ev.SessionID == run.ID && (ev.Type == wire.TypeSessionCheckpoint || strings.Contains(string(ev.Raw), `"status":"waiting"`)) {
			t.Errorf("the run ended a turn: %s", ev.Raw)
		}
	}

	// Again: a restart of the same run session.
	resp, b = e.do(http.MethodPost, "/api/sessions/"+a.ID+"/run", "")
	wantStatus(t, "restart the run", resp, b, http.StatusOK)
	if err := json.Unmarshal(b, &reply); err != nil || reply.Session.ID != run.ID {
		t.Fatalf("the restart made another session: %s", b)
	}
	e.waitScreen(run.ID, "Run script restarted.")

	// Exclusive: b's run stops a's first.
	resp, b = e.do(http.MethodPost, "/api/sessions/"+bs.ID+"/run", "")
	wantStatus(t, "start b's run", resp, b, http.StatusOK)
	if err := json.Unmarshal(b, &reply); err != nil {
		t.Fatal(err)
	}
	runB := reply.Session
	testutil.Eventually(t, waitTimeout, "a's run to stop", func() bool { return !e.get(run.ID).Running })
	if !e.get(runB.ID).Running {
		t.Fatal("b's run does not run")
	}

	// Stopped on request: listed, with its output.
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+bs.ID+"/run", "")
	wantStatus(t, "stop b's run", resp, b, http.StatusNoContent)
	if got := e.get(runB.ID); got.Running || !strings.Contains(screen(t, e, runB.ID), "serving feat/b") {
		t.Fatalf("b's run after a stop: %+v", got)
	}
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+runB.ID+"/run", "")
	wantStatus(t, "stop the run of a run", resp, b, http.StatusNotFound)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+runB.ID+"/run", "")
	wantStatus(t, "a run of a run", resp, b, http.StatusBadRequest)

	// Destroyed with its session.
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+a.ID, "")
	wantStatus(t, "delete a", resp, b, http.StatusNoContent)
	resp, b = e.do(http.MethodGet, "/api/sessions/"+run.ID, "")
	wantStatus(t, "a's run after a's delete", resp, b, http.StatusNotFound)
}

// TestRunScriptNeedsOne: without a run script, or with one waiting for
// approval, nothing runs.
func TestRunScriptNeedsOne(t *testing.T) {
	e := newShipAPI(t)
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	resp, b := e.do(http.MethodPost, "/api/sessions/"+s.ID+"/run", "")
	wantStatus(t, "a run without a script", resp, b, http.StatusBadRequest)
	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"run": "exec sleep 60"}}`)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/run", "")
	wantStatus(t, "an unapproved run", resp, b, http.StatusBadRequest)
	if !strings.Contains(string(b), "waits for approval") {
		t.Errorf("the refusal does not say why: %s", b)
	}
	resp, b = e.do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	wantStatus(t, "approve", resp, b, http.StatusOK)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/run", "")
	wantStatus(t, "an approved run", resp, b, http.StatusOK)
}
