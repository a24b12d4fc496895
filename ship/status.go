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

// Status tells where the branch of the tree that holds dir stands against
// base: a branch, or a commit when the session branched off a detached
// HEAD. It only reads, and runs nothing the repository configures.
func Status(ctx context.Context, dir, baseName string) (BranchStatus, error) {
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
	return BranchStatus{Branch: t.branch, Base: b.name, Ahead: ahead, Behind: behind}, nil
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
