package ship

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// Updated is what UpdateFromBase did.
type Updated struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// SHA is the commit at HEAD now: the merge commit, or the base's when
	// the branch had nothing of its own; HEAD unchanged when the branch
	// was up to date or the merge conflicts.
	SHA string `json:"sha"`
	// UpToDate reports whether the branch had every commit of the base
	// already, so nothing was done.
	UpToDate bool `json:"upToDate"`
	// Conflicts are the files the merge left conflicted in the worktree,
	// with their markers, for the agent to resolve and commit; nil when
	// it merged cleanly.
	Conflicts []string `json:"conflicts,omitempty"`
}

// UpdateFromBase brings the base (a branch, or a commit when the session
// branched off a detached HEAD) into the branch of the session's worktree
// that holds dir, with git merge run there as the user would run it. A
// merge that conflicts is not an error: it is left in the worktree,
// markers, MERGE_HEAD and all, and Updated.Conflicts names the files, so
// the agent can be asked to resolve them. A worktree with changes to
// tracked files is refused with ErrDirty before anything happens; so is
// one whose untracked files the merge would overwrite. ErrNotWorktree,
// ErrNoBranch and ErrNoBase are as for Merge.
func UpdateFromBase(ctx context.Context, dir, baseName string) (Updated, error) {
	t, err := openTree(ctx, dir)
	if err != nil {
		return Updated{}, err
	}
	if err := t.needBranch(); err != nil {
		return Updated{}, err
	}
	if err := t.needLinked(ctx); err != nil {
		return Updated{}, err
	}
	b, err := resolveBase(ctx, t, baseName, false)
	if err != nil {
		return Updated{}, err
	}
	paths, err := changedPaths(ctx, t.top, false)
	if err != nil {
		return Updated{}, err
	}
	if len(paths) > 0 {
		return Updated{}, gitexec.Kinded(ErrDirty, nil, "the worktree at %s has uncommitted changes: %s; commit them first, so the merge does not mix with them", t.top, listed(paths))
	}
	u := Updated{Branch: t.branch, Base: b.name}
	if u.UpToDate, err = isAncestor(ctx, t.top, b.sha, "HEAD"); err != nil {
		return Updated{}, err
	}
	if !u.UpToDate {
		msg := fmt.Sprintf("Merge branch '%s' into %s", b.name, t.branch)
		if b.ref == "" {
			msg = fmt.Sprintf("Merge commit '%s' into %s", short(b.sha), t.branch)
		}
		// The commit, not the name: a tag of the same name would win.
		if _, err := explicit(ctx, t.top, nil, nil, "merge", "--no-edit", "--quiet", "-m", msg, b.sha); err != nil {
			if u.Conflicts, err = conflictsAfter(ctx, t, b, err); err != nil {
				return Updated{}, err
			}
		}
	}
	if u.SHA, err = revParse(ctx, t.top, "HEAD"); err != nil {
		return Updated{}, err
	}
	return u, nil
}

// conflictsAfter tells what a git merge that failed with mergeErr left:
// the conflicted files, or the error that says why it did not merge.
func conflictsAfter(ctx context.Context, t tree, b base, mergeErr error) ([]string, error) {
	out, err := run(ctx, t.top, "ls-files", "--unmerged", "-z")
	if err != nil {
		return nil, fmt.Errorf("%w (and listing the conflicted files failed: %v)", gitexec.Step(mergeErr, nil, "merge %q into %q", b.name, t.branch), err)
	}
	// Each entry is "mode object stage\tpath", a file once per stage.
	var files []string
	for e := range strings.SplitSeq(out, "\x00") {
		if _, p, ok := strings.Cut(e, "\t"); ok {
			files = append(files, p)
		}
	}
	if files = unique(files); len(files) > 0 {
		return files, nil
	}
	var ge *gitexec.Error
	if errors.As(mergeErr, &ge) && ge.Says("untracked working tree files would be overwritten") {
		return nil, gitexec.Kinded(ErrDirty, nil, "the worktree at %s has untracked files the merge would overwrite: %s; move or remove them first", t.top, listed(tabbed(ge.Stderr)))
	}
	return nil, gitexec.Step(mergeErr, nil, "merge %q into %q", b.name, t.branch)
}
