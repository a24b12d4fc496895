package gitexec

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/testutil"
)

func TestMain(m *testing.M) {
	// The tests' gits, and the package's, read no user or system config.
	os.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	goleak.VerifyTestMain(m)
}

const testTimeout = 20 * time.Second

func testContext(t *testing.T) context.Context { return testutil.Context(t, testTimeout) }

// gitT runs git in dir as a user would, failing the test on error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// hostileRepo is a repository with a commit, and a script that appends
// its arguments to a marker file: a command the repository's config can
// name, whose running the marker shows.
func hostileRepo(t *testing.T) (dir, script, marker string) {
	t.Helper()
	dir = t.TempDir()
	gitT(t, dir, "init", "-q")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	script, marker = testutil.MarkerScript(t)
	return dir, script, marker
}

// TestNoNetwork: no transport is open to a git the package runs, not even
// when the repository allows them all and the caller's env tries to: not
// ssh with its configured command, not ext:: (any command), not a local
// remote whose upload-pack is a command of the config's choosing.
func TestNoNetwork(t *testing.T) {
	t.Parallel()
	for name, setup := range map[string]func(t *testing.T, dir, script, marker string) string{
		"ssh": func(t *testing.T, dir, script, _ string) string {
			gitT(t, dir, "config", "core.sshCommand", script)
			return "ssh://example.invalid/x"
		},
		"ext": func(t *testing.T, dir, _, marker string) string {
			// ext:: splits its command at spaces; "% " is a space kept.
			return "ext::sh -c touch% " + marker
		},
		"file": func(t *testing.T, dir, script, _ string) string {
			gitT(t, dir, "config", "remote.origin.uploadpack", script)
			return "file://" + dir
		},
		"path": func(t *testing.T, dir, script, _ string) string {
			gitT(t, dir, "config", "remote.origin.uploadpack", script)
			return dir
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, script, marker := hostileRepo(t)
			gitT(t, dir, "config", "remote.origin.url", setup(t, dir, script, marker))
			gitT(t, dir, "config", "protocol.allow", "always")
			gitT(t, dir, "config", "protocol.ext.allow", "always")

			_, err := Run(testContext(t), dir, "ls-remote", "origin")
			if ge := (*Error)(nil); !errors.As(err, &ge) || !ge.Says("not allowed") {
				t.Errorf("ls-remote: %v, want git's refusal of the transport", err)
			}
			testutil.NotRun(t, "ls-remote", marker)
			_, err = RunEnv(testContext(t), dir, []string{"GIT_ALLOW_PROTOCOL=ssh:ext:file"}, nil, "ls-remote", "origin")
			if err == nil {
				t.Error("ls-remote with GIT_ALLOW_PROTOCOL in env: no error")
			}
			testutil.NotRun(t, "ls-remote with GIT_ALLOW_PROTOCOL in env", marker)
		})
	}
}

// TestNoPrompt: a password git would ask for is asked of no program, not
// the config's core.askPass nor the environment's SSH_ASKPASS, and of no
// terminal: git fails at once.
func TestNoPrompt(t *testing.T) {
	// Not parallel: it sets the environment.
	dir, script, marker := hostileRepo(t)
	gitT(t, dir, "config", "core.askPass", script)
	t.Setenv("SSH_ASKPASS", script)
	t.Setenv("GIT_ASKPASS", script)
	// With no helper, git credential fill prompts for a user name.
	_, err := RunEnv(testContext(t), dir, nil, []byte("protocol=https\nhost=example.com\n\n"), "credential", "fill")
	if ge := (*Error)(nil); !errors.As(err, &ge) || !ge.Says("terminal prompts disabled") {
		t.Errorf("credential fill: %v, want a refusal to prompt", err)
	}
	testutil.NotRun(t, "credential fill", marker)
}

