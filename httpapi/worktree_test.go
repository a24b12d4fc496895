package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/wire"
)

// newRepoAPI serves a workspace that is a git repository with one commit
// on main.
func newRepoAPI(t *testing.T) *apiEnv { return harness{}.startRepo(t) }

func procCwd(t *testing.T, pid int) string {
	t.Helper()
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		t.Fatal(err)
	}
	return cwd
}

func TestWorktreeSession(t *testing.T) {
	e := newRepoAPI(t)
	s := e.Create(`{"worktree":{"branch":"feature/auth"}}`)
	wantDir := filepath.Join(e.dir, ".worktrees", "feature-auth")
	if s.Worktree == nil || s.Worktree.Path != wantDir || s.Worktree.Branch != "feature/auth" {
		t.Fatalf("worktree %+v, want %s on feature/auth", s.Worktree, wantDir)
	}
	if s.Cwd != wantDir || s.Name != "feature/auth" {
		t.Errorf("cwd %q name %q, want the worktree and the branch", s.Cwd, s.Name)
	}
	sess, _ := e.mgr.Get(s.ID)
	if cwd := procCwd(t, sess.Pid()); cwd != wantDir {
		t.Errorf("the agent runs in %s, want %s", cwd, wantDir)
	}
	if got := apitest.Git(t, wantDir, "rev-parse", "--abbrev-ref", "HEAD"); strings.TrimSpace(got) != "feature/auth" {
		t.Errorf("worktree HEAD %q", got)
	}
	// The worktrees do not clutter the main tree's status.
	if st := apitest.Git(t, e.dir, "status", "--porcelain"); st != "" {
		t.Errorf("main tree status %q, want clean", st)
	}
	if got := e.Get(s.ID).Worktree; got == nil || got.Path != wantDir {
		t.Errorf("GET shows worktree %+v", got)
	}

	// An existing branch is checked out, not made.
	apitest.Git(t, e.dir, "branch", "existing")
	ex := e.Create(`{"name":"on existing","worktree":{"branch":"existing"}}`)
	if ex.Worktree.Path != filepath.Join(e.dir, ".worktrees", "on-existing") {
		t.Errorf("existing-branch worktree at %s", ex.Worktree.Path)
	}

	// Without removeWorktree the worktree stays.
	resp, b := e.Do(http.MethodDelete, "/api/sessions/"+ex.ID, "")
	apitest.WantStatus(t, "delete", resp, b, http.StatusNoContent)
	if _, err := os.Stat(ex.Worktree.Path); err != nil {
		t.Errorf("plain delete removed the worktree: %v", err)
	}
}

