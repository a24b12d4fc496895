package sessions

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/worktree"
)

// WorktreesDir is the workspace directory that holds sessions' worktrees.
const WorktreesDir = ".worktrees"

// gitTimeout bounds the git commands of one request.
const gitTimeout = time.Minute

// sessionWorktree is the git worktree a session runs in, if it has one.
//
// Its mu is a leaf: taken alone or under the Session's mu, never while
// taking another lock. Changes that are announced are made under the
// Session's mu as well, which orders the announcements.
type sessionWorktree struct {
	// mu protects w.
	mu sync.Mutex
	// w is nil for a session without a worktree. It is replaced, never
	// changed in place, so a copy handed out stays as it was.
	w *Worktree
}

// get returns a copy of the worktree, or nil when the session has none.
func (t *sessionWorktree) get() *Worktree {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return nil
	}
	w := *t.w
	return &w
}

// isArchived reports whether the session's worktree was removed after its
// branch was merged.
func (t *sessionWorktree) isArchived() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.w != nil && t.w.Archived
}

// update changes the worktree with change, and reports whether the
// session has one to change.
func (t *sessionWorktree) update(change func(*Worktree)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return false
	}
	w := *t.w
	change(&w)
	t.w = &w
	return true
}

// addWorktree makes the worktree of a new session called name.
func (m *Manager) addWorktree(name, branch, base string) (worktree.Worktree, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	dir := filepath.Join(m.opts.Workspace, WorktreesDir, worktree.DirName(name))
	if err := m.checkWorktreeDir(dir); err != nil {
		return worktree.Worktree{}, "", err
	}
	// Read before the branch is made: what the workspace has checked out.
	origin, err := worktree.Origin(ctx, m.opts.Workspace)
	if base != "" {
		origin, err = base, nil // where the branch starts is what it branches off
	}
	if err != nil {
		m.log.Warn("cannot tell what the worktree branches off; its changes count from its own HEAD", "err", err)
		origin = ""
	}
	wt, err := worktree.AddFrom(ctx, m.opts.Workspace, dir, branch, base)
	if err != nil {
		return worktree.Worktree{}, "", worktreeError(err)
	}
	// Keep the worktrees out of the main tree's git status.
	if err := worktree.Exclude(ctx, m.opts.Workspace, "/"+WorktreesDir+"/"); err != nil {
		m.log.Warn("could not add .worktrees to .git/info/exclude", "err", err)
	}
	m.log.Info("worktree added", "path", wt.Path, "branch", wt.Branch, "new branch", wt.Created, "base", origin)
	return wt, origin, nil
}

// checkWorktreeDir refuses a worktree directory that is not, with every
// symbolic link on its way followed, inside the workspace's .worktrees. A
// repository can commit .worktrees as a link, which would send every
// checkout, and every removal, wherever it points.
func (m *Manager) checkWorktreeDir(dir string) error {
	refuse := func(format string, args ...any) error {
		return tagged{fmt.Errorf(format, args...), ErrWorktree}
	}
	parent := filepath.Join(m.opts.Workspace, WorktreesDir)
	fi, err := os.Lstat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist): // Add makes it
	case err != nil:
		return refuse("check %s: %w", parent, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(parent)
		return refuse("%s is a symbolic link (to %s); worktrees are made only in a real directory inside the workspace, so remove the link first", parent, target)
	case !fi.IsDir():
		return refuse("%s is not a directory; worktrees are made in it, so move it away first", parent)
	}
	realParent, err := realPath(parent)
	if err != nil {
		return refuse("resolve %s: %w", parent, err)
	}
	realWorkspace, err := filepath.EvalSymlinks(m.opts.Workspace)
	if err != nil {
		return refuse("resolve the workspace: %w", err)
	}
	real, err := realPath(dir)
	if err != nil {
		return refuse("resolve %s: %w", dir, err)
	}
	if realParent != filepath.Join(realWorkspace, WorktreesDir) || !isWithin(real, realParent) {
		return refuse("%s resolves to %s, outside the workspace's %s; a symbolic link on the way must go", dir, real, WorktreesDir)
	}
	return nil
}

// realPath is path with every symbolic link resolved, for a path that may
// not exist yet: its deepest existing ancestor is resolved and the rest
// appended.
func realPath(path string) (string, error) {
	existing, rest := filepath.Clean(path), ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, rest), nil
}

// isWithin reports whether path is dir or lies under it; both are clean.
func isWithin(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// rollbackWorktree takes back the worktree of a session that did not
// start, and the branch when it was made for it.
func (m *Manager) rollbackWorktree(wt worktree.Worktree) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if err := worktree.Remove(ctx, wt.Path, true); err != nil {
		m.log.Error("remove the worktree of a session that did not start", "path", wt.Path, "err", err)
		return
	}
	// .worktrees too, if this was its only worktree; a directory with
	// others in it stays (removing a non-empty directory fails).
	_ = os.Remove(filepath.Dir(wt.Path))
	if wt.Created {
		if err := worktree.DeleteBranch(ctx, m.opts.Workspace, wt.Branch); err != nil {
			m.log.Error("delete the branch made for a session that did not start", "branch", wt.Branch, "err", err)
		}
	}
}