// TestNoPagerOrEditor: the pager and editor git would start are the
// harmless ones, whatever the config names.
func TestNoPagerOrEditor(t *testing.T) {
	t.Parallel()
	dir, script, _ := hostileRepo(t)
	for _, key := range []string{"core.pager", "core.editor"} {
		gitT(t, dir, "config", key, script)
	}
	for v, want := range map[string]string{"GIT_PAGER": "cat", "GIT_EDITOR": ":"} {
		if got, err := Run(testContext(t), dir, "var", v); err != nil || strings.TrimSpace(got) != want {
			t.Errorf("git var %s: %q, %v; want %q", v, got, err, want)
		}
	}
}

// TestErrorName: a failure is named by git's subcommand, past the
// caller's -c options.
func TestErrorName(t *testing.T) {
	t.Parallel()
	dir, _, _ := hostileRepo(t)
	_, err := Run(testContext(t), dir, "-c", "a.b=c", "worktree", "remove", "--", filepath.Join(dir, "nowhere"))
	if ge := (*Error)(nil); !errors.As(err, &ge) || ge.Name != "git worktree remove" {
		t.Errorf("error %#v, want one named git worktree remove", err)
	}
}

// TestNeutralConfig: with NeutralConfig's options, git reads a file as it
// is, running none of the filters the config names, a required one and
// one whose name holds dots included.
func TestNeutralConfig(t *testing.T) {
	t.Parallel()
	dir, script, marker := hostileRepo(t)
	if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("* filter=evil\n*.txt filter=a.b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("as it is\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, driver := range []string{"evil", "a.b"} {
		for _, key := range []string{"clean", "process"} {
			gitT(t, dir, "config", "filter."+driver+"."+key, script)
		}
		gitT(t, dir, "config", "filter."+driver+".required", "true")
	}
	want := gitT(t, dir, "hash-object", "--no-filters", "a.txt")

	ctx := testContext(t)
	cfg, err := NeutralConfig(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.txt", "b"} {
		got, err := Run(ctx, dir, append(cfg, "hash-object", name)...)
		if err != nil || strings.TrimSpace(got) != want {
			t.Errorf("hash-object %s: %q, %v; want %s", name, got, err, want)
		}
	}
	testutil.NotRun(t, "hash-object", marker)
}

// trustT trusts workspace and its .worktrees for the rest of the test.
func trustT(t *testing.T, workspace string) {
	t.Helper()
	if err := Trust(workspace, filepath.Join(workspace, ".worktrees")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Trust("", "") })
}

// TestTrust: a workspace that belongs to another user, its subdirectories
// and a worktree under its .worktrees that belongs to another user too
// are git's to work in once Trust names the workspace, through a symbolic
// link as well; a repository nested in it, one beside it and one in a
// look-alike directory are still refused, in words. Not parallel: Trust
// is the package's.
func TestTrust(t *testing.T) {
	root := t.TempDir()
	ws := filepath.Join(root, "ws")
	gitT(t, root, "init", "-q", ws)
	gitT(t, ws, "commit", "-q", "--allow-empty", "-m", "first")
	gitT(t, ws, "worktree", "add", "-q", "-b", "feat", filepath.Join(ws, ".worktrees", "feat"))
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(ws, "vendor", "lib")
	other := filepath.Join(root, "other")
	lookalike := filepath.Join(root, "ws.worktrees", "x")
	for _, d := range []string{nested, other, lookalike} {
		gitT(t, root, "init", "-q", d)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	testutil.GiveAway(t, ws)
	testutil.GiveAway(t, other)
	testutil.GiveAway(t, lookalike)

	ctx := testContext(t)
	top := func(dir string) (string, error) {
		out, err := Run(ctx, dir, "rev-parse", "--show-toplevel")
		return strings.TrimSpace(out), err
	}
	refused := func(dir, repo string) {
		t.Helper()
		_, err := top(dir)
		if !errors.Is(err, ErrUntrusted) {
			t.Fatalf("git in %s: %v; want ErrUntrusted", dir, err)
		}
		for _, want := range []string{
			"git refuses to work in " + repo + ": it belongs to another user (uid 65534",
			"--workspace " + repo,
			"git config --global --add safe.directory " + repo,
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("git in %s: %q\nwants %q", dir, err, want)
			}
		}
	}

	// Before Trust, git refuses the workspace as it would anyone's.
	refused(ws, ws)

	trustT(t, link)
	for dir, want := range map[string]string{
		ws:                                      ws,
		link:                                    ws,
		filepath.Join(ws, "sub", "deeper"):      ws,
		filepath.Join(ws, ".worktrees", "feat"): filepath.Join(ws, ".worktrees", "feat"),
		filepath.Join(link, ".worktrees", "feat"): filepath.Join(ws, ".worktrees", "feat"),
	} {
		if got, err := top(dir); err != nil || got != want {
			t.Errorf("git in %s: top %q, %v; want %s", dir, got, err, want)
		}
	}
	refused(nested, nested)
	refused(other, other)
	refused(lookalike, lookalike)
	if !strings.Contains(func() string { _, err := top(other); return err.Error() }(), "the workspace it was given, "+ws+",") {
		t.Error("the refusal does not name the trusted workspace")
	}
}

