package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
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
