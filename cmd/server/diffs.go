package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// Timing of the live change summaries.
const (
	// diffQuiet is how long a tree's files must be quiet before its
	// summary is made again, as for workflow files: a burst of writes is
	// one update.
	diffQuiet = 500 * time.Millisecond
	// diffMaxWait bounds how long writes that never pause hold the
	// summary back.
	diffMaxWait = 1 * time.Second
	// diffBasePoll is how often each tree's base is looked at: a commit or
	// a checkout moves it without a write the watchers see.
	diffBasePoll = 5 * time.Second
)

// diffSink is what sessionDiffs tells: the hub.
type diffSink interface {
	OnSessionDiff(sessionID string, s changes.Summarized)
}

// sessionDiffs keeps what every session changed in its working tree up to
// date and tells clients (session.diff). Sessions in the same tree share
// one tracker. One goroutine, run, owns the trackers and runs git; the
// watchers and the manager only hand it paths and sessions under mu, so
// none of them waits for git.
type sessionDiffs struct {
	log  *slog.Logger
	sink diffSink
	// workspace, as the watchers name it, and its real path, as git does.
	workspace, realWorkspace string

	// mu guards the fields below; wake (cap 1) tells run something came.
	mu      sync.Mutex
	added   []sessions.Info
	removed []string
	changed []string // absolute paths written since run last looked
	wake    chan struct{}
}

func newSessionDiffs(sink diffSink, workspace string, log *slog.Logger) *sessionDiffs {
	real, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		real = workspace
	}
	return &sessionDiffs{sink: sink, log: log, workspace: workspace, realWorkspace: real, wake: make(chan struct{}, 1)}
}

func (d *sessionDiffs) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// onEvent follows the manager's sessions. It must not block.
func (d *sessionDiffs) onEvent(ev sessions.Event) {
	switch ev.Kind {
	case sessions.EventCreated:
		d.add(ev.Session)
	case sessions.EventDestroyed:
		d.mu.Lock()
		d.removed = append(d.removed, ev.Session.ID)
		d.mu.Unlock()
		d.poke()
	}
}

// add starts following a session's tree.
func (d *sessionDiffs) add(info sessions.Info) {
	d.mu.Lock()
	d.added = append(d.added, info)
	d.mu.Unlock()
	d.poke()
}

// onFile notes a write under some tree. It must not block.
func (d *sessionDiffs) onFile(abs string) {
	if rest, ok := strings.CutPrefix(abs, d.workspace); ok && d.realWorkspace != d.workspace {
		abs = d.realWorkspace + rest
	}
	d.mu.Lock()
	// A flood of writes (a checkout) is one full update anyway: past the
	// bound, the list is dropped and every tree is diffed whole.
	if d.changed != nil && len(d.changed) > maxDiffPaths {
		d.mu.Unlock()
		return
	}
	d.changed = append(d.changed, abs)
	d.mu.Unlock()
	d.poke()
}

// maxDiffPaths bounds the writes remembered between two looks.
const maxDiffPaths = 4096

// tree is one working tree and the sessions that work in it.
type tree struct {
	tracker  *changes.Tracker
	sessions map[string]bool
	pending  map[string]bool // paths relative to the top, changed since the last update
	full     bool            // the next update diffs the whole tree
	first    time.Time       // when the oldest pending change came
	last     time.Time       // when the newest did
	sent     changes.Summarized
}

