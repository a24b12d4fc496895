package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// gitlink is the mode of a submodule's entry: a commit, not a file.
const gitlink = "160000"

// Restore puts the files of the tree that holds dir back as session's
// checkpoint id has them, and returns the checkpoint it took first, of
// the files as they were, which restoring undoes this (its ID is an
// earlier one's when the tree was as that one has it). Files changed or
// deleted since come back, with their modes; files made since, tracked
// or untracked, are removed, and directories they leave empty with them.
// Ignored files are left alone, and so are HEAD, the index, the stash,
// submodules and other nested repositories, and the untracked files
// that checkpoint left out as too big: not in it, they are neither
// removed nor overwritten. Only files that differ are written.
//
// A file to write where an ignored file or directory, or a file left out
// as too big, now stands, or below one, is left out rather than have
// that overwritten or removed; so is a file to remove below a symbolic
// link. The rest is restored, and the error then says which were left
// out. The checkpoint taken first (with opts) can push the one restored
// out of the keep bound; it is restored all the same.
func Restore(ctx context.Context, dir, session string, id int, opts Options) (Checkpoint, error) {
	if err := checkSession(session); err != nil {
		return Checkpoint{}, err
	}
	r, err := open(ctx, dir)
	if err != nil {
		return Checkpoint{}, err
	}
	target, err := r.find(ctx, session, id)
	if err != nil {
		return Checkpoint{}, err
	}
	saved, _, err := r.take(ctx, session, opts)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint the files before restoring checkpoint %d: %w", id, err)
	}
	write, added, remove, err := r.differences(ctx, saved.Commit, target.commit)
	if err != nil {
		return saved, err
	}
	var left []string
	for _, p := range remove {
		if err := r.remove(p); errors.Is(err, errInTheWay) {
			left = append(left, p)
		} else if err != nil {
			return saved, fmt.Errorf("restore checkpoint %d (checkpoint %d has the files as they were): %w", id, saved.ID, err)
		}
	}
	var writable []string
	for _, p := range write {
		if r.blocked(p, added[p]) {
			left = append(left, p)
		} else {
			writable = append(writable, p)
		}
	}
	if err := r.checkout(ctx, target.tree, writable); err != nil {
		return saved, fmt.Errorf("restore checkpoint %d (checkpoint %d has the files as they were): %w", id, saved.ID, err)
	}
	if len(left) > 0 {
		return saved, fmt.Errorf("restored checkpoint %d but for %s, where an ignored file, a file too big for checkpoints, or a symbolic link is in the way (checkpoint %d has the files as they were)",
			id, clip.List(left), saved.ID)
	}
	return saved, nil
}

// differences returns the paths whose files differ from commit from to
// commit to: those to write, as to has them, with those from lacks
// marked added, and those to remove, which to lacks. Submodules are left
// out.
func (r *repo) differences(ctx context.Context, from, to string) (write []string, added map[string]bool, remove []string, err error) {
	// ":oldmode newmode oldid newid status", then the path.
	out, err := r.git(ctx, nil, nil, "diff-tree", "-r", "-z", "--no-renames", from, to)
	if err != nil {
		return nil, nil, nil, gitexec.Step(err, nil, "compare the files with the checkpoint")
	}
	added = map[string]bool{}
	tok := strings.Split(out, "\x00")
	for i := 0; i+1 < len(tok); i += 2 {
		h := strings.Fields(strings.TrimPrefix(tok[i], ":"))
		if len(h) != 5 {
			return nil, nil, nil, fmt.Errorf("compare the files with the checkpoint: git diff-tree said %q", tok[i])
		}
		if h[0] == gitlink || h[1] == gitlink {
			continue
		}
		switch p := tok[i+1]; h[4] {
		case "D":
			remove = append(remove, p)
		case "A":
			added[p] = true
			write = append(write, p)
		default: // M, T
			write = append(write, p)
		}
	}
	return write, added, remove, nil
}

// errInTheWay means a path's directory is a symbolic link now.
var errInTheWay = errors.New("a symbolic link is in the way")

// remove removes the file at p (relative to the top, with forward
// slashes) and the directories it leaves empty, never through a
// symbolic link on the way, which could lead out of the tree.
func (r *repo) remove(p string) error {
	parts := strings.Split(p, "/")
	dir := r.top
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone already
		}
		if err != nil {
			return fmt.Errorf("remove %s: %w", p, err)
		}
		if !fi.IsDir() {
			return errInTheWay
		}
	}
	full := filepath.Join(r.top, filepath.FromSlash(p))
	if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
		// A directory where the checkpoint taken just now has a file: the
		// agent made one since, which is not this restore's to remove.
		return errInTheWay
	}
	if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	for d := filepath.Dir(full); d != r.top && len(d) > len(r.top); d = filepath.Dir(d) {
		if os.Remove(d) != nil {
			break // not empty: it holds something else, ignored files perhaps
		}
	}
	return nil
}

// blocked reports whether writing the file at p would first remove or
// overwrite something that is in neither checkpoint, an ignored file
// most likely: a directory at p, anything at all at p when the
// checkpoint taken just now lacks it (added), or a file or symbolic link
// where a directory on its way should be.
func (r *repo) blocked(p string, added bool) bool {
	parts := strings.Split(p, "/")
	dir := r.top
	for _, part := range parts[:len(parts)-1] {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return false // git makes the rest
		}
		if err != nil || !fi.IsDir() {
			return true
		}
	}
	fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p)))
	return err == nil && (fi.IsDir() || added)
}

// checkout writes paths as tree has them, over what is there, through a
// temporary index holding tree; the real index is not touched.
func (r *repo) checkout(ctx context.Context, tree string, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	env, done, err := r.tempIndex(ctx, tree)
	if err != nil {
		return err
	}
	defer done()
	in := strings.Join(paths, "\x00") + "\x00"
	if _, err := r.git(ctx, env, []byte(in), "checkout-index", "--force", "-z", "--stdin"); err != nil {
		return gitexec.Step(err, nil, "write %d files back", len(paths))
	}
	return nil
}
