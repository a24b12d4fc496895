package attachments

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// exclude makes sure the repository tree is in ignores Dir under tree,
// through the exclude file git reads for it (the common one for every
// worktree), with one anchored line added once. A tree in no repository,
// a git that is missing or refuses the repository, is left as it is: the
// files are stored all the same. The user's .gitignore is never touched.
func (s *Store) exclude(ctx context.Context, tree string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.GitTimeout)
	defer cancel()
	line, file, err := excludeLine(ctx, tree)
	if err != nil {
		if errors.Is(err, gitexec.ErrNotRepo) || errors.Is(err, gitexec.ErrNoGit) {
			log.Debug("attachments not excluded from git: no repository", "tree", tree, "err", err)
		} else {
			log.Warn("cannot keep the attachments out of git", "tree", tree, "err", err)
		}
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	added, err := addLine(file, line)
	if err != nil {
		log.Warn("cannot keep the attachments out of git", "file", file, "err", err)
		return
	}
	if added {
		log.Info("attachments excluded from git", "file", file, "line", line)
	}
}

// excludeLine returns the line that keeps Dir under tree out of git, and
// the exclude file git reads for tree's repository. The line is anchored
// at the repository's top: tree may be a folder inside it.
func excludeLine(ctx context.Context, tree string) (line, file string, err error) {
	out, err := gitexec.Run(ctx, tree, "rev-parse", "--show-prefix", "--git-path", "info/exclude")
	if err != nil {
		var ge *gitexec.Error
		if errors.As(err, &ge) && ge.Says("not a git repository") {
			return "", "", fmt.Errorf("find the exclude file: %w", gitexec.ErrNotRepo)
		}
		return "", "", fmt.Errorf("find the exclude file: %w", err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 2 || lines[1] == "" {
		return "", "", fmt.Errorf("find the exclude file: git rev-parse said %q", out)
	}
	prefix, file := lines[0], lines[1]
	if !filepath.IsAbs(file) {
		file = filepath.Join(tree, file)
	}
	return "/" + prefix + Dir + "/", file, nil
}

// addLine appends line to the file at name, making it (and its folder)
// if need be, unless a line of it is line already; it reports whether it
// added it.
func addLine(name, line string) (bool, error) {
	old, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("read the exclude file: %w", err)
	}
	for l := range strings.Lines(string(old)) {
		if strings.TrimSpace(l) == line {
			return false, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return false, fmt.Errorf("make the exclude file's folder: %w", err)
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return false, fmt.Errorf("open the exclude file: %w", err)
	}
	var b bytes.Buffer
	if len(old) > 0 && old[len(old)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(line + "\n")
	if _, err := f.Write(b.Bytes()); err != nil {
		_ = f.Close()
		return false, fmt.Errorf("write the exclude file: %w", err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("write the exclude file: %w", err)
	}
	return true, nil
}
