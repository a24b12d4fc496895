package ship

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// mergeSetup is a workspace whose main has moved on since the session's
// worktree branched off it, and a branch with two commits of its own
// (the first by another author, at a set date); no file conflicts.
type mergeSetup struct {
	repo, wt string
	// base is where main is before the merge; commits are the branch's.
	base    string
	commits []string
}

// newMergeSetup makes a mergeSetup; with checkedOut false the workspace
// is moved to another branch, so main is checked out nowhere.
func newMergeSetup(t *testing.T, checkedOut bool) mergeSetup {
	t.Helper()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	writeFile(t, wt, "a.txt", "a\n")
	gitT(t, wt, "add", "a.txt")
	gitT(t, wt, "-c", "user.name=Agent", "-c", "user.email=agent@example.com", "commit", "-q", "-m", "Add a\n\nwith a body", "--date=2001-02-03T04:05:06+01:00")
	c1 := rev(t, wt, "HEAD")
	c2 := commitFile(t, wt, "b.txt", "b\n", "Add b")
	base := commitFile(t, repo, "c.txt", "c\n", "Add c on main")
	if !checkedOut {
		gitT(t, repo, "checkout", "-q", "-b", "elsewhere")
	}
	return mergeSetup{repo: repo, wt: wt, base: base, commits: []string{c1, c2}}
}

