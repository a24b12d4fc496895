package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// branchEvent is session.branch as a client reads it.
type branchEvent struct {
	Action, Branch, Base, Commit, Merged string
	Ahead, Behind                        int
	Archived                             bool
	PullRequestURL                       string
	Conflicts                            []string
}

func waitBranchEvent(t *testing.T, conn *websocket.Conn, action string) branchEvent {
	t.Helper()
	got := apitest.CollectUntil(t, conn, "session.branch "+action, func(ev apitest.Event) bool {
		return ev.Type == wire.TypeSessionBranch && strings.Contains(string(ev.Raw), `"action":"`+action+`"`)
	})
	var b branchEvent
	apitest.DecodeJSON(t, got[len(got)-1].Raw, &b)
	return b
}

// TestFromDiffToMerged takes a worktree session's work the whole way: a
// suggested message, a commit, where the branch stands, a merge refused
// while the workspace has changes of its own, the merge, the archive.
// Every step is announced to the clients.
func TestFromDiffToMerged(t *testing.T) {
	e := harness{}.startShip(t)
	conn := e.watchWS(t)
	s := e.Create(`{"worktree":{"branch":"feature/x"}}`)
	api := "/api/sessions/" + s.ID
	testutil.WriteFile(t, s.Worktree.Path, "src/new.txt", "one\ntwo\n")

	resp, b := e.Do(http.MethodGet, api+"/commit", "")
	apitest.WantStatus(t, "suggest a message", resp, b, http.StatusOK)
	var suggested struct{ Message string }
	apitest.DecodeJSON(t, b, &suggested)
	if !strings.Contains(suggested.Message, "src/new.txt") {
		t.Errorf("suggested message %q does not name the file", suggested.Message)
	}

	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"  "}`)
	apitest.WantError(t, "commit with an empty message", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"Add new.txt"}`)
	apitest.WantStatus(t, "commit", resp, b, http.StatusOK)
	var committed struct{ Commit, Branch string }
	apitest.DecodeJSON(t, b, &committed)
	if committed.Branch != "feature/x" || committed.Commit != strings.TrimSpace(apitest.Git(t, s.Worktree.Path, "rev-parse", "HEAD")) {
		t.Fatalf("commit answered %+v", committed)
	}
	if ev := waitBranchEvent(t, conn, "commit"); ev.Commit != committed.Commit || ev.Ahead != 1 || ev.Base != "main" {
		t.Errorf("session.branch after the commit: %+v", ev)
	}
	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"again"}`)
	apitest.WantError(t, "commit a clean tree", resp, b, http.StatusConflict, wire.CodeNothingToCommit)

	resp, b = e.Do(http.MethodGet, api+"/branch", "")
	apitest.WantStatus(t, "branch", resp, b, http.StatusOK)
	var st struct {
		Branch, Base  string
		Ahead, Behind int
	}
	apitest.DecodeJSON(t, b, &st)
	if st.Branch != "feature/x" || st.Base != "main" || st.Ahead != 1 || st.Behind != 0 {
		t.Errorf("branch = %+v, want feature/x one ahead of main", st)
	}

	// Bringing main into the branch needs the worktree's own changes
	// committed first.
	testutil.WriteFile(t, s.Worktree.Path, "src/new.txt", "one\ntwo\nuncommitted\n")
	resp, b = e.Do(http.MethodPost, api+"/update", `{}`)
	apitest.WantError(t, "update a worktree with uncommitted changes", resp, b, http.StatusConflict, wire.CodeWorktreeDirty)
	apitest.Git(t, s.Worktree.Path, "checkout", "--", "src/new.txt")

	// The workspace has main checked out, with a change of its own: the
	// merge would move main under it, so nothing moves.
	mainBefore := apitest.Git(t, e.dir, "rev-parse", "main")
	testutil.WriteFile(t, e.dir, "README.md", "edited by hand\n")
	resp, b = e.Do(http.MethodPost, api+"/merge", `{"mode":"squash"}`)
	apitest.WantError(t, "merge into a dirty workspace", resp, b, http.StatusConflict, wire.CodeBaseDirty)
	if got := apitest.Git(t, e.dir, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("main moved on a refused merge")
	}
	apitest.Git(t, e.dir, "checkout", "--", "README.md")

	resp, b = e.Do(http.MethodPost, api+"/merge", `{"mode":"bogus"}`)
	apitest.WantError(t, "merge in an unknown mode", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodPost, api+"/merge", `{"mode":"squash"}`)
	apitest.WantStatus(t, "merge", resp, b, http.StatusOK)
	var merged struct{ Commit string }
	apitest.DecodeJSON(t, b, &merged)
	if tip := strings.TrimSpace(apitest.Git(t, e.dir, "rev-parse", "main")); merged.Commit != tip {
		t.Fatalf("merge answered %s, main is at %s", merged.Commit, tip)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "src/new.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the workspace's files did not follow the merge: %q, %v", b, err)
	}
	if out := apitest.Git(t, e.dir, "status", "--porcelain"); out != "" {
		t.Errorf("the workspace is not clean after the merge:\n%s", out)
	}
	if ev := waitBranchEvent(t, conn, "merge"); ev.Merged != merged.Commit {
		t.Errorf("session.branch after the merge: %+v", ev)
	}
	if got := e.Get(s.ID); got.Worktree == nil || got.Worktree.Merged != merged.Commit {
		t.Errorf("the session does not say it was merged: %+v", got.Worktree)
	}

	resp, b = e.Do(http.MethodPost, api+"/archive", "")
	apitest.WantStatus(t, "archive", resp, b, http.StatusOK)
	if _, err := os.Stat(s.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after the archive: %v", err)
	}
	if !strings.Contains(apitest.Branches(t, e.dir), "feature/x") {
		t.Error("the archive deleted the branch")
	}
	got := e.Get(s.ID)
	if got.Worktree == nil || !got.Worktree.Archived || got.Running {
		t.Errorf("after the archive the session is %+v, want listed, archived, not running", got)
	}
	if ev := waitBranchEvent(t, conn, "archive"); !ev.Archived {
		t.Errorf("session.branch after the archive: %+v", ev)
	}
	resp, b = e.Do(http.MethodPost, api+"/resume", "")
	apitest.WantError(t, "resume an archived session", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodPost, api+"/merge", `{}`)
	apitest.WantError(t, "merge an archived session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
	// Its tree is gone: nothing asks git about it.
	for _, path := range []string{"/commit", "/checkpoints", "/push"} {
		resp, b = e.Do(http.MethodPost, api+path, `{}`)
		apitest.WantError(t, "POST "+path+" of an archived session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
	}
}

// TestMergeConflictLeavesNothingHalfDone: a merge that conflicts names
// the files and leaves main, the workspace and the worktree as they were;
// asking the agent to resolve brings main into the branch inside the
// worktree, markers and all, and queues a prompt naming the files.
func TestMergeConflictLeavesNothingHalfDone(t *testing.T) {
	e := harness{}.startShip(t)
	s := e.Create(`{"worktree":{"branch":"clash"}}`)
	api := "/api/sessions/" + s.ID
	testutil.WriteFile(t, s.Worktree.Path, "README.md", "from the branch\n")
	resp, b := e.Do(http.MethodPost, api+"/commit", `{"message":"branch side"}`)
	apitest.WantStatus(t, "commit on the branch", resp, b, http.StatusOK)
	testutil.WriteFile(t, e.dir, "README.md", "from main\n")
	apitest.Git(t, e.dir, "commit", "-q", "-am", "main side")
	mainBefore := apitest.Git(t, e.dir, "rev-parse", "main")

	resp, b = e.Do(http.MethodPost, api+"/merge", `{"mode":"merge"}`)
	apitest.WantError(t, "a conflicting merge", resp, b, http.StatusConflict, wire.CodeMergeConflict)
	var body wire.ErrorBody
	apitest.DecodeJSON(t, b, &body)
	if !slices.Equal(body.Error.Files, []string{"README.md"}) {
		t.Errorf("conflicted files %v, want README.md", body.Error.Files)
	}
	if apitest.Git(t, e.dir, "rev-parse", "main") != mainBefore {
		t.Error("main moved on a conflicting merge")
	}
	if out := apitest.Git(t, e.dir, "status", "--porcelain"); out != "" {
		t.Errorf("the workspace is not clean after a conflicting merge:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".git", "MERGE_HEAD")); !os.IsNotExist(err) {
		t.Errorf("MERGE_HEAD left in the workspace: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "README.md")); string(b) != "from main\n" {
		t.Errorf("the workspace's README.md is %q", b)
	}

	resp, b = e.Do(http.MethodPost, api+"/update", `{"author":"alice"}`)
	apitest.WantStatus(t, "ask the agent to resolve", resp, b, http.StatusOK)
	var upd struct {
		Conflicts []string
		PromptID  string
		Position  int
	}
	apitest.DecodeJSON(t, b, &upd)
	if !slices.Equal(upd.Conflicts, []string{"README.md"}) || upd.PromptID == "" || upd.Position != 1 {
		t.Fatalf("update answered %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Worktree.Path, "README.md")); !strings.Contains(string(b), "<<<<<<<") {
		t.Errorf("the worktree's README.md has no conflict markers for the agent: %q", b)
	}
	sess, err := e.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := sess.Queue()
	if len(q.Prompts) != 1 || !strings.Contains(q.Prompts[0].Text, "- README.md") || q.Prompts[0].Author.Name != "alice" {
		t.Errorf("queued prompt %+v, want alice's naming README.md", q.Prompts)
	}
}

// TestConflictNamesCarryNoControls: finding 8 of the third review. A
// conflicting file whose name holds an escape made "ask the agent to
// resolve" fail to queue its prompt, and a commit message kept ANSI and
// bidi controls. Now the prompt names such files escaped, so it queues
// and types nothing but text, and such a message is refused.
func TestConflictNamesCarryNoControls(t *testing.T) {
	e := harness{}.startShip(t)
	s := e.Create(`{"worktree":{"branch":"names"}}`)
	api := "/api/sessions/" + s.ID
	names := []string{"evil\x1b[2J.txt", "txt.\u202eexe.md"}
	for _, n := range names {
		testutil.WriteFile(t, e.dir, n, "base\n")
	}
	apitest.Git(t, e.dir, "add", "-A")
	apitest.Git(t, e.dir, "commit", "-q", "-m", "odd names")
	resp, b := e.Do(http.MethodPost, api+"/update", `{}`)
	apitest.WantStatus(t, "bring the names into the branch", resp, b, http.StatusOK)
	for _, n := range names {
		testutil.WriteFile(t, s.Worktree.Path, n, "from the branch\n")
	}
	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"red \u001b[31mbranch\u001b[0m side"}`)
	apitest.WantError(t, "a commit message with an ANSI escape", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"branch side \u202e"}`)
	apitest.WantError(t, "a commit message with a bidi override", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodPost, api+"/commit", `{"message":"branch side"}`)
	apitest.WantStatus(t, "commit on the branch", resp, b, http.StatusOK)
	for _, n := range names {
		testutil.WriteFile(t, e.dir, n, "from main\n")
	}
	apitest.Git(t, e.dir, "commit", "-q", "-am", "main side")

	resp, b = e.Do(http.MethodPost, api+"/update", `{"author":"alice"}`)
	apitest.WantStatus(t, "ask the agent to resolve", resp, b, http.StatusOK)
	var upd struct {
		Conflicts []string
		PromptID  string
	}
	apitest.DecodeJSON(t, b, &upd)
	if len(upd.Conflicts) != 2 || upd.PromptID == "" {
		t.Fatalf("update answered %s, want both files in conflict and a queued prompt", b)
	}
	sess, err := e.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := sess.Queue()
	if len(q.Prompts) != 1 {
		t.Fatalf("queue %+v, want the prompt", q.Prompts)
	}
	text := q.Prompts[0].Text
	for _, want := range []string{`- "evil\x1b[2J.txt"`, `- "txt.\u202eexe.md"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt %q does not name %s", text, want)
		}
	}
	if i := strings.IndexFunc(text, func(r rune) bool { return r == '\x1b' || r == '\u202e' }); i >= 0 {
		t.Errorf("the prompt carries a control: %q", text)
	}
}

