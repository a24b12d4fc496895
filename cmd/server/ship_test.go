package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
	"github.com/gorilla/websocket"
)

// newShipAPI serves a repository workspace whose git knows who commits.
func newShipAPI(t *testing.T, args ...string) *apiEnv {
	t.Helper()
	e := newRepoAPI(t, args...)
	git(t, e.dir, "config", "user.name", "Dev")
	git(t, e.dir, "config", "user.email", "dev@example.com")
	return e
}

func writeIn(t *testing.T, dir, name, body string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decodeJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// branchEvent is session.branch as a client reads it.
type branchEvent struct {
	Action, Branch, Base, Commit, Merged string
	Ahead, Behind                        int
	Archived                             bool
	PullRequestURL                       string
	Conflicts                            []string
}

func waitBranchEvent(t *testing.T, e *apiEnv, conn *websocket.Conn, action string) branchEvent {
	t.Helper()
	got := collectUntil(t, conn, "session.branch "+action, func(ev watchEvent) bool {
		return ev.Type == wire.TypeSessionBranch && strings.Contains(string(ev.Raw), `"action":"`+action+`"`)
	})
	var b branchEvent
	decodeJSON(t, got[len(got)-1].Raw, &b)
	return b
}

// TestFromDiffToMerged takes a worktree session's work the whole way: a
// suggested message, a commit, where the branch stands, a merge refused
// while the workspace has changes of its own, the merge, the archive.
// Every step is announced to the clients.
func TestFromDiffToMerged(t *testing.T) {
	e := newShipAPI(t)
	conn := watchWS(t, e)
	s := e.create(`{"worktree":{"branch":"feature/x"}}`)
	api := "/api/sessions/" + s.ID
	writeIn(t, s.Worktree.Path, "src/new.txt", "one\ntwo\n")

	resp, b := e.do(http.MethodGet, api+"/commit", "")
	wantStatus(t, "suggest a message", resp, b, http.StatusOK)
	var suggested struct{ Message string }
	decodeJSON(t, b, &suggested)
	if !strings.Contains(suggested.Message, "src/new.txt") {
		t.Errorf("suggested message %q does not name the file", suggested.Message)
	}

	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"  "}`)
	wantError(t, "commit with an empty message", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"Add new.txt"}`)
	wantStatus(t, "commit", resp, b, http.StatusOK)
	var committed struct{ Commit, Branch string }
	decodeJSON(t, b, &committed)
	if committed.Branch != "feature/x" || committed.Commit != strings.TrimSpace(git(t, s.Worktree.Path, "rev-parse", "HEAD")) {
		t.Fatalf("commit answered %+v", committed)
	}
	if ev := waitBranchEvent(t, e, conn, "commit"); ev.Commit != committed.Commit || ev.Ahead != 1 || ev.Base != "main" {
		t.Errorf("session.branch after the commit: %+v", ev)
	}
	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"again"}`)
	wantError(t, "commit a clean tree", resp, b, http.StatusConflict, wire.CodeNothingToCommit)

	resp, b = e.do(http.MethodGet, api+"/branch", "")
	wantStatus(t, "branch", resp, b, http.StatusOK)
	var st struct {
		Branch, Base  string
		Ahead, Behind int
	}
	decodeJSON(t, b, &st)
	if st.Branch != "feature/x" || st.Base != "main" || st.Ahead != 1 || st.Behind != 0 {
		t.Errorf("branch = %+v, want feature/x one ahead of main", st)
	}

	// Bringing main into the branch needs the worktree's own changes
	// committed first.
	writeIn(t, s.Worktree.Path, "src/new.txt", "one\ntwo\nuncommitted\n")
	resp, b = e.do(http.MethodPost, api+"/update", `{}`)
	wantError(t, "update a worktree with uncommitted changes", resp, b, http.StatusConflict, wire.CodeWorktreeDirty)
	git(t, s.Worktree.Path, "checkout", "--", "src/new.txt")

	// The workspace has main checked out, with a change of its own: the
	// merge would move main under it, so nothing moves.
	mainBefore := git(t, e.dir, "rev-parse", "main")
	writeIn(t, e.dir, "README.md", "edited by hand\n")
	resp, b = e.do(http.MethodPost, api+"/merge", `{"mode":"squash"}`)
	wantError(t, "merge into a dirty workspace", resp, b, http.StatusConflict, wire.CodeBaseDirty)
	if got := git(t, e.dir, "rev-parse", "main"); got != mainBefore {
		t.Fatalf("main moved on a refused merge")
	}
	git(t, e.dir, "checkout", "--", "README.md")

	resp, b = e.do(http.MethodPost, api+"/merge", `{"mode":"bogus"}`)
	wantError(t, "merge in an unknown mode", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, api+"/merge", `{"mode":"squash"}`)
	wantStatus(t, "merge", resp, b, http.StatusOK)
	var merged struct{ Commit string }
	decodeJSON(t, b, &merged)
	if tip := strings.TrimSpace(git(t, e.dir, "rev-parse", "main")); merged.Commit != tip {
		t.Fatalf("merge answered %s, main is at %s", merged.Commit, tip)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "src/new.txt")); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the workspace's files did not follow the merge: %q, %v", b, err)
	}
	if out := git(t, e.dir, "status", "--porcelain"); out != "" {
		t.Errorf("the workspace is not clean after the merge:\n%s", out)
	}
	if ev := waitBranchEvent(t, e, conn, "merge"); ev.Merged != merged.Commit {
		t.Errorf("session.branch after the merge: %+v", ev)
	}
	if got := e.get(s.ID); got.Worktree == nil || got.Worktree.Merged != merged.Commit {
		t.Errorf("the session does not say it was merged: %+v", got.Worktree)
	}

	resp, b = e.do(http.MethodPost, api+"/archive", "")
	wantStatus(t, "archive", resp, b, http.StatusOK)
	if _, err := os.Stat(s.Worktree.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree is still there after the archive: %v", err)
	}
	if !strings.Contains(branches(t, e.dir), "feature/x") {
		t.Error("the archive deleted the branch")
	}
	got := e.get(s.ID)
	if got.Worktree == nil || !got.Worktree.Archived || got.Running {
		t.Errorf("after the archive the session is %+v, want listed, archived, not running", got)
	}
	if ev := waitBranchEvent(t, e, conn, "archive"); !ev.Archived {
		t.Errorf("session.branch after the archive: %+v", ev)
	}
	resp, b = e.do(http.MethodPost, api+"/resume", "")
	wantError(t, "resume an archived session", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, api+"/merge", `{}`)
	wantError(t, "merge an archived session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
	// Its tree is gone: nothing asks git about it.
	for _, path := range []string{"/commit", "/checkpoints", "/push"} {
		resp, b = e.do(http.MethodPost, api+path, `{}`)
		wantError(t, "POST "+path+" of an archived session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
	}
}

// TestMergeConflictLeavesNothingHalfDone: a merge that conflicts names
// the files and leaves main, the workspace and the worktree as they were;
// asking the agent to resolve brings main into the branch inside the
// worktree, markers and all, and queues a prompt naming the files.
func TestMergeConflictLeavesNothingHalfDone(t *testing.T) {
	e := newShipAPI(t)
	s := e.create(`{"worktree":{"branch":"clash"}}`)
	api := "/api/sessions/" + s.ID
	writeIn(t, s.Worktree.Path, "README.md", "from the branch\n")
	resp, b := e.do(http.MethodPost, api+"/commit", `{"message":"branch side"}`)
	wantStatus(t, "commit on the branch", resp, b, http.StatusOK)
	writeIn(t, e.dir, "README.md", "from main\n")
	git(t, e.dir, "commit", "-q", "-am", "main side")
	mainBefore := git(t, e.dir, "rev-parse", "main")

	resp, b = e.do(http.MethodPost, api+"/merge", `{"mode":"merge"}`)
	wantError(t, "a conflicting merge", resp, b, http.StatusConflict, wire.CodeMergeConflict)
	var body wire.ErrorBody
	decodeJSON(t, b, &body)
	if !slices.Equal(body.Error.Files, []string{"README.md"}) {
		t.Errorf("conflicted files %v, want README.md", body.Error.Files)
	}
	if git(t, e.dir, "rev-parse", "main") != mainBefore {
		t.Error("main moved on a conflicting merge")
	}
	if out := git(t, e.dir, "status", "--porcelain"); out != "" {
		t.Errorf("the workspace is not clean after a conflicting merge:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".git", "MERGE_HEAD")); !os.IsNotExist(err) {
		t.Errorf("MERGE_HEAD left in the workspace: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, "README.md")); string(b) != "from main\n" {
		t.Errorf("the workspace's README.md is %q", b)
	}

	resp, b = e.do(http.MethodPost, api+"/update", `{"author":"alice"}`)
	wantStatus(t, "ask the agent to resolve", resp, b, http.StatusOK)
	var upd struct {
		Conflicts []string
		PromptID  string
		Position  int
	}
	decodeJSON(t, b, &upd)
	if !slices.Equal(upd.Conflicts, []string{"README.md"}) || upd.PromptID == "" || upd.Position != 1 {
		t.Fatalf("update answered %s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(s.Worktree.Path, "README.md")); !strings.Contains(string(b), "<<<<<<<") {
		t.Errorf("the worktree's README.md has no conflict markers for the agent: %q", b)
	}
	sess, err := e.srv.mgr.Get(s.ID)
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
	e := newShipAPI(t)
	s := e.create(`{"worktree":{"branch":"names"}}`)
	api := "/api/sessions/" + s.ID
	names := []string{"evil\x1b[2J.txt", "txt.\u202eexe.md"}
	for _, n := range names {
		writeIn(t, e.dir, n, "base\n")
	}
	git(t, e.dir, "add", "-A")
	git(t, e.dir, "commit", "-q", "-m", "odd names")
	resp, b := e.do(http.MethodPost, api+"/update", `{}`)
	wantStatus(t, "bring the names into the branch", resp, b, http.StatusOK)
	for _, n := range names {
		writeIn(t, s.Worktree.Path, n, "from the branch\n")
	}
	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"red \u001b[31mbranch\u001b[0m side"}`)
	wantError(t, "a commit message with an ANSI escape", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"branch side \u202e"}`)
	wantError(t, "a commit message with a bidi override", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, api+"/commit", `{"message":"branch side"}`)
	wantStatus(t, "commit on the branch", resp, b, http.StatusOK)
	for _, n := range names {
		writeIn(t, e.dir, n, "from main\n")
	}
	git(t, e.dir, "commit", "-q", "-am", "main side")

	resp, b = e.do(http.MethodPost, api+"/update", `{"author":"alice"}`)
	wantStatus(t, "ask the agent to resolve", resp, b, http.StatusOK)
	var upd struct {
		Conflicts []string
		PromptID  string
	}
	decodeJSON(t, b, &upd)
	if len(upd.Conflicts) != 2 || upd.PromptID == "" {
		t.Fatalf("update answered %s, want both files in conflict and a queued prompt", b)
	}
	sess, err := e.srv.mgr.Get(s.ID)
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
	e := newShipAPI(t)
	bare := t.TempDir()
	git(t, bare, "init", "-q", "--bare")
	git(t, e.dir, "remote", "add", "origin", "git@github.com:acme/widgets.git")
	git(t, e.dir, "config", "remote.origin.pushurl", bare)
	s := e.create(`{"worktree":{"branch":"feature/push"}}`)
	api := "/api/sessions/" + s.ID
	writeIn(t, s.Worktree.Path, "p.txt", "p\n")
	resp, b := e.do(http.MethodPost, api+"/commit", `{"message":"p"}`)
	wantStatus(t, "commit", resp, b, http.StatusOK)

	resp, b = e.do(http.MethodPost, api+"/push", `{}`)
	wantStatus(t, "push", resp, b, http.StatusOK)
	var pushed struct{ Remote, Branch, PullRequestURL string }
	decodeJSON(t, b, &pushed)
	if pushed.Remote != "origin" || pushed.Branch != "feature/push" ||
		!strings.HasPrefix(pushed.PullRequestURL, "https://github.com/acme/widgets/compare/main...") {
		t.Errorf("push answered %+v", pushed)
	}
	if got, want := git(t, bare, "rev-parse", "refs/heads/feature/push"), git(t, s.Worktree.Path, "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote has %s, the branch is at %s", got, want)
	}
	if up := strings.TrimSpace(git(t, s.Worktree.Path, "rev-parse", "--abbrev-ref", "@{upstream}")); up != "origin/feature/push" {
		t.Errorf("upstream %q, want origin/feature/push", up)
	}
	resp, b = e.do(http.MethodPost, api+"/push", `{"remote":"nowhere"}`)
	wantError(t, "push to an unknown remote", resp, b, http.StatusNotFound, wire.CodeNoRemote)
}

// TestCheckpointRestoresAnUntrackedFile: a checkpoint taken on request
// holds an untracked file; restoring it brings the file back and removes
// one made since, after checkpointing that state, so the restore can be
// undone.
func TestCheckpointRestoresAnUntrackedFile(t *testing.T) {
	e := newShipAPI(t)
	s := e.createCommand(sleeper())
	api := "/api/sessions/" + s.ID
	writeIn(t, e.dir, "notes.txt", "keep me\n")

	resp, b := e.do(http.MethodPost, api+"/checkpoints", "")
	wantStatus(t, "take a checkpoint", resp, b, http.StatusOK)
	var took struct{ ID int }
	decodeJSON(t, b, &took)
	if took.ID != 1 {
		t.Fatalf("checkpoint answered %s, want id 1", b)
	}
	if err := os.Remove(filepath.Join(e.dir, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	writeIn(t, e.dir, "scratch.txt", "made later\n")

	resp, b = e.do(http.MethodPost, api+"/checkpoints/1/restore", "")
	wantStatus(t, "restore", resp, b, http.StatusOK)
	var restored struct{ Restored, Saved int }
	decodeJSON(t, b, &restored)
	if restored.Restored != 1 || restored.Saved != 2 {
		t.Errorf("restore answered %s", b)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "notes.txt")); err != nil || string(b) != "keep me\n" {
		t.Errorf("notes.txt after the restore: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "scratch.txt")); !os.IsNotExist(err) {
		t.Errorf("scratch.txt, made after the checkpoint, is still there: %v", err)
	}

	resp, b = e.do(http.MethodGet, api+"/checkpoints", "")
	wantStatus(t, "list", resp, b, http.StatusOK)
	var list struct{ Checkpoints []struct{ ID, Files int } }
	decodeJSON(t, b, &list)
	if len(list.Checkpoints) != 2 || list.Checkpoints[1].ID != 2 {
		t.Errorf("checkpoints %s, want 1 and the one the restore saved", b)
	}
	resp, b = e.do(http.MethodGet, api+"/checkpoints/2", "")
	wantStatus(t, "a checkpoint's diff", resp, b, http.StatusOK)
	if !strings.Contains(string(b), "scratch.txt") {
		t.Errorf("checkpoint 2's diff does not show scratch.txt: %s", b)
	}

	resp, b = e.do(http.MethodPost, api+"/checkpoints/99/restore", "")
	wantError(t, "restore an unknown checkpoint", resp, b, http.StatusNotFound, wire.CodeCheckpointNotFound)
	resp, b = e.do(http.MethodGet, api+"/checkpoints/x", "")
	wantError(t, "a checkpoint id that is not a number", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodGet, api+"/branch", "")
	wantError(t, "branch of a workspace session", resp, b, http.StatusConflict, wire.CodeNotAWorktree)
}

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

// TestCheckpointNamesSkippedFiles: with --checkpoint-max-file, an
// untracked file over it is left out of the checkpoint, which names it
// with its size in the answer, in the list and in session.checkpoint.
func TestCheckpointNamesSkippedFiles(t *testing.T) {
	e := newShipAPI(t, "--checkpoint-max-file", "1KiB")
	conn := watchWS(t, e)
	s := e.createCommand(sleeper())
	api := "/api/sessions/" + s.ID
	writeIn(t, e.dir, "dump.bin", strings.Repeat("x", 4096))
	writeIn(t, e.dir, "notes.txt", "kept\n")
	type skipped struct {
		Path   string
		Size   int64
		Reason string
	}
	want := []skipped{{"dump.bin", 4096, "file"}}

	resp, b := e.do(http.MethodPost, api+"/checkpoints", "")
	wantStatus(t, "take a checkpoint", resp, b, http.StatusOK)
	var took struct {
		Checkpoint struct {
			ID      int
			Files   int
			Skipped []skipped
		}
	}
	decodeJSON(t, b, &took)
	if took.Checkpoint.Files != 1 || !slices.Equal(took.Checkpoint.Skipped, want) {
		t.Errorf("checkpoint answered %s, want notes.txt kept and dump.bin named", b)
	}
	got := collectUntil(t, conn, "session.checkpoint", func(ev watchEvent) bool {
		return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID
	})
	var ev struct{ Checkpoint struct{ Skipped []skipped } }
	decodeJSON(t, got[len(got)-1].Raw, &ev)
	if !slices.Equal(ev.Checkpoint.Skipped, want) {
		t.Errorf("session.checkpoint %s, want dump.bin named", got[len(got)-1].Raw)
	}
	resp, b = e.do(http.MethodGet, api+"/checkpoints", "")
	wantStatus(t, "list", resp, b, http.StatusOK)
	var list struct{ Checkpoints []struct{ Skipped []skipped } }
	decodeJSON(t, b, &list)
	if len(list.Checkpoints) != 1 || !slices.Equal(list.Checkpoints[0].Skipped, want) {
		t.Errorf("checkpoints %s, want dump.bin named", b)
	}
}
