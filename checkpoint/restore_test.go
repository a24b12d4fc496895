package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestRestore: restoring brings back a deleted tracked file, a deleted
// untracked file and changed contents, modes and links; removes files
// made since, tracked or untracked, and the directories they leave
// empty; leaves the ignored file alone, and HEAD, the index and the
// stash as they were. The checkpoint it takes first undoes it.
func TestRestore(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{
		"a.txt": "a\n", "b.txt": "b\n", "dir/c.txt": "c\n", ".gitignore": "*.log\n", "run.sh": "#!/bin/sh\n",
	})
	ctx := testContext(t)
	writeFile(t, repo, "stashed.txt", "s\n")
	gitT(t, repo, "add", "stashed.txt")
	gitT(t, repo, "stash", "-q")

	// The checkpoint.
	writeFile(t, repo, "a.txt", "a at the checkpoint\n")
	writeFile(t, repo, "u.txt", "untracked at the checkpoint\n")
	writeFile(t, repo, "x.log", "ignored\n")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	cp, _, err := Take(ctx, repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	atCheckpoint := map[string]string{"a.txt": "a at the checkpoint\n", "b.txt": "b\n", "u.txt": "untracked at the checkpoint\n", "dir/c.txt": "c\n"}

	// What the agent did since.
	removeFile(t, repo, "b.txt")
	removeFile(t, repo, "u.txt")
	writeFile(t, repo, "a.txt", "a later\n")
	writeFile(t, repo, "dir/c.txt", "c later\n")
	writeFile(t, repo, "new.txt", "new\n")
	writeFile(t, repo, "made/deep/n.txt", "n\n")
	writeFile(t, repo, "tracked-new.txt", "t\n")
	gitT(t, repo, "add", "tracked-new.txt")
	writeFile(t, repo, "x.log", "ignored, later\n")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o644); err != nil {
		t.Fatal(err)
	}
	removeFile(t, repo, "link")
	writeFile(t, repo, "link", "a file now\n")
	later := map[string]string{"a.txt": "a later\n", "b.txt": "<missing>", "u.txt": "<missing>", "dir/c.txt": "c later\n", "new.txt": "new\n", "made/deep/n.txt": "n\n", "tracked-new.txt": "t\n"}
	before := stateOf(t, repo)

	saved, err := Restore(ctx, repo, session, cp.ID, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if saved.ID != 2 {
		t.Errorf("the checkpoint taken first: %+v, want 2", saved)
	}
	for name, want := range atCheckpoint {
		if got := content(t, repo, name); got != want {
			t.Errorf("%s after Restore: %q, want %q", name, got, want)
		}
	}
	for _, name := range []string{"new.txt", "made", "tracked-new.txt"} {
		if exists(t, filepath.Join(repo, name)) {
			t.Errorf("%s, made after the checkpoint, is still there", name)
		}
	}
	if got := content(t, repo, "x.log"); got != "ignored, later\n" {
		t.Errorf("the ignored x.log: %q, want it left alone", got)
	}
	if fi, err := os.Stat(filepath.Join(repo, "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("run.sh lost its executable bit: %v, %v", fi.Mode(), err)
	}
	if target, err := os.Readlink(filepath.Join(repo, "link")); err != nil || target != "a.txt" {
		t.Errorf("link: %q, %v; want a link to a.txt", target, err)
	}
	after := stateOf(t, repo)
	if after.head != before.head || after.entries != before.entries || after.stash != before.stash || string(after.index) != string(before.index) {
		t.Errorf("Restore changed HEAD, the index or the stash:\nbefore %+v\nafter  %+v", before, after)
	}

	// Undone.
	if _, err := Restore(ctx, repo, session, saved.ID, Options{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range later {
		if got := content(t, repo, name); got != want {
			t.Errorf("%s after undoing the restore: %q, want %q", name, got, want)
		}
	}
	if got := stateOf(t, repo); !got.same(before) {
		t.Errorf("undoing the restore left:\n%+v\nwant, as before it:\n%+v", got, before)
	}
}

// TestRestoreNotFound: a checkpoint that does not exist is refused, and
// no checkpoint is taken for it.
func TestRestoreNotFound(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	writeFile(t, repo, "a.txt", "changed\n")
	ctx := testContext(t)
	_, err := Restore(ctx, repo, session, 7, Options{})
	testutil.ErrorKind(t, err, ErrNotFound, "no checkpoint 7")
	if list, err := List(ctx, repo, session); err != nil || len(list) != 0 {
		t.Errorf("List: %+v, %v; want none", list, err)
	}
	if got := content(t, repo, "a.txt"); got != "changed\n" {
		t.Errorf("a.txt: %q", got)
	}
}

// TestRestoreInTheWay: a file to restore where a directory of ignored
// files now stands, or an ignored file, is left out, the ignored files
// kept, and the error names it; everything else is restored.
func TestRestoreInTheWay(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{".gitignore": "*.log\n", "a.txt": "a\n"})
	ctx := testContext(t)
	writeFile(t, repo, "out", "a file at the checkpoint\n")
	writeFile(t, repo, "notes.txt", "notes at the checkpoint\n")
	cp, _, err := Take(ctx, repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	removeFile(t, repo, "out")
	writeFile(t, repo, "out/build.log", "ignored\n")
	writeFile(t, repo, ".gitignore", "*.log\nnotes.txt\n")
	writeFile(t, repo, "notes.txt", "private, ignored now\n")
	writeFile(t, repo, "a.txt", "later\n")

	saved, err := Restore(ctx, repo, session, cp.ID, Options{})
	if err == nil || !strings.Contains(err.Error(), "but for notes.txt, out,") {
		t.Fatalf("Restore: %v, want it to name out and notes.txt", err)
	}
	if saved.ID != 2 {
		t.Errorf("the checkpoint taken first: %+v", saved)
	}
	for name, want := range map[string]string{
		"out/build.log": "ignored\n", "notes.txt": "private, ignored now\n", // left alone
		"a.txt": "a\n", ".gitignore": "*.log\n", // restored
	} {
		if got := content(t, repo, name); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// TestRestorePrunesItsTarget: restoring the oldest checkpoint at the
// bound still restores it, though the checkpoint taken first prunes it.
func TestRestorePrunesItsTarget(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := testContext(t)
	for _, c := range []string{"one\n", "two\n"} {
		writeFile(t, repo, "a.txt", c)
		if _, _, err := Take(ctx, repo, session, Options{Keep: 2}); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, repo, "a.txt", "three\n")
	if _, err := Restore(ctx, repo, session, 1, Options{Keep: 2}); err != nil {
		t.Fatal(err)
	}
	if got := content(t, repo, "a.txt"); got != "one\n" {
		t.Errorf("a.txt: %q, want checkpoint 1's", got)
	}
	if list, err := List(ctx, repo, session); err != nil || len(list) != 2 || list[0].ID != 2 {
		t.Errorf("List: %+v, %v; want 2 and 3", list, err)
	}
}
