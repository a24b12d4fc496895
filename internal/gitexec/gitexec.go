// Package gitexec runs the git binary the way agentmux runs it: with -C
// the directory, in the C locale (messages are told apart by their
// English text), with no terminal to prompt on, without the variables
// that would point it at another repository than -C names, without
// taking optional locks an agent's own git would then trip on, and in a
// process group of its own that is killed whole when the context ends.
//
// Every git Command runs is passive, or inert: a repository is the
// agent's to write, its .git/config included, and looking at it (a diff,
// a status, a worktree list, a branch or config read, rev-parse, and the
// worktree checkouts agentmux makes) must not run what that config names
// or reach anything beyond the machine. So every such git runs
//
//   - with no network: GIT_ALLOW_PROTOCOL names no real transport, so git
//     refuses ssh, http, git, file (whose remote.<name>.uploadpack is a
//     command) and every remote helper, ext:: included, whatever the
//     repository's protocol.* config allows; core.sshCommand, a proxy
//     command or a credential helper is never reached;
//   - with no lazy fetch: a partial clone's missing objects are not
//     fetched from its promisor remote (GIT_NO_LAZY_FETCH=1, honoured
//     since git 2.45 and by the security releases back to 2.39.4; on
//     older gits the fetch is started and refused as above: each of the
//     two stops it alone), so a command that needs one fails instead;
//   - without the file-system monitor (core.fsmonitor=false), which the
//     config may name as a hook to run;
//   - with no pager (--no-pager, GIT_PAGER=cat), no editor (GIT_EDITOR
//     and GIT_SEQUENCE_EDITOR ":") and no password prompt: GIT_ASKPASS
//     set but empty makes git skip core.askPass and SSH_ASKPASS, which is
//     removed too, and GIT_TERMINAL_PROMPT=0 leaves it no terminal.
//
// The caller's env cannot lift these: they are set after it. What each
// command may still run is its caller's business. A git that only looks
// at the tree (a diff, a status) must run none of the repository's hooks
// or filters either: its caller puts NeutralConfig's options before the
// subcommand, and a diff adds --no-ext-diff and --no-textconv. A
// checkout the user asked for, like worktree's git worktree add, runs
// the post-checkout hook and the checkout filters as git does.
//
// # Nested repositories
//
// A repository inside the work tree (a submodule, a repository someone
// added with git add, or one that merely sits in an untracked directory)
// has a config of its own, and NeutralConfig reads only the config of
// the repository it is given: a nested repository's filters, textconv
// and the rest are untouched by it. The -c options do reach a git
// started inside one (through GIT_CONFIG_PARAMETERS), so its hooks and
// file-system monitor stay off, but not its filters. And git starts
// one on its own: git status, git diff and git add run git status
// inside each populated gitlink to tell whether its files changed,
// which reads them through that repository's clean filter. So a passive
// git never walks into a nested repository. A status or a diff of the
// work tree takes --ignore-submodules=dirty: it compares the commit a
// gitlink records with the one checked out there, read from the nested
// repository's refs in git's own process, and starts nothing. Git add
// has no such option (diff.ignoreSubmodules does not reach it), so its
// caller excludes every repository Gitlinks and Untracked find with a
// pathspec. A nested repository is looked at only as a whole: by the
// commit its gitlink records, or by its presence.
//
// # Ownership
//
// Git refuses a repository that belongs to another user than the one it
// runs as ("detected dubious ownership"), unless safe.directory names it:
// the config and hooks of a repository someone else controls would
// otherwise run that someone's commands as us. A workspace bind-mounted
// from a host where it belongs to another uid is refused so. The user
// names one directory as theirs, the workspace, and the server passes it
// to Trust once, at start; from then on every git the package runs is
// told, with -c safe.directory on its command line, to trust that
// directory and, when it works in one, the worktree directly inside the
// worktrees directory, and nothing else. (A repository there that is no
// worktree is trusted too: the directory is agentmux's, inside the one
// the user named.) The user's git config is never written.
//
// Git compares safe.directory with the real path of the top of the work
// tree it works in (a linked worktree's own top: its checks do not look
// at the main one), so a symbolic link cannot carry the trust elsewhere,
// and a repository nested inside the workspace, or one the workspace is
// a subdirectory of, is still refused. Git reads safe.directory from
// protected configuration only, never from a repository's, and counts
// the command line as protected since 2.38; 2.35.2 to 2.37 read the
// user's and the system's config only, so they still refuse. When git
// refuses, the error is an *Error that is ErrUntrusted and says in words
// which directory, whose it is, and what to do.
//
// # Explicit actions
//
// Only an action the user asked for in so many words (a commit, a merge,
// a push) may reach a remote, use the user's credentials or run what the
// repository configures; such a git runs through Explicit, beside
// Command, and every other call stays inert. Explicit leaves out the
// network and lazy-fetch guards, so a push goes wherever the remote's
// pushurl says over whatever transport git allows, with the server
// environment's GIT_SSH_COMMAND (and GIT_SSH, GIT_PROXY_COMMAND,
// GIT_ALLOW_PROTOCOL) as an operator set them; its callers add no
// NeutralConfig, so hooks and filters run as they would for the user's
// own git. It keeps the rest: the C locale, the variables stripped that
// would point git elsewhere, no pager, no editor, no password prompt, no
// file-system monitor, the trust, and the kill of the whole group when
// the context ends. Its git starts a session of its own, without a
// controlling terminal, so ssh, which asks for a passphrase or a host key
// on /dev/tty rather than through git, fails instead of waiting for an
// answer nobody can give.
package gitexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/internal/procgroup"
)