// identity is an author and committer for the package's own commits in
// tests, which read no user config.
var identity = []string{
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
	"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
}

// TestExplicitReachesRemote: an explicit git reaches a remote over a
// transport a passive one is refused, and the remote's pushurl is
// where it pushes.
func TestExplicitReachesRemote(t *testing.T) {
	t.Parallel()
	dir, _, _ := hostileRepo(t)
	bare := t.TempDir()
	gitT(t, bare, "init", "-q", "--bare")
	gitT(t, dir, "remote", "add", "origin", "https://example.invalid/o/r.git")
	gitT(t, dir, "config", "remote.origin.pushurl", bare)

	ctx := testContext(t)
	if _, err := Run(ctx, dir, "push", "origin", "HEAD:refs/heads/pushed"); err == nil {
		t.Fatal("a passive push went through")
	} else if ge := (*Error)(nil); !errors.As(err, &ge) || !ge.Says("not allowed") {
		t.Errorf("passive push: %v, want git's refusal of the transport", err)
	}
	if _, err := RunExplicit(ctx, dir, nil, nil, "push", "origin", "HEAD:refs/heads/pushed"); err != nil {
		t.Fatalf("explicit push: %v", err)
	}
	if got, want := gitT(t, bare, "rev-parse", "refs/heads/pushed"), gitT(t, dir, "rev-parse", "HEAD"); got != want {
		t.Errorf("the remote has %s, want %s", got, want)
	}
}