// TestPushNamesThePullRequestPage: a remote whose url is GitHub's and
// whose pushurl is a local bare repository gets the branch, with its
// upstream set, and the answer links GitHub's new pull request page.
func TestPushNamesThePullRequestPage(t *testing.T) {
	e := harness{}.startShip(t)
	bare := t.TempDir()
	apitest.Git(t, bare, "init", "-q", "--bare")
	apitest.Git(t, e.dir, "remote", "add", "origin", "git@github.com:acme/widgets.git")
	apitest.Git(t, e.dir, "config", "remote.origin.pushurl", bare)
	s := e.Create(`{"worktree":{"branch":"feature/push"}}`)
	api := "/api/sessions/" + s.ID
	testutil.WriteFile(t, s.Worktree.Path, "p.txt", "p\n")
	resp, b := e.Do(http.MethodPost, api+"/commit", `{"message":"p"}`)
	apitest.WantStatus(t, "commit", resp, b, http.StatusOK)

	resp, b = e.Do(http.MethodPost, api+"/push", `{}`)
	apitest.WantStatus(t, "push", resp, b, http.StatusOK)
	var pushed struct{ Remote, Branch, PullRequestURL string }
	apitest.DecodeJSON(t, b, &pushed)
	if pushed.Remote != "origin" || pushed.Branch != "feature/push" ||
		!strings.HasPrefix(pushed.PullRequestURL, "https://github.com/acme/widgets/compare/main...") {
		t.Errorf("push answered %+v", pushed)
	}
	if got, want := apitest.Git(t, bare, "rev-parse", "refs/heads/feature/push"), apitest.Git(t, s.Worktree.Path, "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote has %s, the branch is at %s", got, want)
	}
	if up := strings.TrimSpace(apitest.Git(t, s.Worktree.Path, "rev-parse", "--abbrev-ref", "@{upstream}")); up != "origin/feature/push" {
		t.Errorf("upstream %q, want origin/feature/push", up)
	}
	resp, b = e.Do(http.MethodPost, api+"/push", `{"remote":"nowhere"}`)
	apitest.WantError(t, "push to an unknown remote", resp, b, http.StatusNotFound, wire.CodeNoRemote)
}