// TestMerge: each mode brings the branch into main, with main checked
// out in the workspace (whose files follow, and which stays clean) and
// with main checked out nowhere (the workspace's files untouched); the
// session's branch and worktree stay as they were.
func TestMerge(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{MergeCommit, Squash, Rebase} {
		for _, checkedOut := range []bool{true, false} {
			name := string(mode) + "/not checked out"
			if checkedOut {
				name = string(mode) + "/checked out"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newMergeSetup(t, checkedOut)
				tip := rev(t, s.wt, "HEAD")
				got, err := Merge(testContext(t), s.wt, "main", MergeOptions{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				main := rev(t, s.repo, "refs/heads/main")
				want := Merged{Branch: "feat", Base: "main", Mode: mode, SHA: main, Previous: s.base, Tip: tip}
				if checkedOut {
					want.Checkout = s.repo
				}
				if got != want {
					t.Errorf("Merge: %+v, want %+v", got, want)
				}
				if files := lines(gitT(t, s.repo, "ls-tree", "-r", "--name-only", main)); !slices.Equal(files, []string{"README.md", "a.txt", "b.txt", "c.txt"}) {
					t.Errorf("main's files after the merge: %q", files)
				}
				checkMode(t, s, mode, main)
				if checkedOut {
					if readFile(t, s.repo, "b.txt") != "b\n" {
						t.Error("the workspace's files did not follow the merge")
					}
					assertClean(t, s.repo)
				} else {
					if rev(t, s.repo, "HEAD") != s.base {
						t.Error("the workspace's HEAD moved")
					}
					if _, err := os.Stat(filepath.Join(s.repo, "b.txt")); !os.IsNotExist(err) {
						t.Errorf("the workspace, not on main, got the merge's files: %v", err)
					}
				}
				if rev(t, s.wt, "HEAD") != tip {
					t.Error("the session's branch moved")
				}
				assertClean(t, s.wt)
			})
		}
	}
}

// checkMode checks main's history after a merge in mode.
func checkMode(t *testing.T, s mergeSetup, mode Mode, main string) {
	t.Helper()
	parents := strings.Fields(gitT(t, s.repo, "log", "-1", "--format=%P", main))
	switch mode {
	case MergeCommit:
		if want := []string{s.base, s.commits[1]}; !slices.Equal(parents, want) {
			t.Errorf("the merge commit's parents: %q, want %q", parents, want)
		}
		if msg := gitT(t, s.repo, "log", "-1", "--format=%B", main); msg != "Merge branch 'feat' into main" {
			t.Errorf("the merge commit's message: %q", msg)
		}
	case Squash:
		if !slices.Equal(parents, []string{s.base}) {
			t.Errorf("the squash commit's parents: %q, want %s", parents, s.base)
		}
		if msg := gitT(t, s.repo, "log", "-1", "--format=%B", main); msg != "Squash branch 'feat' into main\n\n* Add a\n* Add b" {
			t.Errorf("the squash commit's message: %q", msg)
		}
	case Rebase:
		replayed := lines(gitT(t, s.repo, "rev-list", "--reverse", s.base+".."+main))
		if len(replayed) != 2 || rev(t, s.repo, replayed[0]+"^") != s.base {
			t.Fatalf("main after a rebase: %q on top of %s, want two commits", replayed, s.base)
		}
		for i, c := range replayed {
			orig := s.commits[i]
			const keep = "%an <%ae> %ad%n%B"
			if got, want := gitT(t, s.repo, "log", "-1", "--date=raw", "--format="+keep, c), gitT(t, s.repo, "log", "-1", "--date=raw", "--format="+keep, orig); got != want {
				t.Errorf("replayed commit %d: %q, want the original's %q", i, got, want)
			}
			if got := gitT(t, s.repo, "log", "-1", "--format=%cn", c); got != "Ship Test" {
				t.Errorf("replayed commit %d's committer: %q, want the user", i, got)
			}
		}
	}
}

// TestMergeRebaseFastForward: a branch that is directly on its base is
// rebased by a fast-forward, keeping its commits as they are.
func TestMergeRebaseFastForward(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a")
	tip := commitFile(t, wt, "b.txt", "b\n", "b")
	got, err := Merge(testContext(t), wt, "main", MergeOptions{Mode: Rebase})
	if err != nil {
		t.Fatal(err)
	}
	if got.SHA != tip || rev(t, repo, "main") != tip {
		t.Errorf("Merge: %+v; main at %s, want the branch's tip %s", got, rev(t, repo, "main"), tip)
	}
	assertClean(t, repo)
}

// TestMergeRebaseDropsApplied: a commit whose change the base has
// already is dropped, as git rebase drops it; merge commits on the
// branch are left out.
func TestMergeRebaseDropsApplied(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a, on both")
	commitFile(t, repo, "a.txt", "a\n", "a, on both")
	commitFile(t, repo, "c.txt", "c\n", "c")
	gitT(t, wt, "merge", "-q", "--no-edit", "main")
	commitFile(t, wt, "b.txt", "b\n", "b")
	base := rev(t, repo, "main")

	if _, err := Merge(testContext(t), wt, "main", MergeOptions{Mode: Rebase}); err != nil {
		t.Fatal(err)
	}
	if got := lines(gitT(t, repo, "log", "--format=%s", base+"..main")); !slices.Equal(got, []string{"b"}) {
		t.Errorf("main gained %q, want only b", got)
	}
	if files := lines(gitT(t, repo, "ls-tree", "-r", "--name-only", "main")); !slices.Equal(files, []string{"README.md", "a.txt", "b.txt", "c.txt"}) {
		t.Errorf("main's files: %q", files)
	}
}

// TestMergeMessage: a message given is the merge or squash commit's.
func TestMergeMessage(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{MergeCommit, Squash} {
		s := newMergeSetup(t, true)
		if _, err := Merge(testContext(t), s.wt, "main", MergeOptions{Mode: mode, Message: "Ship feat (#12)\n"}); err != nil {
			t.Fatal(err)
		}
		if got := gitT(t, s.repo, "log", "-1", "--format=%B", "main"); got != "Ship feat (#12)" {
			t.Errorf("%s: message %q", mode, got)
		}
	}
}

// TestMergeSquashOneCommit: squashing a branch of one commit proposes
// that commit's own message.
func TestMergeSquashOneCommit(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "Add a\n\nBecause.")
	commitFile(t, repo, "c.txt", "c\n", "c")
	if _, err := Merge(testContext(t), wt, "main", MergeOptions{Mode: Squash}); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "log", "-1", "--format=%B", "main"); got != "Add a\n\nBecause." {
		t.Errorf("message %q", got)
	}
}

