package ship

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/worktree"
)

// testTimeout bounds each test's git commands.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context { return testutil.Context(t, testTimeout) }

// addWorktree makes a session's worktree on a new branch, as the server
// does, and returns its directory.
func addWorktree(t *testing.T, repo, branch string) string {
	t.Helper()
	ctx := testContext(t)
	wt, err := worktree.Add(ctx, repo, filepath.Join(repo, ".worktrees", worktree.DirName(branch)), branch)
	if err != nil {
		t.Fatal(err)
	}
	if err := worktree.Exclude(ctx, repo, "/.worktrees/"); err != nil {
		t.Fatal(err)
	}
	return wt.Path
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commitFile writes name in dir and commits it with msg; it returns the
// commit.
func commitFile(t *testing.T, dir, name, content, msg string) string {
	t.Helper()
	writeFile(t, dir, name, content)
	gitT(t, dir, "add", "--", name)
	gitT(t, dir, "commit", "-q", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

func rev(t *testing.T, dir, name string) string {
	t.Helper()
	return gitT(t, dir, "rev-parse", "--verify", name)
}

// assertClean checks that the tree at dir is as a finished git leaves
// it: git status clean, no merge under way, no conflict markers in the
// files it tracks.
func assertClean(t *testing.T, dir string) {
	t.Helper()
	if st := gitT(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("git status in %s:\n%s\nwant it clean", dir, st)
	}
	if _, err := gitOut(dir, "rev-parse", "--verify", "--quiet", "MERGE_HEAD"); err == nil {
		t.Errorf("%s has a MERGE_HEAD", dir)
	}
	if out, err := gitOut(dir, "grep", "-l", "-e", "<<<<<<<", "-e", ">>>>>>>"); err == nil {
		t.Errorf("conflict markers in %s: %s", dir, out)
	}
}

// hookDir makes a directory that holds script under each hook's name,
// for core.hooksPath.
func hookDir(t *testing.T, script string, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(script, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// allHooks are the hooks git runs, for a check that none runs.
var allHooks = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit",
	"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
	"pre-rebase", "post-checkout", "post-merge", "pre-push", "post-rewrite",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-index-change",
}

// lines splits git's output into its non-empty lines.
func lines(s string) []string {
	return slices.DeleteFunc(strings.Split(s, "\n"), func(l string) bool { return l == "" })
}

// newRepo returns a workspace on branch main with one commit, of
// README.md saying "hello", whose config names its user: the identity
// of the tests' commits and of the package's.
func newRepo(t *testing.T) string {
	t.Helper()
	return testutil.NewRepo(t, "Ship Test", map[string]string{"README.md": "hello\n"})
}

var (
	gitOut    = testutil.GitOut
	gitT      = testutil.Git
	writeFile = testutil.WriteFile
)
