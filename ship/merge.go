package ship

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// Mode is how Merge brings a branch into its base.
type Mode string

// The modes of Merge, as a forge offers them.
const (
	// MergeCommit makes a merge commit on the base whose parents are the
	// base and the branch.
	MergeCommit Mode = "merge"
	// Squash makes one commit on the base with all the branch's changes.
	Squash Mode = "squash"
	// Rebase replays the branch's commits onto the base one by one,
	// keeping their authors and messages, and fast-forwards the base to
	// the last. As git rebase does, it leaves out the branch's merge
	// commits (and changes only they made), keeps commits that were
	// directly on the base as they are, and drops those whose change the
	// base has already.
	Rebase Mode = "rebase"
)

// maxSquashSubjects is how many commit subjects a squash's proposed
// message lists.
const maxSquashSubjects = 50

// MergeOptions are how Merge merges. The zero value makes a merge commit
// with git's usual message.
type MergeOptions struct {
	// Mode is how; "" is MergeCommit.
	Mode Mode
	// Message is the merge or squash commit's message; "" proposes one. A
	// rebase keeps each commit's own and ignores it.
	Message string
}

// Merged is what Merge did.
type Merged struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Mode   Mode   `json:"mode"`
	// SHA is the commit at the tip of the base now, Previous the one it
	// was at.
	SHA      string `json:"sha"`
	Previous string `json:"previous"`
	// Tip is the branch's commit that was merged: after a squash or a
	// rebase the base has copies of its commits, not them (see Mark).
	Tip string `json:"tip"`
	// Checkout is the worktree that has the base checked out (the
	// workspace, usually), whose files followed the merge; "" when none
	// has.
	Checkout string `json:"checkout,omitempty"`
}

// Merge brings the branch of the session's worktree that holds dir into
// its base, the local branch baseName, as opts say, and answers where the
// base is now. The result is computed without touching any tree; then
// the base moves. When a worktree has the base checked out, it is
// fast-forwarded there with git merge --ff-only, so its files follow and
// its hooks run; it must have no uncommitted changes (ErrBaseDirty,
// checked before anything moves). Otherwise the base's ref is moved only
// if it is still where the merge began (ErrBaseMoved if not).
//
// A merge that conflicts changes nothing and gives a *ConflictError. A
// branch with nothing the base lacks gives ErrNothingToMerge; a tree that
// is not a linked worktree, ErrNotWorktree; a detached HEAD, ErrNoBranch;
// a base that is no local branch, ErrNoBase. The session's branch and
// worktree are left as they were: after a rebase the branch still holds
// the original commits, which the base now has copies of.
func Merge(ctx context.Context, dir, baseName string, opts MergeOptions) (Merged, error) {
	mode := opts.Mode
	switch mode {
	case "":
		mode = MergeCommit
	case MergeCommit, Squash, Rebase:
	default:
		return Merged{}, gitexec.Kinded(ErrInvalidMode, nil, "merge mode %q is none of merge, squash and rebase", opts.Mode)
	}
	t, err := openTree(ctx, dir)
	if err != nil {
		return Merged{}, err
	}
	if err := t.needBranch(); err != nil {
		return Merged{}, err
	}
	if err := t.needLinked(ctx); err != nil {
		return Merged{}, err
	}
	b, err := resolveBase(ctx, t, baseName, true)
	if err != nil {
		return Merged{}, err
	}
	m := &merge{t: t, b: b, opts: opts}
	if m.tip, err = revParse(ctx, t.top, "refs/heads/"+t.branch); err != nil {
		return Merged{}, err
	}
	// Refused first, before the work of computing the result.
	if checkout, ok, err := checkedOut(ctx, t.top, b.ref); err != nil {
		return Merged{}, err
	} else if ok {
		if err := checkBaseClean(ctx, checkout, b); err != nil {
			return Merged{}, err
		}
	}
	if _, ahead, err := aheadBehind(ctx, t.top, b.sha, m.tip); err != nil {
		return Merged{}, err
	} else if ahead == 0 {
		return Merged{}, gitexec.Kinded(ErrNothingToMerge, nil, "branch %q has no commits that %q lacks", t.branch, b.name)
	}
	var next string
	switch mode {
	case MergeCommit:
		next, err = m.mergeCommit(ctx)
	case Squash:
		next, err = m.squash(ctx)
	case Rebase:
		next, err = m.rebase(ctx)
	}
	if err != nil {
		return Merged{}, err
	}
	checkout, err := m.moveBase(ctx, next, fmt.Sprintf("agentmux: %s branch %s", mode, t.branch))
	if err != nil {
		return Merged{}, err
	}
	return Merged{Branch: t.branch, Base: b.name, Mode: mode, SHA: next, Previous: b.sha, Tip: m.tip, Checkout: checkout}, nil
}

