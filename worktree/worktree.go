// Package worktree gives agent sessions git worktrees of their own, by
// running the git binary.
//
// A session that works on a branch gets its own directory, by convention
// <workspace>/.worktrees/<DirName(session name)>, checked out on that
// branch and sharing the workspace repository's objects, refs and config,
// so several agents can change code at once without touching each other's
// files. The package knows nothing of sessions or HTTP: it adds, inspects
// and removes worktrees, and when it cannot it says why in a sentence that
// names the branch or directory and quotes git, with an error that wraps
// one of the sentinels below so the caller can choose the answer.
//
// Every git runs as gitexec runs it: with -C, in the C locale (its
// messages are recognised by their English text), without the variables
// that would point it at another repository than -C names, in a process
// group of its own that is killed when the context ends, and inert: no
// network, no lazy fetch of a partial clone's missing objects, no
// file-system monitor, no pager, editor or prompt. So Add cannot check
// out a branch whose files a partial clone has not fetched yet; it fails
// and leaves nothing behind. Its checkout, which the user asked for,
// still runs the post-checkout hook and the checkout filters the
// repository configures, as git worktree add does. Looking at a worktree
// (Status, CheckClean, the check before Remove) runs none of the
// repository's hooks or filters: files are read as they are
// (gitexec.NeutralConfig).
//
// Nor does it run anything from a repository inside the worktree: a
// populated submodule, a repository added with git add, or one in an
// untracked directory, whose own config NeutralConfig does not reach
// (see gitexec, "Nested repositories"). No git is run inside one, so
// agentmux cannot tell what it holds that removing the worktree would
// delete: CheckClean and Remove without force refuse a worktree that
// holds one with ErrNestedRepo, naming it, as git worktree remove would
// refuse a populated submodule itself, before git's own status could
// walk into it. A submodule not checked out (as git worktree add leaves
// them) holds nothing and is no obstacle. Git 2.36 or later is needed
// (git worktree list -z).
package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// The kinds of error callers map to HTTP 400 and 409 answers. Every error
// returned wraps one of them where it applies; the error's message, not
// the sentinel's, is the one to show.
var (
	// ErrNoGit means git is not on PATH, so no worktree can be managed;
	// every function reports it rather than the failure it prevented.
	ErrNoGit = gitexec.ErrNoGit
	// ErrUntrusted means git refused the repository because it belongs to
	// another user and is not the workspace the server trusts, or one of
	// its worktrees (see gitexec.Trust); the error says which and what to
	// do, and is passed on as it is, like ErrNoGit.
	ErrUntrusted = gitexec.ErrUntrusted
	// ErrNoCommits means Add would have to branch from a HEAD that has no
	// commit yet: the user must make a first commit. It is not
	// gitexec.ErrNotRepo,
	// since the repository itself is fine.
	ErrNoCommits = errors.New("the repository has no commits yet")
	// ErrInvalidBranch means git would not accept the name as a branch
	// name (git check-ref-format --branch), or it is empty or starts with
	// '-', which git would read as an option.
	ErrInvalidBranch = errors.New("invalid branch name")
	// ErrBase means the base a new branch was to start at is no commit,
	// or was given for a branch that exists.
	ErrBase = errors.New("bad base for a new branch")
	// ErrCheckedOut means the branch is checked out in another worktree
	// (the main one included); git allows a branch in one worktree only.
	ErrCheckedOut = errors.New("branch already checked out")
	// ErrExists means Add's target directory already exists (or git still
	// has a worktree registered there).
	ErrExists = errors.New("directory already exists")
	// ErrDirty means Remove without force found uncommitted changes, which
	// removing the worktree would lose.
	ErrDirty = errors.New("worktree has uncommitted changes")
	// ErrNestedRepo means Remove without force found a repository inside
	// the worktree (a populated submodule, or another), whose changes
	// agentmux does not look at and which removing the worktree would
	// delete. It is ErrDirty too.
	ErrNestedRepo = fmt.Errorf("%w: it holds repositories of its own", ErrDirty)
	// ErrNotWorktree means Remove was given the main worktree, whose
	// removal would take the repository with it, or a directory git does
	// not know as a worktree.
	ErrNotWorktree = errors.New("not a linked worktree")
)

const (
	// rollbackTimeout bounds the git commands that undo a failed Add,
	// which run even when the caller's context is what ended Add.
	rollbackTimeout = 30 * time.Second
	// maxDirName is DirName's limit in bytes.
	maxDirName = 64
)

