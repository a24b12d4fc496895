package worktree

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestNestedRepositoriesNeverEntered: a worktree holding a populated
// submodule, a repository added with git add and one in an untracked
// directory, each with a filter, a textconv, a file-system monitor and
// hooks of its own and its tracked file changed (same size, new time)
// before every step: Status, CheckClean and Remove run nothing from any
// of them; CheckClean and Remove without force refuse, naming them, and
// lose nothing; Remove with force removes it all, still running nothing.
func TestNestedRepositoriesNeverEntered(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "nested")
	script, marker := testutil.MarkerScript(t)
	nested := testutil.AddNestedRepos(t, dir, script)
	stirred := func(what string) {
		t.Helper()
		testutil.NotRun(t, what, marker)
		nested.Stir()
	}
	nested.Stir()

	got, err := Status(ctx, dir)
	if err != nil || !slices.Equal(got, []string{nested.Loose + "/"}) {
		t.Errorf("Status: %q, %v; want only %s/, untracked", got, err, nested.Loose)
	}
	stirred("Status")
	testutil.ErrorKind(t, CheckClean(ctx, dir), ErrNestedRepo, dir, nested.Submodule, nested.Added, nested.Loose)
	stirred("CheckClean")
	err = Remove(ctx, dir, false)
	testutil.ErrorKind(t, err, ErrNestedRepo, dir, nested.Submodule, nested.Added, nested.Loose)
	testutil.ErrorKind(t, err, ErrDirty)
	stirred("Remove")
	for _, p := range nested.Paths() {
		if !exists(t, filepath.Join(dir, p, "f.txt")) {
			t.Fatalf("a refused Remove removed %s", p)
		}
	}

	// Each kind alone refuses too.
	if err := os.RemoveAll(filepath.Join(dir, nested.Loose)); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorKind(t, CheckClean(ctx, dir), ErrNestedRepo, nested.Submodule, nested.Added)
	stirred("CheckClean")
	if err := os.RemoveAll(filepath.Join(dir, nested.Added, ".git")); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorKind(t, CheckClean(ctx, dir), ErrNestedRepo, nested.Submodule)
	stirred("CheckClean")

	if err := Remove(ctx, dir, true); err != nil {
		t.Fatal(err)
	}
	testutil.NotRun(t, "a forced Remove", marker)
	if exists(t, dir) {
		t.Errorf("%s still exists after a forced Remove", dir)
	}
}

// TestSubmoduleNotCheckedOut: a worktree of a repository with a
// submodule, which git worktree add leaves empty, is clean and goes
// without force.
func TestSubmoduleNotCheckedOut(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	script, marker := testutil.MarkerScript(t)
	testutil.AddNestedRepos(t, repo, script)
	if err := os.RemoveAll(filepath.Join(repo, "loose")); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	dir := addWorktree(t, repo, "plain")
	if err := CheckClean(ctx, dir); err != nil {
		t.Fatalf("CheckClean: %v", err)
	}
	if err := Remove(ctx, dir, false); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	testutil.NotRun(t, "Remove", marker)
	if exists(t, dir) {
		t.Errorf("%s still exists", dir)
	}
}
