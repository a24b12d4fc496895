package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

// testTimeout bounds each test's git commands and waits.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context { return testutil.Context(t, testTimeout) }

// needGit skips the test when there is no git to test against.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the worktree tests run the real git binary")
	}
}

// gitOut runs git in dir as a user would, with an identity of its own
// (the test environment has no global config), and returns its trimmed
// output and error.
func gitOut(dir string, args ...string) (string, error) {
	return testutil.GitOut(dir, append([]string{"-c", "user.name=Worktree Test", "-c", "user.email=test@example.com"}, args...)...)
}

// gitT is gitOut failing the test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitOut(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// newRepo returns a repository on branch main with one commit, of
// README.md saying "hello".
func newRepo(t *testing.T) string {
	t.Helper()
	needGit(t)
	repo := testutil.TempDir(t)
	gitT(t, repo, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(repo, "README.md"), "hello\n")
	gitT(t, repo, "add", "README.md")
	gitT(t, repo, "commit", "-q", "-m", "init")
	return repo
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func hasBranch(t *testing.T, repo, branch string) bool {
	t.Helper()
	_, err := gitOut(repo, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// worktrees returns the paths git worktree list shows, the main one first.
func worktrees(t *testing.T, repo string) []string {
	t.Helper()
	var paths []string
	for l := range strings.Lines(gitT(t, repo, "worktree", "list", "--porcelain")) {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "worktree "); ok {
			paths = append(paths, p)
		}
	}
	return paths
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// assertUntouched checks that a failed Add left the repository as newRepo
// made it: no .worktrees, no other worktree, no branch but those given.
func assertUntouched(t *testing.T, repo string, branches ...string) {
	t.Helper()
	if exists(t, filepath.Join(repo, ".worktrees")) {
		t.Errorf("%s/.worktrees exists after a failed Add", repo)
	}
	if got := worktrees(t, repo); !slices.Equal(got, []string{repo}) {
		t.Errorf("worktrees after a failed Add: %q, want only %s", got, repo)
	}
	got := strings.Fields(gitT(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/"))
	want := append([]string{"main"}, branches...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("branches after a failed Add: %q, want %q", got, want)
	}
}

func TestAddNewBranch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := filepath.Join(repo, ".worktrees", DirName("feature/auth"))

	wt, err := Add(ctx, repo, dir, "feature/auth")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Worktree{Path: dir, Branch: "feature/auth", Created: true}); wt != want {
		t.Errorf("Add returned %+v, want %+v", wt, want)
	}
	if !hasBranch(t, repo, "feature/auth") {
		t.Error("branch feature/auth does not exist after Add")
	}
	if got, want := gitT(t, repo, "rev-parse", "feature/auth"), gitT(t, repo, "rev-parse", "main"); got != want {
		t.Errorf("feature/auth is at %s, want HEAD's %s", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "README.md")); err != nil || string(b) != "hello\n" {
		t.Errorf("README.md in the worktree: %q, %v", b, err)
	}
	if got := gitT(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/feature/auth" {
		t.Errorf("worktree HEAD is %s", got)
	}
	if got := worktrees(t, repo); !slices.Contains(got, dir) {
		t.Errorf("git worktree list shows %q, not %s", got, dir)
	}
}

func TestAddFromSubdirectory(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testutil.TempDir(t), "deep", "wt")

	if _, err := Add(ctx, sub, dir, "x"); err != nil {
		t.Fatal(err)
	}
	if !hasBranch(t, repo, "x") || !slices.Contains(worktrees(t, repo), dir) {
		t.Errorf("Add from %s: branch x or worktree %s missing from %s", sub, dir, repo)
	}
}

func TestAddExistingBranch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	gitT(t, repo, "checkout", "-q", "-b", "dev")
	writeFile(t, filepath.Join(repo, "dev.txt"), "dev\n")
	gitT(t, repo, "add", "dev.txt")
	gitT(t, repo, "commit", "-q", "-m", "dev")
	gitT(t, repo, "checkout", "-q", "main")
	dev := gitT(t, repo, "rev-parse", "dev")
	dir := filepath.Join(repo, ".worktrees", "dev")

	wt, err := Add(ctx, repo, dir, "dev")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Created {
		t.Error("Created is true for an existing branch")
	}
	if got := gitT(t, dir, "symbolic-ref", "HEAD"); got != "refs/heads/dev" {
		t.Errorf("worktree HEAD is %s, want refs/heads/dev", got)
	}
	if got := gitT(t, repo, "rev-parse", "dev"); got != dev {
		t.Errorf("Add moved dev from %s to %s", dev, got)
	}
	if !exists(t, filepath.Join(dir, "dev.txt")) {
		t.Error("the worktree does not have dev's dev.txt")
	}
}

func TestAddCheckedOut(t *testing.T) {
	t.Parallel()
	t.Run("main worktree", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		_, err := Add(testContext(t), repo, filepath.Join(repo, ".worktrees", "main"), "main")
		testutil.ErrorKind(t, err, ErrCheckedOut, `"main"`, repo)
		assertUntouched(t, repo)
	})
	t.Run("linked worktree", func(t *testing.T) {
		t.Parallel()
		repo := newRepo(t)
		ctx := testContext(t)
		first := filepath.Join(repo, ".worktrees", "first")
		if _, err := Add(ctx, repo, first, "topic"); err != nil {
			t.Fatal(err)
		}
		second := filepath.Join(repo, ".worktrees", "second")
		_, err := Add(ctx, repo, second, "topic")
		testutil.ErrorKind(t, err, ErrCheckedOut, `"topic"`, first)
		if exists(t, second) {
			t.Errorf("%s exists after a failed Add", second)
		}
		if got := worktrees(t, repo); !slices.Equal(got, []string{repo, first}) {
			t.Errorf("worktrees: %q", got)
		}
	})
}