// Worktree is a linked worktree an agent session runs in.
type Worktree struct {
	// Path is absolute, as given to Add (symbolic links not resolved).
	Path   string
	Branch string
	// Created reports whether Add created the branch (from HEAD) rather
	// than checking out an existing one; only then may a failed session
	// start delete it again (DeleteBranch).
	Created bool
}

// DirName turns a session name into a directory name under .worktrees,
// so a name typed by a user can neither escape that directory nor need
// quoting: runs of anything but [A-Za-z0-9._-] become one '-', leading
// and trailing '-' and '.' are trimmed, the result is at most 64 bytes,
// and an empty result is "session". "feature/auth" gives "feature-auth",
// "claude 1" gives "claude-1" and "../x" gives "x".
func DirName(name string) string {
	var b strings.Builder
	inRun := false
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			inRun = false
			continue
		}
		if !inRun {
			b.WriteByte('-')
			inRun = true
		}
	}
	s := strings.Trim(b.String(), "-.")
	if len(s) > maxDirName {
		// Cutting can leave a trailing '-' or '.'; every byte is ASCII, so
		// no character is split.
		s = strings.TrimRight(s[:maxDirName], "-.")
	}
	if s == "" {
		return "session"
	}
	return s
}

// Add creates dir, which must not exist, as a linked worktree of the
// repository that contains repoDir, on branch: the local branch of that
// name if there is one, else a new branch from HEAD (ErrNoCommits when
// HEAD has no commit yet). Parent directories of dir are created as
// needed. A relative dir is taken from the current directory.
//
// Add is AddFrom with no base.
//
// On any failure, including the context ending, Add leaves nothing
// behind: not the directories it created, not the branch it created, not
// git's registration of the worktree. The repository's post-checkout hook
// runs, as for git worktree add, and its failure fails Add.
func Add(ctx context.Context, repoDir, dir, branch string) (Worktree, error) {
	return AddFrom(ctx, repoDir, dir, branch, "")
}

// AddFrom is Add with the commit a new branch starts at: base, any
// revision git resolves to a commit (a branch, a tag, a hash), or HEAD
// when empty. A base given for a branch that exists already is refused
// (ErrBase): the branch would not start there.
func AddFrom(ctx context.Context, repoDir, dir, branch, base string) (wt Worktree, err error) {
	p, err := planAdd(ctx, repoDir, dir, branch, base)
	if err != nil {
		return Worktree{}, err
	}
	var undo undoStack
	defer func() {
		if err != nil {
			err = undo.rollback(ctx, err)
		}
	}()
	if err := p.claimDir(&undo); err != nil {
		return Worktree{}, err
	}
	if !p.exists {
		if err := p.createBranch(ctx, &undo); err != nil {
			return Worktree{}, err
		}
	}
	if err := p.checkout(ctx, &undo); err != nil {
		return Worktree{}, err
	}
	return Worktree{Path: p.abs, Branch: p.branch, Created: !p.exists}, nil
}

// addPlan is an Add whose checks passed, before it changes anything.
type addPlan struct {
	// top is the repository's main work tree; abs is the worktree's
	// directory, absolute.
	top, abs string
	branch   string
	// exists reports whether the branch exists; when it does not, head is
	// the commit it is to be created at.
	exists bool
	head   string
}

