// Package ship owns the git actions that take a session's work onward:
// committing its tree, telling where its branch stands against its base,
// merging the branch into the base (merge, squash or rebase), bringing
// the base into the branch inside the worktree, and pushing the branch,
// with the forge page that opens a pull request for it.
//
// These are the user's explicit actions, so the gits that carry them out
// run as the user's own git would (gitexec.Explicit): the repository's
// hooks and filters run, and a push reaches its remote. What only reads
// state (where the branch stands, whether a tree is clean, which
// worktree has the base checked out) stays inert, as everywhere else,
// and never looks inside a submodule or another nested repository.
//
// A merge never leaves anything half-done. Its result is computed without
// a work tree (git merge-tree --write-tree, git commit-tree), so a
// conflict is found before anything moves and answered with a
// *ConflictError naming the files, the base as it was and no tree
// touched. Only then does the base move: by a fast-forward in the
// worktree that has it checked out, whose files follow as git merge
// would make them (refused with ErrBaseDirty, before anything moves, when
// that tree has uncommitted changes), or else by a compare-and-swap of
// its ref. Bringing the base into the branch is different: that merge
// runs in the session's worktree and leaves conflicts there, markers and
// all, for the agent to resolve.
//
// Every error names the step that failed, quotes git's reason and wraps
// one of the sentinels below where one applies, so the caller can choose
// its answer; the error's message, not the sentinel's, is the one to
// show. The package knows nothing of sessions or HTTP. Git 2.38 or later
// is needed (git merge-tree --write-tree).
package ship

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// The kinds of error callers map to their answers (mostly HTTP 409).
var (
	// ErrNoGit means git is not on PATH; passed on as gitexec says it.
	ErrNoGit = gitexec.ErrNoGit
	// ErrUntrusted means git refused the repository for its owner; the
	// error says which and what to do, and is passed on as it is.
	ErrUntrusted = gitexec.ErrUntrusted
	// ErrNoMessage means Commit was given an empty message.
	ErrNoMessage = errors.New("the commit message is empty")
	// ErrInvalidMessage means Commit was given a message with a control
	// or invisible character (see textrule.FirstNotText), or not UTF-8.
	ErrInvalidMessage = errors.New("the commit message holds characters a message may not")
	// ErrNothingToCommit means the tree has no change to commit.
	ErrNothingToCommit = errors.New("nothing to commit")
	// ErrNotWorktree means a merge or an update was asked of a tree that
	// is not a linked worktree: the workspace itself has no session
	// branch to bring anywhere.
	ErrNotWorktree = errors.New("not a linked worktree")
	// ErrNoBranch means the tree's HEAD is detached, so there is no branch
	// to merge, update or push.
	ErrNoBranch = errors.New("HEAD is not on a branch")
	// ErrNoBase means there is no base to compare with or merge into: none
	// was given, it is no valid branch name, it does not exist, or it is
	// the session's branch itself.
	ErrNoBase = errors.New("no base branch")
	// ErrInvalidMode means Merge was given a mode other than MergeCommit,
	// Squash and Rebase.
	ErrInvalidMode = errors.New("unknown merge mode")
	// ErrNothingToMerge means the branch has nothing the base lacks.
	ErrNothingToMerge = errors.New("nothing to merge")
	// ErrBaseDirty means the worktree that has the base checked out (the
	// workspace, usually) has uncommitted changes, or untracked files the
	// merge would overwrite, so the merge was refused before anything
	// moved.
	ErrBaseDirty = errors.New("the base's worktree has uncommitted changes")
	// ErrBaseMoved means the base branch moved, or was checked out
	// elsewhere, while the merge was being computed; nothing changed, and
	// trying again merges into where it is now.
	ErrBaseMoved = errors.New("the base branch moved during the merge")
	// ErrConflict means the merge conflicts; the error is a
	// *ConflictError, which names the files.
	ErrConflict = errors.New("merge conflict")
	// ErrDirty means UpdateFromBase found uncommitted changes in the
	// session's worktree, which a merge there would mix with its own.
	ErrDirty = errors.New("the worktree has uncommitted changes")
	// ErrNoRemote means Push was given a remote the repository does not
	// have.
	ErrNoRemote = errors.New("no such remote")
	// ErrRejected means the remote refused the push, as when the branch
	// there has commits the local one lacks.
	ErrRejected = errors.New("push rejected")
)

