package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/gitexec"
)

// DefaultDiffLimit bounds a Diff's patch when it is given no bound.
const DefaultDiffLimit = 1 << 20

// emptyTree is git's id of the empty tree: what a session's first
// checkpoint is compared with when its tree had no commit yet.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// Change is what one checkpoint changed, for a timeline to show.
type Change struct {
	Checkpoint
	// Parent is the commit it is compared with: the checkpoint before, or
	// for a session's first, the commit its tree had checked out; "" when
	// there was none, and every file is new.
	Parent string `json:"parent"`
	// Files are the changed files, as the Changes view lists them.
	Files []changes.File `json:"files"`
	// Patch is the unified diff of them all, cut at the limit at the end
	// of a line; Truncated reports whether it was cut.
	Patch     string `json:"patch"`
	Truncated bool   `json:"truncated"`
}

// Diff returns what session's checkpoint id changed since its parent:
// the files with their line counts, and the patch, at most limit bytes
// of it (DefaultDiffLimit when limit < 1).
func Diff(ctx context.Context, dir, session string, id, limit int) (*Change, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	if limit < 1 {
		limit = DefaultDiffLimit
	}
	r, err := open(ctx, dir)
	if err != nil {
		return nil, err
	}
	f, err := r.find(ctx, session, id)
	if err != nil {
		return nil, err
	}
	cps, err := r.checkpoints(ctx, []ref{f})
	if err != nil {
		return nil, err
	}
	c := &Change{Checkpoint: cps[0]}
	from := emptyTree
	out, err := r.git(ctx, nil, nil, "rev-parse", "--verify", "--quiet", f.commit+"^")
	switch ge := (*gitexec.Error)(nil); {
	case err == nil:
		c.Parent = strings.TrimSuffix(out, "\n")
		from = c.Parent
	case !errors.As(err, &ge) || ge.Code != 1:
		return nil, gitexec.Step(err, nil, "find the parent of checkpoint %d", id)
	}
	raw, err := r.git(ctx, nil, nil, "diff-tree", "-r", "-M", "--raw", "--numstat", "-z", from, f.commit)
	if err != nil {
		return nil, gitexec.Step(err, nil, "list the files checkpoint %d changed", id)
	}
	if c.Files, err = changes.ParseRawNumstat([]byte(raw)); err != nil {
		return nil, fmt.Errorf("list the files checkpoint %d changed: %w", id, err)
	}
	if c.Patch, c.Truncated, err = r.patch(ctx, from, f.commit, limit); err != nil {
		return nil, fmt.Errorf("diff checkpoint %d: %w", id, err)
	}
	return c, nil
}

// patch returns the unified diff from from to to, cut at limit bytes;
// git is stopped once that much is read.
func (r *repo) patch(ctx context.Context, from, to string, limit int) (string, bool, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := gitexec.Command(pctx, r.top, nil, slices.Concat(r.cfg, []string{"diff-tree", "-r", "-M", "-p", "--no-ext-diff", "--no-textconv", from, to})...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", false, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", false, gitexec.Check(ctx, cmd, err, "")
	}
	b, rerr := io.ReadAll(io.LimitReader(stdout, int64(limit)+1))
	truncated := len(b) > limit
	if truncated {
		cancel() // the rest is not wanted
		b = changes.CutLine(b, limit)
	}
	werr := cmd.Wait()
	if truncated {
		return string(b), true, nil
	}
	if err := gitexec.Check(ctx, cmd, werr, stderr.String()); err != nil {
		return "", false, err
	}
	if rerr != nil {
		return "", false, rerr
	}
	return string(b), false, nil
}