func TestAddInvalidBranch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	// Makes "@{-1}" name a branch, which git would expand to "other".
	gitT(t, repo, "checkout", "-q", "-b", "other")
	gitT(t, repo, "checkout", "-q", "main")
	for _, c := range []struct{ name, says string }{
		{"bad..name", "not a valid branch name"},
		{"-x", "starts with '-'"},
		{"a b", "not a valid branch name"},
		{"", "empty"},
		{"x.lock", "not a valid branch name"},
		{"a/.b", "not a valid branch name"},
		{"feature/", "not a valid branch name"},
		{"HEAD", "not a valid branch name"},
		{"@{-1}", `git reads it as "other"`},
	} {
		_, err := Add(ctx, repo, filepath.Join(repo, ".worktrees", DirName(c.name)), c.name)
		testutil.ErrorKind(t, err, ErrInvalidBranch, c.says)
		if c.name != "" && !strings.Contains(err.Error(), strconv.Quote(c.name)) {
			t.Errorf("error %q does not name the branch %q", err, c.name)
		}
	}
	assertUntouched(t, repo, "other")
}

func TestAddNotRepo(t *testing.T) {
	t.Parallel()
	needGit(t)
	ctx := testContext(t)
	plain := testutil.TempDir(t)
	_, err := Add(ctx, plain, filepath.Join(plain, ".worktrees", "x"), "x")
	testutil.ErrorKind(t, err, gitexec.ErrNotRepo, plain, "not a git repository")
	if exists(t, filepath.Join(plain, ".worktrees")) {
		t.Error(".worktrees created in a directory that is not a repository")
	}

	missing := filepath.Join(plain, "missing")
	_, err = Add(ctx, missing, filepath.Join(plain, "wt"), "x")
	testutil.ErrorKind(t, err, gitexec.ErrNotRepo, missing)
}

