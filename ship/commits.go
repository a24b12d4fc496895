package ship

import (
	"context"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// maxListedCommits bounds the commits Commits reads: a pull request's
// description lists them, and a branch of thousands says enough with the
// first of them and their count.
const maxListedCommits = 100

// BranchCommits are the commits a branch has that its base lacks.
type BranchCommits struct {
	// Branch and Base are the branch's and its base's short names.
	Branch, Base string
	// Commits are the branch's own commits, oldest first, merges left
	// out, at most maxListedCommits of them.
	Commits []CommitMessage
	// More counts the commits past those listed.
	More int
}

// CommitMessage is one commit's message.
type CommitMessage struct {
	// Subject is the message's first line; Body the rest, trimmed.
	Subject, Body string
}

// Commits returns the commits of the branch of the tree that holds dir
// that its base, the local branch baseName, lacks: what a pull request of
// the branch into the base would bring.
func Commits(ctx context.Context, dir, baseName string) (BranchCommits, error) {
	t, err := openTree(ctx, dir)
	if err != nil {
		return BranchCommits{}, err
	}
	if err := t.needBranch(); err != nil {
		return BranchCommits{}, err
	}
	b, err := resolveBase(ctx, t, baseName, true)
	if err != nil {
		return BranchCommits{}, err
	}
	out, err := run(ctx, t.top, "rev-list", "--reverse", "--no-merges", b.sha+"..HEAD", "--")
	if err != nil {
		return BranchCommits{}, gitexec.Step(err, nil, "list the commits of branch %q", t.branch)
	}
	shas := strings.Fields(out)
	bc := BranchCommits{Branch: t.branch, Base: b.name, More: max(len(shas)-maxListedCommits, 0)}
	for _, c := range shas[:min(len(shas), maxListedCommits)] {
		ci, err := readCommit(ctx, t.top, c)
		if err != nil {
			return BranchCommits{}, err
		}
		subject, body, _ := strings.Cut(strings.TrimSpace(ci.message), "\n")
		bc.Commits = append(bc.Commits, CommitMessage{Subject: strings.TrimSpace(subject), Body: strings.TrimSpace(body)})
	}
	return bc, nil
}
