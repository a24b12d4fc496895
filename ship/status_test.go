package ship

import (
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestStatus: a branch two commits ahead of its base, which has one of
// its own since, is two ahead and one behind; looking runs none of the
// repository's hooks.
func TestStatus(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a")
	commitFile(t, wt, "b.txt", "b\n", "b")
	commitFile(t, repo, "c.txt", "c\n", "c")
	script, marker := testutil.MarkerScript(t)
	gitT(t, repo, "config", "core.hooksPath", hookDir(t, script, allHooks...))

	got, err := Status(testContext(t), filepath.Join(wt, "."), "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := (BranchStatus{Branch: "feat", Base: "main", Ahead: 2, Behind: 1}); got != want {
		t.Errorf("Status: %+v, want %+v", got, want)
	}
	testutil.NotRun(t, "Status", marker)
}

// TestStatusBaseCommit: a session that branched off a detached HEAD has a
// commit for its base, which counts as a branch would.
func TestStatusBaseCommit(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	origin := rev(t, repo, "HEAD")
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a")
	got, err := Status(testContext(t), wt, origin)
	if err != nil {
		t.Fatal(err)
	}
	if want := (BranchStatus{Branch: "feat", Base: origin, Ahead: 1}); got != want {
		t.Errorf("Status: %+v, want %+v", got, want)
	}
}

// TestStatusErrors: no base, a base that is no branch, the branch as its
// own base and a directory that is no repository are told apart.
func TestStatusErrors(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	ctx := testContext(t)
	for _, tc := range []struct {
		dir, base string
		kind      error
		mentions  string
	}{
		{wt, "", ErrNoBase, "no base branch"},
		{wt, "nope", ErrNoBase, `"nope" does not exist`},
		{wt, "-x", ErrNoBase, "starts with '-'"},
		{wt, "main..feat", ErrNoBase, "does not exist"},
		{wt, "feat", ErrNoBase, "its own base"},
		{t.TempDir(), "main", gitexec.ErrNotRepo, "not inside a git work tree"},
	} {
		_, err := Status(ctx, tc.dir, tc.base)
		testutil.ErrorKind(t, err, tc.kind, tc.mentions)
	}
}