// merge is a Merge whose checks passed.
type merge struct {
	t    tree
	b    base
	opts MergeOptions
	// tip is the commit the session's branch is at.
	tip string
}

// mergeCommit makes the merge commit of the branch into the base.
func (m *merge) mergeCommit(ctx context.Context) (string, error) {
	tree, err := m.mergeTree(ctx, m.b.sha, m.tip, "")
	if err != nil {
		return "", err
	}
	msg := m.opts.Message
	if strings.TrimSpace(msg) == "" {
		msg = fmt.Sprintf("Merge branch '%s' into %s\n", m.t.branch, m.b.name)
	}
	return commitTree(ctx, m.t.top, tree, []string{m.b.sha, m.tip}, nil, msg)
}

// squash makes one commit on the base with the branch's changes.
func (m *merge) squash(ctx context.Context) (string, error) {
	tree, err := m.mergeTree(ctx, m.b.sha, m.tip, "")
	if err != nil {
		return "", err
	}
	if baseTree, err := treeOf(ctx, m.t.top, m.b.sha); err != nil {
		return "", err
	} else if tree == baseTree {
		return "", gitexec.Kinded(ErrNothingToMerge, nil, "the changes of branch %q are all in %q already", m.t.branch, m.b.name)
	}
	msg := m.opts.Message
	if strings.TrimSpace(msg) == "" {
		if msg, err = m.squashMessage(ctx); err != nil {
			return "", err
		}
	}
	return commitTree(ctx, m.t.top, tree, []string{m.b.sha}, nil, msg)
}

