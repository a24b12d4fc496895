package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// configBody is GET /api/config's answer, the git part.
type configBody struct {
	GitRepository bool   `json:"gitRepository"`
	GitRefusal    string `json:"gitRefusal"`
}

func (e *apiEnv) config() configBody {
	e.t.Helper()
	resp, b := e.do(http.MethodGet, "/api/config", "")
	wantStatus(e.t, "config", resp, b, http.StatusOK)
	var c configBody
	if err := json.Unmarshal(b, &c); err != nil {
		e.t.Fatalf("config body %s: %v", b, err)
	}
	return c
}

// TestForeignWorkspace: a workspace that belongs to another user, as one
// bind-mounted from a host where it belongs to another uid, keeps every
// git feature: its diff, a worktree session, that session's diff and the
// worktree's removal.
func TestForeignWorkspace(t *testing.T) {
	e := newRepoAPI(t)
	testutil.GiveAway(t, e.dir)
	if c := e.config(); !c.GitRepository || c.GitRefusal != "" {
		t.Errorf("config: %+v, want a git repository", c)
	}
	s := e.createCommand(sleeper())
	writeWS(t, e.dir, "notes.txt", "hello\n")
	if d := e.diff(s.ID, ""); len(d.Files) != 1 || d.Files[0].Path != "notes.txt" {
		t.Errorf("the workspace's diff: %+v", d)
	}

	wt := e.create(`{"worktree":{"branch":"feat"}}`)
	if wt.Worktree == nil {
		t.Fatalf("no worktree: %+v", wt)
	}
	if err := os.WriteFile(filepath.Join(wt.Worktree.Path, "wt.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := e.diff(wt.ID, ""); len(d.Files) != 1 || d.Files[0].Path != "wt.txt" {
		t.Errorf("the worktree's diff: %+v", d)
	}
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+wt.ID+"?removeWorktree=true&force=true", "")
	wantStatus(t, "delete with its worktree", resp, b, http.StatusNoContent)
	if _, err := os.Stat(wt.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there: %v", err)
	}
}

// TestUntrustedRepository: a workspace inside a repository of another
// user's, which the user did not name, is not trusted: the diff is a 409
// UNTRUSTED_REPOSITORY and the config a gitRefusal, both saying in words
// which directory, whose, and what to do; a worktree session is refused
// with the same words.
func TestUntrustedRepository(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "first")
	ws := filepath.Join(repo, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	testutil.GiveAway(t, repo)
	e := newAPI(t, "--workspace", ws)
	want := "git refuses to work in " + repo + ": it belongs to another user (uid 65534"

	c := e.config()
	if c.GitRepository || !strings.HasPrefix(c.GitRefusal, want) {
		t.Errorf("config: %+v, want gitRefusal %q…", c, want)
	}
	s := e.createCommand(sleeper())
	resp, b := e.do(http.MethodGet, "/api/sessions/"+s.ID+"/diff", "")
	msg := wantError(t, "diff", resp, b, http.StatusConflict, wire.CodeUntrustedRepository)
	for _, w := range []string{want, "--workspace " + repo, "safe.directory " + repo} {
		if !strings.Contains(msg, w) {
			t.Errorf("diff's message %q\nwants %q", msg, w)
		}
	}
	resp, b = e.do(http.MethodPost, "/api/sessions", `{"worktree":{"branch":"feat"}}`)
	if msg := wantError(t, "a worktree session", resp, b, http.StatusBadRequest, wire.CodeWorktreeError); !strings.HasPrefix(msg, want) {
		t.Errorf("worktree refusal %q, want %q…", msg, want)
	}
}