func TestNoGit(t *testing.T) {
	// Not parallel: it changes PATH for the whole process.
	dir := testutil.TempDir(t)
	t.Setenv("PATH", dir)
	ctx := testContext(t)

	_, err := Add(ctx, dir, filepath.Join(dir, "wt"), "x")
	testutil.ErrorKind(t, err, ErrNoGit, "git is not installed")
	if errors.Is(err, gitexec.ErrNotRepo) {
		t.Errorf("Add without git: %v wraps gitexec.ErrNotRepo", err)
	}
	_, err = Status(ctx, dir)
	testutil.ErrorKind(t, err, ErrNoGit)
	testutil.ErrorKind(t, Remove(ctx, filepath.Join(dir, "wt"), false), ErrNoGit)
	testutil.ErrorKind(t, DeleteBranch(ctx, dir, "x"), ErrNoGit)
}

func TestAddTargetExists(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := filepath.Join(repo, ".worktrees", "taken")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "mine"), "keep me\n")

	_, err := Add(ctx, repo, dir, "x")
	testutil.ErrorKind(t, err, ErrExists, dir)
	if !exists(t, filepath.Join(dir, "mine")) {
		t.Error("Add removed a directory it did not create")
	}
	if hasBranch(t, repo, "x") {
		t.Error("branch x created by a failed Add")
	}

	file := filepath.Join(repo, "README.md")
	_, err = Add(ctx, repo, file, "x")
	testutil.ErrorKind(t, err, ErrExists, file)
}

func TestAddUnbornHead(t *testing.T) {
	t.Parallel()
	needGit(t)
	repo := testutil.TempDir(t)
	gitT(t, repo, "init", "-q", "-b", "main")

	_, err := Add(testContext(t), repo, filepath.Join(repo, ".worktrees", "x"), "x")
	testutil.ErrorKind(t, err, ErrNoCommits, repo, `"x"`, "no commits yet")
	if exists(t, filepath.Join(repo, ".worktrees")) {
		t.Error(".worktrees left behind")
	}
	if hasBranch(t, repo, "x") {
		t.Error("branch x created")
	}
}

// installHook makes script the repository's post-checkout hook, which git
// worktree add runs once the worktree is ready: the last point at which
// Add can fail, with a branch, directories and a registration to undo.
func installHook(t *testing.T, repo, script string) {
	t.Helper()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestAddRollsBack(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	installHook(t, repo, "echo 'hook refuses' >&2\nexit 3\n")
	dir := filepath.Join(repo, ".worktrees", "x")

	_, err := Add(testContext(t), repo, dir, "x")
	if err == nil || !strings.Contains(err.Error(), "hook refuses") {
		t.Fatalf("Add with a failing hook: %v, want git's complaint", err)
	}
	assertUntouched(t, repo)
}

func TestAddCanceled(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	marks := testutil.TempDir(t)
	pidFile := filepath.Join(marks, "hook.pid")
	// The hook says it runs, then blocks until killed.
	installHook(t, repo, fmt.Sprintf("echo $$ >'%[1]s.tmp' && mv '%[1]s.tmp' '%[1]s'\nexec sleep 600\n", pidFile))
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()

	errc := make(chan error, 1)
	go func() {
		_, err := Add(ctx, repo, filepath.Join(repo, ".worktrees", "x"), "x")
		errc <- err
	}()
	testutil.Eventually(t, testTimeout, "the post-checkout hook to start", func() bool { return exists(t, pidFile) })
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	cancel()

	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Add after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("Add did not return after its context was canceled")
	}
	testutil.Eventually(t, testTimeout, "the hook git ran to be killed", func() bool { return testutil.ProcessGone(pid) })
	assertUntouched(t, repo)
}