// DestroyWithWorktree destroys the session and removes its git worktree,
// never its branch. A worktree with uncommitted changes refuses it all
// with ErrWorktreeDirty, the session untouched, unless force.
func (m *Manager) DestroyWithWorktree(ctx context.Context, id string, force bool) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	wt := s.Info().Worktree
	if wt == nil {
		return fmt.Errorf("%w: session %s has no worktree", ErrInvalid, id)
	}
	return m.endInWorktree(ctx, s, wt, force, "session destroyed", func() error { return m.Destroy(ctx, id) })
}

// endInWorktree ends a session's work in its worktree wt: it checks the
// worktree may go (where it should be and, unless force, with nothing
// uncommitted, so that a refusal leaves the agent running), runs end
// (which stops the agent), then removes the worktree, never its branch.
// ended says what end did, for an error that comes after it.
func (m *Manager) endInWorktree(ctx context.Context, s *Session, wt *Worktree, force bool, ended string, end func() error) error {
	// The link may have appeared since the worktree was made; removing
	// through it would delete outside the workspace.
	if err := m.checkWorktreeDir(wt.Path); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	if !force {
		if err := worktree.CheckClean(gctx, wt.Path); err != nil {
			return worktreeError(err)
		}
	}
	// Its run script runs in the worktree: it goes first.
	if run := m.runOf(s.id); run != nil {
		if err := m.destroy(ctx, run.id); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("stop the session's run: %w", err)
		}
	}
	// Read while the session is listed: end may destroy it.
	env, envErr := m.ScriptEnv(s.id)
	if err := end(); err != nil {
		return err
	}
	if m.opts.Archive != nil && envErr == nil {
		m.archiveScript(ctx, s, wt.Path, env)
	}
	// The agent may have written more while it stopped; that still counts.
	if err := worktree.Remove(gctx, wt.Path, force); err != nil {
		return fmt.Errorf("%s, but its worktree was kept: %w", ended, worktreeError(err))
	}
	s.log.Info("worktree removed", "path", wt.Path, "branch kept", wt.Branch)
	return nil
}

// ArchiveLimit bounds the archive script: the archive or delete request
// waits for it, and the listener gives an answer 2 minutes.
const ArchiveLimit = 90 * time.Second

// archiveScript runs the archive script in the worktree at dir, whose
// session's agent has stopped, and keeps its run with the session (an
// archived one stays listed with it; a destroyed one's is logged).
func (m *Manager) archiveScript(ctx context.Context, s *Session, dir string, env []string) {
	r, ran := m.opts.Archive(ctx, s.id, dir, env)
	if !ran {
		return
	}
	log := s.log.With("status", r.Status, "exitCode", r.ExitCode, "took", time.Duration(r.DurationMs)*time.Millisecond)
	if r.Status == scripts.Passed {
		log.Info("archive script ran")
	} else {
		log.Warn("archive script failed; the worktree is removed all the same", "output", r.Output)
	}
	s.mu.Lock()
	s.archive = &r
	s.mu.Unlock()
}

// MarkMerged records that the session's branch, at tip, was merged into
// its base, which is now at commit; it is kept across restarts.
func (m *Manager) MarkMerged(id, commit, tip string) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.wt.update(func(w *Worktree) { w.Merged, w.MergedTip = commit, tip }) {
		return fmt.Errorf("%w: session %s has no worktree", ErrInvalid, id)
	}
	s.emit(Event{Kind: EventUpdated, Session: s.infoLocked()})
	return nil
}

// Archive ends a merged session's work: it stops the agent, removes the
// worktree (never the branch) and keeps the session listed as archived,
// which cannot be resumed. A worktree with uncommitted changes refuses it
// all with ErrWorktreeDirty, the agent left running.
func (m *Manager) Archive(ctx context.Context, id string) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	wt := s.Info().Worktree
	switch {
	case wt == nil:
		return fmt.Errorf("%w: session %s has no worktree", ErrInvalid, id)
	case wt.Archived:
		return fmt.Errorf("%w: session %s is archived already", ErrInvalid, id)
	}
	stop := func() error {
		if err := s.stop(ctx, m.opts.StopGrace); err != nil {
			return fmt.Errorf("archive session: %w", err)
		}
		return nil
	}
	if err := m.endInWorktree(ctx, s, wt, false, "session stopped", stop); err != nil {
		return err
	}
	s.mu.Lock()
	s.wt.update(func(w *Worktree) { w.Archived = true })
	s.det.explain("archived")
	// An archived session cannot be resumed: its ports go back.
	s.ports = Ports{}
	m.ports.release(s.id)
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
	s.mu.Unlock()
	s.log.Info("session archived")
	m.durable()
	return nil
}

func worktreeError(err error) error {
	if errors.Is(err, worktree.ErrNestedRepo) {
		return tagged{fmt.Errorf("%w. Keep what they hold elsewhere, or remove the worktree with force", err), ErrWorktreeDirty}
	}
	if errors.Is(err, worktree.ErrDirty) {
		return tagged{fmt.Errorf("%w. Commit or stash them, or remove the worktree with force", err), ErrWorktreeDirty}
	}
	return tagged{err, ErrWorktree}
}

// tagged is err, which says it all, marked as of kind for errors.Is.
type tagged struct{ err, kind error }

func (t tagged) Error() string   { return t.err.Error() }
func (t tagged) Unwrap() []error { return []error{t.err, t.kind} }
