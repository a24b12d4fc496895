package ship

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestCommitEverything: a change, a deletion and an untracked file are
// all committed, an ignored file is not, and the answer names the commit
// and the branch.
func TestCommitEverything(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	commitFile(t, repo, ".gitignore", "*.log\n", "ignore logs")
	commitFile(t, repo, "gone.txt", "bye\n", "a file to delete")
	wt := addWorktree(t, repo, "feat")
	writeFile(t, wt, "README.md", "hello\nworld\n")
	writeFile(t, wt, "sub/new.txt", "new\n")
	writeFile(t, wt, "debug.log", "noise\n")
	if err := os.Remove(filepath.Join(wt, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	before := rev(t, wt, "HEAD")

	c, err := Commit(testContext(t), filepath.Join(wt, "sub"), "Say world\n\nand more")
	if err != nil {
		t.Fatal(err)
	}
	if c.Branch != "feat" || c.SHA != rev(t, wt, "HEAD") || c.SHA == before {
		t.Errorf("Commit: %+v; HEAD is %s, was %s", c, rev(t, wt, "HEAD"), before)
	}
	if got := gitT(t, wt, "log", "-1", "--format=%B"); got != "Say world\n\nand more" {
		t.Errorf("message %q", got)
	}
	if got := rev(t, wt, "HEAD^"); got != before {
		t.Errorf("the commit's parent is %s, want %s", got, before)
	}
	files := lines(gitT(t, wt, "ls-tree", "-r", "--name-only", "HEAD"))
	if want := []string{".gitignore", "README.md", "sub/new.txt"}; !slices.Equal(files, want) {
		t.Errorf("committed files %q, want %q", files, want)
	}
	if st := gitT(t, wt, "status", "--porcelain", "--ignored"); st != "!! debug.log" {
		t.Errorf("status after the commit: %q, want only the ignored file", st)
	}
}

// TestCommitFirst: the first commit of a repository with none is made
// too.
func TestCommitFirst(t *testing.T) {
	t.Parallel()
	repo := testutil.TempDir(t)
	gitT(t, repo, "init", "-q", "-b", "trunk")
	gitT(t, repo, "config", "user.name", "Ship Test")
	gitT(t, repo, "config", "user.email", "ship@example.com")
	writeFile(t, repo, "a.txt", "a\n")
	c, err := Commit(testContext(t), repo, "first")
	if err != nil {
		t.Fatal(err)
	}
	if c.Branch != "trunk" || c.SHA != rev(t, repo, "HEAD") {
		t.Errorf("Commit: %+v", c)
	}
}

// TestCommitNothing: a clean tree, or one whose only new file is
// ignored, has nothing to commit, and its index is not even written.
func TestCommitNothing(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	_, err := Commit(ctx, repo, "nothing")
	testutil.ErrorKind(t, err, ErrNothingToCommit, repo)

	commitFile(t, repo, ".gitignore", "*.log\n", "ignore logs")
	writeFile(t, repo, "x.log", "noise\n")
	index := filepath.Join(repo, ".git", "index")
	st, err := os.Stat(index)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Commit(ctx, repo, "nothing")
	testutil.ErrorKind(t, err, ErrNothingToCommit)
	if st2, err := os.Stat(index); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("the index was written by a commit with nothing to commit: %v", err)
	}
}

// TestCommitNoMessage: a blank message is refused before anything else.
func TestCommitNoMessage(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	writeFile(t, repo, "a.txt", "a\n")
	_, err := Commit(testContext(t), repo, " \n\t")
	testutil.ErrorKind(t, err, ErrNoMessage)
	if st := gitT(t, repo, "status", "--porcelain"); st != "?? a.txt" {
		t.Errorf("status %q after a refused commit", st)
	}
}

// TestCommitRefusesControls: a message is shown in terminals and in the
// UI, so one holding a control character (an ANSI escape, C1's CSI) or a
// bidi control is refused before anything is staged, as prompts are;
// Windows line ends and emoji joined by ZWJ are text.
func TestCommitRefusesControls(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	writeFile(t, repo, "a.txt", "a\n")
	head := gitT(t, repo, "rev-parse", "HEAD")
	for msg, want := range map[string]string{
		"red \x1b[31mtitle":      "control character U+001B",
		"csi \u009b2J":           "control character U+009B",
		"bell\a":                 "control character U+0007",
		"fix \u202eexe.txt":      "invisible character U+202E",
		"isolated \u2066x\u2069": "invisible character U+2066",
		"not utf-8 \xff":         "not valid UTF-8",
	} {
		_, err := Commit(testContext(t), repo, msg)
		testutil.ErrorKind(t, err, ErrInvalidMessage)
		if err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("Commit(%q): %v, want it to say %q", msg, err, want)
		}
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "?? a.txt" {
		t.Errorf("status %q after refused commits", st)
	}
	if got := gitT(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s on refused commits", got)
	}
	if _, err := Commit(testContext(t), repo, "Add a\r\n\r\nWith a body \U0001F469\u200D\U0001F4BB\tand a tab\r\n"); err != nil {
		t.Fatalf("a message with CRLF line ends, a tab and a ZWJ emoji: %v", err)
	}
	if got := gitT(t, repo, "log", "-1", "--format=%B"); got != "Add a\n\nWith a body \U0001F469\u200D\U0001F4BB\tand a tab" {
		t.Errorf("committed message %q", got)
	}
}

// TestCommitRunsPreCommitHook: the user's pre-commit hook runs, as for
// their own git commit, and sees what is being committed.
func TestCommitRunsPreCommitHook(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	marker := filepath.Join(t.TempDir(), "ran")
	hooks := t.TempDir()
	hook := "#!/bin/sh\ngit diff --cached --name-only > " + marker + "\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "config", "core.hooksPath", hooks)
	wt := addWorktree(t, repo, "feat")
	writeFile(t, wt, "new.txt", "new\n")
	if _, err := Commit(testContext(t), wt, "add new"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatalf("the pre-commit hook did not run: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != "new.txt" {
		t.Errorf("the hook saw %q staged, want new.txt", got)
	}
}

// TestCommitHookRefuses: a pre-commit hook that refuses fails the
// commit with its words, and leaves HEAD and the index as they were:
// what was staged still is, what was untracked still is.
func TestCommitHookRefuses(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	hooks := t.TempDir()
	hook := "#!/bin/sh\necho 'lint: README.md needs a title' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "config", "core.hooksPath", hooks)
	writeFile(t, repo, "staged.txt", "staged\n")
	gitT(t, repo, "add", "staged.txt")
	writeFile(t, repo, "README.md", "changed\n")
	writeFile(t, repo, "untracked.txt", "u\n")
	head := rev(t, repo, "HEAD")
	status := gitT(t, repo, "status", "--porcelain")

	_, err := Commit(testContext(t), repo, "refused")
	if err == nil || !strings.Contains(err.Error(), "lint: README.md needs a title") || !strings.Contains(err.Error(), "commit the changes in "+repo) {
		t.Fatalf("Commit: %v, want the hook's refusal, naming the step", err)
	}
	if got := rev(t, repo, "HEAD"); got != head {
		t.Errorf("HEAD moved to %s", got)
	}
	if got := gitT(t, repo, "status", "--porcelain"); got != status {
		t.Errorf("status after the refusal:\n%s\nwant, as before:\n%s", got, status)
	}
	if _, err := os.Stat(filepath.Join(repo, ".git", "index.lock")); !os.IsNotExist(err) {
		t.Errorf("index.lock left behind: %v", err)
	}
}

// TestCommitRestoreRespectsLock: when another git holds the index's lock
// as the failed commit puts the index back, it says so and leaves the
// lock alone.
func TestCommitRestoreRespectsLock(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	restore, err := saveIndex(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(repo, ".git", "index.lock")
	writeFile(t, repo, ".git/index.lock", "another git's\n")
	if err := restore(ctx); err == nil || !strings.Contains(err.Error(), lock) {
		t.Errorf("restore under another's lock: %v, want a refusal naming %s", err, lock)
	}
	if got := readFile(t, repo, ".git/index.lock"); got != "another git's\n" {
		t.Errorf("the lock now holds %q", got)
	}
}

// TestSuggestMessage: the proposed message says what happened to which
// files, and lists them with their counts when there are several.
func TestSuggestMessage(t *testing.T) {
	t.Parallel()
	mod := func(p string, a, d int) changes.File {
		return changes.File{Path: p, Status: changes.Modified, Additions: a, Deletions: d}
	}
	add := func(p string, a int) changes.File { return changes.File{Path: p, Status: changes.Added, Additions: a} }
	many := make([]changes.File, 25)
	for i := range many {
		many[i] = add("web/src/f"+strings.Repeat("x", i)+".ts", 1)
	}
	for _, tc := range []struct {
		name  string
		files []changes.File
		want  string
	}{
		{"none", nil, ""},
		{"one modified", []changes.File{mod("README.md", 3, 1)}, "Update README.md"},
		{"one added", []changes.File{add("cmd/x/main.go", 10)}, "Add cmd/x/main.go"},
		{"one deleted", []changes.File{{Path: "old.go", Status: changes.Deleted, Deletions: 4}}, "Delete old.go"},
		{"one renamed", []changes.File{{Path: "b.go", OldPath: "a.go", Status: changes.Renamed}}, "Rename a.go to b.go"},
		{"two added", []changes.File{add("a/x.go", 1), add("a/y.go", 2)},
			"Add x.go and y.go\n\n- added a/x.go (+1 -0)\n- added a/y.go (+2 -0)"},
		{"mixed, binary", []changes.File{add("img/logo.png", 0), mod("img/README.md", 1, 1), {Path: "img/old.png", Status: changes.Deleted, Binary: true}},
			"Update logo.png, README.md and old.png\n\n- added img/logo.png (+0 -0)\n- modified img/README.md (+1 -1)\n- deleted img/old.png (binary)"},
		{"many in one directory", many, "Add 25 files in web/src\n\n" + func() string {
			var b strings.Builder
			for _, f := range many[:20] {
				b.WriteString("- added " + f.Path + " (+1 -0)\n")
			}
			return b.String() + "- and 5 more files"
		}()},
		{"long path", []changes.File{mod(strings.Repeat("d/", 40)+"f.go", 1, 0)}, "Update f.go"},
		{"long name", []changes.File{mod("d/"+strings.Repeat("n", 80), 1, 0)}, "Update 1 file in d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SuggestMessage(tc.files); got != tc.want {
				t.Errorf("SuggestMessage:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestSuggest: the proposal for a real tree covers its untracked files,
// and looking runs none of the repository's hooks.
func TestSuggest(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	script, marker := testutil.MarkerScript(t)
	gitT(t, repo, "config", "core.hooksPath", hookDir(t, script, allHooks...))
	writeFile(t, repo, "README.md", "hello\nthere\n")
	writeFile(t, repo, "NOTES.md", "n\n")
	got, err := Suggest(testContext(t), repo)
	if err != nil {
		t.Fatal(err)
	}
	want := "Update NOTES.md and README.md\n\n- added NOTES.md (+1 -0)\n- modified README.md (+1 -0)"
	if got != want {
		t.Errorf("Suggest:\n%s\nwant:\n%s", got, want)
	}
	testutil.NotRun(t, "Suggest", marker)
}

// TestSuggestMidMerge: in a worktree where UpdateFromBase left a merge
// conflicted for the agent, the proposal concludes that merge: its
// subject, and the file that conflicted, not the files main brought
// cleanly; staged or not, and with git's MERGE_MSG gone. Once the merge
// is committed, the proposals are the usual ones again.
func TestSuggestMidMerge(t *testing.T) {
	t.Parallel()
	repo, wt := conflictSetup(t)
	commitFile(t, repo, "docs/guide.md", "from main\n", "main's guide")
	ctx := testContext(t)
	u, err := UpdateFromBase(ctx, wt, "main")
	if err != nil || len(u.Conflicts) != 1 {
		t.Fatalf("UpdateFromBase: %+v, %v; want README.md conflicted", u, err)
	}
	// Looking runs none of the repository's hooks (the merge ran them).
	script, marker := testutil.MarkerScript(t)
	gitT(t, repo, "config", "core.hooksPath", hookDir(t, script, allHooks...))
	want := "Merge branch 'main' into feat\n\nResolved conflicts in:\n- README.md"
	suggest := func(when string) {
		t.Helper()
		got, err := Suggest(ctx, wt)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Suggest %s:\n%s\nwant:\n%s", when, got, want)
		}
	}
	suggest("with the conflict in the tree")

	// Without MERGE_MSG, git's name for the merge and the unmerged file.
	msgPath := strings.TrimSpace(gitT(t, wt, "rev-parse", "--path-format=absolute", "--git-path", "MERGE_MSG"))
	saved, err := os.ReadFile(msgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(msgPath); err != nil {
		t.Fatal(err)
	}
	suggest("without MERGE_MSG")
	if err := os.WriteFile(msgPath, saved, 0o644); err != nil {
		t.Fatal(err)
	}

	testutil.NotRun(t, "Suggest", marker)
	gitT(t, repo, "config", "--unset", "core.hooksPath")

	// The agent resolves it and stages the file: git lists it no more as
	// unmerged, MERGE_MSG still does.
	writeFile(t, wt, "README.md", "hello from both\n")
	gitT(t, wt, "add", "README.md")
	suggest("once resolved and staged")

	if _, err := Commit(ctx, wt, want); err != nil {
		t.Fatal(err)
	}
	if parents := strings.Fields(gitT(t, wt, "log", "-1", "--format=%P")); len(parents) != 2 {
		t.Errorf("the resolution's commit has parents %v, want the branch's and main's", parents)
	}
	writeFile(t, wt, "ok.txt", "changed\n")
	want = "Update ok.txt"
	suggest("after the merge, for a change of its own")
}

// TestParseMergeMsg: git's MERGE_MSG read with its comment character,
// whatever core.commentChar made it.
func TestParseMergeMsg(t *testing.T) {
	for _, tc := range []struct {
		text, subject string
		files         []string
	}{
		{"Merge branch 'main' into feat\n\n# Conflicts:\n#\tREADME.md\n#\tweb/a b.ts\n", "Merge branch 'main' into feat", []string{"README.md", "web/a b.ts"}},
		{"Merge main\n\n; Conflicts:\n;\tx.go\n", "Merge main", []string{"x.go"}},
		{"Merge branch 'main' into feat\n", "Merge branch 'main' into feat", nil},
		{"", "", nil},
	} {
		subject, files := parseMergeMsg(tc.text)
		if subject != tc.subject || !slices.Equal(files, tc.files) {
			t.Errorf("parseMergeMsg(%q) = %q, %q; want %q, %q", tc.text, subject, files, tc.subject, tc.files)
		}
	}
}