// run keeps the summaries until ctx ends.
func (d *sessionDiffs) run(ctx context.Context) {
	trees := map[string]*tree{} // by top and base
	bySession := map[string]string{}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	poll := time.NewTicker(diffBasePoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		case <-poll.C:
			for _, t := range trees {
				if moved, err := t.tracker.BaseMoved(ctx); err == nil && moved {
					t.full = true
					t.first, t.last = time.Time{}, time.Time{}
				}
			}
		}
		d.mu.Lock()
		added, removed, changed := d.added, d.removed, d.changed
		d.added, d.removed, d.changed = nil, nil, nil
		d.mu.Unlock()
		now := time.Now()

		for _, id := range removed {
			key, ok := bySession[id]
			if !ok {
				continue
			}
			delete(bySession, id)
			delete(trees[key].sessions, id)
			if len(trees[key].sessions) == 0 {
				delete(trees, key)
			}
		}
		for _, info := range added {
			top, from, err := sessionTree(ctx, info)
			if err != nil {
				// No repository, or no git: nothing to compare with, and
				// nothing wrong either.
				level := slog.LevelWarn
				if errors.Is(err, changes.ErrNotRepository) || errors.Is(err, gitexec.ErrNoGit) || ctx.Err() != nil {
					level = slog.LevelDebug
				}
				d.log.Log(ctx, level, "cannot follow the session's changes", "session", info.ID, "err", err)
				continue
			}
			key := top + "\x00" + from
			t := trees[key]
			if t == nil {
				t = &tree{tracker: changes.NewTracker(top, from), sessions: map[string]bool{}, full: true}
				trees[key] = t
			} else {
				// The newcomer has heard nothing yet.
				d.sink.OnSessionDiff(info.ID, t.sent)
			}
			t.sessions[info.ID] = true
			bySession[info.ID] = key
		}
		for _, abs := range changed {
			if t, rel := innermost(trees, abs); t != nil {
				if t.pending == nil {
					t.pending = map[string]bool{}
				}
				t.pending[rel] = true
				if t.first.IsZero() {
					t.first = now
				}
				t.last = now
			}
		}
		if len(changed) > maxDiffPaths {
			for _, t := range trees {
				t.full = true
			}
		}

		// Update the trees that are due; wait for the next one.
		next := time.Duration(-1)
		for _, t := range trees {
			due := t.full && t.first.IsZero()
			if !t.first.IsZero() {
				at := t.last.Add(diffQuiet)
				if limit := t.first.Add(diffMaxWait); limit.Before(at) {
					at = limit
				}
				if wait := at.Sub(now); wait > 0 {
					if next < 0 || wait < next {
						next = wait
					}
				} else {
					due = true
				}
			}
			if due {
				d.update(ctx, t)
			}
		}
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// update makes a tree's summary again and tells its sessions when it
// changed.
func (d *sessionDiffs) update(ctx context.Context, t *tree) {
	var paths []string
	if !t.full {
		for p := range t.pending {
			paths = append(paths, p)
		}
	}
	t.pending, t.full, t.first, t.last = nil, false, time.Time{}, time.Time{}
	s, err := t.tracker.Update(ctx, paths)
	if err != nil {
		if ctx.Err() == nil {
			d.log.Warn("cannot summarize a session's changes", "tree", t.tracker.Dir(), "err", err)
		}
		return
	}
	if reflect.DeepEqual(s, t.sent) && t.sent.Base != "" {
		return
	}
	t.sent = s
	for id := range t.sessions {
		d.sink.OnSessionDiff(id, s)
	}
}

// innermost returns the tree that holds abs, the deepest when trees nest
// (a worktree inside the workspace), and abs relative to its top.
func innermost(trees map[string]*tree, abs string) (*tree, string) {
	var (
		best *tree
		rel  string
	)
	for _, t := range trees {
		top := t.tracker.Dir()
		if abs != top && !strings.HasPrefix(abs, top+string(filepath.Separator)) {
			continue
		}
		if best == nil || len(top) > len(best.tracker.Dir()) {
			r, err := filepath.Rel(top, abs)
			if err != nil {
				continue
			}
			best, rel = t, filepath.ToSlash(r)
		}
	}
	return best, rel
}

// sessionTree returns the top of the tree a session works in and what its
// changes are counted from: for a worktree session, where its branch left
// the branch it was made from; otherwise HEAD.
func sessionTree(ctx context.Context, info sessions.Info) (top, from string, err error) {
	dir := info.Cwd
	if info.Worktree != nil {
		dir, from = info.Worktree.Path, info.Worktree.Base
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	top, err = changes.Top(ctx, dir)
	if err != nil {
		return "", "", err
	}
	// The watchers report real paths; so must the top.
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	return top, from, nil
}

// getDiff serves what a session changed in its tree, with patches:
// GET /api/sessions/:id/diff[?path=<file>].
func (s *server) getDiff(c echo.Context) error {
	sess, err := s.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	var paths []string
	if p := c.QueryParam("path"); p != "" {
		clean := path.Clean(p)
		if strings.ContainsRune(p, 0) || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage,
				fmt.Sprintf("path %q: want a file of the session's tree, relative to its top, as the diff lists it", clip(p)))
		}
		paths = []string{clean}
	}
	info := sess.Info()
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Minute)
	defer cancel()
	top, from, err := sessionTree(ctx, info)
	if errors.Is(err, changes.ErrNotRepository) {
		return errorJSON(c, http.StatusConflict, wire.CodeNotARepository,
			fmt.Sprintf("the session works in %s, which is not inside a git repository: there is nothing to compare its files with", info.Cwd))
	}
	if err != nil {
		return diffError(c, "find the session's tree", err)
	}
	base, err := changes.Base(ctx, top, from)
	if err != nil {
		return diffError(c, "find the session's base", err)
	}
	d, err := changes.Patches(ctx, top, base, paths, changes.DefaultLimits)
	if err != nil {
		return diffError(c, "diff the session's tree", err)
	}
	return c.JSON(http.StatusOK, d)
}

// diffError answers a diff whose step failed: 409 when git refused the
// repository for its owner, which its message explains to the user, else
// 500.
func diffError(c echo.Context, step string, err error) error {
	if errors.Is(err, gitexec.ErrUntrusted) {
		return errorJSON(c, http.StatusConflict, wire.CodeUntrustedRepository, err.Error())
	}
	return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, step+": "+err.Error())
}