// squashMessage proposes a squash's message: the branch's one commit's
// own, or a subject and the list of its commits' subjects.
func (m *merge) squashMessage(ctx context.Context) (string, error) {
	out, err := run(ctx, m.t.top, "rev-list", "--reverse", "--no-merges", m.b.sha+".."+m.tip, "--")
	if err != nil {
		return "", gitexec.Step(err, nil, "list the commits of branch %q", m.t.branch)
	}
	commits := strings.Fields(out)
	if len(commits) == 1 {
		c, err := readCommit(ctx, m.t.top, commits[0])
		if err != nil {
			return "", err
		}
		return c.message, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Squash branch '%s' into %s\n\n", m.t.branch, m.b.name)
	for _, c := range commits[:min(len(commits), maxSquashSubjects)] {
		s, err := run(ctx, m.t.top, "log", "-1", "--format=%s", c, "--")
		if err != nil {
			return "", gitexec.Step(err, nil, "read the subject of commit %s", short(c))
		}
		fmt.Fprintf(&b, "* %s\n", strings.TrimSpace(s))
	}
	if n := len(commits) - maxSquashSubjects; n > 0 {
		fmt.Fprintf(&b, "* and %d more commits\n", n)
	}
	return b.String(), nil
}

// rebase replays the branch's commits onto the base and returns the last.
// Git 2.39 has no git merge-tree --merge-base, so each commit is
// cherry-picked by merging it with a stand-in for the new tip: a commit
// with the tip's tree whose parent is the commit's own, which makes that
// parent the merge's base.
func (m *merge) rebase(ctx context.Context) (string, error) {
	out, err := run(ctx, m.t.top, "rev-list", "--reverse", "--topo-order", "--no-merges", m.b.sha+".."+m.tip, "--")
	if err != nil {
		return "", gitexec.Step(err, nil, "list the commits of branch %q", m.t.branch)
	}
	onto := m.b.sha
	ontoTree, err := treeOf(ctx, m.t.top, onto)
	if err != nil {
		return "", err
	}
	for _, c := range strings.Fields(out) {
		ci, err := readCommit(ctx, m.t.top, c)
		if err != nil {
			return "", err
		}
		if len(ci.parents) == 0 {
			return "", fmt.Errorf("replay commit %s of branch %q: it has no parent, so shares no history with %q", short(c), m.t.branch, m.b.name)
		}
		parent := ci.parents[0]
		if parent == onto {
			// Already on the tip: kept as it is, as git rebase keeps it.
			onto, ontoTree = c, ci.tree
			continue
		}
		parentTree, err := treeOf(ctx, m.t.top, parent)
		if err != nil {
			return "", err
		}
		standIn, err := commitTree(ctx, m.t.top, ontoTree, []string{parent}, nil, "agentmux: stand-in for a rebase step\n", "--no-gpg-sign")
		if err != nil {
			return "", err
		}
		tree, err := m.mergeTree(ctx, standIn, c, c)
		if err != nil {
			return "", err
		}
		if tree == ontoTree && ci.tree != parentTree {
			continue // its change is in the base already
		}
		if onto, err = commitTree(ctx, m.t.top, tree, []string{onto}, ci.authorEnv(), ci.message); err != nil {
			return "", err
		}
		ontoTree = tree
	}
	if onto == m.b.sha {
		return "", gitexec.Kinded(ErrNothingToMerge, nil, "the changes of branch %q are all in %q already", m.t.branch, m.b.name)
	}
	return onto, nil
}

// mergeTree merges theirs into ours in no work tree and returns the
// resulting tree, or a *ConflictError naming the conflicted files; a
// rebase names the commit it replays as commit. Custom merge drivers run
// as in the user's own git merge.
func (m *merge) mergeTree(ctx context.Context, ours, theirs, commit string) (string, error) {
	out, err := explicit(ctx, m.t.top, nil, nil, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, theirs)
	var ge *gitexec.Error
	if err != nil && (!errors.As(err, &ge) || ge.Code != 1) {
		return "", gitexec.Step(err, nil, "merge branch %q into %q", m.t.branch, m.b.name)
	}
	// The tree, then, on a conflict, the conflicted files.
	fields := strings.Split(out, "\x00")
	if err != nil {
		return "", &ConflictError{Branch: m.t.branch, Base: m.b.name, Commit: commit, Files: unique(fields[1:])}
	}
	return fields[0], nil
}

// moveBase moves the base from where the merge began to next, by a
// fast-forward in the worktree that has it checked out or else by a
// compare-and-swap of its ref, and returns that worktree, if any.
func (m *merge) moveBase(ctx context.Context, next, reason string) (string, error) {
	// Looked up again: the base may have been checked out since.
	checkout, ok, err := checkedOut(ctx, m.t.top, m.b.ref)
	if err != nil {
		return "", err
	}
	if !ok {
		_, err := explicit(ctx, m.t.top, nil, nil, "update-ref", "-m", reason, m.b.ref, next, m.b.sha)
		if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Says("but expected", "cannot lock ref") {
			return "", gitexec.Kinded(ErrBaseMoved, err, "branch %q moved while %q was being merged into it; nothing was changed", m.b.name, m.t.branch)
		}
		if err != nil {
			return "", gitexec.Step(err, nil, "move branch %q to the merge", m.b.name)
		}
		return "", nil
	}
	if err := checkBaseClean(ctx, checkout, m.b); err != nil {
		return "", err
	}
	if now, err := revParse(ctx, checkout, m.b.ref); err != nil {
		return "", err
	} else if now != m.b.sha {
		return "", gitexec.Kinded(ErrBaseMoved, nil, "branch %q moved while %q was being merged into it; nothing was changed", m.b.name, m.t.branch)
	}
	_, err = explicit(ctx, checkout, nil, nil, "merge", "--ff-only", "--quiet", next)
	var ge *gitexec.Error
	switch {
	case err == nil:
		return checkout, nil
	case !errors.As(err, &ge):
	case ge.Says("untracked working tree files would be overwritten"):
		return "", gitexec.Kinded(ErrBaseDirty, nil, "%s, where %q is checked out, has untracked files the merge would overwrite: %s; move or remove them, then merge again",
			checkout, m.b.name, listed(tabbed(ge.Stderr)))
	case ge.Says("local changes to the following files would be overwritten", "have not concluded your merge"):
		return "", gitexec.Kinded(ErrBaseDirty, err, "%s, where %q is checked out, has changes of its own", checkout, m.b.name)
	case ge.Says("Not possible to fast-forward"):
		return "", gitexec.Kinded(ErrBaseMoved, nil, "branch %q moved while %q was being merged into it; nothing was changed", m.b.name, m.t.branch)
	}
	return "", gitexec.Step(err, nil, "fast-forward %q in %s to the merge", m.b.name, checkout)
}

// checkBaseClean returns ErrBaseDirty when the worktree checkout, which
// has base checked out, has changes to tracked files (untracked files
// are git merge's to refuse, when it would overwrite them).
func checkBaseClean(ctx context.Context, checkout string, b base) error {
	paths, err := changedPaths(ctx, checkout, false)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		return gitexec.Kinded(ErrBaseDirty, nil, "%s, where %q is checked out, has uncommitted changes: %s; commit or stash them, then merge again",
			checkout, b.name, listed(paths))
	}
	return nil
}

