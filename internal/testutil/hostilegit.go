package testutil

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
