package checkpoint

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestDiff: a checkpoint's change against the one before: its files, as
// the Changes view lists them, and its patch; a limit cuts the patch at
// the end of a line.
func TestDiff(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n", "old.txt": strings.Repeat("same line\n", 20), "gone.txt": "g\n"})
	ctx := testContext(t)
	first, _, err := Take(ctx, repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "a.txt", "a\nb\n")
	writeFile(t, repo, "new.txt", "n\n")
	writeFile(t, repo, "bin.dat", "\x00\x01\x02")
	removeFile(t, repo, "gone.txt")
	removeFile(t, repo, "old.txt")
	writeFile(t, repo, "renamed.txt", strings.Repeat("same line\n", 20))
	second, _, err := Take(ctx, repo, session, Options{})
	if err != nil {
		t.Fatal(err)
	}

	c, err := Diff(ctx, repo, session, second.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Checkpoint, second) || c.Parent != first.Commit || c.Truncated {
		t.Errorf("Diff: %+v, parent %s, truncated %v; want checkpoint %+v against %s", c.Checkpoint, c.Parent, c.Truncated, second, first.Commit)
	}
	want := map[string]changes.File{
		"a.txt":       {Path: "a.txt", Status: changes.Modified, Additions: 1},
		"new.txt":     {Path: "new.txt", Status: changes.Added, Additions: 1},
		"bin.dat":     {Path: "bin.dat", Status: changes.Added, Binary: true},
		"gone.txt":    {Path: "gone.txt", Status: changes.Deleted, Deletions: 1},
		"renamed.txt": {Path: "renamed.txt", OldPath: "old.txt", Status: changes.Renamed},
	}
	if len(c.Files) != len(want) {
		t.Errorf("Files: %+v, want %d", c.Files, len(want))
	}
	for _, f := range c.Files {
		if f != want[f.Path] {
			t.Errorf("file %+v, want %+v", f, want[f.Path])
		}
	}
	if second.Files != len(want) || second.Insertions != 2 || second.Deletions != 1 {
		t.Errorf("the checkpoint's counts: %+v, want the files' own", second)
	}
	for _, s := range []string{"diff --git a/a.txt b/a.txt", "+b\n", "rename from old.txt", "Binary files /dev/null and b/bin.dat differ"} {
		if !strings.Contains(c.Patch, s) {
			t.Errorf("the patch lacks %q:\n%s", s, c.Patch)
		}
	}

	cut, err := Diff(ctx, repo, session, second.ID, 60)
	if err != nil {
		t.Fatal(err)
	}
	if !cut.Truncated || len(cut.Patch) > 60 || !strings.HasSuffix(cut.Patch, "\n") || !strings.HasPrefix(c.Patch, cut.Patch) {
		t.Errorf("the patch cut at 60 bytes: %q, truncated %v", cut.Patch, cut.Truncated)
	}

	// The first is against the commit HEAD was on.
	c, err = Diff(ctx, repo, session, first.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if c.Parent != gitT(t, repo, "rev-parse", "HEAD") || len(c.Files) != 0 || c.Patch != "" {
		t.Errorf("Diff of the first, taken of a clean tree: %+v", c)
	}
	// No files goes out as an empty list, which a client can take the
	// length of, not null.
	if b, err := json.Marshal(c); err != nil || !strings.Contains(string(b), `"files":[]`) {
		t.Errorf("the first checkpoint's diff as JSON: %s, %v; want \"files\":[]", b, err)
	}
	_, err = Diff(ctx, repo, session, 3, 0)
	testutil.ErrorKind(t, err, ErrNotFound, "no checkpoint 3")
}