var (
	// ErrNoGit means git is not on PATH.
	ErrNoGit = errors.New("git is not installed (not found on PATH)")
	// ErrUntrusted means git refused a repository that belongs to another
	// user and is not the trusted workspace or one of its worktrees; the
	// *Error that is it says which and what to do.
	ErrUntrusted = errors.New("git refuses a repository that belongs to another user")
	// ErrNotRepo means the directory is not inside a git work tree. It
	// is the one such error: changes, ship, checkpoint and worktree all
	// return it, so a caller asks one question whichever failed.
	ErrNotRepo = errors.New("not inside a git work tree")
)

// waitDelay is how long a git killed by its context may keep its output
// pipes open, through a child that left its process group, before Wait
// stops waiting for them.
const waitDelay = 5 * time.Second

// Command returns git -C dir args, set up as the package says; env entries
// (KEY=VALUE) are added to its environment. Run it with Run, or start it
// and read its output yourself, then Wait and pass the error to Check.
func Command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	// The guards last: exec keeps the last of two values, so env cannot
	// lift them.
	cmd := command(ctx, dir, args, slices.Concat(Env(), env, inertEnv))
	// A group of its own, killed whole: git runs hooks and other gits as
	// children, which killing git alone would leave running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// Explicit returns git -C dir args for an action the user asked for, set
// up as Command's but free to reach remotes, fetch a partial clone's
// missing objects and run the repository's hooks and filters; see the
// package doc. Run it with RunExplicit, or as Command's.
func Explicit(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := command(ctx, dir, args, slices.Concat(explicitBaseEnv(), env, explicitEnv))
	// A session is a group too, killed whole as Command's; and it has no
	// controlling terminal for ssh to prompt on.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return cmd
}

// command is git -C dir args with env, killed whole, group and all, when
// ctx ends; the caller makes the group.
func command(ctx context.Context, dir string, args, env []string) *exec.Cmd {
	// The trust after -C, where subcommand skips a caller's -c too.
	cmd := exec.CommandContext(ctx, "git", slices.Concat(inertOptions, []string{"-C", dir}, trustOptions(dir), args)...)
	cmd.Env = env
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process.Pid) }
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
	return run(ctx, Command(ctx, dir, env, args...), stdin)
}

// RunExplicit is RunEnv for an action the user asked for: git runs as
// Explicit sets it up.
func RunExplicit(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return run(ctx, Explicit(ctx, dir, env, args...), stdin)
}

// run runs cmd, a Command or an Explicit, with stdin, and returns its
// standard output, and an error as RunEnv says.
func run(ctx context.Context, cmd *exec.Cmd, stdin []byte) ([]byte, error) {
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

// Check turns what running cmd (a Command or an Explicit) returned into
// the package's errors; stderr is what it printed there.
func Check(ctx context.Context, cmd *exec.Cmd, err error, stderr string) error {
	name := "git " + subcommand(cmd.Args)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, exec.ErrNotFound):
		return ErrNoGit
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", name, context.Cause(ctx))
	case errors.As(err, &exitErr):
		e := &Error{Name: name, Code: exitErr.ExitCode(), Stderr: strings.TrimSpace(stderr), err: exitErr}
		e.refusal = refusal(e.Stderr)
		return e
	}
	return fmt.Errorf("%s: %w", name, err)
}

