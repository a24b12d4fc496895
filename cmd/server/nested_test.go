package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// TestNestedRepositoriesNeverEntered: in a worktree session's tree that
// holds a submodule, a repository added with git add and one in an
// untracked directory, each with a filter, a textconv, a file-system
// monitor and hooks of its own and its tracked file changed (same size,
// new time) before each request, nothing agentmux does without being
// asked runs any of it: the diff, the branch's status, a checkpoint on
// request and at the end of a turn, a checkpoint's diff, and the
// removal of the worktree with the session, which is refused, naming
// them, until forced.
func TestNestedRepositoriesNeverEntered(t *testing.T) {
	e := newShipAPI(t, "--agent-cmd", `sh -c 'printf "ready\a"; while read l; do echo "$l" > turn.txt; printf "done\a"; done'`)
	conn := watchWS(t, e)
	s := e.create(`{"worktree":{"branch":"feature/nested"}}`)
	isCheckpoint := func(ev watchEvent) bool { return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID }
	collectUntil(t, conn, "the first turn's checkpoint", isCheckpoint)
	script, marker := testutil.MarkerScript(t)
	nested := testutil.AddNestedRepos(t, s.Worktree.Path, script)
	api := "/api/sessions/" + s.ID
	request := func(what, method, path string, want int) []byte {
		t.Helper()
		nested.Stir()
		resp, b := e.do(method, path, "")
		testutil.NotRun(t, what, marker)
		wantStatus(t, what, resp, b, want)
		return b
	}

	writeIn(t, s.Worktree.Path, "notes.txt", "mine\n")
	if b := request("the diff", http.MethodGet, api+"/diff", http.StatusOK); !strings.Contains(string(b), "notes.txt") {
		t.Errorf("the diff does not show notes.txt: %s", b)
	}
	request("the branch's status", http.MethodGet, api+"/branch", http.StatusOK)
	request("a checkpoint on request", http.MethodPost, api+"/checkpoints", http.StatusOK)
	request("a checkpoint's diff", http.MethodGet, api+"/checkpoints/2", http.StatusOK)

	nested.Stir()
	e.typeInto(s.ID, "second\r")
	// Checkpoint 2, taken on request, was announced too.
	collectUntil(t, conn, "the second turn's checkpoint", func(ev watchEvent) bool {
		return isCheckpoint(ev) && strings.Contains(string(ev.Raw), `"id":3`)
	})
	testutil.NotRun(t, "the checkpoint at the end of a turn", marker)

	if err := os.Remove(filepath.Join(s.Worktree.Path, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.Worktree.Path, "turn.txt")); err != nil {
		t.Fatal(err)
	}
	nested.Stir()
	resp, b := e.do(http.MethodDelete, api+"?removeWorktree=true", "")
	testutil.NotRun(t, "the check before removing the worktree", marker)
	msg := wantError(t, "remove a worktree holding repositories", resp, b, http.StatusConflict, wire.CodeWorktreeDirty)
	for _, m := range append(nested.Paths(), "force") {
		if !strings.Contains(msg, m) {
			t.Errorf("the refusal %q does not name %q", msg, m)
		}
	}
	request("the forced removal", http.MethodDelete, api+"?removeWorktree=true&force=true", http.StatusNoContent)
	if _, err := os.Stat(s.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
}