// conflictSetup is a workspace on main and a worktree on feat that
// changed README.md both ways.
func conflictSetup(t *testing.T) (repo, wt string) {
	t.Helper()
	repo = newRepo(t)
	wt = addWorktree(t, repo, "feat")
	commitFile(t, wt, "ok.txt", "fine\n", "no conflict here")
	commitFile(t, wt, "README.md", "hello from feat\n", "feat's README")
	commitFile(t, repo, "README.md", "hello from main\n", "main's README")
	return repo, wt
}

// TestMergeConflict: in every mode, with main checked out or not, a
// conflict answers a *ConflictError naming the file, and changes
// nothing: main where it was, the workspace clean (no markers, no
// MERGE_HEAD), the worktree as it was.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	for _, mode := range []Mode{MergeCommit, Squash, Rebase} {
		for _, checkedOut := range []bool{true, false} {
			name := string(mode) + "/not checked out"
			if checkedOut {
				name = string(mode) + "/checked out"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				repo, wt := conflictSetup(t)
				if !checkedOut {
					gitT(t, repo, "checkout", "-q", "--detach")
				}
				main, tip, head := rev(t, repo, "main"), rev(t, wt, "HEAD"), rev(t, repo, "HEAD")
				_, err := Merge(testContext(t), wt, "main", MergeOptions{Mode: mode})
				testutil.ErrorKind(t, err, ErrConflict, "README.md", "nothing was changed")
				var ce *ConflictError
				if !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"README.md"}) || ce.Branch != "feat" || ce.Base != "main" {
					t.Fatalf("error %#v, want a *ConflictError on README.md", err)
				}
				if mode == Rebase && ce.Commit != tip {
					t.Errorf("the conflict names commit %q, want the branch's %s", ce.Commit, tip)
				}
				if rev(t, repo, "main") != main || rev(t, repo, "HEAD") != head || rev(t, wt, "HEAD") != tip {
					t.Error("a ref moved")
				}
				if got := readFile(t, repo, "README.md"); got != "hello from main\n" {
					t.Errorf("the workspace's README.md: %q", got)
				}
				assertClean(t, repo)
				assertClean(t, wt)
			})
		}
	}
}

// TestMergeBaseDirty: a workspace with main checked out and a change to
// a tracked file, staged or not, is refused before anything moves, its
// change kept; untracked files the merge would overwrite are refused
// too, while others are no obstacle.
func TestMergeBaseDirty(t *testing.T) {
	t.Parallel()
	for name, dirty := range map[string]func(t *testing.T, repo string){
		"unstaged": func(t *testing.T, repo string) { writeFile(t, repo, "README.md", "mine\n") },
		"staged": func(t *testing.T, repo string) {
			writeFile(t, repo, "README.md", "mine\n")
			gitT(t, repo, "add", "README.md")
		},
		"untracked in the way": func(t *testing.T, repo string) { writeFile(t, repo, "b.txt", "mine\n") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newMergeSetup(t, true)
			dirty(t, s.repo)
			status := gitT(t, s.repo, "status", "--porcelain")
			_, err := Merge(testContext(t), s.wt, "main", MergeOptions{})
			file := "README.md"
			if name == "untracked in the way" {
				file = "b.txt"
			}
			testutil.ErrorKind(t, err, ErrBaseDirty, s.repo, `"main" is checked out`, file)
			if rev(t, s.repo, "main") != s.base {
				t.Error("main moved")
			}
			if got := gitT(t, s.repo, "status", "--porcelain"); got != status {
				t.Errorf("the workspace's status: %q, want %q as before", got, status)
			}
			if got := readFile(t, s.repo, file); got != "mine\n" {
				t.Errorf("%s now says %q", file, got)
			}
		})
	}

	t.Run("untracked elsewhere", func(t *testing.T) {
		t.Parallel()
		s := newMergeSetup(t, true)
		writeFile(t, s.repo, "notes.txt", "mine\n")
		if _, err := Merge(testContext(t), s.wt, "main", MergeOptions{}); err != nil {
			t.Fatal(err)
		}
		if readFile(t, s.repo, "notes.txt") != "mine\n" || readFile(t, s.repo, "b.txt") != "b\n" {
			t.Error("the workspace's files are not the merge's plus the untracked one")
		}
	})
}