func TestAddRace(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := filepath.Join(repo, ".worktrees", "contested")

	// Two Adds for one directory, on different branches: one wins, and
	// the loser takes back only its own work.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { _, errs[i] = Add(ctx, repo, dir, fmt.Sprintf("b%d", i)) })
	}
	wg.Wait()
	winner := slices.IndexFunc(errs, func(err error) bool { return err == nil })
	if winner < 0 || errs[1-winner] == nil {
		t.Fatalf("Add results %v, want exactly one success", errs)
	}
	testutil.ErrorKind(t, errs[1-winner], ErrExists, dir)
	if got := gitT(t, dir, "symbolic-ref", "HEAD"); got != fmt.Sprintf("refs/heads/b%d", winner) {
		t.Errorf("the winner's worktree is on %s", got)
	}
	if hasBranch(t, repo, fmt.Sprintf("b%d", 1-winner)) {
		t.Error("the loser's branch was left behind")
	}
}

func TestAddIgnoresServerGitEnv(t *testing.T) {
	// Not parallel: it sets the environment.
	repo := newRepo(t)
	other := newRepo(t)
	t.Setenv("GIT_DIR", filepath.Join(other, ".git"))
	t.Setenv("GIT_WORK_TREE", other)
	t.Setenv("GIT_INDEX_FILE", filepath.Join(other, ".git", "index"))

	if _, err := Add(testContext(t), repo, filepath.Join(repo, ".worktrees", "x"), "x"); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("GIT_DIR")
	os.Unsetenv("GIT_WORK_TREE")
	os.Unsetenv("GIT_INDEX_FILE")
	if !hasBranch(t, repo, "x") || hasBranch(t, other, "x") {
		t.Error("Add worked on the repository of GIT_DIR, not on repoDir's")
	}
}