// planAdd checks everything Add can check before it changes anything: the
// branch name, the repository, that the directory does not exist and that
// the branch is not checked out elsewhere.
func planAdd(ctx context.Context, repoDir, dir, branch, base string) (addPlan, error) {
	if err := checkBranchSyntax(branch); err != nil {
		return addPlan{}, err
	}
	top, err := toplevel(ctx, repoDir)
	if err != nil {
		return addPlan{}, err
	}
	if err := checkBranchName(ctx, top, branch); err != nil {
		return addPlan{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return addPlan{}, fmt.Errorf("worktree directory %s: %w", dir, err)
	}
	if _, err := os.Lstat(abs); err == nil {
		return addPlan{}, gitexec.Kinded(ErrExists, nil, "the worktree directory %s already exists", abs)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return addPlan{}, fmt.Errorf("worktree directory %s: %w", abs, err)
	}
	// Checked even for a branch that does not exist yet: a worktree can be
	// on an unborn branch, which creating it here would fill in.
	if err := checkNotCheckedOut(ctx, top, branch); err != nil {
		return addPlan{}, err
	}
	p := addPlan{top: top, abs: abs, branch: branch}
	if p.exists, err = branchExists(ctx, top, branch); err != nil {
		return addPlan{}, err
	}
	switch {
	case p.exists && base != "":
		return addPlan{}, gitexec.Kinded(ErrBase, nil, "branch %q exists already, so it cannot start at %q: give a new branch's name, or leave the base out", branch, base)
	case base != "":
		if p.head, err = baseCommit(ctx, top, base); err != nil {
			return addPlan{}, err
		}
	case !p.exists:
		if p.head, err = headCommit(ctx, top, branch); err != nil {
			return addPlan{}, err
		}
	}
	return p, nil
}

// undoStack holds the steps that take back what Add has done so far.
type undoStack []func(context.Context) error

// push adds a step that takes back the last thing done.
func (u *undoStack) push(step func(context.Context) error) { *u = append(*u, step) }

// rollback runs the steps, last to first, and returns err, with the
// rollback's own failures when there are any. The steps get a context of
// their own: ctx may be what ended Add.
func (u undoStack) rollback(ctx context.Context, err error) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	var errs []error
	for i := len(u) - 1; i >= 0; i-- {
		if e := u[i](rctx); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w (and rolling back failed: %v)", err, errors.Join(errs...))
	}
	return err
}

// claimDir makes the worktree's directory and the parents it lacks.
func (p addPlan) claimDir(undo *undoStack) error {
	made, err := mkdirParents(filepath.Dir(p.abs))
	undo.push(func(context.Context) error { return removeEmptyDirs(made) })
	if err != nil {
		return fmt.Errorf("create the parent directories of %s: %w", p.abs, err)
	}
	// Making dir here, rather than letting git make it, claims it: of two
	// Adds racing for one directory, exactly one gets past this point,
	// and the rollback removes only a directory this Add made. Git fills
	// an existing empty directory.
	if err := os.Mkdir(p.abs, 0o777); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return gitexec.Kinded(ErrExists, nil, "the worktree directory %s already exists", p.abs)
		}
		return fmt.Errorf("create the worktree directory: %w", err)
	}
	undo.push(func(context.Context) error { return removeIfPresent(p.abs) })
	return nil
}

// createBranch creates the branch at head. Creating it as a step of its
// own, rather than with git worktree add -b, tells for certain whether
// this Add made it, so the rollback deletes no one else's branch.
func (p addPlan) createBranch(ctx context.Context, undo *undoStack) error {
	if _, err := run(ctx, p.top, "branch", "--no-track", "--", p.branch, p.head); err != nil {
		return gitexec.Step(err, nil, "create branch %q", p.branch)
	}
	undo.push(func(ctx context.Context) error {
		// Deleted only while it still points where it was created.
		_, err := run(ctx, p.top, "update-ref", "-d", "refs/heads/"+p.branch, p.head)
		return gitexec.Step(err, nil, "delete the branch %q created for %s", p.branch, p.abs)
	})
	return nil
}

// checkout registers the worktree with git and checks the branch out in
// it, telling a branch checked out elsewhere and a directory taken
// meanwhile from other failures.
func (p addPlan) checkout(ctx context.Context, undo *undoStack) error {
	// Set before git runs: a git killed half way leaves a registration.
	undo.push(func(ctx context.Context) error { return unregister(ctx, p.top, p.abs) })
	// Without gitexec.NeutralConfig: this is the checkout the user asked
	// for, and it runs the repository's smudge filters and post-checkout
	// hook as git worktree add would.
	_, err := run(ctx, p.top, "worktree", "add", "--", p.abs, p.branch)
	if err == nil {
		return nil
	}
	var ge *gitexec.Error
	if errors.As(err, &ge) {
		switch {
		case ge.Says("already checked out at", "already used by worktree at"):
			return gitexec.Kinded(ErrCheckedOut, err, "branch %q is already checked out in another worktree", p.branch)
		case ge.Says("already exists", "already registered worktree"):
			return gitexec.Kinded(ErrExists, err, "the worktree directory %s already exists", p.abs)
		}
	}
	return gitexec.Step(err, nil, "add the worktree %s on branch %q", p.abs, p.branch)
}

