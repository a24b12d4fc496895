package checkpoint

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// notStored fails the test when the object store holds the blob the
// file at name (under repo) would be: a skipped file must not be written
// there at all, not merely be left out of the tree.
func notStored(t *testing.T, repo, name string) {
	t.Helper()
	blob := gitT(t, repo, "hash-object", "--no-filters", name)
	if _, err := gitOut(repo, "cat-file", "-e", blob); err == nil {
		t.Errorf("%s (blob %s) is in the object store", name, blob)
	}
}

// TestSkipsBigUntracked: an untracked file over the limit is left out,
// never stored, and named with its size, in the checkpoint Take returns
// and in what List reads back from the commit; one at the limit, and a
// tracked file over it, are kept.
func TestSkipsBigUntracked(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"tracked.bin": "small at first\n"})
	ctx := testContext(t)
	writeFile(t, repo, "tracked.bin", strings.Repeat("t", 2000))
	writeFile(t, repo, "at-limit.txt", strings.Repeat("a", 1000))
	writeFile(t, repo, "dir/big.bin", strings.Repeat("b", 1001))
	opts := Options{MaxFileSize: 1000, MaxTotalSize: -1}

	cp, created, err := Take(ctx, repo, session, opts)
	if err != nil || !created {
		t.Fatalf("Take: %+v, %v, %v", cp, created, err)
	}
	want := []Skipped{{Path: "dir/big.bin", Size: 1001, Reason: OverFileLimit}}
	if !reflect.DeepEqual(cp.Skipped, want) || cp.SkippedMore != 0 {
		t.Errorf("Take's skipped: %+v (and %d more), want %+v", cp.Skipped, cp.SkippedMore, want)
	}
	if got, want := treeFiles(t, repo, cp.Commit), []string{"at-limit.txt", "tracked.bin"}; !slices.Equal(got, want) {
		t.Errorf("the checkpoint holds %q, want %q", got, want)
	}
	notStored(t, repo, "dir/big.bin")
	// Counted as changes: the tracked file and the one at the limit.
	if cp.Files != 2 {
		t.Errorf("Take's counts: %+v, want 2 files", cp)
	}

	list, err := List(ctx, repo, session)
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], cp) {
		t.Errorf("List: %+v, %v; want %+v", list, err, cp)
	}
	d, err := Diff(ctx, repo, session, cp.ID, 0)
	if err != nil || !reflect.DeepEqual(d.Skipped, want) {
		t.Errorf("Diff's skipped: %+v, %v; want %+v", d, err, want)
	}
}

