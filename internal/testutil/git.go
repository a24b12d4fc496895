package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GitOut runs git in dir as a user would and returns its trimmed output.
// Without optional locks, git status does not write the refreshed index,
// whose bytes some tests compare.
func GitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Git is GitOut failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := GitOut(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// WriteFile writes content to name, a slash-separated path under dir,
// making its directories.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Context returns a context that ends when the test does or after
// timeout, whichever comes first: what a test's git commands run under.
func Context(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// TempDir is t.TempDir with symbolic links resolved, as git reports
// paths.
func TempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// NewRepo returns a repository, in a temporary directory with links
// resolved as git reports paths, on branch main with one commit of files,
// whose config names user as its committer (the test environment has no
// global config). It skips the test when git is not installed.
func NewRepo(t testing.TB, user string, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: these tests run the real git binary")
	}
	repo := TempDir(t)
	Git(t, repo, "init", "-q", "-b", "main")
	Git(t, repo, "config", "user.name", user)
	Git(t, repo, "config", "user.email", strings.ToLower(strings.ReplaceAll(user, " ", "."))+"@example.com")
	for name, content := range files {
		WriteFile(t, repo, name, content)
	}
	Git(t, repo, "add", "--all")
	Git(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	return repo
}