// Status lists the uncommitted changes of the worktree that contains dir:
// modified, staged and untracked files, not ignored ones, with paths
// relative to the worktree's top and with forward slashes; nil when it is
// clean. An untracked directory is one entry, "dir/". Remove calls it to
// decide whether removing would lose work, so it overrides any
// configuration that would hide untracked files. It runs none of the
// repository's filters: a file is compared with the index as it is on
// disk. A submodule counts as changed when the commit checked out in it
// differs from the one recorded, never for what its files hold, which
// it does not look at (see the package doc).
func Status(ctx context.Context, dir string) ([]string, error) {
	cfg, err := gitexec.NeutralConfig(ctx, dir)
	if err != nil {
		return nil, gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", dir)
	}
	return status(ctx, dir, cfg)
}

// status is Status with cfg, gitexec.NeutralConfig's options for dir.
func status(ctx context.Context, dir string, cfg []string) ([]string, error) {
	args := append(slices.Clip(cfg), "status", "--porcelain=v1", "-z",
		"--untracked-files=normal", "--ignored=no", "--ignore-submodules=dirty")
	out, err := run(ctx, dir, args...)
	if err != nil {
		return nil, gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", dir)
	}
	return parseStatus(out), nil
}

// Remove removes the linked worktree whose top directory is dir, and with
// it every file there. Without force it refuses with ErrNestedRepo when
// it holds a repository of its own and with ErrDirty when Status lists
// anything; with force it removes the worktree anyway. It never
// deletes the branch. It refuses with ErrNotWorktree the main worktree and
// any directory git does not know as a worktree. A worktree whose
// directory is already gone is found through the repository containing
// dir's nearest existing parent (as for the .worktrees layout), its
// registration removed, and that is a success. A locked worktree is
// refused with git's reason.
func Remove(ctx context.Context, dir string, force bool) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("worktree directory %s: %w", dir, err)
	}
	_, statErr := os.Stat(abs)
	missing := errors.Is(statErr, fs.ErrNotExist)
	if statErr != nil && !missing {
		return fmt.Errorf("worktree directory %s: %w", abs, statErr)
	}

	// Where to ask git: dir itself, or its nearest existing parent.
	probe := abs
	if missing {
		probe = existingParent(abs)
	} else {
		top, err := run(ctx, abs, "rev-parse", "--show-toplevel")
		if err != nil {
			return gitexec.Step(err, ErrNotWorktree, "%s is not a git worktree", abs)
		}
		if top = strings.TrimSuffix(top, "\n"); !samePath(top, abs) {
			return gitexec.Kinded(ErrNotWorktree, nil, "%s is not the top directory of a worktree (it is inside %s)", abs, top)
		}
	}
	wts, err := list(ctx, probe)
	if err != nil {
		if missing {
			return gitexec.Step(err, ErrNotWorktree, "%s does not exist, and %s is not in a repository that could have it as a worktree", abs, probe)
		}
		return gitexec.Step(err, nil, "find the worktree %s", abs)
	}
	i := slices.IndexFunc(wts, func(w listEntry) bool { return samePath(w.path, abs) })
	switch {
	case i < 0 && missing:
		return gitexec.Kinded(ErrNotWorktree, nil, "%s does not exist, and the repository containing %s has no worktree there", abs, probe)
	case i < 0:
		return gitexec.Kinded(ErrNotWorktree, nil, "git does not know %s as a worktree of its repository", abs)
	case i == 0:
		return gitexec.Kinded(ErrNotWorktree, nil, "%s is the main worktree of its repository, not a linked worktree", abs)
	}

	// Without force git worktree remove checks the worktree with a status
	// of its own, which gets cfg too; with force nothing looks at files.
	var cfg []string
	if !missing && !force {
		// Read in the worktree: it can have config of its own.
		if cfg, err = gitexec.NeutralConfig(ctx, abs); err != nil {
			return gitexec.Step(err, nil, "read the config of the worktree %s", abs)
		}
		if err := checkClean(ctx, abs, cfg); err != nil {
			return err
		}
	}
	args := append(slices.Clip(cfg), "worktree", "remove")
	if force {
		args = append(args, "--force")
	}
	// From the main worktree (or a bare repository's directory, which is
	// what its entry names), since dir vanishes under git's feet.
	from := wts[0].path
	if _, err := os.Stat(from); err != nil {
		from = probe
	}
	if _, err := run(ctx, from, append(args, "--", abs)...); err != nil {
		var ge *gitexec.Error
		if errors.As(err, &ge) && ge.Says("contains modified or untracked files") {
			// Changed since Status looked.
			return gitexec.Kinded(ErrDirty, err, "the worktree at %s has uncommitted changes", abs)
		}
		return gitexec.Step(err, nil, "remove the worktree %s", abs)
	}
	return nil
}