// subcommand returns what a Command runs, for messages: "diff",
// "worktree add"; the options before it, of the package and the
// caller's -c, are skipped.
func subcommand(args []string) string {
	rest := args[min(len(args), 1+len(inertOptions)+2):] // git, the options, -C dir
	for len(rest) >= 2 && rest[0] == "-c" {
		rest = rest[2:]
	}
	switch {
	case len(rest) == 0:
		return ""
	case rest[0] == "worktree" && len(rest) > 1:
		return rest[0] + " " + rest[1]
	}
	return rest[0]
}

// NeutralConfig returns the -c options that keep the configuration of
// the repository at dir from running commands of its own in a git that
// only looks at the tree, beyond what Command already stops: no hooks,
// and every filter the config names (the repository's, the user's or
// the system's) without its clean, smudge and process commands and not
// required, so git reads files as they are. Put them before the
// subcommand; git passes them on to the gits it starts, as the status
// git worktree remove runs. Read them for the directory the git will
// work in: a linked worktree can have config of its own.
//
// They do not turn off external diff drivers or textconv, which an
// empty value would not turn off either: git diff takes --no-ext-diff
// and --no-textconv, and git status runs neither.
func NeutralConfig(ctx context.Context, dir string) ([]string, error) {
	cfg := []string{"-c", "core.hooksPath=/dev/null"}
	out, err := Run(ctx, dir, "config", "--null", "--name-only", "--get-regexp", `^filter\.`)
	if err != nil {
		if ge := (*Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
			return cfg, nil // no filter configured
		}
		return nil, fmt.Errorf("read the filters in git's config: %w", err)
	}
	seen := map[string]bool{}
	for name := range strings.SplitSeq(strings.TrimRight(out, "\x00"), "\x00") {
		// filter.<driver>.<key>; the driver's name may hold dots.
		i, j := strings.Index(name, "."), strings.LastIndex(name, ".")
		if i < 0 || j <= i || seen[name[i+1:j]] {
			continue
		}
		driver := name[:j]
		seen[name[i+1:j]] = true
		cfg = append(cfg, "-c", driver+".clean=", "-c", driver+".smudge=", "-c", driver+".process=", "-c", driver+".required=false")
	}
	return cfg, nil
}

// Gitlinks returns the paths of the gitlinks in the index of the work
// tree whose top is top, relative to it with forward slashes: its
// submodules and the repositories added to it with git add, populated
// or not. env (a GIT_INDEX_FILE, say) and opts (NeutralConfig's) are
// given to the git it runs, which reads the index only.
func Gitlinks(ctx context.Context, top string, env, opts []string) ([]string, error) {
	out, err := RunEnv(ctx, top, env, nil, slices.Concat(opts, []string{"ls-files", "--stage", "-z"})...)
	if err != nil {
		return nil, err
	}
	var links []string
	// "mode id stage\tpath"; a conflicted path has an entry per stage.
	for rec := range strings.SplitSeq(string(out), "\x00") {
		if !strings.HasPrefix(rec, gitlinkMode+" ") {
			continue
		}
		if _, p, ok := strings.Cut(rec, "\t"); ok && (len(links) == 0 || links[len(links)-1] != p) {
			links = append(links, p)
		}
	}
	return links, nil
}

// gitlinkMode is the mode of a gitlink's index entry.
const gitlinkMode = "160000"

// Untracked returns the untracked files of the work tree whose top is
// top that no ignore rule covers, and the untracked directories that
// hold a repository of their own, which git lists as they are and never
// enters: both relative to top, with forward slashes, the directories
// without their trailing slash. env and opts are as for Gitlinks.
func Untracked(ctx context.Context, top string, env, opts []string) (files, repos []string, err error) {
	out, err := RunEnv(ctx, top, env, nil, slices.Concat(opts, []string{"ls-files", "--others", "--exclude-standard", "-z"})...)
	if err != nil {
		return nil, nil, err
	}
	for p := range strings.SplitSeq(string(out), "\x00") {
		switch {
		case p == "":
		case strings.HasSuffix(p, "/"):
			repos = append(repos, strings.TrimSuffix(p, "/"))
		default:
			files = append(files, p)
		}
	}
	return files, repos, nil
}

// Error is a git that ran and exited non-zero.
type Error struct {
	// Name is what ran, for messages: "git worktree add".
	Name string
	Code int
	// Stderr is what git said, trimmed.
	Stderr string
	err    *exec.ExitError
	// refusal, when git refused a repository for its owner, says so in
	// words; the error is then ErrUntrusted.
	refusal string
}