func TestStatus(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	writeFile(t, filepath.Join(repo, ".gitignore"), "*.log\n")
	gitT(t, repo, "add", ".gitignore")
	gitT(t, repo, "commit", "-q", "-m", "ignore logs")

	if got, err := Status(ctx, repo); err != nil || got != nil {
		t.Fatalf("Status of a clean worktree: %q, %v", got, err)
	}
	gitT(t, repo, "mv", "README.md", "READ ME.md")
	if err := os.MkdirAll(filepath.Join(repo, "new", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(repo, "new", "deep", "f"), "x")
	writeFile(t, filepath.Join(repo, "debug.log"), "ignored")
	writeFile(t, filepath.Join(repo, ".gitignore"), "*.log\n# changed\n")

	got, err := Status(ctx, filepath.Join(repo, "new"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{".gitignore", "READ ME.md", "new/"}; !slices.Equal(got, want) {
		t.Errorf("Status: %q, want %q", got, want)
	}

	_, err = Status(ctx, testutil.TempDir(t))
	testutil.ErrorKind(t, err, gitexec.ErrNotRepo)
}

// addWorktree adds the worktree .worktrees/<branch> on a new branch.
func addWorktree(t *testing.T, repo, branch string) string {
	t.Helper()
	wt, err := Add(testContext(t), repo, filepath.Join(repo, ".worktrees", DirName(branch)), branch)
	if err != nil {
		t.Fatal(err)
	}
	return wt.Path
}

func TestRemoveClean(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	dir := addWorktree(t, repo, "x")

	if err := Remove(testContext(t), dir, false); err != nil {
		t.Fatal(err)
	}
	if exists(t, dir) {
		t.Errorf("%s still exists", dir)
	}
	if got := worktrees(t, repo); !slices.Equal(got, []string{repo}) {
		t.Errorf("worktrees after Remove: %q", got)
	}
	if !hasBranch(t, repo, "x") {
		t.Error("Remove deleted the branch")
	}
}

func TestRemoveDirty(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "x")
	writeFile(t, filepath.Join(dir, "README.md"), "changed\n")
	writeFile(t, filepath.Join(dir, "notes.txt"), "new\n")

	err := Remove(ctx, dir, false)
	testutil.ErrorKind(t, err, ErrDirty, dir, "README.md", "notes.txt")
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "new\n" {
		t.Fatalf("notes.txt after a refused Remove: %q, %v", b, err)
	}

	if err := Remove(ctx, dir, true); err != nil {
		t.Fatal(err)
	}
	if exists(t, dir) {
		t.Errorf("%s still exists after a forced Remove", dir)
	}
	if !hasBranch(t, repo, "x") {
		t.Error("forced Remove deleted the branch")
	}
}

func TestRemoveDirtyManyPaths(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	dir := addWorktree(t, repo, "x")
	for i := range 12 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%02d", i)), "x")
	}
	err := Remove(testContext(t), dir, false)
	testutil.ErrorKind(t, err, ErrDirty, "f00", "f09", "and 2 more")
	if strings.Contains(err.Error(), "f10") {
		t.Errorf("error %q lists more than 10 paths", err)
	}
}

func TestRemoveNotWorktree(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	sub := filepath.Join(repo, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	plain := testutil.TempDir(t)
	for _, c := range []struct{ what, dir, says string }{
		{"the main worktree", repo, "main worktree"},
		{"a directory in the main worktree", sub, repo},
		{"a directory outside any repository", plain, "not a git repository"},
		{"a missing directory no worktree had", filepath.Join(repo, ".worktrees", "none"), "has no worktree there"},
	} {
		err := Remove(ctx, c.dir, true)
		if !errors.Is(err, ErrNotWorktree) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("Remove of %s: %v, want ErrNotWorktree saying %q", c.what, err, c.says)
		}
	}
	if !exists(t, filepath.Join(repo, "README.md")) || !exists(t, sub) {
		t.Error("a refused Remove removed files")
	}
}

func TestRemoveGoneDirectory(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "x")
	if err := os.RemoveAll(filepath.Join(repo, ".worktrees")); err != nil {
		t.Fatal(err)
	}
	// Git still holds the branch for the vanished worktree.
	_, err := Add(ctx, repo, filepath.Join(repo, ".worktrees", "again"), "x")
	testutil.ErrorKind(t, err, ErrCheckedOut, dir, "gone")

	if err := Remove(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	if got := worktrees(t, repo); !slices.Equal(got, []string{repo}) {
		t.Errorf("worktrees after Remove: %q", got)
	}
	if _, err := Add(ctx, repo, filepath.Join(repo, ".worktrees", "again"), "x"); err != nil {
		t.Errorf("Add on the freed branch: %v", err)
	}
}

func TestDeleteBranch(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "feature/x")

	testutil.ErrorKind(t, DeleteBranch(ctx, repo, "feature/x"), ErrCheckedOut, `"feature/x"`, dir)
	if err := Remove(ctx, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := DeleteBranch(ctx, repo, "feature/x"); err != nil {
		t.Fatal(err)
	}
	if hasBranch(t, repo, "feature/x") {
		t.Error("branch still exists after DeleteBranch")
	}
	if err := DeleteBranch(ctx, repo, "feature/x"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("DeleteBranch of a missing branch: %v", err)
	}
	testutil.ErrorKind(t, DeleteBranch(ctx, repo, "-D"), ErrInvalidBranch)
	testutil.ErrorKind(t, DeleteBranch(ctx, testutil.TempDir(t), "x"), gitexec.ErrNotRepo)
}

func TestDirName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"feature/auth", "feature-auth"},
		{"claude 1", "claude-1"},
		{"../x", "x"},
		{"a  //  b", "a-b"},
		{"keep_this-name.v2", "keep_this-name.v2"},
		{"café", "caf"},
		{"--x--", "x"},
		{".hidden.", "hidden"},
		{"", "session"},
		{"..", "session"},
		{"/// ", "session"},
		{strings.Repeat("a", 70), strings.Repeat("a", 64)},
		{strings.Repeat("a", 63) + "/b", strings.Repeat("a", 63)},
	} {
		if got := DirName(c.in); got != c.want {
			t.Errorf("DirName(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCheckClean(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "c")
	if err := CheckClean(ctx, dir); err != nil {
		t.Fatalf("fresh worktree: %v", err)
	}
	writeFile(t, filepath.Join(dir, "notes.txt"), "draft\n")
	testutil.ErrorKind(t, CheckClean(ctx, dir), ErrDirty, "notes.txt")
	if !exists(t, filepath.Join(dir, "notes.txt")) {
		t.Error("CheckClean touched the worktree")
	}
	if err := CheckClean(ctx, filepath.Join(repo, ".worktrees", "gone")); err != nil {
		t.Errorf("missing directory: %v, want nil (nothing to lose)", err)
	}
}

func TestExclude(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	dir := addWorktree(t, repo, "e")
	if got := gitT(t, repo, "status", "--porcelain"); !strings.Contains(got, ".worktrees/") {
		t.Fatalf("before Exclude, status %q does not show .worktrees/", got)
	}
	// From inside a linked worktree too: the exclude file is the shared one.
	for _, from := range []string{repo, dir, repo} {
		if err := Exclude(ctx, from, "/.worktrees/"); err != nil {
			t.Fatalf("Exclude from %s: %v", from, err)
		}
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("after Exclude, status %q, want clean", got)
	}
	b, err := os.ReadFile(filepath.Join(repo, ".git", "info", "exclude"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "/.worktrees/\n"); n != 1 {
		t.Errorf("exclude holds the pattern %d times, want once:\n%s", n, b)
	}
	if _, err := os.Stat(filepath.Join(repo, ".gitignore")); err == nil {
		t.Error("Exclude wrote a .gitignore")
	}
	testutil.ErrorKind(t, Exclude(ctx, testutil.TempDir(t), "/x/"), gitexec.ErrNotRepo)
}

// TestNoFSMonitor: a repository's file-system monitor hook runs neither
// when Add checks a worktree out nor when Status, CheckClean or Remove
// look at one.
func TestNoFSMonitor(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	script, marker := testutil.MarkerScript(t)
	gitT(t, repo, "config", "core.fsmonitor", script)
	// The setup's own gits ran the hook; only the package's count.
	_ = os.Remove(marker)

	wt, err := Add(ctx, repo, filepath.Join(repo, ".worktrees", "m"), "m")
	if err != nil {
		t.Fatal(err)
	}
	testutil.NotRun(t, "Add", marker)
	if got, err := Status(ctx, repo); err != nil || !slices.Equal(got, []string{".worktrees/"}) {
		t.Errorf("Status: %q, %v", got, err)
	}
	testutil.NotRun(t, "Status", marker)
	if err := CheckClean(ctx, wt.Path); err != nil {
		t.Error(err)
	}
	testutil.NotRun(t, "CheckClean", marker)
	if err := Remove(ctx, wt.Path, false); err != nil {
		t.Fatal(err)
	}
	testutil.NotRun(t, "Remove", marker)
}

// TestNoLazyFetch: in a partial clone missing a blob that a status needs
// (to find a staged rename), neither Status nor Remove's check fetches
// it, by ssh and its configured command or by the ext:: transport, which
// runs any command; nor does Add, which needs it to check out.
func TestNoLazyFetch(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"ssh", "ext"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t)
			ctx := testContext(t)
			text := strings.Repeat("a line long enough to be found again when renamed\n", 20)
			writeFile(t, filepath.Join(repo, "doc.txt"), text)
			gitT(t, repo, "add", "doc.txt")
			gitT(t, repo, "commit", "-q", "-m", "doc")
			wt := filepath.Join(repo, ".worktrees", "r")
			gitT(t, repo, "worktree", "add", "-q", "-b", "r", wt)
			// A staged rename with an edit: finding it needs the old blob.
			for _, dir := range []string{repo, wt} {
				gitT(t, dir, "mv", "doc.txt", "moved.txt")
				writeFile(t, filepath.Join(dir, "moved.txt"), text+"one more\n")
				gitT(t, dir, "add", "moved.txt")
			}

			script, marker := testutil.MarkerScript(t)
			testutil.MakePartialClone(t, repo, "doc.txt", testutil.PromisorURL(transport, marker), script)

			_, _ = Status(ctx, repo)
			testutil.NotRun(t, "Status", marker)
			_ = CheckClean(ctx, wt)
			testutil.NotRun(t, "CheckClean", marker)
			_ = Remove(ctx, wt, false)
			testutil.NotRun(t, "Remove", marker)
			if !exists(t, wt) {
				t.Error("Remove removed a worktree whose status it could not tell")
			}
			_, _ = Add(ctx, repo, filepath.Join(repo, ".worktrees", "n"), "n")
			testutil.NotRun(t, "Add", marker)
			if _, err := Origin(ctx, repo); err != nil {
				t.Error(err)
			}
			testutil.NotRun(t, "Origin", marker)
		})
	}
}