// CheckClean returns ErrDirty, listing the changes, when the worktree at
// dir has uncommitted changes, and ErrNestedRepo, naming them, when it
// holds repositories of its own, so a caller can refuse before it does
// anything else. A directory already gone has nothing to lose: nil.
func CheckClean(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("worktree directory %s: %w", dir, err)
	}
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	cfg, err := gitexec.NeutralConfig(ctx, abs)
	if err != nil {
		return gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", abs)
	}
	return checkClean(ctx, abs, cfg)
}

// checkClean is CheckClean of the worktree at abs, with cfg,
// gitexec.NeutralConfig's options for it: the repositories it holds
// first, so that no status is run while one is there.
func checkClean(ctx context.Context, abs string, cfg []string) error {
	repos, err := nestedRepos(ctx, abs, cfg)
	if err != nil {
		return err
	}
	if len(repos) > 0 {
		return gitexec.Kinded(ErrNestedRepo, nil, "the worktree at %s holds repositories of its own, whose changes agentmux does not look at (git would run what their config names) and which removing it would delete: %s",
			abs, clip.List(repos))
	}
	paths, err := status(ctx, abs, cfg)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		return dirtyError(abs, paths)
	}
	return nil
}

// nestedRepos lists the repositories inside the worktree at abs that
// hold something: the gitlinks checked out there (a .git in the
// directory, as git worktree remove tells a populated submodule) and the
// untracked directories that are repositories.
func nestedRepos(ctx context.Context, abs string, cfg []string) ([]string, error) {
	links, err := gitexec.Gitlinks(ctx, abs, nil, cfg)
	if err != nil {
		return nil, gitexec.Step(err, gitexec.ErrNotRepo, "list the submodules of %s", abs)
	}
	_, repos, err := gitexec.Untracked(ctx, abs, nil, cfg)
	if err != nil {
		return nil, gitexec.Step(err, gitexec.ErrNotRepo, "list the untracked files of %s", abs)
	}
	var held []string
	for _, l := range links {
		if _, err := os.Lstat(filepath.Join(abs, filepath.FromSlash(l), ".git")); err == nil {
			held = append(held, l)
		}
	}
	return append(held, repos...), nil
}