// TestCheckpointRestoresAnUntrackedFile: a checkpoint taken on request
// holds an untracked file; restoring it brings the file back and removes
// one made since, after checkpointing that state, so the restore can be
// undone.
func TestCheckpointRestoresAnUntrackedFile(t *testing.T) {
	e := harness{}.startShip(t)
	s := e.CreateCommand(apitest.Sleeper())
	api := "/api/sessions/" + s.ID
	testutil.WriteFile(t, e.dir, "notes.txt", "keep me\n")

	resp, b := e.Do(http.MethodPost, api+"/checkpoints", "")
	apitest.WantStatus(t, "take a checkpoint", resp, b, http.StatusOK)
	var took struct{ ID int }
	apitest.DecodeJSON(t, b, &took)
	if took.ID != 1 {
		t.Fatalf("checkpoint answered %s, want id 1", b)
	}
	if err := os.Remove(filepath.Join(e.dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, e.dir, "scratch.txt", "made later\n")

	resp, b = e.Do(http.MethodPost, api+"/checkpoints/1/restore", "")
	apitest.WantStatus(t, "restore", resp, b, http.StatusOK)
	var restored struct{ Restored, Saved int }
	apitest.DecodeJSON(t, b, &restored)
	if restored.Restored != 1 || restored.Saved != 2 {
		t.Errorf("restore answered %s", b)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "notes.txt")); err != nil || string(b) != "keep me\n" {
		t.Errorf("notes.txt after the restore: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "scratch.txt")); !os.IsNotExist(err) {
		t.Errorf("scratch.txt, made after the checkpoint, is still there: %v", err)
	}

	resp, b = e.Do(http.MethodGet, api+"/checkpoints", "")
	apitest.WantStatus(t, "list", resp, b, http.StatusOK)
	var list struct{ Checkpoints []struct{ ID, Files int } }
	apitest.DecodeJSON(t, b, &list)
	if len(list.Checkpoints) != 2 || list.Checkpoints[1].ID != 2 {
		t.Errorf("checkpoints %s, want 1 and the one the restore saved", b)
	}
	resp, b = e.Do(http.MethodGet, api+"/checkpoints/2", "")
	apitest.WantStatus(t, "a checkpoint's diff", resp, b, http.StatusOK)
	if !strings.Contains(string(b), "scratch.txt") {
		t.Errorf("checkpoint 2's diff does not show scratch.txt: %s", b)
	}

	resp, b = e.Do(http.MethodPost, api+"/checkpoints/99/restore", "")
	apitest.WantError(t, "restore an unknown checkpoint", resp, b, http.StatusNotFound, wire.CodeCheckpointNotFound)
	resp, b = e.Do(http.MethodGet, api+"/checkpoints/x", "")
	apitest.WantError(t, "a checkpoint id that is not a number", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.Do(http.MethodGet, api+"/branch", "")
	apitest.WantError(t, "branch of a workspace session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
}

// TestCheckpointNamesSkippedFiles: with --checkpoint-max-file, an
// untracked file over it is left out of the checkpoint, which names it
// with its size in the answer, in the list and in session.checkpoint.
func TestCheckpointNamesSkippedFiles(t *testing.T) {
	e := harness{checkpoints: checkpoint.Options{MaxFileSize: 1 << 10}}.startShip(t)
	conn := e.watchWS(t)
	s := e.CreateCommand(apitest.Sleeper())
	api := "/api/sessions/" + s.ID
	testutil.WriteFile(t, e.dir, "dump.bin", strings.Repeat("x", 4096))
	testutil.WriteFile(t, e.dir, "notes.txt", "kept\n")
	type skipped struct {
		Path   string
		Size   int64
		Reason string
	}
	want := []skipped{{"dump.bin", 4096, "file"}}

	resp, b := e.Do(http.MethodPost, api+"/checkpoints", "")
	apitest.WantStatus(t, "take a checkpoint", resp, b, http.StatusOK)
	var took struct {
		Checkpoint struct {
			ID      int
			Files   int
			Skipped []skipped
		}
	}
	apitest.DecodeJSON(t, b, &took)
	if took.Checkpoint.Files != 1 || !slices.Equal(took.Checkpoint.Skipped, want) {
		t.Errorf("checkpoint answered %s, want notes.txt kept and dump.bin named", b)
	}
	got := apitest.CollectUntil(t, conn, "session.checkpoint", func(ev apitest.Event) bool {
		return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID
	})
	var ev struct{ Checkpoint struct{ Skipped []skipped } }
	apitest.DecodeJSON(t, got[len(got)-1].Raw, &ev)
	if !slices.Equal(ev.Checkpoint.Skipped, want) {
		t.Errorf("session.checkpoint %s, want dump.bin named", got[len(got)-1].Raw)
	}
	resp, b = e.Do(http.MethodGet, api+"/checkpoints", "")
	apitest.WantStatus(t, "list", resp, b, http.StatusOK)
	var list struct{ Checkpoints []struct{ Skipped []skipped } }
	apitest.DecodeJSON(t, b, &list)
	if len(list.Checkpoints) != 1 || !slices.Equal(list.Checkpoints[0].Skipped, want) {
		t.Errorf("checkpoints %s, want dump.bin named", b)
	}
}