func (e *Error) Error() string {
	if e.refusal != "" {
		return e.refusal
	}
	if r := Reason(e.Stderr); r != "" {
		return e.Name + ": " + r
	}
	return e.Name + ": " + e.err.Error()
}

func (e *Error) Unwrap() error { return e.err }

// Is reports whether the error is target: ErrUntrusted when git refused
// the repository for its owner.
func (e *Error) Is(target error) bool { return target == ErrUntrusted && e.refusal != "" }

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

// inertOptions come before -C on every git's command line; see the
// package doc. -c outranks every config file git reads, and reaches the
// gits git starts (submodules, the lazy fetch) through
// GIT_CONFIG_PARAMETERS.
var inertOptions = []string{"--no-pager", "-c", "core.fsmonitor=false"}

// noProtocol is GIT_ALLOW_PROTOCOL's value: a list that names no
// transport git has, so it refuses them all. Git checks a remote
// helper's name against the list too, and remote.<name>.vcs can name any
// helper, even one with a '/' that git would run from the repository's
// directory: the name has none.
const noProtocol = "agentmux-no-network"

// inertEnv are the variables that keep every git passive; see the
// package doc.
var inertEnv = append([]string{
	"GIT_ALLOW_PROTOCOL=" + noProtocol,
	"GIT_NO_LAZY_FETCH=1",
}, explicitEnv...)

// explicitEnv are the guards an Explicit git keeps: nothing it starts
// may wait for a person.
var explicitEnv = []string{
	"GIT_PAGER=cat",
	"GIT_EDITOR=:",
	"GIT_SEQUENCE_EDITOR=:",
	// Set and empty, unlike unset: git then asks neither core.askPass nor
	// SSH_ASKPASS.
	"GIT_ASKPASS=",
	// Nobody could answer a prompt.
	"GIT_TERMINAL_PROMPT=0",
}

// strippedEnv are the variables that would point git at another
// repository, index or object store than the one -C names (the server may
// itself have been started by git, from a hook, with them set), give it
// configuration other than the repository's, or run a program of the
// server's environment's choosing (which inertEnv makes unreachable, but
// need not be passed on).
var strippedEnv = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_IMPLICIT_WORK_TREE",
	"GIT_PREFIX", "GIT_SHALLOW_FILE", "GIT_GRAFT_FILE", "GIT_CONFIG_PARAMETERS",
	"GIT_CONFIG_COUNT", "GIT_EXTERNAL_DIFF", "PAGER", "SSH_ASKPASS",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND",
	// Set below, or by inertEnv.
	"LC_ALL", "GIT_OPTIONAL_LOCKS", "GIT_ALLOW_PROTOCOL", "GIT_NO_LAZY_FETCH",
	"GIT_PAGER", "GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT",
}

// explicitPassed are the variables of strippedEnv an Explicit git still
// gets from the server's environment: how an operator lets a push reach
// its remote (a deploy key in GIT_SSH_COMMAND) or keeps it from some.
var explicitPassed = []string{"GIT_SSH", "GIT_SSH_COMMAND", "GIT_PROXY_COMMAND", "GIT_ALLOW_PROTOCOL"}

// Env is the server's environment as git should see it, inertEnv
// included.
func Env() []string {
	return append(baseEnv(nil), inertEnv...)
}

// explicitBaseEnv is the server's environment as an Explicit git sees it,
// explicitEnv included.
func explicitBaseEnv() []string {
	return append(baseEnv(explicitPassed), explicitEnv...)
}

// baseEnv is the server's environment without strippedEnv, but for the
// variables in keep, in the C locale and without optional locks.
func baseEnv(keep []string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(keep, k) {
			return false
		}
		return slices.Contains(strippedEnv, k) || strings.HasPrefix(k, "GIT_CONFIG_KEY_") || strings.HasPrefix(k, "GIT_CONFIG_VALUE_")
	})
	env = append(env,
		// Git's messages in English, which Says and Reason rely on.
		"LC_ALL=C",
		// Status and diff would otherwise take the index lock to refresh
		// it, and make the git of an agent working in the tree fail.
		"GIT_OPTIONAL_LOCKS=0",
	)
	return env
}

// trust is what Trust was given, real paths; nil trusts nothing.
type trust struct{ workspace, worktrees string }

var trusted atomic.Pointer[trust]

