package ship

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/textrule"
)

// rollbackTimeout bounds what undoes a failed action, which runs even
// when the caller's context is what ended it.
const rollbackTimeout = 30 * time.Second

// Committed is the commit Commit made.
type Committed struct {
	SHA string `json:"sha"`
	// Branch is the branch the commit is on; "" when HEAD is detached.
	Branch string `json:"branch"`
}

// Commit commits everything in the tree that holds dir, tracked changes
// and untracked files alike (not ignored ones), with message, as
// git add -A and git commit would: the repository's hooks run, and a
// pre-commit or commit-msg hook that refuses fails it. A tree with
// nothing to commit gives ErrNothingToCommit, an empty message
// ErrNoMessage. When the commit fails, the index is put back as it was,
// so what the user had staged stays staged and nothing else is.
func Commit(ctx context.Context, dir, message string) (c Committed, err error) {
	message = strings.ReplaceAll(message, "\r\n", "\n")
	if strings.TrimSpace(message) == "" {
		return Committed{}, gitexec.Kinded(ErrNoMessage, nil, "the commit message is empty")
	}
	// A message is shown in terminals (git log) and in the UI: an escape
	// there would act on the terminal, a bidi control reorder what is read.
	switch r, control, bad := textrule.FirstNotText(message); {
	case !utf8.ValidString(message):
		return Committed{}, gitexec.Kinded(ErrInvalidMessage, nil, "the commit message is not valid UTF-8")
	case bad && control:
		return Committed{}, gitexec.Kinded(ErrInvalidMessage, nil, "the commit message contains the control character %U; only text, tabs and line breaks can be committed", r)
	case bad:
		return Committed{}, gitexec.Kinded(ErrInvalidMessage, nil, "the commit message contains the invisible character %U, which would make what is shown differ from what is meant", r)
	}
	t, err := openTree(ctx, dir)
	if err != nil {
		return Committed{}, err
	}
	// Looked at first, so a clean tree's index is not even touched.
	paths, err := changedPaths(ctx, t.top, true)
	if err != nil {
		return Committed{}, err
	}
	if len(paths) == 0 {
		return Committed{}, gitexec.Kinded(ErrNothingToCommit, nil, "nothing to commit in %s: it matches its last commit", t.top)
	}
	restore, err := saveIndex(ctx, t.top)
	if err != nil {
		return Committed{}, err
	}
	committed := false
	defer func() {
		if err != nil && !committed {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
			defer cancel()
			if rerr := restore(rctx); rerr != nil {
				err = fmt.Errorf("%w (and putting the index back failed: %v)", err, rerr)
			}
		}
	}()
	if _, err := explicit(ctx, t.top, nil, nil, "add", "--all"); err != nil {
		return Committed{}, gitexec.Step(err, nil, "stage the changes in %s", t.top)
	}
	// What add staged can still be nothing: a submodule whose own files
	// changed, which the parent cannot commit.
	if staged, err := hasStaged(ctx, t.top); err != nil {
		return Committed{}, err
	} else if !staged {
		return Committed{}, gitexec.Kinded(ErrNothingToCommit, nil, "nothing to commit in %s: its changes are inside submodules, which commit on their own", t.top)
	}
	// The message on standard input: it may hold anything, and git keeps
	// it as given but for surrounding blank lines.
	if _, err := explicit(ctx, t.top, nil, []byte(message), "commit", "--quiet", "--file=-", "--cleanup=whitespace"); err != nil {
		return Committed{}, gitexec.Step(err, nil, "commit the changes in %s", t.top)
	}
	// The commit is made: from here on, nothing puts the index back.
	committed = true
	sha, err := revParse(ctx, t.top, "HEAD")
	if err != nil {
		return Committed{}, fmt.Errorf("the commit was made, but reading its id failed: %w", err)
	}
	return Committed{SHA: sha, Branch: t.branch}, nil
}

// hasStaged reports whether the index of the tree at dir differs from
// HEAD (from nothing, before the first commit).
func hasStaged(ctx context.Context, dir string) (bool, error) {
	against := "HEAD"
	if _, err := revParse(ctx, dir, "HEAD"); err != nil {
		against = emptyTree
	}
	_, err := run(ctx, dir, "diff", "--cached", "--quiet", "--ignore-submodules=none", against, "--")
	if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
		return true, nil
	}
	if err != nil {
		return false, gitexec.Step(err, nil, "compare the staged changes of %s with HEAD", dir)
	}
	return false, nil
}