// TestSkipsByDefault: with no bounds given, a file over
// DefaultMaxFileSize is skipped and one of it kept.
func TestSkipsByDefault(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	for name, size := range map[string]int64{"kept.bin": DefaultMaxFileSize, "big.bin": DefaultMaxFileSize + 1} {
		f, err := os.Create(filepath.Join(repo, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	cp, _, err := Take(testContext(t), repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Skipped{{Path: "big.bin", Size: DefaultMaxFileSize + 1, Reason: OverFileLimit}}
	if !reflect.DeepEqual(cp.Skipped, want) {
		t.Errorf("skipped %+v, want %+v", cp.Skipped, want)
	}
	if got := treeFiles(t, repo, cp.Commit); !slices.Equal(got, []string{"kept.bin"}) {
		t.Errorf("the checkpoint holds %q, want kept.bin", got)
	}
}

// TestTotalKeepsSmallestFirst: the untracked files go in smallest first
// (by path among equals) while their sum stays within the total; the
// rest are skipped for the total, those over the file limit for it, and
// tracked files count for neither.
func TestTotalKeepsSmallestFirst(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"tracked.txt": "x\n"})
	writeFile(t, repo, "tracked.txt", strings.Repeat("t", 5000))
	for name, size := range map[string]int{"a10": 10, "b40": 40, "c40": 40, "d30": 30, "e25": 25, "huge": 500} {
		writeFile(t, repo, name, strings.Repeat("x", size))
	}
	cp, _, err := Take(testContext(t), repo, session, Options{MaxFileSize: 100, MaxTotalSize: 80})
	if err != nil {
		t.Fatal(err)
	}
	// 10 + 25 + 30 = 65 fit; b40 would make 105; c40 too.
	want := []Skipped{
		{Path: "huge", Size: 500, Reason: OverFileLimit},
		{Path: "c40", Size: 40, Reason: OverTotal},
		{Path: "b40", Size: 40, Reason: OverTotal},
	}
	if !reflect.DeepEqual(cp.Skipped, want) {
		t.Errorf("skipped %+v, want %+v", cp.Skipped, want)
	}
	if got, want := treeFiles(t, repo, cp.Commit), []string{"a10", "d30", "e25", "tracked.txt"}; !slices.Equal(got, want) {
		t.Errorf("the checkpoint holds %q, want %q", got, want)
	}
	for _, name := range []string{"huge", "b40", "c40"} {
		notStored(t, repo, name)
	}
}

// TestSkippedListBounded: a checkpoint names at most maxListed skipped
// files, the biggest, and counts the rest; names that hold newlines,
// quotes, tabs, invalid UTF-8 or look like pathspec magic come back as
// they are.
func TestSkippedListBounded(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, nil)
	odd := []string{"new\nline", `say "hi"`, "tab\there", "bad\xffutf8", ":(exclude)x", "*"}
	for i := range maxListed + 20 {
		writeFile(t, repo, fmt.Sprintf("f%03d", i), strings.Repeat("x", 100+i))
	}
	for i, name := range odd {
		writeFile(t, repo, name, strings.Repeat("y", 1000+i))
	}
	ctx := testContext(t)
	cp, _, err := Take(ctx, repo, session, Options{MaxFileSize: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(cp.Skipped) != maxListed || cp.SkippedMore != 20+len(odd) {
		t.Fatalf("skipped %d named and %d more, want %d and %d", len(cp.Skipped), cp.SkippedMore, maxListed, 20+len(odd))
	}
	for i, name := range slices.Backward(odd) {
		if got := cp.Skipped[len(odd)-1-i]; got.Path != name || got.Size != int64(1000+i) {
			t.Errorf("skipped[%d] = %+v, want %q of %d bytes", len(odd)-1-i, got, name, 1000+i)
		}
	}
	if cp.Skipped[len(odd)].Path != fmt.Sprintf("f%03d", maxListed+19) {
		t.Errorf("the biggest plain file is not named first: %+v", cp.Skipped[len(odd)])
	}
	if files := treeFiles(t, repo, cp.Commit); len(files) != 0 {
		t.Errorf("the checkpoint holds %q", files)
	}
	list, err := List(ctx, repo, session)
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], cp) {
		t.Errorf("List gives back %+v, %v", list, err)
	}
}

// TestSkippedMakesACheckpoint: a tree as the last checkpoint has it, but
// with a file newly too big, makes a checkpoint that says so; the same
// files skipped again, whatever their sizes now, make none.
func TestSkippedMakesACheckpoint(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := testContext(t)
	opts := Options{MaxFileSize: 100}
	first, _, err := Take(ctx, repo, session, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "out.log", strings.Repeat("l", 200))
	second, created, err := Take(ctx, repo, session, opts)
	if err != nil || !created || second.ID != 2 || len(second.Skipped) != 1 {
		t.Fatalf("Take with out.log too big: %+v, %v, %v; want checkpoint 2 naming it", second, created, err)
	}
	if second.Files != 0 || gitT(t, repo, "rev-parse", second.Commit+"^{tree}") != gitT(t, repo, "rev-parse", first.Commit+"^{tree}") {
		t.Errorf("checkpoint 2 changed files: %+v", second)
	}
	writeFile(t, repo, "out.log", strings.Repeat("l", 300))
	again, created, err := Take(ctx, repo, session, opts)
	if err != nil || created || again.ID != 2 {
		t.Errorf("Take with out.log grown: %+v, %v, %v; want checkpoint 2 again", again, created, err)
	}
}

// TestRestoreLeavesSkipped: a file a checkpoint left out as too big is
// not in the one Restore takes first, so restoring neither removes it
// nor writes over it, and says so when the checkpoint restored has the
// file.
func TestRestoreLeavesSkipped(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := testContext(t)
	opts := Options{MaxFileSize: 100}
	writeFile(t, repo, "data.bin", "small then\n")
	cp, _, err := Take(ctx, repo, session, opts)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("d", 500)
	writeFile(t, repo, "data.bin", big)
	writeFile(t, repo, "dump.bin", big)
	writeFile(t, repo, "a.txt", "a later\n")
	saved, err := Restore(ctx, repo, session, cp.ID, opts)
	if err == nil || !strings.Contains(err.Error(), "data.bin") || !strings.Contains(err.Error(), "too big") {
		t.Errorf("Restore: %v; want an error naming data.bin, too big", err)
	}
	if len(saved.Skipped) != 2 {
		t.Errorf("the checkpoint taken first skipped %+v, want data.bin and dump.bin", saved.Skipped)
	}
	for name, want := range map[string]string{"a.txt": "a\n", "data.bin": big, "dump.bin": big} {
		if got := content(t, repo, name); got != want {
			t.Errorf("%s after the restore: %d bytes, want %d", name, len(got), len(want))
		}
	}
}

// TestDeleteLeavesNothingReachable: after Delete, no ref, no reflog (the
// repository logs every ref's updates) and nothing reachable from either
// names a checkpoint's commit, so git's garbage collection frees them.
func TestDeleteLeavesNothingReachable(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	gitT(t, repo, "config", "core.logAllRefUpdates", "always")
	ctx := testContext(t)
	var commits []string
	for i := range 3 {
		writeFile(t, repo, "a.txt", strings.Repeat("a\n", i+2))
		cp, _, err := Take(ctx, repo, session, Options{Keep: 2})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, cp.Commit)
	}
	if _, err := Restore(ctx, repo, session, 2, Options{Keep: 2}); err != nil {
		t.Fatal(err)
	}
	list, err := List(ctx, repo, session)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range list {
		commits = append(commits, cp.Commit)
	}
	logs := filepath.Join(repo, ".git", "logs", "refs", "agentmux")
	if len(filesUnder(t, logs)) == 0 {
		t.Fatal("the checkpoints' refs have no reflogs: the test proves nothing")
	}
	if err := Delete(ctx, repo, session); err != nil {
		t.Fatal(err)
	}
	if refs := gitT(t, repo, "for-each-ref", "refs/agentmux/"); refs != "" {
		t.Errorf("refs left: %s", refs)
	}
	reachable := gitT(t, repo, "rev-list", "--all", "--reflog")
	for _, c := range commits {
		if strings.Contains(reachable, c) {
			t.Errorf("checkpoint commit %s is still reachable", c)
		}
	}
	if left := filesUnder(t, logs); len(left) > 0 {
		t.Errorf("reflogs left: %q", left)
	}
}

// filesUnder lists the files under dir, none when it does not exist.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
