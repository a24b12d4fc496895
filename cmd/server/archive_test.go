package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/scripts"
)

// TestArchiveScript: archiving a worktree session, or deleting it with
// its worktree, runs the archive script in the worktree before it goes,
// with the session's environment; a failure is kept with the archived
// session and removes the worktree all the same. A repository's script
// runs only once approved.
func TestArchiveScript(t *testing.T) {
	out := t.TempDir()
	// What it finds in the tree it cleans up, and where.
	script := `echo "archiving $AGENTMUX_BRANCH on port $AGENTMUX_PORT"; ls > "` + out + `/$AGENTMUX_SESSION_ID"; exit 3`
	e := newShipAPI(t, "--archive-script", script)
	s := e.create(`{"worktree":{"branch":"feat/a"}}`)
	resp, b := e.do(http.MethodPost, "/api/sessions/"+s.ID+"/archive", "")
	wantStatus(t, "archive", resp, b, http.StatusOK)
	listing, err := os.ReadFile(filepath.Join(out, s.ID))
	if err != nil || !strings.Contains(string(listing), "README.md") {
		t.Fatalf("the script did not run in the worktree: %q, %v", listing, err)
	}
	if _, err := os.Stat(s.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after a failed archive script: %v", err)
	}
	got := e.get(s.ID)
	want := "archiving feat/a on port " + strconv.Itoa(s.Ports.First) + "\n"
	if got.Archive == nil || got.Archive.Status != scripts.Failed || got.Archive.ExitCode != 3 || got.Archive.Output != want {
		t.Fatalf("the archived session's archive run: %+v, want failed, exit 3, %q", got.Archive, want)
	}
	if got.Worktree == nil || !got.Worktree.Archived {
		t.Fatalf("the session is not archived: %+v", got.Worktree)
	}

	// Deleted with its worktree: the script runs there too.
	d := e.create(`{"worktree":{"branch":"feat/b"}}`)
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+d.ID+"?removeWorktree=true", "")
	wantStatus(t, "delete with the worktree", resp, b, http.StatusNoContent)
	if listing, err := os.ReadFile(filepath.Join(out, d.ID)); err != nil || !strings.Contains(string(listing), "README.md") {
		t.Fatalf("the script did not run before the delete: %q, %v", listing, err)
	}
	// Deleted without it: the worktree stays, and so nothing is cleaned.
	k := e.create(`{"worktree":{"branch":"feat/c"}}`)
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+k.ID, "")
	wantStatus(t, "delete, keeping the worktree", resp, b, http.StatusNoContent)
	if _, err := os.Stat(filepath.Join(out, k.ID)); !os.IsNotExist(err) {
		t.Errorf("the archive script ran for a worktree that stays: %v", err)
	}
}

// TestArchiveScriptNeedsApproval: the repository's archive script does
// not run until approved.
func TestArchiveScriptNeedsApproval(t *testing.T) {
	out := t.TempDir()
	e := newShipAPI(t)
	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"archive": "touch `+out+`/ran"}}`)
	s := e.create(`{"worktree":{"branch":"feat/a"}}`)
	resp, b := e.do(http.MethodPost, "/api/sessions/"+s.ID+"/archive", "")
	wantStatus(t, "archive", resp, b, http.StatusOK)
	if _, err := os.Stat(filepath.Join(out, "ran")); !os.IsNotExist(err) {
		t.Fatalf("an unapproved archive script ran: %v", err)
	}
	if got := e.get(s.ID); got.Archive != nil {
		t.Fatalf("an archive run with none: %+v", got.Archive)
	}

	resp, b = e.do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	wantStatus(t, "approve", resp, b, http.StatusOK)
	d := e.create(`{"worktree":{"branch":"feat/b"}}`)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+d.ID+"/archive", "")
	wantStatus(t, "archive once approved", resp, b, http.StatusOK)
	if got := e.get(d.ID); got.Archive == nil || got.Archive.Status != scripts.Passed {
		t.Fatalf("the approved archive script: %+v", got.Archive)
	}
	if _, err := os.Stat(filepath.Join(out, "ran")); err != nil {
		t.Fatalf("the approved archive script did not run: %v", err)
	}
}