// Trust makes every git the package runs from now on trust, although it
// belongs to another user, the repository whose top is workspace and the
// linked worktrees each directly inside worktrees (the session worktrees
// agentmux makes, <workspace>/.worktrees/<name>); see the package doc.
// The server calls it once, at start, with the workspace the user named,
// which is the only way a directory comes to be trusted; an empty
// workspace trusts nothing again. Both are resolved now, as git compares
// real paths; worktrees need not exist yet.
func Trust(workspace, worktrees string) error {
	if workspace == "" {
		trusted.Store(nil)
		return nil
	}
	ws, err := realAbs(workspace)
	if err != nil {
		return fmt.Errorf("trust the workspace: %w", err)
	}
	wt, err := filepath.Abs(worktrees)
	if err != nil {
		return fmt.Errorf("trust the worktrees: %w", err)
	}
	if rest, ok := strings.CutPrefix(wt, filepath.Clean(workspace)+string(filepath.Separator)); ok {
		// The worktrees in the workspace, as they usually are: under its
		// real path, even when they do not exist yet.
		wt = filepath.Join(ws, rest)
	} else if real, err := realAbs(wt); err == nil {
		wt = real
	}
	trusted.Store(&trust{workspace: ws, worktrees: wt})
	return nil
}

// trustOptions are the -c safe.directory options for a git run in dir:
// the workspace, and the worktree dir is in when it is in one; none
// before Trust. A dir that does not resolve gets the workspace only: git
// will fail there anyway.
func trustOptions(dir string) []string {
	t := trusted.Load()
	if t == nil {
		return nil
	}
	opts := []string{"-c", "safe.directory=" + t.workspace}
	real, err := realAbs(dir)
	if err != nil {
		return opts
	}
	if rest, ok := strings.CutPrefix(real, t.worktrees+string(filepath.Separator)); ok {
		name, _, _ := strings.Cut(rest, string(filepath.Separator))
		opts = append(opts, "-c", "safe.directory="+filepath.Join(t.worktrees, name))
	}
	return opts
}

// realAbs is dir absolute, with every symbolic link resolved.
func realAbs(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// dubious is how git 2.35.2 and later begin refusing a repository for
// its owner; the directory follows, quoted.
const dubious = "detected dubious ownership in repository at '"

// refusal says in words why git refused a repository for its owner, and
// what to do, when stderr is that refusal; otherwise "".
func refusal(stderr string) string {
	_, rest, ok := strings.Cut(stderr, dubious)
	if !ok {
		return ""
	}
	dir, _, _ := strings.Cut(rest, "'\n")
	dir = strings.TrimSuffix(dir, "'")
	whose := "another user"
	if uid, ok := foreignOwner(dir); ok {
		whose = fmt.Sprintf("another user (uid %d; agentmux runs as uid %d)", uid, os.Geteuid())
	}
	trusts := "agentmux trusts only the workspace it was given and its worktrees"
	if t := trusted.Load(); t != nil {
		trusts = fmt.Sprintf("agentmux trusts only the workspace it was given, %s, and its worktrees", t.workspace)
	}
	return fmt.Sprintf("git refuses to work in %s: it belongs to %s. %s, and leaves your git config alone. "+
		"To use this repository, start agentmux with --workspace %s, or make it belong to uid %d, "+
		"or trust it yourself: git config --global --add safe.directory %s",
		dir, whose, trusts, dir, os.Geteuid(), dir)
}

// foreignOwner returns the owner of dir, or of its .git, when one of
// them is not the user the server runs as (git compares the effective
// uid): the owner git objects to.
func foreignOwner(dir string) (int, bool) {
	for _, p := range []string{dir, filepath.Join(dir, ".git")} {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
			return int(st.Uid), true
		}
	}
	return 0, false
}

// kindError is an error of a kind callers tell apart (a package's
// sentinel): its message is the sentence for people, and errors.Is finds
// both the kind and the cause (a git failure, the context's error).
type kindError struct {
	kind  error
	msg   string
	cause error // nil when the message says it all
}

// Kinded returns an error of kind whose message is format's, followed by
// cause's when cause is not nil.
func Kinded(kind, cause error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...), cause: cause}
}

func (e *kindError) Error() string {
	if e.cause == nil {
		return e.msg
	}
	return e.msg + ": " + e.cause.Error()
}

func (e *kindError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

// Step describes a failed git step. When git ran and refused, the error
// is of kind (if not nil), unless it refused the repository for its
// owner: that error, like git missing, is passed on as it is, since it
// says all there is; anything else (the context ending) is passed on with
// the step named. A nil err gives nil.
func Step(err error, kind error, format string, args ...any) error {
	var ge *Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoGit), errors.Is(err, ErrUntrusted):
		return err
	case errors.As(err, &ge) && kind != nil:
		return Kinded(kind, err, format, args...)
	}
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), err)
}