// TestMergeBaseMoved: a base that moved between the merge's start and
// the move is not moved, checked out or not.
func TestMergeBaseMoved(t *testing.T) {
	t.Parallel()
	for _, checkedOut := range []bool{true, false} {
		s := newMergeSetup(t, checkedOut)
		ctx := testContext(t)
		tr, err := openTree(ctx, s.wt)
		if err != nil {
			t.Fatal(err)
		}
		b, err := resolveBase(ctx, tr, "main", true)
		if err != nil {
			t.Fatal(err)
		}
		m := &merge{t: tr, b: b, tip: rev(t, s.wt, "HEAD")}
		next, err := m.mergeCommit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Someone else moves main meanwhile, leaving the workspace clean.
		if checkedOut {
			gitT(t, s.repo, "reset", "-q", "--hard", "HEAD^")
		} else {
			gitT(t, s.repo, "update-ref", "refs/heads/main", b.sha+"^")
		}
		moved := rev(t, s.repo, "main")
		_, err = m.moveBase(ctx, next, "test")
		testutil.ErrorKind(t, err, ErrBaseMoved, `"main" moved`)
		if rev(t, s.repo, "main") != moved {
			t.Errorf("checked out %v: main moved on", checkedOut)
		}
	}
}

// TestMergeNothing: a branch with no commits of its own, or whose
// changes main has already, has nothing to merge.
func TestMergeNothing(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	ctx := testContext(t)
	_, err := Merge(ctx, wt, "main", MergeOptions{})
	testutil.ErrorKind(t, err, ErrNothingToMerge, `"feat" has no commits that "main" lacks`)

	commitFile(t, wt, "a.txt", "a\n", "a")
	commitFile(t, repo, "c.txt", "c\n", "c")
	if _, err := Merge(ctx, wt, "main", MergeOptions{Mode: Squash}); err != nil {
		t.Fatal(err)
	}
	main := rev(t, repo, "main")
	for _, mode := range []Mode{Squash, Rebase} {
		_, err = Merge(ctx, wt, "main", MergeOptions{Mode: mode})
		testutil.ErrorKind(t, err, ErrNothingToMerge, "already")
	}
	if rev(t, repo, "main") != main {
		t.Error("main moved")
	}
}

// TestMergeRefusals: the workspace itself, a detached worktree, a base
// that is no branch and an unknown mode are refused with their kinds.
func TestMergeRefusals(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	wt := addWorktree(t, repo, "feat")
	commitFile(t, wt, "a.txt", "a\n", "a")
	detached := addWorktree(t, repo, "other")
	gitT(t, detached, "checkout", "-q", "--detach")
	ctx := testContext(t)
	for _, tc := range []struct {
		dir, base string
		mode      Mode
		kind      error
		mentions  string
	}{
		{repo, "main", "", ErrNotWorktree, "main worktree"},
		{detached, "main", "", ErrNoBranch, "detached"},
		{wt, "nope", "", ErrNoBase, "does not exist"},
		{wt, rev(t, repo, "main"), "", ErrNoBase, "does not exist"},
		{wt, "", "", ErrNoBase, "no base"},
		{wt, "main", "octopus", ErrInvalidMode, "octopus"},
	} {
		_, err := Merge(ctx, tc.dir, tc.base, MergeOptions{Mode: tc.mode})
		testutil.ErrorKind(t, err, tc.kind, tc.mentions)
	}
}

// TestMergeRunsHooks: the fast-forward in the workspace is the user's
// merge, so its post-merge hook runs.
func TestMergeRunsHooks(t *testing.T) {
	t.Parallel()
	s := newMergeSetup(t, true)
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := t.TempDir()
	if err := os.WriteFile(filepath.Join(hooks, "post-merge"), []byte("#!/bin/sh\npwd > "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, s.repo, "config", "core.hooksPath", hooks)
	if _, err := Merge(testContext(t), s.wt, "main", MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(readFile(t, marker, "")); got != s.repo {
		t.Errorf("post-merge ran in %q, want the workspace", got)
	}
}
