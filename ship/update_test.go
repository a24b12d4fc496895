package ship

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestUpdateFromBase: main's new commit is merged into the branch in its
// worktree, with a merge commit whose parents are the branch and main.
func TestUpdateFromBase(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	tip := commitFile(t, wt, "a.txt", "a\n", "a")
	main := commitFile(t, repo, "c.txt", "c\n", "c")

	got, err := UpdateFromBase(testContext(t), wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	head := rev(t, wt, "HEAD")
	if want := (Updated{Branch: "feat", Base: "main", SHA: head}); !equalUpdated(got, want) {
		t.Errorf("UpdateFromBase: %+v, want %+v", got, want)
	}
	if parents := strings.Fields(gitT(t, wt, "log", "-1", "--format=%P")); !slices.Equal(parents, []string{tip, main}) {
		t.Errorf("the merge's parents: %q, want %s and %s", parents, tip, main)
	}
	if msg := gitT(t, wt, "log", "-1", "--format=%s"); msg != "Merge branch 'main' into feat" {
		t.Errorf("the merge's message: %q", msg)
	}
	if readFile(t, wt, "c.txt") != "c\n" {
		t.Error("main's file is not in the worktree")
	}
	assertClean(t, wt)
	if rev(t, repo, "main") != main {
		t.Error("main moved")
	}
}

// TestUpdateFromBaseFastForward: a branch with nothing of its own just
// moves to main; one that has main's commits is up to date.
func TestUpdateFromBaseFastForward(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	main := commitFile(t, repo, "c.txt", "c\n", "c")
	ctx := testContext(t)
	got, err := UpdateFromBase(ctx, wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA != main || got.UpToDate || rev(t, wt, "HEAD") != main {
		t.Errorf("UpdateFromBase: %+v, want HEAD at main's %s", got, main)
	}
	got, err = UpdateFromBase(ctx, wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Updated{Branch: "feat", Base: "main", SHA: main, UpToDate: true}); !equalUpdated(got, want) {
		t.Errorf("UpdateFromBase again: %+v, want %+v", got, want)
	}
}

// TestUpdateFromBaseConflict: a conflict is left in the worktree for the
// agent, markers and MERGE_HEAD included, and named; main and the
// workspace are untouched. Once resolved and committed, the branch
// merges into main.
func TestUpdateFromBaseConflict(t *testing.T) {
	t.Parallel()
	repo, wt := conflictSetup(t)
	main, tip := rev(t, repo, "main"), rev(t, wt, "HEAD")
	ctx := testContext(t)

	got, err := UpdateFromBase(ctx, wt, "main")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Updated{Branch: "feat", Base: "main", SHA: tip, Conflicts: []string{"README.md"}}); !equalUpdated(got, want) {
		t.Errorf("UpdateFromBase: %+v, want %+v", got, want)
	}
	if readme := readFile(t, wt, "README.md"); !strings.Contains(readme, "<<<<<<<") || !strings.Contains(readme, "hello from main") {
		t.Errorf("README.md in the worktree: %q, want conflict markers", readme)
	}
	if rev(t, wt, "MERGE_HEAD") != main {
		t.Error("the worktree's MERGE_HEAD is not main")
	}
	if rev(t, repo, "main") != main {
		t.Error("main moved")
	}
	assertClean(t, repo)

	// The agent resolves it.
	writeFile(t, wt, "README.md", "hello from both\n")
	gitT(t, wt, "commit", "-q", "-a", "--no-edit")
	m, err := Merge(ctx, wt, "main", MergeOptions{})
	if err != nil {
		t.Fatalf("Merge after the resolution: %v", err)
	}
	if m.SHA != rev(t, repo, "main") || readFile(t, repo, "README.md") != "hello from both\n" {
		t.Errorf("Merge: %+v; the workspace's README.md is %q", m, readFile(t, repo, "README.md"))
	}
	assertClean(t, repo)
}

// TestUpdateFromBaseDirty: a worktree with a change to a tracked file, or
// with an untracked file the merge would overwrite, is refused with
// ErrDirty and left as it was.
func TestUpdateFromBaseDirty(t *testing.T) {
	t.Parallel()
	for name, file := range map[string]string{"tracked": "README.md", "untracked in the way": "c.txt"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			wt := addWorktree(t, repo, "feat")
			tip := commitFile(t, wt, "a.txt", "a\n", "a")
			commitFile(t, repo, "c.txt", "c\n", "c")
			writeFile(t, wt, file, "mine\n")
			_, err := UpdateFromBase(testContext(t), wt, "main")
			testutil.ErrorKind(t, err, ErrDirty, wt, file)
			if rev(t, wt, "HEAD") != tip || readFile(t, wt, file) != "mine\n" {
				t.Error("the worktree changed")
			}
			if _, err := gitOut(wt, "rev-parse", "--verify", "--quiet", "MERGE_HEAD"); err == nil {
				t.Error("a merge was started")
			}
		})
	}
}

// TestUpdateFromBaseRefusals: the workspace itself and a missing base
// are refused.
func TestUpdateFromBaseRefusals(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	ctx := testContext(t)
	_, err := UpdateFromBase(ctx, repo, "main")
	testutil.ErrorKind(t, err, ErrNotWorktree)
	_, err = UpdateFromBase(ctx, wt, "gone")
	testutil.ErrorKind(t, err, ErrNoBase, `"gone"`)
}

func equalUpdated(a, b Updated) bool {
	return a.Branch == b.Branch && a.Base == b.Base && a.SHA == b.SHA && a.UpToDate == b.UpToDate && slices.Equal(a.Conflicts, b.Conflicts)
}