func TestWorktreeRefusals(t *testing.T) {
	e := harness{maxSessions: 3}.startRepo(t)
	first := e.Create(`{"worktree":{"branch":"taken"}}`)
	if err := os.MkdirAll(filepath.Join(e.dir, ".worktrees", "occupied"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := apitest.Branches(t, e.dir)

	for _, tc := range []struct {
		name, body, code string
		mentions         []string
	}{
		{"invalid branch name", `{"worktree":{"branch":"bad..name"}}`, wire.CodeWorktreeError, []string{"bad..name", "not a valid branch name"}},
		{"branch starting with a dash", `{"name":"dash","worktree":{"branch":"-x"}}`, wire.CodeWorktreeError, []string{"-x"}},
		{"branch checked out in the main tree", `{"name":"m","worktree":{"branch":"main"}}`, wire.CodeWorktreeError, []string{"main", "already checked out", e.dir}},
		{"branch checked out in another session", `{"name":"again","worktree":{"branch":"taken"}}`, wire.CodeWorktreeError, []string{"taken", "already checked out", first.Worktree.Path}},
		{"directory exists", `{"name":"occupied","worktree":{"branch":"fresh"}}`, wire.CodeWorktreeError, []string{"already exists"}},
		{"agent cannot start", `{"name":"nostart","command":["/no/such/agent"],"worktree":{"branch":"nostart"}}`, wire.CodePTYSpawnFailed, []string{"/no/such/agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.at(t)
			resp, b := e.Do(http.MethodPost, "/api/sessions", tc.body)
			msg := apitest.WantError(t, tc.name, resp, b, http.StatusBadRequest, tc.code)
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("message %q does not mention %q", msg, m)
				}
			}
		})
	}
	// Nothing half-made: no session, no branch, no directory.
	if n := len(e.List()); n != 1 {
		t.Errorf("%d sessions listed, want only the first", n)
	}
	if after := apitest.Branches(t, e.dir); after != before {
		t.Errorf("branches changed:\n%s\nwant\n%s", after, before)
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, ".worktrees"))
	var names []string
	for _, en := range entries {
		names = append(names, en.Name())
	}
	if strings.Join(names, ",") != "occupied,taken" {
		t.Errorf(".worktrees holds %q, want only occupied and taken", names)
	}
	if wts := apitest.Git(t, e.dir, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 2 {
		t.Errorf("git knows these worktrees:\n%s", wts)
	}

	// At the session limit nothing is made either.
	e.Create(`{}`)
	e.Create(`{}`)
	resp, b := e.Do(http.MethodPost, "/api/sessions", `{"worktree":{"branch":"over"}}`)
	apitest.WantError(t, "at the limit", resp, b, http.StatusConflict, wire.CodeSessionLimitReached)
	if strings.Contains(apitest.Branches(t, e.dir), "over") {
		t.Error("a refused create left its branch")
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".worktrees", "over")); err == nil {
		t.Error("a refused create left its worktree")
	}
}

func TestWorktreeNotARepository(t *testing.T) {
	e := newAPI(t) // a plain directory
	resp, b := e.Do(http.MethodPost, "/api/sessions", `{"worktree":{"branch":"feature"}}`)
	msg := apitest.WantError(t, "not a repository", resp, b, http.StatusBadRequest, wire.CodeWorktreeError)
	if !strings.Contains(msg, "not inside a git work tree") {
		t.Errorf("message %q does not say why", msg)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".worktrees")); err == nil {
		t.Error(".worktrees was created")
	}
	if n := len(e.List()); n != 0 {
		t.Errorf("%d sessions listed, want 0", n)
	}
}

func TestRemoveWorktree(t *testing.T) {
	e := newRepoAPI(t)
	s := e.Create(`{"worktree":{"branch":"wip"}}`)
	dir := s.Worktree.Path
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("draft\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, q := range []string{"?removeWorktree=maybe", "?force=true", "?removeWorktree=true&force=2"} {
		resp, b := e.Do(http.MethodDelete, "/api/sessions/"+s.ID+q, "")
		apitest.WantError(t, q, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}

	// Uncommitted changes refuse it, and nothing is touched.
	resp, b := e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"?removeWorktree=true", "")
	msg := apitest.WantError(t, "dirty", resp, b, http.StatusConflict, wire.CodeWorktreeDirty)
	for _, m := range []string{"notes.txt", "README.md", "force"} {
		if !strings.Contains(msg, m) {
			t.Errorf("message %q does not mention %q", msg, m)
		}
	}
	if got := e.Get(s.ID); !got.Running {
		t.Errorf("after the refusal the session is %+v, want still running", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("the refusal lost work: %v", err)
	}

	// force removes the worktree, never the branch.
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"?removeWorktree=true&force=true", "")
	apitest.WantStatus(t, "forced", resp, b, http.StatusNoContent)
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if !strings.Contains(apitest.Branches(t, e.dir), "wip") {
		t.Error("the branch was deleted")
	}
	if n := len(e.List()); n != 0 {
		t.Errorf("%d sessions listed, want 0", n)
	}

	// A clean one goes without force; a session without one is refused.
	clean := e.Create(`{"worktree":{"branch":"clean"}}`)
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+clean.ID+"?removeWorktree=true", "")
	apitest.WantStatus(t, "clean", resp, b, http.StatusNoContent)
	if _, err := os.Stat(clean.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("clean worktree still there: %v", err)
	}
	plain := e.Create(`{}`)
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+plain.ID+"?removeWorktree=true", "")
	if msg := apitest.WantError(t, "no worktree", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage); !strings.Contains(msg, "no worktree") {
		t.Errorf("message %q", msg)
	}
}