// ConflictError is a merge that conflicts; it is ErrConflict. Nothing was
// changed: not the base, not any tree.
type ConflictError struct {
	// Branch is merged into Base.
	Branch, Base string
	// Commit is, for a rebase, the branch's commit whose replay
	// conflicts; "" otherwise.
	Commit string
	// Files are the conflicted paths, relative to the tree's top, with
	// forward slashes.
	Files []string
}

// Error says what conflicts where, and that nothing changed.
func (e *ConflictError) Error() string {
	what := fmt.Sprintf("merging branch %q into %q", e.Branch, e.Base)
	if e.Commit != "" {
		what = fmt.Sprintf("replaying commit %s of branch %q onto %q", short(e.Commit), e.Branch, e.Base)
	}
	return fmt.Sprintf("%s conflicts in %s; nothing was changed", what, listed(e.Files))
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// tree is the work tree an action runs in.
type tree struct {
	// top is its top directory.
	top string
	// branch is the short name of the branch HEAD is on; "" when HEAD is
	// detached.
	branch string
}

// openTree finds the work tree that holds dir, and its branch.
func openTree(ctx context.Context, dir string) (tree, error) {
	out, err := run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return tree{}, gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", dir)
	}
	t := tree{top: strings.TrimSuffix(out, "\n")}
	out, err = run(ctx, t.top, "symbolic-ref", "--quiet", "--short", "HEAD")
	var ge *gitexec.Error
	switch {
	case errors.As(err, &ge) && ge.Code == 1: // detached
	case err != nil:
		return tree{}, gitexec.Step(err, nil, "read the branch of %s", t.top)
	default:
		t.branch = strings.TrimSuffix(out, "\n")
	}
	return t, nil
}

// needBranch returns ErrNoBranch when t's HEAD is detached.
func (t tree) needBranch() error {
	if t.branch == "" {
		return gitexec.Kinded(ErrNoBranch, nil, "HEAD of %s is detached, not on a branch", t.top)
	}
	return nil
}