// emptyTree is git's id of the empty tree.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// saveIndex keeps a copy of the index of the tree at dir and returns what
// puts it back. It puts it back as git writes an index, under
// index.lock, so it never overwrites one another git is writing: then it
// fails and says so.
func saveIndex(ctx context.Context, dir string) (func(context.Context) error, error) {
	out, err := run(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return nil, gitexec.Step(err, nil, "find the index of %s", dir)
	}
	index := strings.TrimSuffix(out, "\n")
	saved, err := os.ReadFile(index)
	existed := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("save the index of %s: %w", dir, err)
	}
	return func(context.Context) error {
		lock := index + ".lock"
		f, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("put the index of %s back: another git holds %s", dir, lock)
		}
		if err != nil {
			return fmt.Errorf("put the index of %s back: %w", dir, err)
		}
		if !existed {
			f.Close()
			err := os.Remove(index)
			if rerr := os.Remove(lock); err == nil || errors.Is(err, fs.ErrNotExist) {
				err = rerr
			}
			if err != nil {
				return fmt.Errorf("put the index of %s back: %w", dir, err)
			}
			return nil
		}
		_, err = f.Write(saved)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(lock, index)
		}
		if err != nil {
			_ = os.Remove(lock)
			return fmt.Errorf("put the index of %s back: %w", dir, err)
		}
		return nil
	}, nil
}

// Suggest proposes a commit message for the uncommitted change of the
// tree that holds dir (see SuggestMessage); "" when there is none. In a
// tree where a merge is under way (one UpdateFromBase left conflicted),
// the change concludes the merge, and the message says so: the merge's
// subject, then the files it left conflicted. It only reads, as the
// Changes view does.
func Suggest(ctx context.Context, dir string) (string, error) {
	top, err := changes.Top(ctx, dir)
	if err != nil {
		return "", err
	}
	if msg, ok, err := suggestMerge(ctx, top); err != nil || ok {
		return msg, err
	}
	b, err := changes.Base(ctx, top, "")
	if err != nil {
		return "", err
	}
	files, err := changes.Summary(ctx, top, b, nil)
	if err != nil {
		return "", fmt.Errorf("list the changes of %s: %w", top, err)
	}
	return SuggestMessage(files), nil
}

// maxSubject is how long a suggested subject line may be; longer ones
// give way to a count of files.
const maxSubject = 72

// maxBodyFiles is how many files a suggested message lists.
const maxBodyFiles = 20

// SuggestMessage proposes a commit message for a change: a subject that
// says what happened to which files ("Update README.md", "Add 3 files in
// web/src"), then, for more than one file, a line per file with its
// line counts. No files give "".
func SuggestMessage(files []changes.File) string {
	if len(files) == 0 {
		return ""
	}
	subject := summarize(files)
	if len(files) == 1 {
		return subject
	}
	var b strings.Builder
	b.WriteString(subject + "\n\n")
	for _, f := range files[:min(len(files), maxBodyFiles)] {
		name := f.Path
		if f.Status == changes.Renamed {
			name = f.OldPath + " -> " + f.Path
		}
		switch {
		case f.Binary:
			fmt.Fprintf(&b, "- %s %s (binary)\n", f.Status, name)
		default:
			fmt.Fprintf(&b, "- %s %s (+%d -%d)\n", f.Status, name, f.Additions, f.Deletions)
		}
	}
	if n := len(files) - maxBodyFiles; n > 0 {
		fmt.Fprintf(&b, "- and %d more files\n", n)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// summarize is the subject line of SuggestMessage.
func summarize(files []changes.File) string {
	verb := verbOf(files[0].Status)
	for _, f := range files[1:] {
		if verbOf(f.Status) != verb {
			verb = "Update"
			break
		}
	}
	if len(files) == 1 {
		if f := files[0]; f.Status == changes.Renamed {
			if s := fmt.Sprintf("Rename %s to %s", f.OldPath, f.Path); len(s) <= maxSubject {
				return s
			}
		} else if s := verb + " " + f.Path; len(s) <= maxSubject {
			return s
		}
	}
	if len(files) <= 3 {
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = path.Base(f.Path)
		}
		s := verb + " " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
		if len(names) == 1 {
			s = verb + " " + names[0]
		}
		if len(s) <= maxSubject {
			return s
		}
	}
	s := fmt.Sprintf("%s %d files", verb, len(files))
	if len(files) == 1 {
		s = verb + " 1 file"
	}
	if dir := commonDir(files); dir != "" {
		if in := s + " in " + dir; len(in) <= maxSubject {
			return in
		}
	}
	return s
}

// verbOf is the subject's verb for a file's change.
func verbOf(s changes.Status) string {
	switch s {
	case changes.Added:
		return "Add"
	case changes.Deleted:
		return "Delete"
	case changes.Renamed:
		return "Rename"
	}
	return "Update"
}

// commonDir is the deepest directory every file is in, "" for the top.
func commonDir(files []changes.File) string {
	dir := path.Dir(files[0].Path)
	for _, f := range files {
		for dir != "." && f.Path != dir && !strings.HasPrefix(f.Path, dir+"/") {
			dir = path.Dir(dir)
		}
	}
	if dir == "." {
		return ""
	}
	return dir
}
