package ship

import (
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestNestedRepositoriesNeverEntered: the passive gits of the actions
// (where the branch stands, the check that the base's worktree has no
// changes of its own before a merge, the one that the session's has none
// before an update) run nothing from a submodule, a repository added with
// git add or one in an untracked directory, each with a filter, a
// textconv, a file-system monitor and hooks of its own and its tracked
// file changed (same size, new time) before each. Each check is made to
// refuse, so that no explicit git, which may run what they configure as
// the user's own would, runs after it.
func TestNestedRepositoriesNeverEntered(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	script, marker := testutil.MarkerScript(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a")
	// Each branch commits its own.
	inRepo := testutil.AddNestedRepos(t, repo, script)
	inWorktree := testutil.AddNestedRepos(t, wt, script)
	stir := func() {
		inRepo.Stir()
		inWorktree.Stir()
	}
	ctx := testContext(t)

	stir()
	st, err := Status(ctx, wt, "main", Mark{})
	if err != nil || st.Ahead != 2 || st.Behind != 1 {
		t.Errorf("Status: %+v, %v; want 2 ahead, 1 behind", st, err)
	}
	testutil.NotRun(t, "Status", marker)

	writeFile(t, repo, "README.md", "mine\n")
	stir()
	_, err = Merge(ctx, wt, "main", MergeOptions{})
	testutil.ErrorKind(t, err, ErrBaseDirty, "README.md")
	testutil.NotRun(t, "Merge's look at the base's worktree", marker)

	writeFile(t, wt, "a.txt", "mine\n")
	stir()
	_, err = UpdateFromBase(ctx, wt, "main")
	testutil.ErrorKind(t, err, ErrDirty, "a.txt")
	testutil.NotRun(t, "UpdateFromBase's look at the worktree", marker)
}
