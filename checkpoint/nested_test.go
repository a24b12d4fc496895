package checkpoint

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestNestedRepositoriesNeverEntered: a submodule, a repository added
// with git add and one in an untracked directory, each with a filter, a
// textconv, a file-system monitor and hooks of its own, and with its
// tracked file changed (same size, new time) before every step so that a
// git looking inside would have to run its clean filter: taking a
// checkpoint by hand and in the background, listing, comparing,
// restoring (and the checkpoint it takes first) and deleting run none of
// it. The checkpoint keeps the gitlinks as the index has them and
// nothing of the untracked repository.
func TestNestedRepositoriesNeverEntered(t *testing.T) {
	t.Parallel()
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	script, marker := testutil.MarkerScript(t)
	nested := testutil.AddNestedRepos(t, repo, script)
	links := gitT(t, repo, "ls-files", "--stage", nested.Submodule, nested.Added)
	ctx := testContext(t)
	step := func(what string, do func() error) {
		t.Helper()
		nested.Stir()
		err := do()
		testutil.NotRun(t, what, marker)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	writeFile(t, repo, "a.txt", "a changed\n")
	var cp Checkpoint
	step("Take", func() (err error) { cp, _, err = Take(ctx, repo, session, Options{}); return err })
	if got, want := treeFiles(t, repo, cp.Commit), []string{".gitmodules", "a.txt", nested.Added, nested.Submodule}; !slices.Equal(got, want) {
		t.Errorf("the checkpoint holds %q, want %q", got, want)
	}
	if got := gitT(t, repo, "ls-tree", cp.Commit, nested.Submodule, nested.Added); !sameGitlinks(got, links) {
		t.Errorf("the checkpoint's gitlinks:\n%s\nwant them as the index has them:\n%s", got, links)
	}
	step("List", func() error { _, err := List(ctx, repo, session); return err })
	step("Diff", func() error { _, err := Diff(ctx, repo, session, cp.ID, 0); return err })
	writeFile(t, repo, "a.txt", "a later\n")
	step("Restore", func() error { _, err := Restore(ctx, repo, session, cp.ID, Options{}); return err })
	if got := content(t, repo, "a.txt"); got != "a changed\n" {
		t.Errorf("a.txt restored as %q", got)
	}

	taken := make(chan Checkpoint, 1)
	a := NewAuto(Options{}, func(_, _ string, cp Checkpoint, _ time.Time) { taken <- cp }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	actx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		a.Run(actx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	writeFile(t, repo, "a.txt", "a at the turn's end\n")
	step("Auto", func() error {
		a.Request(session, repo)
		select {
		case <-taken:
			return nil
		case <-time.After(testTimeout):
			return context.DeadlineExceeded
		}
	})
	step("Delete", func() error { return Delete(ctx, repo, session) })
}

// sameGitlinks reports whether ls-tree's gitlink lines ("mode commit id\t
// path") and ls-files --stage's ("mode id stage\tpath") name the same
// ids at the same paths.
func sameGitlinks(tree, index string) bool {
	ids := func(s string, idField int) []string {
		var out []string
		for l := range strings.Lines(s) {
			f := strings.Fields(l)
			if len(f) < 4 {
				return nil
			}
			out = append(out, f[idField]+" "+f[len(f)-1])
		}
		return out
	}
	a, b := ids(tree, 2), ids(index, 1)
	return len(a) == 2 && slices.Equal(a, b)
}