// Exclude adds pattern to the repository's own ignore list
// (.git/info/exclude, shared by all its worktrees) unless a line already
// says it, so a directory of worktrees inside the main one does not show
// as untracked there. The project's .gitignore stays untouched.
func Exclude(ctx context.Context, repoDir, pattern string) error {
	out, err := run(ctx, repoDir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", repoDir)
	}
	file := filepath.Join(strings.TrimSuffix(out, "\n"), "info", "exclude")
	old, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", file, err)
	}
	for line := range strings.Lines(string(old)) {
		if strings.TrimSpace(line) == pattern {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o777); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(file), err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	add := pattern + "\n"
	if len(old) > 0 && old[len(old)-1] != '\n' {
		add = "\n" + add
	}
	_, err = f.WriteString(add)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// DeleteBranch deletes a branch Add created (git branch -D), for rolling
// back a session that could not start; callers use it only when
// Worktree.Created, and after Remove, since git refuses to delete a
// branch checked out in a worktree (ErrCheckedOut). Commits only that
// branch had are lost.
func DeleteBranch(ctx context.Context, repoDir, branch string) error {
	if err := checkBranchSyntax(branch); err != nil {
		return err
	}
	top, err := toplevel(ctx, repoDir)
	if err != nil {
		return err
	}
	if err := checkBranchName(ctx, top, branch); err != nil {
		return err
	}
	if _, err := run(ctx, top, "branch", "-D", "--", branch); err != nil {
		var ge *gitexec.Error
		if errors.As(err, &ge) && ge.Says("checked out at", "used by worktree at") {
			return gitexec.Kinded(ErrCheckedOut, err, "branch %q is checked out in a worktree and cannot be deleted", branch)
		}
		return gitexec.Step(err, nil, "delete branch %q", branch)
	}
	return nil
}

// checkBranchSyntax rejects, before any git runs, the names git would
// take for an option or for nothing.
func checkBranchSyntax(branch string) error {
	switch {
	case branch == "":
		return gitexec.Kinded(ErrInvalidBranch, nil, "the branch name is empty")
	case strings.HasPrefix(branch, "-"):
		return gitexec.Kinded(ErrInvalidBranch, nil, "%q is not a valid branch name: it starts with '-'", branch)
	}
	return nil
}

// checkBranchName asks git whether branch is a valid branch name. Git
// expands names like "@{-1}" to the branch they refer to; those are
// refused too, since the session would end up on another branch than
// the one it asked for.
func checkBranchName(ctx context.Context, top, branch string) error {
	out, err := run(ctx, top, "check-ref-format", "--branch", branch)
	if err != nil {
		return gitexec.Step(err, ErrInvalidBranch, "%q is not a valid branch name", branch)
	}
	if got := strings.TrimSuffix(out, "\n"); got != branch {
		return gitexec.Kinded(ErrInvalidBranch, nil, "%q is not a valid branch name: git reads it as %q", branch, got)
	}
	return nil
}

// CheckRepository returns nil when dir is inside a git work tree git
// will work in, else why not: gitexec.ErrNotRepo, ErrUntrusted, ErrNoGit, the
// context's end. Without one there are no worktrees to make.
func CheckRepository(ctx context.Context, dir string) error {
	_, err := toplevel(ctx, dir)
	return err
}

// toplevel returns the top directory of the work tree containing dir.
func toplevel(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", dir)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// branchExists reports whether the local branch exists.
func branchExists(ctx context.Context, top, branch string) (bool, error) {
	_, err := run(ctx, top, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	var ge *gitexec.Error
	if errors.As(err, &ge) && ge.Code == 1 {
		return false, nil
	}
	if err != nil {
		return false, gitexec.Step(err, nil, "look up branch %q", branch)
	}
	return true, nil
}

// Origin returns what the worktrees of the repository that holds dir
// branch off: the branch checked out there, or the commit when HEAD is
// detached. A session's changes are counted from where its branch left it.
func Origin(ctx context.Context, dir string) (string, error) {
	out, err := run(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err == nil {
		return strings.TrimSpace(out), nil
	}
	out, err = run(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return "", gitexec.Step(err, nil, "resolve HEAD of %s", dir)
	}
	return strings.TrimSpace(out), nil
}

// headCommit returns the commit HEAD names, to create branch from.
// baseCommit resolves base, the revision a new branch is to start at, to
// its commit, or returns ErrBase. A base that looks like an option is
// refused before git sees it.
func baseCommit(ctx context.Context, top, base string) (string, error) {
	if strings.HasPrefix(base, "-") || strings.ContainsAny(base, "\x00\n") {
		return "", gitexec.Kinded(ErrBase, nil, "base %q is not a revision", base)
	}
	out, err := run(ctx, top, "rev-parse", "--verify", "--quiet", "--end-of-options", base+"^{commit}")
	var ge *gitexec.Error
	if errors.As(err, &ge) && ge.Code == 1 {
		return "", gitexec.Kinded(ErrBase, nil, "base %q names no commit of the repository at %s", base, top)
	}
	if err != nil {
		return "", gitexec.Step(err, nil, "resolve base %q in %s", base, top)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

func headCommit(ctx context.Context, top, branch string) (string, error) {
	out, err := run(ctx, top, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	var ge *gitexec.Error
	if errors.As(err, &ge) && ge.Code == 1 {
		return "", gitexec.Kinded(ErrNoCommits, nil, "the repository at %s has no commits yet, so there is no HEAD to create branch %q from", top, branch)
	}
	if err != nil {
		return "", gitexec.Step(err, nil, "resolve HEAD of %s", top)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// checkNotCheckedOut returns ErrCheckedOut, naming the worktree, when
// branch is checked out in any worktree of the repository.
func checkNotCheckedOut(ctx context.Context, top, branch string) error {
	wts, err := list(ctx, top)
	if err != nil {
		return gitexec.Step(err, nil, "find where branch %q is checked out", branch)
	}
	for _, w := range wts {
		if w.branch != "refs/heads/"+branch {
			continue
		}
		if w.prunable {
			return gitexec.Kinded(ErrCheckedOut, nil, "branch %q is already checked out in the worktree at %s, whose directory is gone (removing that worktree frees the branch)", branch, w.path)
		}
		return gitexec.Kinded(ErrCheckedOut, nil, "branch %q is already checked out in the worktree at %s", branch, w.path)
	}
	return nil
}

// listEntry is one worktree of git worktree list --porcelain.
type listEntry struct {
	path string
	// branch is the full ref name, empty when HEAD is detached.
	branch   string
	prunable bool
}

// list returns the worktrees of the repository containing dir, the main
// one first.
func list(ctx context.Context, dir string) ([]listEntry, error) {
	out, err := run(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	// Attributes are NUL-terminated and an empty one ends a worktree.
	var wts []listEntry
	var cur *listEntry
	for f := range strings.SplitSeq(out, "\x00") {
		key, val, _ := strings.Cut(f, " ")
		switch {
		case key == "worktree":
			wts = append(wts, listEntry{path: val})
			cur = &wts[len(wts)-1]
		case cur == nil:
		case key == "branch":
			cur.branch = val
		case key == "prunable":
			cur.prunable = true
		case f == "":
			cur = nil
		}
	}
	return wts, nil
}

// unregister removes what is left of a worktree a failed Add started:
// its files, then git's registration of it, if git made one.
func unregister(ctx context.Context, top, abs string) error {
	if err := os.RemoveAll(abs); err != nil {
		return fmt.Errorf("remove %s: %w", abs, err)
	}
	wts, err := list(ctx, top)
	if err != nil {
		return gitexec.Step(err, nil, "find the worktree %s", abs)
	}
	if !slices.ContainsFunc(wts, func(w listEntry) bool { return samePath(w.path, abs) }) {
		return nil
	}
	// Forced twice: a git killed half way leaves the worktree locked
	// ("initializing"). The directory is gone, so only the registration
	// goes.
	_, err = run(ctx, top, "worktree", "remove", "--force", "--force", "--", abs)
	return gitexec.Step(err, nil, "unregister the worktree %s", abs)
}

// parseStatus returns the paths of git status --porcelain=v1 -z output.
func parseStatus(out string) []string {
	var paths []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		if len(f) < 4 {
			continue
		}
		paths = append(paths, f[3:])
		// A rename or copy is followed by the path it came from.
		if x, y := f[0], f[1]; x == 'R' || x == 'C' || y == 'R' || y == 'C' {
			i++
		}
	}
	return paths
}

// dirtyError is the ErrDirty of a worktree with these changed paths.
func dirtyError(abs string, paths []string) error {
	return gitexec.Kinded(ErrDirty, nil, "the worktree at %s has uncommitted changes: %s", abs, clip.List(paths))
}

// mkdirParents creates dir and its missing parents, and returns the ones
// it created, deepest last, so a rollback removes only those.
func mkdirParents(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	var made []string
	for _, d := range slices.Backward(missing) {
		// 0o777 leaves the mode to the umask, as for directories git makes.
		if err := os.Mkdir(d, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		} else if err == nil {
			made = append(made, d)
		}
	}
	return made, nil
}

// removeEmptyDirs removes the directories mkdirParents made, deepest
// first, leaving any that something else has put files in meanwhile.
func removeEmptyDirs(dirs []string) error {
	for _, d := range slices.Backward(dirs) {
		if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
				return nil
			}
			return fmt.Errorf("remove %s: %w", d, err)
		}
	}
	return nil
}

// removeIfPresent removes the directory Add made, all of it.
func removeIfPresent(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// existingParent returns the nearest parent of path that exists.
func existingParent(path string) string {
	d := filepath.Dir(path)
	for {
		if _, err := os.Stat(d); err == nil || filepath.Dir(d) == d {
			return d
		}
		d = filepath.Dir(d)
	}
}

// samePath reports whether a and b name the same place, comparing with
// symbolic links resolved, since git records resolved paths.
func samePath(a, b string) bool {
	return a == b || realPath(a) == realPath(b)
}

// realPath resolves symbolic links in path, in as much of it as exists.
func realPath(path string) string {
	rest := ""
	for p := filepath.Clean(path); ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Clean(path)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// run runs git in dir; see gitexec.
func run(ctx context.Context, dir string, args ...string) (string, error) {
	return gitexec.Run(ctx, dir, args...)
}
