package ship

import (
	"context"
	"errors"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// Other is another session's worktree that a merge preview looks at.
type Other struct {
	// ID names the session to the caller; Dir is its tree.
	ID, Dir string
}

// Predicted is a session whose branch will conflict with the base once
// the previewed branch is merged, though it does not conflict now.
type Predicted struct {
	// Files are the paths that will conflict, relative to the top.
	Files []string `json:"files"`
	// ID names the session, as Other did.
	ID string `json:"sessionId"`
}

// Preview is what a merge of a branch into its base will do, told
// before it is done.
type Preview struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Conflicts are the files the merge itself conflicts in; none when
	// it merges cleanly.
	Conflicts []string `json:"conflicts"`
	// Others are the sessions whose branches will then conflict with the
	// base. Computed only when the merge itself is clean.
	Others []Predicted `json:"others"`
}

// previewIdentity is the author and committer of the commit a preview
// makes in the object store alone: the user's identity may be unset,
// and nobody sees this commit.
var previewIdentity = []string{
	"GIT_AUTHOR_NAME=agentmux", "GIT_AUTHOR_EMAIL=agentmux@localhost", "GIT_AUTHOR_DATE=@0 +0000",
	"GIT_COMMITTER_NAME=agentmux", "GIT_COMMITTER_EMAIL=agentmux@localhost", "GIT_COMMITTER_DATE=@0 +0000",
}

// PreviewMerge tells what merging the branch of the worktree that holds
// dir into baseName will do: whether it conflicts, and which of others'
// branches, merged into the base afterwards, will conflict then though
// they merge cleanly now. Like Merge it computes with git merge-tree and
// touches no tree, index or ref: the merge it imagines is a commit in the
// object store only, which nothing names.
//
// It counts what the branches have committed, which is what a merge
// takes. It is not the user's action, so it runs no command the
// repository configures: a file with a custom merge driver that both
// sides change is predicted to conflict. An other whose tree is gone or
// detached is left out.
func PreviewMerge(ctx context.Context, dir, baseName string, others []Other) (Preview, error) {
	t, err := openTree(ctx, dir)
	if err != nil {
		return Preview{}, err
	}
	if err := t.needBranch(); err != nil {
		return Preview{}, err
	}
	if err := t.needLinked(ctx); err != nil {
		return Preview{}, err
	}
	b, err := resolveBase(ctx, t, baseName, true)
	if err != nil {
		return Preview{}, err
	}
	tip, err := revParse(ctx, t.top, "refs/heads/"+t.branch)
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Branch: t.branch, Base: b.name, Conflicts: []string{}, Others: []Predicted{}}
	cfg, err := mergeConfig(ctx, t.top)
	if err != nil {
		return Preview{}, err
	}
	tree, conflicts, err := quietMerge(ctx, t.top, cfg, b.sha, tip)
	if err != nil {
		return Preview{}, gitexec.Step(err, nil, "merge branch %q into %q", t.branch, b.name)
	}
	if len(conflicts) > 0 {
		p.Conflicts = conflicts
		return p, nil
	}
	// The base as the merge would leave it: a merge commit, which a
	// squash or a rebase leaves with the same tree.
	out, err := gitexec.RunEnv(ctx, t.top, previewIdentity, []byte("agentmux merge preview\n"),
		"commit-tree", "--no-gpg-sign", "-p", b.sha, "-p", tip, tree)
	if err != nil {
		return Preview{}, gitexec.Step(err, nil, "make the merge a preview imagines")
	}
	after := strings.TrimSpace(string(out))
	for _, o := range others {
		files, err := newConflicts(ctx, t.top, cfg, b.sha, after, o)
		if err != nil {
			if ctx.Err() != nil {
				return Preview{}, ctx.Err()
			}
			continue // its tree is gone, or detached: it merges nothing
		}
		if len(files) > 0 {
			p.Others = append(p.Others, Predicted{ID: o.ID, Files: files})
		}
	}
	return p, nil
}

// newConflicts returns the files other's branch will conflict in once
// the base is after, that it does not conflict in while the base is
// before.
func newConflicts(ctx context.Context, top string, cfg []string, before, after string, other Other) ([]string, error) {
	ot, err := openTree(ctx, other.Dir)
	if err != nil {
		return nil, err
	}
	if err := ot.needBranch(); err != nil {
		return nil, err
	}
	tip, err := revParse(ctx, ot.top, "refs/heads/"+ot.branch)
	if err != nil {
		return nil, err
	}
	// The commits are the repository's: the other tree shares its
	// objects, so the merges run in the previewed one.
	_, later, err := quietMerge(ctx, top, cfg, after, tip)
	if err != nil || len(later) == 0 {
		return nil, err
	}
	_, now, err := quietMerge(ctx, top, cfg, before, tip)
	if err != nil {
		return nil, err
	}
	already := map[string]bool{}
	for _, f := range now {
		already[f] = true
	}
	var files []string
	for _, f := range later {
		if !already[f] {
			files = append(files, f)
		}
	}
	return files, nil
}

// quietMerge merges theirs into ours with git merge-tree in no work tree
// and returns the tree, or the conflicted files; cfg keeps the
// repository's merge drivers from running.
func quietMerge(ctx context.Context, top string, cfg []string, ours, theirs string) (string, []string, error) {
	args := append(append([]string(nil), cfg...), "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", ours, theirs)
	out, err := run(ctx, top, args...)
	var ge *gitexec.Error
	if err != nil && (!errors.As(err, &ge) || ge.Code != 1) {
		return "", nil, err
	}
	fields := strings.Split(out, "\x00")
	if err != nil {
		return "", unique(fields[1:]), nil
	}
	return fields[0], nil, nil
}

// mergeConfig returns the -c options that replace each merge driver the
// configuration names with false, which conflicts: a preview runs no
// command the repository configures, so a file such a driver merges is
// counted as a conflict when both sides change it.
func mergeConfig(ctx context.Context, top string) ([]string, error) {
	out, err := run(ctx, top, "config", "--null", "--name-only", "--get-regexp", `^merge\..*\.driver$`)
	if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
		return nil, nil // none configured
	}
	if err != nil {
		return nil, gitexec.Step(err, nil, "read the merge drivers of %s", top)
	}
	var cfg []string
	for name := range strings.SplitSeq(strings.TrimRight(out, "\x00"), "\x00") {
		if name != "" {
			cfg = append(cfg, "-c", name+"=false")
		}
	}
	return cfg, nil
}
