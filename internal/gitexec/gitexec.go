// Package gitexec runs the git binary the way agentmux runs it: with -C
// the directory, in the C locale (messages are told apart by their
// English text), with no terminal to prompt on, without the variables
// that would point it at another repository than -C names, without
// taking optional locks an agent's own git would then trip on, and in a
// process group of its own that is killed whole when the context ends.
package gitexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrNoGit means git is not on PATH.
var ErrNoGit = errors.New("git is not installed (not found on PATH)")

// waitDelay is how long a git killed by its context may keep its output
// pipes open, through a child that left its process group, before Wait
// stops waiting for them.
const waitDelay = 5 * time.Second

// Command returns git -C dir args, set up as the package says; env entries
// (KEY=VALUE) are added to its environment. Run it with Run, or start it
// and read its output yourself, then Wait and pass the error to Check.
func Command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(Env(), env...)
	// A group of its own, killed whole: git runs hooks and other gits as
	// children, which killing git alone would leave running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				return os.ErrProcessDone
			}
			return err
		}
		return nil
	}
	cmd.WaitDelay = waitDelay
	return cmd
}

// Run runs git -C dir args and returns its standard output. A git that
// ran and failed gives an *Error; git missing, ErrNoGit; the context
// ending, the context's cause.
func Run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := RunEnv(ctx, dir, nil, nil, args...)
	return string(out), err
}

// RunEnv is Run with env added to git's environment and stdin as its
// standard input (nil for none).
func RunEnv(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	cmd := Command(ctx, dir, env, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := Check(ctx, cmd, cmd.Run(), stderr.String())
	if err != nil && !errors.As(err, new(*Error)) {
		return nil, err
	}
	return stdout.Bytes(), err
}

// Check turns what running cmd (a Command) returned into the package's
// errors; stderr is what it printed there.
func Check(ctx context.Context, cmd *exec.Cmd, err error, stderr string) error {
	name := "git " + cmd.Args[3]
	if cmd.Args[3] == "worktree" && len(cmd.Args) > 4 {
		name += " " + cmd.Args[4]
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound):
		return ErrNoGit
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", name, context.Cause(ctx))
	case errors.As(err, &exitErr):
		return &Error{Name: name, Code: exitErr.ExitCode(), Stderr: strings.TrimSpace(stderr), err: exitErr}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Error is a git that ran and exited non-zero.
type Error struct {
	// Name is what ran, for messages: "git worktree add".
	Name string
	Code int
	// Stderr is what git said, trimmed.
	Stderr string
	err    *exec.ExitError
}

func (e *Error) Error() string {
	if r := Reason(e.Stderr); r != "" {
		return e.Name + ": " + r
	}
	return e.Name + ": " + e.err.Error()
}

func (e *Error) Unwrap() error { return e.err }

// Says reports whether git's message contains one of the phrases; it is
// how a refusal is told from another, as git has no error codes.
func (e *Error) Says(phrases ...string) bool {
	return slices.ContainsFunc(phrases, func(p string) bool { return strings.Contains(e.Stderr, p) })
}

// Reason picks git's reason out of its standard error: the "fatal:" and
// "error:" lines without that prefix, else the last lines (git reports
// progress first and failure last, as when a hook fails), at most two,
// never hints or "Preparing worktree".
func Reason(stderr string) string {
	var lines, errs []string
	for l := range strings.Lines(stderr) {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "hint:") || strings.HasPrefix(l, "Preparing worktree") {
			continue
		}
		lines = append(lines, l)
		if r, ok := strings.CutPrefix(l, "fatal: "); ok {
			errs = append(errs, r)
		} else if r, ok := strings.CutPrefix(l, "error: "); ok {
			errs = append(errs, r)
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs[:min(len(errs), 2)], "; ")
	}
	return strings.Join(lines[max(len(lines)-2, 0):], "; ")
}

// strippedEnv are the variables that would point git at another
// repository, index or object store than the one -C names (the server may
// itself have been started by git, from a hook, with them set), or give
// it configuration other than the repository's.
var strippedEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_IMPLICIT_WORK_TREE",
	"GIT_PREFIX", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_CONFIG_PARAMETERS",
	"GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "GIT_PAGER", "PAGER",
	// Set below.
	"GIT_TERMINAL_PROMPT", "LC_ALL", "GIT_OPTIONAL_LOCKS",
}

// Env is the server's environment as git should see it.
func Env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(strippedEnv, k) || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
	})
	return append(env,
		// Nobody could answer a prompt.
		"GIT_TERMINAL_PROMPT=0",
		// Git's messages in English, which Says and Reason rely on.
		"LC_ALL=C",
		// Status and diff would otherwise take the index lock to refresh
		// it, and make the git of an agent working in the tree fail.
		"GIT_OPTIONAL_LOCKS=0",
	)
}