// filterRepo returns a repository whose committed attributes give every
// file a filter and a diff driver, and a worktree of it on branch "f"
// with a clean README.md. The config, set after the worktree was checked
// out, makes the filter's clean and process commands and the driver's
// textconv and command run the marker script, and makes the filter
// required, so a failing one would fail the git that ran it.
func filterRepo(t *testing.T) (repo, wt, marker string) {
	t.Helper()
	repo = newRepo(t)
	writeFile(t, filepath.Join(repo, ".gitattributes"), "* filter=evil diff=evil\n")
	gitT(t, repo, "add", ".gitattributes")
	gitT(t, repo, "commit", "-q", "-m", "attributes")
	wt = addWorktree(t, repo, "f")
	script, marker := testutil.MarkerScript(t)
	for _, kv := range [][2]string{
		{"filter.evil.clean", script},
		{"filter.evil.process", script},
		{"filter.evil.required", "true"},
		{"diff.evil.textconv", script},
		{"diff.evil.command", script},
	} {
		gitT(t, repo, "config", kv[0], kv[1])
	}
	return repo, wt, marker
}

// statDirty sets path's modification time far in the past, so git no
// longer trusts the index's record of it and reads the file, through its
// clean filter, to tell whether it changed.
func statDirty(t *testing.T, path string) {
	t.Helper()
	old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
}