// TestExplicitRunsHooks: an explicit commit runs the repository's
// pre-commit hook, whose refusal fails it; the same commit made passive
// with NeutralConfig runs none.
func TestExplicitRunsHooks(t *testing.T) {
	t.Parallel()
	dir, script, marker := hostileRepo(t)
	gitT(t, dir, "config", "core.hooksPath", filepath.Dir(script))
	if err := os.Rename(script, filepath.Join(filepath.Dir(script), "pre-commit")); err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	cfg, err := NeutralConfig(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunEnv(ctx, dir, identity, nil, append(cfg, "commit", "-q", "--allow-empty", "-m", "passive")...); err != nil {
		t.Fatalf("passive commit: %v", err)
	}
	testutil.NotRun(t, "a passive commit", marker)

	_, err = RunExplicit(ctx, dir, identity, nil, "commit", "-q", "--allow-empty", "-m", "explicit")
	if ge := (*Error)(nil); !errors.As(err, &ge) || ge.Name != "git commit" {
		t.Errorf("explicit commit: %v, want the hook's refusal as a git commit *Error", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the explicit commit did not run the pre-commit hook: %v", err)
	}
}

// TestExplicitKeepsGuards: an explicit git still starts no pager or
// editor and asks no one for a password, whatever the config and the
// caller's env name.
func TestExplicitKeepsGuards(t *testing.T) {
	t.Parallel()
	dir, script, marker := hostileRepo(t)
	for _, key := range []string{"core.pager", "core.editor", "core.askPass"} {
		gitT(t, dir, "config", key, script)
	}
	ctx := testContext(t)
	lift := []string{"GIT_PAGER=" + script, "GIT_EDITOR=" + script, "GIT_ASKPASS=" + script, "GIT_TERMINAL_PROMPT=1"}
	for v, want := range map[string]string{"GIT_PAGER": "cat", "GIT_EDITOR": ":"} {
		got, err := RunExplicit(ctx, dir, lift, nil, "var", v)
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("git var %s: %q, %v; want %q", v, got, err, want)
		}
	}
	_, err := RunExplicit(ctx, dir, lift, []byte("protocol=https\nhost=example.com\n\n"), "credential", "fill")
	if ge := (*Error)(nil); !errors.As(err, &ge) || !ge.Says("terminal prompts disabled") {
		t.Errorf("credential fill: %v, want a refusal to prompt", err)
	}
	testutil.NotRun(t, "an explicit git", marker)
}

// TestExplicitKilledWhole: when the context ends, an explicit git's hook
// and what it started are killed with it, and the error is the context's.
func TestExplicitKilledWhole(t *testing.T) {
	t.Parallel()
	dir, _, _ := hostileRepo(t)
	hooks := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	hook := "#!/bin/sh\nsleep 600 &\necho $! > " + pidFile + "\nwait\n"
	if err := os.WriteFile(filepath.Join(hooks, "pre-commit"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, dir, "config", "core.hooksPath", hooks)

	ctx, cancel := context.WithCancelCause(testContext(t))
	stop := errors.New("the test stopped it")
	done := make(chan error, 1)
	go func() {
		_, err := RunExplicit(ctx, dir, identity, nil, "commit", "-q", "--allow-empty", "-m", "x")
		done <- err
	}()
	pid := testutil.ReadPID(t, testTimeout, pidFile)
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Errorf("RunExplicit: %v, want the context's cause", err)
	}
	testutil.Eventually(t, testTimeout, "the hook's sleep to be killed", func() bool { return testutil.ProcessGone(pid) })
}

// TestExplicitTrust: an explicit git trusts what Command's trusts, and
// nothing more: another user's workspace once Trust names it, not
// before. Not parallel: Trust is the package's.
func TestExplicitTrust(t *testing.T) {
	ws := t.TempDir()
	gitT(t, ws, "init", "-q")
	testutil.GiveAway(t, ws)
	ctx := testContext(t)
	if _, err := RunExplicit(ctx, ws, identity, nil, "commit", "-q", "--allow-empty", "-m", "x"); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("explicit commit in another user's repository: %v, want ErrUntrusted", err)
	}
	trustT(t, ws)
	if _, err := RunExplicit(ctx, ws, identity, nil, "commit", "-q", "--allow-empty", "-m", "x"); err != nil {
		t.Errorf("explicit commit in the trusted workspace: %v", err)
	}
}

// TestNestedRepositories: Gitlinks names a tree's submodule and the
// repository added to it, Untracked its untracked files and the
// untracked repository, whose files it does not list; neither runs
// anything from any of them, though each has its tracked file changed.
func TestNestedRepositories(t *testing.T) {
	t.Parallel()
	dir, script, marker := hostileRepo(t)
	nested := testutil.AddNestedRepos(t, dir, script)
	testutil.WriteFile(t, dir, "new dir/u.txt", "u\n")
	nested.Stir()
	ctx := testContext(t)
	cfg, err := NeutralConfig(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	links, err := Gitlinks(ctx, dir, nil, cfg)
	if err != nil || !slices.Equal(links, []string{nested.Added, nested.Submodule}) {
		t.Errorf("Gitlinks: %q, %v; want %q and %q", links, err, nested.Added, nested.Submodule)
	}
	files, repos, err := Untracked(ctx, dir, nil, cfg)
	if err != nil || !slices.Equal(files, []string{"new dir/u.txt"}) || !slices.Equal(repos, []string{nested.Loose}) {
		t.Errorf("Untracked: %q, %q, %v; want new dir/u.txt and %q", files, repos, err, nested.Loose)
	}
	testutil.NotRun(t, "ls-files", marker)
}