// needLinked returns ErrNotWorktree unless t is a linked worktree, whose
// git directory is not the repository's common one.
func (t tree) needLinked(ctx context.Context) error {
	out, err := run(ctx, t.top, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
	if err != nil {
		return gitexec.Step(err, nil, "find the git directories of %s", t.top)
	}
	dirs := strings.Fields(out)
	if len(dirs) != 2 {
		return fmt.Errorf("find the git directories of %s: git rev-parse said %q", t.top, out)
	}
	if filepath.Clean(dirs[0]) == filepath.Clean(dirs[1]) {
		return gitexec.Kinded(ErrNotWorktree, nil, "%s is the repository's main worktree, not a session's linked worktree", t.top)
	}
	return nil
}

// base is a session's base, resolved.
type base struct {
	// name is as given: a branch, or a commit when the session branched
	// off a detached HEAD.
	name string
	// ref is refs/heads/<name>; "" when name is a commit.
	ref string
	// sha is the commit it is at.
	sha string
}

// resolveBase resolves the base name of the session whose tree is t:
// the local branch of that name, or with branchOnly false, a commit.
func resolveBase(ctx context.Context, t tree, name string, branchOnly bool) (base, error) {
	switch {
	case name == "":
		return base{}, gitexec.Kinded(ErrNoBase, nil, "the session has no base branch")
	case strings.HasPrefix(name, "-"):
		return base{}, gitexec.Kinded(ErrNoBase, nil, "%q is not a valid branch name: it starts with '-'", name)
	case name == t.branch:
		return base{}, gitexec.Kinded(ErrNoBase, nil, "branch %q is its own base", name)
	}
	if out, err := run(ctx, t.top, "check-ref-format", "--branch", name); err == nil && strings.TrimSuffix(out, "\n") == name {
		sha, err := run(ctx, t.top, "rev-parse", "--verify", "--quiet", "refs/heads/"+name+"^{commit}")
		if err == nil {
			return base{name: name, ref: "refs/heads/" + name, sha: strings.TrimSuffix(sha, "\n")}, nil
		}
		if ge := (*gitexec.Error)(nil); !errors.As(err, &ge) || ge.Code != 1 {
			return base{}, gitexec.Step(err, nil, "look up the base branch %q", name)
		}
	}
	if !branchOnly && isHex(name) {
		sha, err := run(ctx, t.top, "rev-parse", "--verify", "--quiet", name+"^{commit}")
		if err == nil {
			return base{name: name, sha: strings.TrimSuffix(sha, "\n")}, nil
		}
	}
	return base{}, gitexec.Kinded(ErrNoBase, nil, "the base branch %q does not exist", name)
}

// isHex reports whether s could be a full commit id.
func isHex(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') }) < 0
}

// revParse returns the commit rev names in the tree at dir.
func revParse(ctx context.Context, dir, rev string) (string, error) {
	out, err := run(ctx, dir, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return "", gitexec.Step(err, nil, "resolve %s", rev)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// isAncestor reports whether commit a is an ancestor of commit b (or b).
func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := run(ctx, dir, "merge-base", "--is-ancestor", a, b)
	if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
		return false, nil
	}
	if err != nil {
		return false, gitexec.Step(err, nil, "tell whether %s is an ancestor of %s", short(a), short(b))
	}
	return true, nil
}

// changedPaths lists the files of the tree at dir that differ from its
// HEAD or index, and with untracked, its untracked files too (not
// ignored ones). It runs none of the repository's hooks or filters: a
// file is compared as it is on disk. Nor does it run any git inside a
// submodule, whose own filters those are not: a submodule counts as
// changed when the commit checked out there moved, never for its files
// (see gitexec, "Nested repositories").
func changedPaths(ctx context.Context, dir string, untracked bool) ([]string, error) {
	cfg, err := gitexec.NeutralConfig(ctx, dir)
	if err != nil {
		return nil, gitexec.Step(err, nil, "read the config of %s", dir)
	}
	mode := "--untracked-files=no"
	if untracked {
		mode = "--untracked-files=normal"
	}
	out, err := run(ctx, dir, append(cfg, "status", "--porcelain=v1", "-z", mode, "--ignored=no", "--ignore-submodules=dirty")...)
	if err != nil {
		return nil, gitexec.Step(err, nil, "look for uncommitted changes in %s", dir)
	}
	return parseStatus(out), nil
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

// listEntry is one worktree of git worktree list --porcelain.
type listEntry struct {
	path string
	// branch is the full ref name, "" when HEAD is detached.
	branch string
}

// checkedOut returns the worktree of the repository at dir that has ref
// checked out, if one does and its directory is there.
func checkedOut(ctx context.Context, dir, ref string) (string, bool, error) {
	out, err := run(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", false, gitexec.Step(err, nil, "find where %s is checked out", strings.TrimPrefix(ref, "refs/heads/"))
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
		case f == "":
			cur = nil
		}
	}
	for _, w := range wts {
		if w.branch != ref {
			continue
		}
		// A worktree whose directory is gone has no files to follow.
		if _, err := os.Stat(w.path); err == nil {
			return w.path, true, nil
		}
	}
	return "", false, nil
}

// short is a commit id cut for messages.
func short(sha string) string { return sha[:min(len(sha), 12)] }

// listed is paths joined for a message (clip.List), or says there are none.
func listed(paths []string) string {
	if len(paths) == 0 {
		return "no file git named"
	}
	return clip.List(paths)
}

// run runs a passive git in dir; see gitexec.
func run(ctx context.Context, dir string, args ...string) (string, error) {
	return gitexec.Run(ctx, dir, args...)
}

// explicit runs git in dir as the user's own action, with env added and
// stdin as its input; see gitexec.Explicit.
func explicit(ctx context.Context, dir string, env []string, stdin []byte, args ...string) (string, error) {
	out, err := gitexec.RunExplicit(ctx, dir, env, stdin, args...)
	return string(out), err
}

// unique returns s without empty strings and repeats, in order.
func unique(s []string) []string {
	var out []string
	seen := make(map[string]bool, len(s))
	for _, v := range s {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
