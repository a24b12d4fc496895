package ship

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// BranchStatus is where a session's branch stands against its base.
type BranchStatus struct {
	// Branch is the branch the tree has checked out; "" when its HEAD is
	// detached (the counts are then of HEAD).
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Ahead counts the commits of the branch the base lacks, Behind those
	// of the base the branch lacks.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
}

// Mark is a session's last merge into its base, as Merge made it: the
// base's commit after it and the branch's commit merged. The zero Mark is
// no merge.
type Mark struct {
	// Commit is the base's tip after the merge (Merged.SHA).
	Commit string
	// Tip is the branch's commit that was merged (Merged.Tip).
	Tip string
}

// Status tells where the branch of the tree that holds dir stands against
// base: a branch, or a commit when the session branched off a detached
// HEAD. After a merge (merged not zero) it counts from the merge: a squash
// or a rebase puts copies of the branch's commits on the base, which
// git's counts take for work on both sides, so the branch is ahead by
// what it gained since its merged tip, and behind by what the base
// gained since the merge's commit. It only reads, and runs nothing the
// repository configures.
func Status(ctx context.Context, dir, baseName string, merged Mark) (BranchStatus, error) {
	t, err := openTree(ctx, dir)
	if err != nil {
		return BranchStatus{}, err
	}
	b, err := resolveBase(ctx, t, baseName, false)
	if err != nil {
		return BranchStatus{}, err
	}
	behind, ahead, err := aheadBehind(ctx, t.top, b.sha, "HEAD")
	if err != nil {
		return BranchStatus{}, err
	}
	if merged.Tip != "" && merged.Commit != "" {
		// Either commit may be gone (a branch reset and collected): then
		// git's counts are the best there are.
		if n, err := count(ctx, t.top, "HEAD", b.sha, merged.Tip); err == nil {
			ahead = n
		}
		if n, err := count(ctx, t.top, b.sha, "HEAD", merged.Commit); err == nil {
			behind = n
		}
	}
	return BranchStatus{Branch: t.branch, Base: b.name, Ahead: ahead, Behind: behind}, nil
}

// count counts the commits of from that none of not has.
func count(ctx context.Context, dir, from string, not ...string) (int, error) {
	args := []string{"rev-list", "--count", from}
	for _, n := range not {
		args = append(args, "^"+n)
	}
	out, err := run(ctx, dir, append(args, "--")...)
	if err != nil {
		return 0, gitexec.Step(err, nil, "count the commits of %s", from)
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("count the commits of %s: git rev-list said %q", from, out)
	}
	return n, nil
}

// aheadBehind counts the commits only left has and those only right has.
func aheadBehind(ctx context.Context, dir, left, right string) (int, int, error) {
	out, err := run(ctx, dir, "rev-list", "--left-right", "--count", left+"..."+right, "--")
	if err != nil {
		return 0, 0, gitexec.Step(err, nil, "count the commits between %s and %s", short(left), right)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("count the commits between %s and %s: git rev-list said %q", short(left), right, out)
	}
	l, err1 := strconv.Atoi(f[0])
	r, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("count the commits between %s and %s: git rev-list said %q", short(left), right, out)
	}
	return l, r, nil
}
