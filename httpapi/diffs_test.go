package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// TestWorktreeSessionDiff: a worktree session's changes count from where
// its branch left the workspace's branch, committed ones included, and
// not what that branch did since.
func TestWorktreeSessionDiff(t *testing.T) {
	e := newRepoAPI(t)
	s := e.Create(`{"worktree":{"branch":"feature/diff"}}`)
	wt := s.Worktree.Path
	testutil.WriteFile(t, wt, "feature.txt", "feature\n")
	apitest.Git(t, wt, "add", "feature.txt")
	apitest.Git(t, wt, "commit", "-q", "-m", "feature work")
	testutil.WriteFile(t, wt, "wip.txt", "uncommitted\n")
	// The workspace's branch moves on.
	testutil.WriteFile(t, e.dir, "main.txt", "main moved on\n")
	apitest.Git(t, e.dir, "add", "main.txt")
	apitest.Git(t, e.dir, "commit", "-q", "-m", "main work")

	d := e.Diff(s.ID, "")
	got := map[string]string{}
	for _, f := range d.Files {
		got[f.Path] = f.Status
	}
	if len(got) != 2 || got["feature.txt"] != "added" || got["wip.txt"] != "added" {
		t.Errorf("the worktree's changes: %v; want feature.txt and wip.txt, not main.txt", got)
	}
	if info := e.Get(s.ID); info.Worktree == nil || info.Worktree.Base != "main" {
		t.Errorf("worktree %+v: want base main recorded", info.Worktree)
	}
}

// TestSessionDiffFetchesNothing: a workspace that claims to be a partial
// clone, missing the blob its diff needs, with a promisor remote whose
// transport runs a command of the config's choosing (ssh with
// core.sshCommand, or ext::): the diff the API serves does not run it; it
// fails instead. (The live summaries' side is changes.TestLiveFetchesNothing.)
func TestSessionDiffFetchesNothing(t *testing.T) {
	for _, transport := range []string{"ssh", "ext"} {
		t.Run(transport, func(t *testing.T) {
			e := newRepoAPI(t)
			script, ran := testutil.MarkerScript(t)
			testutil.MakePartialClone(t, e.dir, "README.md", testutil.PromisorURL(transport, ran), script)
			testutil.WriteFile(t, e.dir, "README.md", "hello\nworld\n")
			s := e.CreateCommand(apitest.Sleeper())
			resp, b := e.Do(http.MethodGet, "/api/sessions/"+s.ID+"/diff", "")
			apitest.WantError(t, "diff", resp, b, http.StatusInternalServerError, wire.CodeInternal)
			testutil.NotRun(t, "GET /api/sessions/:id/diff", ran)
		})
	}
}
