package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/wire"
)

// git is apitest's: git in dir as the tests' user, failing the test on
// error.
var git = apitest.Git

// newRepoAPI serves a workspace that is a git repository with one commit
// on main.
func newRepoAPI(t *testing.T, args ...string) *apiEnv {
	t.Helper()
	apitest.SkipWithoutGit(t)
	e := newAPI(t, args...)
	apitest.InitRepo(t, e.dir)
	return e
}

// branches is apitest's: the repository's branches, one a line.
var branches = apitest.Branches

// TestWorktreeEvents: workflow status files and documents written in a
// session's worktree are told with the session's id; its files are
// reported by file.changed as the workspace's are, once each (the main
// watcher stays out of .worktrees, the session's watcher reports them),
// so a client showing one of its documents reloads it when the agent
// writes it again; the watch ends with the session.
func TestWorktreeEvents(t *testing.T) {
	e := newRepoAPI(t)
	conn := watchWS(t, e)
	s := e.create(`{"worktree":{"branch":"docs-work"}}`)
	w := e.srv.worktrees.watcher(s.ID)
	if w == nil {
		t.Fatal("no watcher for the worktree session")
	}
	select {
	case <-w.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("the worktree watcher was not ready")
	}
	rel := ".worktrees/docs-work/"

	writeWS(t, e.dir, rel+"docs/bmm-workflow-status.yaml", flatWorkflowYAML)
	got := collectUntil(t, conn, "workflow.updated from the worktree", isWorkflowUpdated)
	ev := got[len(got)-1]
	if !jsonEqual(t, ev.Raw, []byte(`{"type":"workflow.updated","sessionId":"`+s.ID+`","workflow":`+flatWorkflowJSON+`}`)) {
		t.Errorf("workflow.updated = %s, want the session's id and workflow", ev.Raw)
	}

	prd := writeWS(t, e.dir, rel+"docs/prd.md", "# PRD\n")
	got = collectUntil(t, conn, "layout.shift from the worktree", func(ev watchEvent) bool { return ev.Type == wire.TypeLayoutShift })
	want := `{"type":"layout.shift","sessionId":"` + s.ID + `","mode":"split","trigger":"file_write","path":"` + rel + `docs/prd.md"}`
	if ev := got[len(got)-1]; !jsonEqual(t, ev.Raw, []byte(want)) {
		t.Errorf("layout.shift = %s, want %s", ev.Raw, want)
	}
	got = append(got, marker(t, e, conn)...)
	if n := len(only(got, isFileEvent(prd, "add"))); n != 1 {
		t.Errorf("%d file.changed add for %s, want 1:\n%s", n, prd, eventLines(got))
	}

	// The workspace's own workflow is untouched by the worktree's.
	getWorkflow(t, e, "", "")

	resp, b := e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	if e.srv.worktrees.watcher(s.ID) != nil {
		t.Error("the worktree is still watched after its session ended")
	}
}
