package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MarkerScript writes an executable script that appends its arguments to
// a marker file, and returns both paths: a command a hostile repository's
// config names, whose running the marker shows (see NotRun).
func MarkerScript(t testing.TB) (script, marker string) {
	t.Helper()
	dir := t.TempDir()
	script, marker = filepath.Join(dir, "evil"), filepath.Join(dir, "ran")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, marker
}

// NotRun fails the test when marker exists, as something the repository
// named ran, and removes it for the next check.
func NotRun(t testing.TB, what, marker string) {
	t.Helper()
	b, err := os.ReadFile(marker)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("%s ran the repository's command: %q", what, b)
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
}

// MakePartialClone makes the repository at dir claim to be a partial
// clone of url whose committed file path is missing from the object store,
// so any git that needs that blob can only fetch it; an ssh git starts
// runs sshCommand. The caller then changes path in the tree so a diff
// needs the old blob.
func MakePartialClone(t testing.TB, dir, path, url, sshCommand string) {
	t.Helper()
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	blob := git("rev-parse", "HEAD:"+path)
	for _, kv := range [][2]string{
		{"core.repositoryformatversion", "1"},
		{"extensions.partialClone", "origin"},
		{"remote.origin.url", url},
		{"remote.origin.promisor", "true"},
		{"remote.origin.partialclonefilter", "blob:none"},
		{"core.sshCommand", sshCommand},
		{"protocol.allow", "always"},
		{"protocol.ext.allow", "always"},
	} {
		git("config", kv[0], kv[1])
	}
	if err := os.Remove(filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
}

// PromisorURL is a remote URL for MakePartialClone whose fetch would run a
// command: over "ssh" the repository's core.sshCommand, over "ext" the
// ext:: transport's own command, which touches marker.
func PromisorURL(transport, marker string) string {
	if transport == "ext" {
		// ext:: splits its command at spaces; "% " is a space kept.
		return "ext::sh -c touch% " + marker
	}
	return "ssh://example.invalid/x"
}

// NestedRepos are repositories inside a work tree, one of each kind a
// passive git could walk into, each configured as a hostile workspace
// could configure it: a clean and a smudge filter, a textconv
// and a file-system monitor naming the marker script, and every hook
// (in its hooks directory and through core.hooksPath) too. Each tracks
// f.txt under that filter and textconv.
type NestedRepos struct {
	// Top is the work tree that holds them.
	Top string
	// Submodule, Added and Loose are their paths, relative to Top: a
	// submodule (named in .gitmodules), a repository added with git add
	// (a gitlink .gitmodules does not name), and one that is in no index
	// at all (an untracked directory holding a repository).
	Submodule, Added, Loose string

	t     testing.TB
	stirs int
}

// nestedHooks are the hooks a nested repository names: any git that ran
// one inside it would show in the marker.
var nestedHooks = []string{
	"pre-commit", "post-commit", "post-checkout", "post-merge", "post-index-change",
	"reference-transaction", "fsmonitor-watchman", "pre-auto-gc", "post-rewrite",
}

// AddNestedRepos makes the three nested repositories in top and commits
// the submodule and the added one there, on its current branch, before
// any of them is made hostile: only what runs after it can touch the
// marker. top's index is left as that commit has it.
func AddNestedRepos(t testing.TB, top, script string) *NestedRepos {
	t.Helper()
	n := &NestedRepos{Top: top, Submodule: "sub", Added: "nested", Loose: "loose", t: t}
	src := TempDir(t)
	newPlainRepo(t, src)
	Git(t, top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, n.Submodule)
	newPlainRepo(t, filepath.Join(top, n.Added))
	Git(t, top, "add", n.Added)
	Git(t, top, "-c", "user.name=Nested", "-c", "user.email=nested@example.com", "commit", "-q", "-m", "nested repositories")
	newPlainRepo(t, filepath.Join(top, n.Loose))

	hooks := t.TempDir()
	for _, h := range nestedHooks {
		if err := os.Symlink(script, filepath.Join(hooks, h)); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range n.Paths() {
		dir := filepath.Join(top, p)
		for _, kv := range [][2]string{
			// No process filter: git would use it instead of clean, and
			// the script fails its handshake, which fails the git loudly.
			{"filter.evil.clean", script}, {"filter.evil.smudge", script},
			{"diff.evil.textconv", script}, {"diff.evil.command", script},
			{"core.fsmonitor", script}, {"core.hooksPath", hooks},
		} {
			Git(t, dir, "config", kv[0], kv[1])
		}
		own := Git(t, dir, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
		if err := os.MkdirAll(own, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, h := range nestedHooks {
			if err := os.Symlink(script, filepath.Join(own, h)); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
		}
	}
	return n
}

// newPlainRepo makes a repository at dir whose one commit holds f.txt
// and the attributes that put it under the evil filter and textconv.
func newPlainRepo(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "init", "-q")
	WriteFile(t, dir, ".gitattributes", "* filter=evil diff=evil\n")
	WriteFile(t, dir, "f.txt", "hello\n")
	Git(t, dir, "add", ".")
	Git(t, dir, "-c", "user.name=Nested", "-c", "user.email=nested@example.com", "commit", "-q", "-m", "f")
}

// Paths returns the three repositories' paths, relative to Top.
func (n *NestedRepos) Paths() []string { return []string{n.Submodule, n.Added, n.Loose} }

// Stir changes f.txt in each nested repository to other content of the
// same size, with a new modification time, so that a git comparing it
// with that repository's index would have to read it through the clean
// filter: a git that walks into one runs the marker. One the test has
// removed is left out.
func (n *NestedRepos) Stir() {
	n.t.Helper()
	n.stirs++
	content := []string{"hello\n", "jello\n"}[n.stirs%2]
	when := time.Now().Add(time.Duration(n.stirs) * time.Minute)
	for _, p := range n.Paths() {
		f := filepath.Join(n.Top, p, "f.txt")
		if _, err := os.Stat(filepath.Dir(f)); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			n.t.Fatal(err)
		}
		if err := os.Chtimes(f, when, when); err != nil {
			n.t.Fatal(err)
		}
	}
}