// TestNoFilter: looking at a worktree runs none of the filters or diff
// drivers its repository configures, and still tells a modified file
// from one that was only touched.
func TestNoFilter(t *testing.T) {
	t.Parallel()
	_, wt, marker := filterRepo(t)
	ctx := testContext(t)
	readme := filepath.Join(wt, "README.md")

	statDirty(t, readme)
	if got, err := Status(ctx, wt); err != nil || got != nil {
		t.Errorf("Status of a touched worktree: %q, %v; want clean", got, err)
	}
	testutil.NotRun(t, "Status", marker)
	if err := CheckClean(ctx, wt); err != nil {
		t.Errorf("CheckClean of a touched worktree: %v", err)
	}
	testutil.NotRun(t, "CheckClean", marker)

	// The same size, so only reading the file tells.
	writeFile(t, readme, "HELLO\n")
	statDirty(t, readme)
	if got, err := Status(ctx, wt); err != nil || !slices.Equal(got, []string{"README.md"}) {
		t.Errorf("Status of a modified worktree: %q, %v; want README.md", got, err)
	}
	testutil.NotRun(t, "Status", marker)
	testutil.ErrorKind(t, CheckClean(ctx, wt), ErrDirty, "README.md")
	testutil.NotRun(t, "CheckClean", marker)
	testutil.ErrorKind(t, Remove(ctx, wt, false), ErrDirty, "README.md")
	testutil.NotRun(t, "Remove", marker)
	if !exists(t, readme) {
		t.Fatal("a refused Remove removed the worktree")
	}

	// Clean again but touched: Remove's check passes, and so must the one
	// git worktree remove makes itself.
	writeFile(t, readme, "hello\n")
	statDirty(t, readme)
	if err := Remove(ctx, wt, false); err != nil {
		t.Fatal(err)
	}
	testutil.NotRun(t, "Remove", marker)
	if exists(t, wt) {
		t.Errorf("%s still exists", wt)
	}
}
