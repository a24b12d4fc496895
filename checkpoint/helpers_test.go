package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
)

// testTimeout bounds each test's git commands.
const testTimeout = 30 * time.Second

// session is a session id as the server makes them.
const session = "0b7e2f9c-3d5a-4c1e-9f00-6a2b8c4d1e7f"

func testContext(t *testing.T) context.Context { return testutil.Context(t, testTimeout) }

func removeFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

// content returns the file's content, or "<missing>".
func content(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
	if errors.Is(err, os.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// state is what a checkpoint must not touch: HEAD, the index (its
// entries and its bytes), the stash, and what git status says.
type state struct {
	head, entries, stash, status string
	index                        []byte
}

func stateOf(t *testing.T, repo string) state {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(gitT(t, repo, "rev-parse", "--path-format=absolute", "--git-dir"), "index"))
	if err != nil {
		t.Fatal(err)
	}
	return state{
		head:    gitT(t, repo, "rev-parse", "HEAD"),
		entries: gitT(t, repo, "ls-files", "--stage"),
		stash:   gitT(t, repo, "stash", "list", "--format=%H"),
		status:  gitT(t, repo, "status", "--porcelain", "--ignored"),
		index:   index,
	}
}

func (s state) same(o state) bool {
	return s.head == o.head && s.entries == o.entries && s.stash == o.stash && s.status == o.status && slices.Equal(s.index, o.index)
}

// treeFiles lists the files of commit.
func treeFiles(t *testing.T, repo, commit string) []string {
	t.Helper()
	return strings.Fields(gitT(t, repo, "ls-tree", "-r", "--name-only", commit))
}

func ids(cps []Checkpoint) []int {
	out := make([]int, len(cps))
	for i, c := range cps {
		out[i] = c.ID
	}
	return out
}

// newRepo returns a repository on main whose one commit holds files,
// with its own user in its config.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	return testutil.NewRepo(t, "Checkpoint Test", files)
}

var (
	gitOut    = testutil.GitOut
	gitT      = testutil.Git
	writeFile = testutil.WriteFile
)
