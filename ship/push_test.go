package ship

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// bareRemote makes a bare repository for a test to push to.
func bareRemote(t *testing.T) string {
	t.Helper()
	bare := testutil.TempDir(t)
	gitT(t, bare, "init", "-q", "--bare", "-b", "main")
	return bare
}

// TestPush: the branch goes where the remote's pushurl says, becomes the
// branch's upstream, and the page to open a pull request is derived from
// the remote's GitHub URL.
func TestPush(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	bare := bareRemote(t)
	gitT(t, repo, "remote", "add", "origin", "https://github.com/o/r.git")
	gitT(t, repo, "config", "remote.origin.pushurl", bare)
	wt := addWorktree(t, repo, "feature/x")
	tip := commitFile(t, wt, "a.txt", "a\n", "a")

	got, err := Push(testContext(t), wt, PushOptions{Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	want := Pushed{Remote: "origin", Branch: "feature/x", PullRequestURL: "https://github.com/o/r/compare/main...feature/x?expand=1"}
	if got != want {
		t.Errorf("Push: %+v, want %+v", got, want)
	}
	if rev(t, bare, "refs/heads/feature/x") != tip {
		t.Error("the remote does not have the branch's tip")
	}
	if up := gitT(t, wt, "rev-parse", "--abbrev-ref", "feature/x@{upstream}"); up != "origin/feature/x" {
		t.Errorf("upstream %q, want origin/feature/x", up)
	}
}

// TestPushNamedRemote: another remote than origin, on no forge: pushed,
// with no page.
func TestPushNamedRemote(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	bare := bareRemote(t)
	gitT(t, repo, "remote", "add", "backup", bare)
	got, err := Push(testContext(t), repo, PushOptions{Remote: "backup", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Pushed{Remote: "backup", Branch: "main"}); got != want {
		t.Errorf("Push: %+v, want %+v", got, want)
	}
	if rev(t, bare, "refs/heads/main") != rev(t, repo, "main") {
		t.Error("the remote does not have main")
	}
}

// TestPushPageURLFirst: the page comes from the remote's url when it is
// a forge's, else from its pushurl.
func TestPushPageURLFirst(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	gitT(t, repo, "remote", "add", "a", "/srv/git/r.git")
	gitT(t, repo, "config", "remote.a.pushurl", "git@codeberg.org:o/r.git")
	gitT(t, repo, "remote", "add", "b", "https://gitlab.com/g/r.git")
	gitT(t, repo, "config", "remote.b.pushurl", "git@github.com:o/r.git")
	ctx := testContext(t)
	if got, want := pullRequestURL(ctx, repo, "a", "feat", "main"), "https://codeberg.org/o/r/compare/main...feat"; got != want {
		t.Errorf("page of a: %q, want the pushurl's %q", got, want)
	}
	if got, want := pullRequestURL(ctx, repo, "b", "feat", "main"), "https://gitlab.com/g/r/-/merge_requests/new?merge_request%5Bsource_branch%5D=feat&merge_request%5Btarget_branch%5D=main"; got != want {
		t.Errorf("page of b: %q, want the url's %q", got, want)
	}
}

// TestPushNoRemote: a remote the repository lacks is named, with those it
// has.
func TestPushNoRemote(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	ctx := testContext(t)
	_, err := Push(ctx, repo, PushOptions{})
	testutil.ErrorKind(t, err, ErrNoRemote, `no remote "origin": it has none`)
	gitT(t, repo, "remote", "add", "upstream", bareRemote(t))
	_, err = Push(ctx, repo, PushOptions{Remote: "--mirror"})
	testutil.ErrorKind(t, err, ErrNoRemote, `no remote "--mirror"; it has upstream`)
}

// TestPushRejected: a remote branch with commits the local one lacks
// refuses the push.
func TestPushRejected(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	bare := bareRemote(t)
	gitT(t, repo, "remote", "add", "origin", bare)
	ctx := testContext(t)
	if _, err := Push(ctx, repo, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	other := testutil.TempDir(t)
	gitT(t, other, "clone", "-q", bare, ".")
	gitT(t, other, "-c", "user.name=O", "-c", "user.email=o@example.com", "commit", "-q", "--allow-empty", "-m", "theirs")
	gitT(t, other, "push", "-q", "origin", "main")
	theirs := rev(t, bare, "main")
	commitFile(t, repo, "mine.txt", "mine\n", "mine")

	_, err := Push(ctx, repo, PushOptions{})
	testutil.ErrorKind(t, err, ErrRejected, `remote "origin" refused branch "main"`)
	if rev(t, bare, "main") != theirs {
		t.Error("the remote's main moved")
	}
}

// TestPushRunsPrePushHook: the user's pre-push hook runs, and its
// refusal stops the push.
func TestPushRunsPrePushHook(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	bare := bareRemote(t)
	gitT(t, repo, "remote", "add", "origin", bare)
	hooks := t.TempDir()
	hook := "#!/bin/sh\necho 'pre-push: tests fail' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-push"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, repo, "config", "core.hooksPath", hooks)
	_, err := Push(testContext(t), repo, PushOptions{})
	if err == nil || !contains(err.Error(), `push branch "main" to "origin"`, "pre-push: tests fail") {
		t.Errorf("Push: %v, want the hook's refusal, naming the step", err)
	}
	if _, err := gitOut(bare, "rev-parse", "--verify", "--quiet", "refs/heads/main"); err == nil {
		t.Error("the remote got main")
	}
}

// TestPushDetached: a detached HEAD has no branch to push.
func TestPushDetached(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	gitT(t, repo, "remote", "add", "origin", bareRemote(t))
	gitT(t, repo, "checkout", "-q", "--detach")
	_, err := Push(testContext(t), repo, PushOptions{})
	testutil.ErrorKind(t, err, ErrNoBranch)
}

// contains reports whether s contains every one of subs.
func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
