package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// newShipAPI serves a repository workspace whose git knows who commits.
func newShipAPI(t *testing.T, args ...string) *apiEnv {
	t.Helper()
	e := newRepoAPI(t, args...)
	apitest.SetCommitter(t, e.dir)
	return e
}

// writeIn writes a file under dir, making its directories; decodeJSON
// decodes a reply, failing the test on error.
var (
	writeIn    = testutil.WriteFile
	decodeJSON = apitest.DecodeJSON
)

// TestCheckpointAtEveryTurn: each time the agent ends a turn (active to
// waiting) its tree is checkpointed and every client told; deleting the
// session removes its checkpoints.
func TestCheckpointAtEveryTurn(t *testing.T) {
	e := newShipAPI(t)
	conn := watchWS(t, e)
	s := e.createCommand([]string{"sh", "-c", `printf 'ready\a'; while read l; do echo "$l" > turn.txt; printf 'done\a'; done`})
	isCheckpoint := func(ev watchEvent) bool { return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID }
	collectUntil(t, conn, "the first turn's checkpoint", isCheckpoint)

	e.typeInto(s.ID, "second\r")
	got := collectUntil(t, conn, "the second turn's checkpoint", isCheckpoint)
	var ev struct {
		Checkpoint struct{ ID, Files int }
	}
	decodeJSON(t, got[len(got)-1].Raw, &ev)
	if ev.Checkpoint.ID != 2 || ev.Checkpoint.Files != 1 {
		t.Fatalf("second checkpoint %s, want id 2 with turn.txt", got[len(got)-1].Raw)
	}
	resp, b := e.do(http.MethodGet, "/api/sessions/"+s.ID+"/checkpoints/2", "")
	wantStatus(t, "the turn's diff", resp, b, http.StatusOK)
	if !strings.Contains(string(b), "turn.txt") || !strings.Contains(string(b), "+second") {
		t.Errorf("the second turn's diff: %s", b)
	}

	resp, b = e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	testutil.Eventually(t, waitTimeout, "the deleted session's checkpoints to go", func() bool {
		return git(t, e.dir, "for-each-ref", "refs/agentmux/checkpoints/"+s.ID+"/") == ""
	})
}

// TestCheckpointAtTurnAnsweredAtOnce: a turn the agent ends by ringing
// the bell takes one checkpoint even when a queued prompt answers the
// bell at once, so that the session is never announced waiting. Such a
// turn took none (the checkpoints followed the waiting status), and the
// next turn's checkpoint held the work of both.
func TestCheckpointAtTurnAnsweredAtOnce(t *testing.T) {
	e := newShipAPI(t)
	conn := watchWS(t, e)
	// Each turn goes on once the test has opened its gate (outside the
	// tree, which the checkpoints keep), and writes only once the turn
	// before has its checkpoint: no checkpoint can hold two turns' work,
	// and on a checkpoint that never comes the agent waits for good.
	gates := t.TempDir()
	agent := `n=1; printf 'ready\a'; while IFS= read -r l; do
		until [ -e "` + gates + `/$l" ]; do sleep 0.02; done
		until git show-ref -q --verify "refs/agentmux/checkpoints/$AGENTMUX_SESSION_ID/$n"; do sleep 0.02; done
		n=$((n+1)); echo "$l" > "turn-$l.txt"; printf 'done\a'
	done`
	s := e.createCommand([]string{"sh", "-c", agent})
	isCheckpoint := func(ev watchEvent) bool { return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID }
	collectUntil(t, conn, "the checkpoint of the agent's start", isCheckpoint)

	// "one" answers the ready bell; "two" waits in the queue for the bell
	// that ends turn one, and answers it at once.
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range []string{"one", "two"} {
		if _, pos, err := sess.QueuePrompt(sessions.Author{Name: "tester"}, text); err != nil || pos != 1 {
			t.Fatalf("queue %q: position %d, %v", text, pos, err)
		}
		if i == 0 {
			testutil.Eventually(t, waitTimeout, "the first prompt typed", func() bool { return len(sess.Queue().Prompts) == 0 })
		}
	}
	writeIn(t, gates, "one", "")
	writeIn(t, gates, "two", "")

	var ids []int
	for len(ids) < 2 {
		got := collectUntil(t, conn, "the checkpoints of turns one and two", isCheckpoint)
		var ev struct{ Checkpoint struct{ ID, Files int } }
		decodeJSON(t, got[len(got)-1].Raw, &ev)
		if ev.Checkpoint.Files != 1 {
			t.Errorf("checkpoint %s: want one file, the turn's", got[len(got)-1].Raw)
		}
		ids = append(ids, ev.Checkpoint.ID)
	}
	if ids[0] != 2 || ids[1] != 3 {
		t.Fatalf("checkpoints %v after turns one and two, want [2 3]", ids)
	}
	for id, file := range map[int]string{2: "turn-one.txt", 3: "turn-two.txt"} {
		resp, b := e.do(http.MethodGet, fmt.Sprintf("/api/sessions/%s/checkpoints/%d", s.ID, id), "")
		wantStatus(t, "a turn's diff", resp, b, http.StatusOK)
		var diff struct{ Files []struct{ Path string } }
		decodeJSON(t, b, &diff)
		if len(diff.Files) != 1 || diff.Files[0].Path != file {
			t.Errorf("checkpoint %d: %s, want only %s", id, b, file)
		}
	}
	// One checkpoint a turn: the start, one and two; turn two, announced
	// waiting, took no second.
	resp, b := e.do(http.MethodGet, "/api/sessions/"+s.ID+"/checkpoints", "")
	wantStatus(t, "the checkpoints", resp, b, http.StatusOK)
	var list struct{ Checkpoints []struct{ ID int } }
	decodeJSON(t, b, &list)
	if len(list.Checkpoints) != 3 {
		t.Errorf("checkpoints: %s, want 3", b)
	}
}
