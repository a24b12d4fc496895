package changes

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testTimeout = 20 * time.Second

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return c
}

// gitT runs git in dir, failing the test on error.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main", "-c", "gc.auto=0", "-c", "maintenance.auto=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(t *testing.T, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// repo is a repository with a first commit of the given files.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "-q")
	for rel, content := range files {
		write(t, dir, rel, content)
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "first")
	return dir
}

// commitFile writes rel in the repository at dir and commits it with msg.
func commitFile(t *testing.T, dir, rel, content, msg string) {
	t.Helper()
	write(t, dir, rel, content)
	gitT(t, dir, "add", rel)
	gitT(t, dir, "commit", "-q", "-m", msg)
}

func byPath(files []File) map[string]File {
	m := map[string]File{}
	for _, f := range files {
		m[f.Path] = f
	}
	return m
}

// TestSummaryStatuses: every kind of change, staged or not, tracked or
// not, is in the summary with its counts.
func TestSummaryStatuses(t *testing.T) {
	lines := func(n int, word string) string { return strings.Repeat(word+"\n", n) }
	dir := repo(t, map[string]string{
		"modified.txt": lines(5, "old"),
		"deleted.txt":  "gone\n",
		"moved.txt":    lines(20, "same"),
		"staged.txt":   "a\n",
		"script.sh":    "echo hi\n",
		"image.bin":    "\x00\x01\x02",
	})
	write(t, dir, "modified.txt", lines(5, "old")+lines(2, "new"))
	if err := os.Remove(filepath.Join(dir, "deleted.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "moved.txt"), filepath.Join(dir, "renamed.txt")); err != nil {
		t.Fatal(err) // a plain mv: the new name is untracked
	}
	write(t, dir, "staged.txt", "a\nb\n")
	gitT(t, dir, "add", "staged.txt")
	write(t, dir, "untracked/new.txt", lines(3, "x"))
	write(t, dir, "image.bin", "\x00\x01\x03\x04")
	if err := os.Chmod(filepath.Join(dir, "script.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".gitignore", "ignored.log\n")
	write(t, dir, "ignored.log", "noise\n")

	base, err := Base(ctx(t), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	files, err := Summary(ctx(t), dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(files)
	for path, want := range map[string]File{
		"modified.txt":      {Path: "modified.txt", Status: Modified, Additions: 2},
		"deleted.txt":       {Path: "deleted.txt", Status: Deleted, Deletions: 1},
		"renamed.txt":       {Path: "renamed.txt", OldPath: "moved.txt", Status: Renamed},
		"staged.txt":        {Path: "staged.txt", Status: Modified, Additions: 1},
		"untracked/new.txt": {Path: "untracked/new.txt", Status: Added, Additions: 3},
		"image.bin":         {Path: "image.bin", Status: Modified, Binary: true},
		"script.sh":         {Path: "script.sh", Status: Modified, OldMode: "100644", NewMode: "100755"},
		".gitignore":        {Path: ".gitignore", Status: Added, Additions: 1},
	} {
		if got[path] != want {
			t.Errorf("%s: %+v, want %+v", path, got[path], want)
		}
	}
	if len(files) != 8 {
		t.Errorf("%d files, want 8 (nothing ignored, nothing twice): %+v", len(files), files)
	}
	// The real index is untouched: the untracked files are not added.
	if st := gitT(t, dir, "status", "--porcelain", "untracked"); !strings.HasPrefix(st, "??") {
		t.Errorf("git status of the untracked file %q: the real index was written", st)
	}
}

// TestPatches: patches come with their files, cut at the limits with a
// note, never an error.
func TestPatches(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	write(t, dir, "a.txt", "a\nchanged\n")
	write(t, dir, "big.txt", strings.Repeat("0123456789\n", 2000)) // 22 KB
	write(t, dir, "c.txt", "c\n")
	base, _ := Base(ctx(t), dir, "")

	d, err := Patches(ctx(t), dir, base, nil, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if d.Truncated || len(d.Files) != 3 || d.Base != base {
		t.Fatalf("diff %+v", d)
	}
	for _, f := range d.Files {
		if !strings.HasPrefix(f.Patch, "diff --git a/"+f.Path+" b/"+f.Path+"\n") {
			t.Errorf("%s: patch %q is not its own", f.Path, f.Patch[:min(60, len(f.Patch))])
		}
	}
	if p := byPatch(d)["a.txt"]; !strings.Contains(p.Patch, "+changed\n") {
		t.Errorf("a.txt's patch %q", p.Patch)
	}

	d, err = Patches(ctx(t), dir, base, nil, Limits{File: 4 << 10, Total: 4<<10 + 100})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Truncated {
		t.Error("a cut diff does not say so")
	}
	p := byPatch(d)
	if big := p["big.txt"]; len(big.Patch) > 4<<10 || !strings.Contains(big.Note, "cut at 4 KiB") || !strings.HasSuffix(big.Patch, "\n") {
		t.Errorf("big.txt: %d bytes, note %q", len(big.Patch), big.Note)
	}
	if c := p["c.txt"]; c.Patch != "" || !strings.Contains(c.Note, "left out") {
		t.Errorf("c.txt after the total: %d bytes, note %q", len(c.Patch), c.Note)
	}

	one, err := Patches(ctx(t), dir, base, []string{"a.txt"}, DefaultLimits)
	if err != nil || len(one.Files) != 1 || one.Files[0].Path != "a.txt" {
		t.Errorf("one path: %+v, %v", one, err)
	}
}

func byPatch(d *Diff) map[string]Patch {
	m := map[string]Patch{}
	for _, f := range d.Files {
		m[f.Path] = f
	}
	return m
}

// TestNotARepository: a plain directory says so.
func TestNotARepository(t *testing.T) {
	dir := t.TempDir()
	if _, err := Top(ctx(t), dir); !errors.Is(err, gitexec.ErrNotRepo) {
		t.Errorf("Top: %v, want gitexec.ErrNotRepo", err)
	}
	if _, err := Summary(ctx(t), dir, emptyTree, nil); !errors.Is(err, gitexec.ErrNotRepo) {
		t.Errorf("Summary: %v, want gitexec.ErrNotRepo", err)
	}
}

// TestHostileRepositoryRunsNothing: a repository's config and attributes
// may name commands for diffs (an external diff, a textconv driver), for
// filters and for the file-system monitor; none of them runs.
func TestHostileRepositoryRunsNothing(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n", ".gitattributes": "* diff=evil filter=evil\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	evil := "sh -c 'echo $0 >> " + marker + "'"
	for key, value := range map[string]string{
		"diff.external":        evil,
		"diff.evil.command":    evil,
		"diff.evil.textconv":   evil,
		"filter.evil.clean":    evil,
		"filter.evil.process":  evil,
		"filter.evil.required": "true",
		"core.fsmonitor":       evil,
		"core.pager":           evil,
	} {
		gitT(t, dir, "config", key, value)
	}
	write(t, dir, "a.txt", "a\nchanged\n")
	write(t, dir, "new.txt", "new\n")
	base, err := Base(ctx(t), dir, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Patches(ctx(t), dir, base, nil, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p := byPatch(d)["a.txt"]; !strings.Contains(p.Patch, "+changed") {
		t.Errorf("a.txt's patch %q: not git's own diff", p.Patch)
	}
	if _, err := os.Stat(marker); err == nil {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the repository's commands ran: %q", b)
	}
}

// TestTracker: an update diffs the paths given, merges them into what it
// had, and notices a moved base.
func TestTracker(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "sub/c.txt": "c\n"})
	tr := NewTracker(dir, "")
	s, err := tr.Update(ctx(t), nil)
	if err != nil || len(s.Files) != 0 {
		t.Fatalf("a clean tree: %+v, %v", s, err)
	}
	write(t, dir, "a.txt", "a\nmore\n")
	write(t, dir, "sub/new.txt", "1\n2\n")
	s, err = tr.Update(ctx(t), []string{"a.txt", "sub"})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 2 || s.Additions != 3 || s.Deletions != 0 {
		t.Errorf("after two writes: %+v", s)
	}
	// A change the update is not told about stays out until its path is
	// named; a rename told as both its paths is one.
	write(t, dir, "b.txt", "b\nunseen\n")
	if err := os.Rename(filepath.Join(dir, "sub", "c.txt"), filepath.Join(dir, "c2.txt")); err != nil {
		t.Fatal(err)
	}
	s, err = tr.Update(ctx(t), []string{"sub/c.txt", "c2.txt"})
	if err != nil {
		t.Fatal(err)
	}
	got := byPath(s.Files)
	if _, ok := got["b.txt"]; ok {
		t.Error("an update diffed a path it was not given: the whole tree was walked")
	}
	if r := got["c2.txt"]; r.Status != Renamed || r.OldPath != "sub/c.txt" {
		t.Errorf("the rename: %+v", r)
	}
	if _, ok := got["sub/c.txt"]; ok {
		t.Error("the renamed file is still listed under its old name")
	}
	// Reverting a file takes it out.
	write(t, dir, "a.txt", "a\n")
	s, _ = tr.Update(ctx(t), []string{"a.txt"})
	if _, ok := byPath(s.Files)["a.txt"]; ok {
		t.Error("a reverted file is still listed")
	}
	// A commit moves the base: the tracker notices, and the next update
	// diffs the whole tree against the new one.
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "second")
	if moved, err := tr.BaseMoved(ctx(t)); err != nil || !moved {
		t.Fatalf("BaseMoved after a commit: %v, %v", moved, err)
	}
	s, err = tr.Update(ctx(t), nil)
	if err != nil || len(s.Files) != 0 || s.Base == "" {
		t.Errorf("after the commit: %+v, %v", s, err)
	}
}

// TestBaseFromBranch: a tree on a branch is compared with where it left
// the branch it came from, even after that branch moved on.
func TestBaseFromBranch(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n"})
	fork := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	gitT(t, dir, "checkout", "-q", "-b", "feature")
	commitFile(t, dir, "f.txt", "feature\n", "feature work")
	gitT(t, dir, "checkout", "-q", "main")
	commitFile(t, dir, "main.txt", "main moved on\n", "main work")
	gitT(t, dir, "checkout", "-q", "feature")
	base, err := Base(ctx(t), dir, "main")
	if err != nil || base != fork {
		t.Fatalf("base %q, %v; want the fork point %s", base, err, fork)
	}
	files, err := Summary(ctx(t), dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(files); len(files) != 1 || got["f.txt"].Status != Added {
		t.Errorf("feature's change: %+v; want only f.txt (main's main.txt is not the agent's)", files)
	}
}

// TestBaseAfterSquash: a branch squashed into main counts its changes
// from the tip that was merged, so only what it did since shows; once
// main is merged into it, from main's tip, which is newer.
func TestBaseAfterSquash(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n"})
	fork := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	gitT(t, dir, "checkout", "-q", "-b", "feature")
	commitFile(t, dir, "f.txt", "feature\n", "feature work")
	tip := strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD"))
	gitT(t, dir, "checkout", "-q", "main")
	gitT(t, dir, "merge", "-q", "--squash", "feature")
	gitT(t, dir, "commit", "-q", "-m", "squashed feature")
	gitT(t, dir, "checkout", "-q", "feature")
	commitFile(t, dir, "g.txt", "after the merge\n", "more feature work")

	if base, err := Base(ctx(t), dir, "main"); err != nil || base != fork {
		t.Fatalf("from main alone: base %q, %v; want the fork point %s", base, err, fork)
	}
	base, err := Base(ctx(t), dir, "main", tip)
	if err != nil || base != tip {
		t.Fatalf("from main and the merged tip: base %q, %v; want the tip %s", base, err, tip)
	}
	files, err := Summary(ctx(t), dir, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := byPath(files); len(files) != 1 || got["g.txt"].Status != Added {
		t.Errorf("after the squash: %+v; want only g.txt (f.txt is on main already)", files)
	}

	gitT(t, dir, "merge", "-q", "--no-edit", "main")
	head := strings.TrimSpace(gitT(t, dir, "rev-parse", "main"))
	if base, err := Base(ctx(t), dir, "main", tip); err != nil || base != head {
		t.Fatalf("after main was merged in: base %q, %v; want main's tip %s", base, err, head)
	}
	if base, err := Base(ctx(t), dir, "", ""); err != nil || base != strings.TrimSpace(gitT(t, dir, "rev-parse", "HEAD")) {
		t.Fatalf("from nothing: base %q, %v; want HEAD", base, err)
	}
}

// lazyFetchRepo is a repository that claims to be a partial clone whose
// fetch would run a command (see testutil.PromisorURL), with its first
// commit's a.txt missing from the object store and changed in the tree,
// so a diff needs a blob git can only fetch.
func lazyFetchRepo(t *testing.T, transport string) (dir, marker string) {
	t.Helper()
	dir = repo(t, map[string]string{"a.txt": "one\n"})
	script, marker := testutil.MarkerScript(t)
	testutil.MakePartialClone(t, dir, "a.txt", testutil.PromisorURL(transport, marker), script)
	write(t, dir, "a.txt", "two\n")
	return dir, marker
}

// TestNoLazyFetch: in a partial clone missing a blob a diff needs, no
// diff, summary or tracker update fetches it, by ssh (and its configured
// command) or by the ext:: transport, which runs any command. They fail
// instead, having run nothing.
func TestNoLazyFetch(t *testing.T) {
	for _, transport := range []string{"ssh", "ext"} {
		t.Run(transport, func(t *testing.T) {
			dir, marker := lazyFetchRepo(t, transport)
			base, err := Base(ctx(t), dir, "")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Summary(ctx(t), dir, base, nil); err == nil {
				t.Error("Summary of a tree whose base blob is missing: no error")
			}
			testutil.NotRun(t, "Summary", marker)
			if _, err := Patches(ctx(t), dir, base, nil, DefaultLimits); err == nil {
				t.Error("Patches of a tree whose base blob is missing: no error")
			}
			testutil.NotRun(t, "Patches", marker)
			tr := NewTracker(dir, "")
			_, _ = tr.Update(ctx(t), nil)
			_, _ = tr.Update(ctx(t), []string{"a.txt"})
			testutil.NotRun(t, "Tracker.Update", marker)
			if top, err := Top(ctx(t), dir); err != nil || top == "" {
				t.Errorf("Top: %q, %v", top, err)
			}
			testutil.NotRun(t, "Top", marker)
		})
	}
}
