package ship

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// PushOptions are where Push pushes. The zero value pushes to origin and
// names no base for the pull request.
type PushOptions struct {
	// Remote is the name of a remote the repository has; "" is origin.
	Remote string
	// Base is the branch a pull request would merge into, for its page's
	// URL; "" leaves the choice to the forge (its default branch).
	Base string
}

// Pushed is what Push did.
type Pushed struct {
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// PullRequestURL is the forge's page that opens a pull request of
	// Branch into the base; "" when the remote is on no forge
	// PullRequestURL knows.
	PullRequestURL string `json:"pullRequestUrl,omitempty"`
}

// Push pushes the branch of the tree that holds dir to the branch of the
// same name on the remote and makes that its upstream, as
// git push --set-upstream would: the push goes where the remote's
// pushurl says, with the user's credentials, and the pre-push hook runs.
// Nothing may prompt: a remote that wants a password nobody stored
// fails. A remote the repository does not have gives ErrNoRemote, a
// refusal by the remote ErrRejected, a detached HEAD ErrNoBranch.
func Push(ctx context.Context, dir string, opts PushOptions) (Pushed, error) {
	t, err := openTree(ctx, dir)
	if err != nil {
		return Pushed{}, err
	}
	if err := t.needBranch(); err != nil {
		return Pushed{}, err
	}
	remote := opts.Remote
	if remote == "" {
		remote = "origin"
	}
	if err := checkRemote(ctx, t.top, remote); err != nil {
		return Pushed{}, err
	}
	ref := "refs/heads/" + t.branch
	_, err = explicit(ctx, t.top, nil, nil, "push", "--quiet", "--set-upstream", "--", remote, ref+":"+ref)
	var ge *gitexec.Error
	switch {
	case err == nil:
	case errors.As(err, &ge) && ge.Says("[rejected]", "(fetch first)", "(non-fast-forward)"):
		return Pushed{}, gitexec.Kinded(ErrRejected, nil, "remote %q refused branch %q: it has commits there that this branch lacks; update the branch first", remote, t.branch)
	case errors.As(err, &ge) && ge.Says("[remote rejected]"):
		return Pushed{}, gitexec.Kinded(ErrRejected, nil, "remote %q refused branch %q: %s", remote, t.branch, rejection(ge.Stderr))
	case errors.As(err, &ge) && ge.Says("failed to push some refs"):
		// Git's last word says nothing; the reason (a pre-push hook's
		// refusal, most often) came before it.
		return Pushed{}, fmt.Errorf("push branch %q to %q: %s (%w)", t.branch, remote, pushReason(ge.Stderr), err)
	default:
		return Pushed{}, gitexec.Step(err, nil, "push branch %q to %q", t.branch, remote)
	}
	return Pushed{Remote: remote, Branch: t.branch, PullRequestURL: pullRequestURL(ctx, t.top, remote, t.branch, opts.Base)}, nil
}

// checkRemote returns ErrNoRemote, naming the remotes there are, unless
// the repository at dir has remote.
func checkRemote(ctx context.Context, dir, remote string) error {
	out, err := run(ctx, dir, "remote")
	if err != nil {
		return gitexec.Step(err, nil, "list the remotes of %s", dir)
	}
	names := strings.Fields(out)
	if slices.Contains(names, remote) {
		return nil
	}
	if len(names) == 0 {
		return gitexec.Kinded(ErrNoRemote, nil, "the repository has no remote %q: it has none", remote)
	}
	return gitexec.Kinded(ErrNoRemote, nil, "the repository has no remote %q; it has %s", remote, strings.Join(names, ", "))
}

// rejection is the reason a remote gave for refusing a ref: what git puts
// in parentheses after "[remote rejected]".
func rejection(stderr string) string {
	for l := range strings.Lines(stderr) {
		if _, rest, ok := strings.Cut(l, "[remote rejected]"); ok {
			if i := strings.Index(rest, "("); i >= 0 {
				return strings.TrimSuffix(strings.TrimSpace(rest[i+1:]), ")")
			}
		}
	}
	return gitexec.Reason(stderr)
}

// pushReason is why git push failed, when its last word is that it
// failed to push some refs.
func pushReason(stderr string) string {
	var kept []string
	for l := range strings.Lines(stderr) {
		if !strings.Contains(l, "failed to push some refs") {
			kept = append(kept, l)
		}
	}
	if r := gitexec.Reason(strings.Join(kept, "")); r != "" {
		return r
	}
	return "git gave no reason"
}

// pullRequestURL is the page for a pull request of branch into base on
// the forge remote's URL names, else its push URL's; "" when neither is
// a forge's. It only reads the config.
func pullRequestURL(ctx context.Context, dir, remote, branch, base string) string {
	for _, args := range [][]string{{"remote", "get-url", "--all", remote}, {"remote", "get-url", "--push", "--all", remote}} {
		out, err := run(ctx, dir, args...)
		if err != nil {
			continue
		}
		for u := range strings.Lines(out) {
			if page := PullRequestURL(strings.TrimSpace(u), branch, base); page != "" {
				return page
			}
		}
	}
	return ""
}
