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

	got, err := Status(testContext(t), filepath.Join(wt, "."), "main", Mark{})
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
	got, err := Status(testContext(t), wt, origin, Mark{})
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
		_, err := Status(ctx, tc.dir, tc.base, Mark{})
		testutil.ErrorKind(t, err, tc.kind, tc.mentions)
	}
}

// TestStatusAfterMerge: once merged, in each mode, the branch is neither
// ahead nor behind; two commits on it later and one on the base make it
// two ahead and one behind. Without the mark, a squash's copy counts on
// both sides (a rebase onto a base that has not moved fast-forwards).
func TestStatusAfterMerge(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{MergeCommit, Squash, Rebase} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			wt := addWorktree(t, repo, "feat")
			commitFile(t, wt, "a.txt", "a\n", "a")
			commitFile(t, wt, "b.txt", "b\n", "b")
			ctx := testContext(t)
			m, err := Merge(ctx, wt, "main", MergeOptions{Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			if m.Tip != rev(t, wt, "HEAD") {
				t.Fatalf("Merged.Tip = %s, want the branch's HEAD %s", m.Tip, rev(t, wt, "HEAD"))
			}
			mark := Mark{Commit: m.SHA, Tip: m.Tip}
			status := func(mark Mark) BranchStatus {
				t.Helper()
				st, err := Status(ctx, wt, "main", mark)
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			if got := status(mark); got.Ahead != 0 || got.Behind != 0 {
				t.Errorf("right after the merge: %+v, want 0 ahead, 0 behind", got)
			}
			if mode == Squash {
				if got := status(Mark{}); got.Ahead == 0 {
					t.Errorf("without the mark: %+v; the test shows nothing if git's counts were right", got)
				}
			}
			commitFile(t, wt, "c.txt", "c\n", "c")
			commitFile(t, wt, "d.txt", "d\n", "d")
			commitFile(t, repo, "e.txt", "e\n", "e")
			if got := status(mark); got.Ahead != 2 || got.Behind != 1 {
				t.Errorf("two commits later on the branch, one on the base: %+v, want 2 ahead, 1 behind", got)
			}
		})
	}
}
