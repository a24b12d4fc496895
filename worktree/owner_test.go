package worktree

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestForeignWorkspace: in a workspace that belongs to another user, as
// one bind-mounted from a host where it belongs to another uid, worktrees
// are added, looked at and removed once the workspace is trusted, the
// worktree of that other user's too; a repository beside it, also
// another user's, is refused with an error that says why in words, not
// "not inside a git work tree". Not parallel: the trust is gitexec's, for
// the whole process.
func TestForeignWorkspace(t *testing.T) {
	repo := newRepo(t)
	theirs := addWorktree(t, repo, "theirs") // made by the workspace's owner
	other := newRepo(t)
	testutil.GiveAway(t, repo)
	testutil.GiveAway(t, other)
	if err := gitexec.Trust(repo, filepath.Join(repo, ".worktrees")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gitexec.Trust("", "") })
	ctx := testContext(t)

	if err := CheckRepository(ctx, repo); err != nil {
		t.Fatalf("CheckRepository of the trusted workspace: %v", err)
	}
	dir := filepath.Join(repo, ".worktrees", "feat")
	wt, err := Add(ctx, repo, dir, "feat")
	if err != nil {
		t.Fatalf("Add in the trusted workspace: %v", err)
	}
	for _, d := range []string{wt.Path, theirs} {
		writeFile(t, filepath.Join(d, "new.txt"), "x")
		if got, err := Status(ctx, d); err != nil || !slices.Equal(got, []string{"new.txt"}) {
			t.Errorf("Status of %s: %q, %v; want [new.txt]", d, got, err)
		}
		if err := Remove(ctx, d, true); err != nil {
			t.Errorf("Remove %s: %v", d, err)
		}
	}
	// The test's own git needs the trust too.
	if got := gitT(t, repo, "-c", "safe.directory="+repo, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 1 {
		t.Errorf("worktrees after Remove:\n%s", got)
	}

	err = CheckRepository(ctx, other)
	_, addErr := Add(ctx, other, filepath.Join(other, ".worktrees", "x"), "x")
	for _, err := range []error{err, addErr} {
		if !errors.Is(err, ErrUntrusted) || errors.Is(err, gitexec.ErrNotRepo) {
			t.Fatalf("git in another user's repository outside the workspace: %v; want ErrUntrusted", err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "git refuses to work in "+other+": it belongs to another user (uid 65534") {
			t.Errorf("the refusal says %q", msg)
		}
	}
	if exists(t, filepath.Join(other, ".worktrees")) {
		t.Error(".worktrees created in a repository git refused")
	}
}
