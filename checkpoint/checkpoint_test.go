package checkpoint

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestTake: a checkpoint holds the tracked files as they are and the
// untracked ones, not the ignored ones; its change counts against HEAD;
// HEAD, the index, the stash and the files are untouched.
func TestTake(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", ".gitignore": "*.log\n"})
	writeFile(t, repo, "stashed.txt", "s\n")
	gitT(t, repo, "add", "stashed.txt")
	gitT(t, repo, "stash", "-q")
	writeFile(t, repo, "staged.txt", "staged\n")
	gitT(t, repo, "add", "staged.txt")
	writeFile(t, repo, "a.txt", "a\nmore\n")
	writeFile(t, repo, "new/u.txt", "u\n")
	writeFile(t, repo, "debug.log", "noise\n")
	removeFile(t, repo, "b.txt")
	before := stateOf(t, repo)
	start := time.Now().Add(-time.Second)

	cp, created, err := Take(testContext(t), filepath.Join(repo, "new"), session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !created || cp.ID != 1 || cp.Time.Before(start.Truncate(time.Second)) {
		t.Errorf("Take: %+v, created %v; want the new checkpoint 1", cp, created)
	}
	// a.txt +1, b.txt -1, new/u.txt +1, staged.txt +1.
	if cp.Files != 4 || cp.Insertions != 3 || cp.Deletions != 1 {
		t.Errorf("Take's counts: %+v, want 4 files, +3 -1", cp)
	}
	if got := gitT(t, repo, "rev-parse", "refs/agentmux/checkpoints/"+session+"/1"); got != cp.Commit {
		t.Errorf("the ref is at %s, want %s", got, cp.Commit)
	}
	if got, want := treeFiles(t, repo, cp.Commit), []string{".gitignore", "a.txt", "new/u.txt", "staged.txt"}; !slices.Equal(got, want) {
		t.Errorf("the checkpoint's files: %q, want %q", got, want)
	}
	if got := gitT(t, repo, "show", cp.Commit+":a.txt"); got != "a\nmore" {
		t.Errorf("a.txt in the checkpoint: %q", got)
	}
	if got := gitT(t, repo, "rev-parse", cp.Commit+"^"); got != before.head {
		t.Errorf("the first checkpoint's parent is %s, want HEAD %s", got, before.head)
	}
	if after := stateOf(t, repo); !after.same(before) {
		t.Errorf("Take changed the repository:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestTakeSameTree: a tree as the last checkpoint has it makes none; a
// change makes the next, whose parent is the one before.
func TestTakeSameTree(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := testContext(t)
	first, created, err := Take(ctx, repo, session, Options{})
	if err != nil || !created {
		t.Fatalf("Take: %+v, %v, %v", first, created, err)
	}
	again, created, err := Take(ctx, repo, session, Options{})
	if err != nil || created || !reflect.DeepEqual(again, first) {
		t.Errorf("Take of the same tree: %+v, created %v, %v; want %+v again", again, created, err, first)
	}
	writeFile(t, repo, "a.txt", "a\nb\nc\n")
	second, created, err := Take(ctx, repo, session, Options{})
	if err != nil || !created || second.ID != 2 {
		t.Fatalf("Take after a change: %+v, %v, %v", second, created, err)
	}
	if second.Files != 1 || second.Insertions != 2 || second.Deletions != 0 {
		t.Errorf("the second's counts: %+v, want 1 file, +2", second)
	}
	if got := gitT(t, repo, "rev-parse", second.Commit+"^"); got != first.Commit {
		t.Errorf("the second's parent is %s, want the first, %s", got, first.Commit)
	}
	list, err := List(ctx, repo, session)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(list, []Checkpoint{first, second}) {
		t.Errorf("List: %+v, want %+v", list, []Checkpoint{first, second})
	}
}

// TestTakeNoCommits: a repository with no commit yet is checkpointed
// too; its first checkpoint has no parent and every file is new.
func TestTakeNoCommits(t *testing.T) {
	t.Parallel()
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "init", "-q")
	writeFile(t, repo, "a.txt", "a\n")
	ctx := testContext(t)
	cp, created, err := Take(ctx, repo, session, Options{})
	if err != nil || !created || cp.Files != 1 || cp.Insertions != 1 {
		t.Fatalf("Take: %+v, %v, %v", cp, created, err)
	}
	if _, err := gitOut(repo, "rev-parse", "--verify", "--quiet", cp.Commit+"^"); err == nil {
		t.Error("the checkpoint has a parent")
	}
	if _, err := gitOut(repo, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		t.Error("HEAD was made")
	}
}

// TestTakeConcurrent: Takes of one tree at once make one checkpoint.
func TestTakeConcurrent(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "changed\n")
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = Take(ctx, repo, session, Options{}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	list, err := List(ctx, repo, session)
	if err != nil || len(list) != 1 {
		t.Errorf("List: %+v, %v; want one checkpoint", list, err)
	}
}

// TestPrune: beyond keep, the oldest go first.
func TestPrune(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := testContext(t)
	for i := range 5 {
		writeFile(t, repo, "a.txt", strings.Repeat("x\n", i+1))
		if _, _, err := Take(ctx, repo, session, Options{Keep: 3}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := List(ctx, repo, session)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(list); !slices.Equal(got, []int{3, 4, 5}) {
		t.Errorf("checkpoints kept: %v, want 3, 4, 5", got)
	}
	refs := strings.Fields(gitT(t, repo, "for-each-ref", "--format=%(refname)", "refs/agentmux/"))
	if len(refs) != 3 {
		t.Errorf("refs left: %q", refs)
	}
	// The oldest kept still tells its change.
	if list[0].Files != 1 || list[0].Insertions != 1 {
		t.Errorf("the oldest kept: %+v, want 1 file, +1", list[0])
	}
}

// TestSessionsApart: the checkpoints of two sessions of one repository
// are kept apart, and the worktrees of a repository share them; Delete
// removes one session's and no other's, and can be asked again.
func TestSessionsApart(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	wt := filepath.Join(repo, ".worktrees", "feat")
	gitT(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	writeFile(t, repo, ".git/info/exclude", "/.worktrees/\n")
	ctx := testContext(t)
	const other = "other_session"
	if _, _, err := Take(ctx, repo, session, Options{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, wt, "w.txt", "w\n")
	inWorktree, _, err := Take(ctx, wt, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := treeFiles(t, repo, inWorktree.Commit); !slices.Equal(got, []string{"a.txt", "w.txt"}) {
		t.Errorf("the worktree's checkpoint holds %q", got)
	}
	// Seen from the workspace: the refs are the repository's.
	if list, err := List(ctx, repo, other); err != nil || !slices.Equal(ids(list), []int{1}) {
		t.Errorf("List of %s from the workspace: %+v, %v", other, list, err)
	}
	if err := Delete(ctx, repo, session); err != nil {
		t.Fatal(err)
	}
	if list, err := List(ctx, repo, session); err != nil || len(list) != 0 {
		t.Errorf("List after Delete: %+v, %v; want none", list, err)
	}
	if list, err := List(ctx, wt, other); err != nil || len(list) != 1 {
		t.Errorf("List of the other session after Delete: %+v, %v; want its one", list, err)
	}
	if err := Delete(ctx, repo, session); err != nil {
		t.Errorf("Delete again: %v", err)
	}
}

// TestInvalidSession: an id that could name another ref, or none, is
// refused before any git runs.
func TestInvalidSession(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	ctx := testContext(t)
	for _, id := range []string{"", "..", "a/b", "../../heads/main", "a b", "a.lock", "x\n", "@{-1}", "*", strings.Repeat("a", 129)} {
		_, _, err := Take(ctx, repo, id, Options{})
		testutil.ErrorKind(t, err, ErrInvalidSession)
		_, err = List(ctx, repo, id)
		testutil.ErrorKind(t, err, ErrInvalidSession)
		_, err = Diff(ctx, repo, id, 1, 0)
		testutil.ErrorKind(t, err, ErrInvalidSession)
		_, err = Restore(ctx, repo, id, 1, Options{})
		testutil.ErrorKind(t, err, ErrInvalidSession)
		testutil.ErrorKind(t, Delete(ctx, repo, id), ErrInvalidSession)
	}
	if refs := gitT(t, repo, "for-each-ref", "refs/agentmux/"); refs != "" {
		t.Errorf("refs made: %s", refs)
	}
}

// TestNotRepo: a directory that is no repository says so.
func TestNotRepo(t *testing.T) {
	t.Parallel()
	_, _, err := Take(testContext(t), t.TempDir(), session, Options{})
	testutil.ErrorKind(t, err, gitexec.ErrNotRepo)
}

// TestInert: taking, listing, comparing, restoring and deleting
// checkpoints run none of the repository's hooks or filters, and files
// are stored and written back as they are on disk.
func TestInert(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	script, marker := testutil.MarkerScript(t)
	hooks := t.TempDir()
	for _, h := range []string{"reference-transaction", "post-index-change", "post-checkout", "pre-commit", "post-commit"} {
		if err := os.Symlink(script, filepath.Join(hooks, h)); err != nil {
			t.Fatal(err)
		}
	}
	gitT(t, repo, "config", "core.hooksPath", hooks)
	for _, key := range []string{"clean", "smudge", "process"} {
		gitT(t, repo, "config", "filter.evil."+key, script)
	}
	writeFile(t, repo, ".gitattributes", "* filter=evil\n")
	writeFile(t, repo, "a.txt", "as it is\n")
	ctx := testContext(t)
	cp, _, err := Take(ctx, repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, repo, "cat-file", "blob", cp.Commit+":a.txt"); got != "as it is" {
		t.Errorf("a.txt stored as %q", got)
	}
	writeFile(t, repo, "a.txt", "later\n")
	if _, err := List(ctx, repo, session); err != nil {
		t.Fatal(err)
	}
	if _, err := Diff(ctx, repo, session, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(ctx, repo, session, 1, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := content(t, repo, "a.txt"); got != "as it is\n" {
		t.Errorf("a.txt restored as %q", got)
	}
	if err := Delete(ctx, repo, session); err != nil {
		t.Fatal(err)
	}
	testutil.NotRun(t, "the checkpoint functions", marker)
}