// tabbed returns the lines of git's message that list files, which it
// indents with a tab.
func tabbed(stderr string) []string {
	var files []string
	for l := range strings.Lines(stderr) {
		if f, ok := strings.CutPrefix(l, "\t"); ok {
			files = append(files, strings.TrimSpace(f))
		}
	}
	return files
}

// treeOf returns the tree of commit.
func treeOf(ctx context.Context, dir, commit string) (string, error) {
	out, err := run(ctx, dir, "rev-parse", "--verify", "--quiet", commit+"^{tree}")
	if err != nil {
		return "", gitexec.Step(err, nil, "read the tree of commit %s", short(commit))
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// commitTree makes a commit of tree with parents and message, its author
// and committer the user's unless env says otherwise, and returns it.
// The user's commit signing applies unless extra says --no-gpg-sign.
func commitTree(ctx context.Context, dir, tree string, parents, env []string, message string, extra ...string) (string, error) {
	args := append([]string{"commit-tree"}, extra...)
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	out, err := explicit(ctx, dir, env, []byte(message), append(args, tree)...)
	if err != nil {
		return "", gitexec.Step(err, nil, "make a commit of tree %s", short(tree))
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// commitInfo is what a rebase keeps of a commit.
type commitInfo struct {
	tree    string
	parents []string
	// author is the author header's value: "Name <email> 1700000000 +0100".
	author  string
	message string
}

// readCommit reads commit c as git stores it, so its author and message
// are kept byte for byte.
func readCommit(ctx context.Context, dir, c string) (commitInfo, error) {
	out, err := run(ctx, dir, "cat-file", "commit", c)
	if err != nil {
		return commitInfo{}, gitexec.Step(err, nil, "read commit %s", short(c))
	}
	head, message, _ := strings.Cut(out, "\n\n")
	ci := commitInfo{message: message}
	for l := range strings.Lines(head) {
		key, val, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		switch key {
		case "tree":
			ci.tree = val
		case "parent":
			ci.parents = append(ci.parents, val)
		case "author":
			ci.author = val
		}
	}
	if ci.tree == "" || ci.author == "" {
		return commitInfo{}, fmt.Errorf("read commit %s: no tree or author in it", short(c))
	}
	return ci, nil
}

// authorEnv is the environment that makes commit-tree keep the commit's
// author and date.
func (ci commitInfo) authorEnv() []string {
	name, rest, _ := strings.Cut(ci.author, " <")
	email, date, _ := strings.Cut(rest, "> ")
	return []string{"GIT_AUTHOR_NAME=" + name, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=@" + date}
}
