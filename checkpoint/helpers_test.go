package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testTimeout bounds each test's git commands.
const testTimeout = 30 * time.Second

// session is a session id as the server makes them.
const session = "0b7e2f9c-3d5a-4c1e-9f00-6a2b8c4d1e7f"

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// gitOut runs git in dir as a user would and returns its trimmed output.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	// Without optional locks, git status does not write the refreshed
	// index, whose bytes the tests compare.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
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

// newRepo returns a repository on main whose one commit holds files,
// with its own user in its config.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: the checkpoint tests run the real git binary")
	}
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "init", "-q", "-b", "main")
	gitT(t, repo, "config", "user.name", "Checkpoint Test")
	gitT(t, repo, "config", "user.email", "checkpoint@example.com")
	for name, content := range files {
		writeFile(t, repo, name, content)
	}
	gitT(t, repo, "add", "--all")
	gitT(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	return repo
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

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

func assertKind(t *testing.T, err, kind error, mentions ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want one wrapping %v", err, kind)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

func ids(cps []Checkpoint) []int {
	out := make([]int, len(cps))
	for i, c := range cps {
		out[i] = c.ID
	}
	return out
}