// TestWorktreesSymlinkRefused: finding 6. A repository that commits
// .worktrees as a symbolic link would send every checkout, and every
// removal, wherever it points; such a worktree is refused, and so is
// removing one through a link that appeared later.
func TestWorktreesSymlinkRefused(t *testing.T) {
	e := newRepoAPI(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "precious"), []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(e.dir, ".worktrees")); err != nil {
		t.Fatal(err)
	}
	apitest.Git(t, e.dir, "add", ".worktrees")
	apitest.Git(t, e.dir, "commit", "-q", "-m", "a link, committed")
	resp, b := e.Do(http.MethodPost, "/api/sessions", `{"worktree":{"branch":"feature/x"}}`)
	msg := apitest.WantError(t, "worktree through a link", resp, b, http.StatusBadRequest, wire.CodeWorktreeError)
	if !strings.Contains(msg, "symbolic link") || !strings.Contains(msg, outside) {
		t.Errorf("message %q does not say .worktrees is a link, and to where", msg)
	}
	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 {
		t.Errorf("outside the workspace now: %v (%v), want only precious", entries, err)
	}
	if got := apitest.Branches(t, e.dir); strings.Contains(got, "feature/x") {
		t.Errorf("branches %q: the refused worktree's branch was made", got)
	}
	if n := len(e.List()); n != 0 {
		t.Fatalf("%d sessions after a refused worktree", n)
	}

	// A link further in: .worktrees is real, but the worktree's own
	// directory was replaced by a link after it was made.
	apitest.Git(t, e.dir, "rm", "-q", ".worktrees")
	apitest.Git(t, e.dir, "commit", "-q", "-m", "no link")
	s := e.Create(`{"worktree":{"branch":"feature/y"}}`)
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"?removeWorktree=true&force=true", "")
	apitest.WantStatus(t, "remove a real worktree", resp, b, http.StatusNoContent)

	s = e.Create(`{"worktree":{"branch":"feature/z"}}`)
	wt := filepath.Join(e.dir, ".worktrees")
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(wt, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, wt); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(moved, "feature-z"), filepath.Join(outside, "feature-z")); err != nil {
		t.Fatal(err)
	}
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"?removeWorktree=true&force=true", "")
	apitest.WantError(t, "remove through a link", resp, b, http.StatusBadRequest, wire.CodeWorktreeError)
	if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
		t.Errorf("the file outside the workspace: %v", err)
	}
	if _, err := os.Stat(filepath.Join(moved, "feature-z", "README.md")); err != nil {
		t.Errorf("the worktree behind the link: %v", err)
	}
	if got := e.Get(s.ID); !got.Running {
		t.Errorf("the session was stopped by a refused removal: %+v", got)
	}
}

// TestConfigSaysWhetherGitRepository: GET /api/config tells the UI whether
// the workspace is a git repository, outside of which it offers no worktree.
func TestConfigSaysWhetherGitRepository(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(*testing.T) *apiEnv
		want bool
	}{
		{"a plain directory", func(t *testing.T) *apiEnv { return newAPI(t) }, false},
		{"a repository", func(t *testing.T) *apiEnv { return newRepoAPI(t) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.env(t)
			resp, b := e.Do(http.MethodGet, "/api/config", "")
			apitest.WantStatus(t, "GET /api/config", resp, b, http.StatusOK)
			var cfg struct {
				GitRepository *bool `json:"gitRepository"`
			}
			if err := json.Unmarshal(b, &cfg); err != nil || cfg.GitRepository == nil || *cfg.GitRepository != tc.want {
				t.Fatalf("GET /api/config = %s, %v; want gitRepository %v", b, err, tc.want)
			}
		})
	}
}
