package ship

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// suggestMerge proposes the message that concludes a merge under way in
// the tree at top (MERGE_HEAD in its git dir, as UpdateFromBase leaves a
// merge that conflicts for the agent to resolve): the merge's own
// subject, then the files it left conflicted. A commit of the resolution
// is that merge's commit, so a message naming the files the agent
// happened to edit ("Update README.md") would say the wrong thing. ok is
// false when no merge is under way. It only reads.
func suggestMerge(ctx context.Context, top string) (msg string, ok bool, err error) {
	// The worktree's own git dir holds MERGE_HEAD, not the repository's.
	out, err := run(ctx, top, "rev-parse", "--path-format=absolute", "--git-path", "MERGE_HEAD", "--git-path", "MERGE_MSG")
	if err != nil {
		return "", false, gitexec.Step(err, nil, "find the merge state of %s", top)
	}
	headPath, msgPath, _ := strings.Cut(strings.TrimSuffix(out, "\n"), "\n")
	head, err := os.ReadFile(headPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read the merge state of %s: %w", top, err)
	}
	saved, err := os.ReadFile(msgPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false, fmt.Errorf("read the merge message of %s: %w", top, err)
	}
	subject, conflicted := parseMergeMsg(string(saved))
	if subject == "" {
		subject, err = mergeSubject(ctx, top, strings.TrimSpace(string(head)))
		if err != nil {
			return "", false, err
		}
	}
	// Files still unmerged count too: git lists in MERGE_MSG those of the
	// merge itself, and a resolution the agent has not staged yet is
	// still one of them.
	unmerged, err := run(ctx, top, "ls-files", "--unmerged", "-z")
	if err != nil {
		return "", false, gitexec.Step(err, nil, "list the conflicted files of %s", top)
	}
	for e := range strings.SplitSeq(unmerged, "\x00") {
		if _, p, ok := strings.Cut(e, "\t"); ok {
			conflicted = append(conflicted, p)
		}
	}
	return mergeMessage(subject, unique(conflicted)), true, nil
}

// parseMergeMsg reads the MERGE_MSG git wrote for a merge: its subject
// (its first line that is not a comment) and the files under its
// "Conflicts:" comment, one a line after the comment character and a tab.
// The comment character is whatever starts the "Conflicts:" line, so a
// repository's core.commentChar is read as git wrote it.
func parseMergeMsg(text string) (subject string, conflicted []string) {
	var comment byte
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case comment != 0 && len(line) > 1 && line[0] == comment && line[1] == '\t':
			conflicted = append(conflicted, line[2:])
		case len(line) > 0 && strings.TrimSpace(line[1:]) == "Conflicts:":
			comment = line[0]
		case subject == "" && strings.TrimSpace(line) != "" && comment == 0 && line[0] != '#':
			subject = strings.TrimSpace(line)
		}
	}
	return subject, conflicted
}

// mergeSubject names a merge of head whose MERGE_MSG is gone, as git
// would: the branch head is the tip of, else its commit.
func mergeSubject(ctx context.Context, top, head string) (string, error) {
	branch, err := run(ctx, top, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", gitexec.Step(err, nil, "find the branch of %s", top)
	}
	what := "commit '" + short(head) + "'"
	if name, err := run(ctx, top, "name-rev", "--name-only", "--no-undefined", "--refs=refs/heads/*", head); err == nil {
		if name = strings.TrimSpace(name); name != "" && !strings.ContainsAny(name, "~^") {
			what = "branch '" + name + "'"
		}
	}
	return fmt.Sprintf("Merge %s into %s", what, strings.TrimSpace(branch)), nil
}

// mergeMessage is the subject, then the conflicted files, if any.
func mergeMessage(subject string, conflicted []string) string {
	if len(conflicted) == 0 {
		return subject
	}
	var b strings.Builder
	b.WriteString(subject + "\n\nResolved conflicts in:\n")
	for _, p := range conflicted[:min(len(conflicted), maxBodyFiles)] {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	if n := len(conflicted) - maxBodyFiles; n > 0 {
		fmt.Fprintf(&b, "- and %d more files\n", n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
