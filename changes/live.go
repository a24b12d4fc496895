package changes

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// Defaults of LiveOptions' timing.
const (
	// DefaultQuiet is how long a tree's files must be quiet before its
	// summary is made again, as for workflow files: a burst of writes is
	// one update.
	DefaultQuiet = 500 * time.Millisecond
	// DefaultMaxWait bounds how long writes that never pause hold the
	// summary back.
	DefaultMaxWait = 1 * time.Second
	// DefaultBasePoll is how often each tree's base is looked at: a
	// commit or a checkout moves it without a write the watchers see.
	DefaultBasePoll = 5 * time.Second
)

// topTimeout bounds finding a session's tree: rev-parse answers at once
// unless the file system hangs, and Run must not hang with it.
const topTimeout = 10 * time.Second

// maxChanged bounds the writes remembered between two looks of Run. A
// flood of writes (a checkout) is one full update anyway: past the bound,
// the list is cut short and every tree is diffed whole.
const maxChanged = 4096

// LiveOptions configure a Live. Zero durations take the defaults.
type LiveOptions struct {
	// Notify is told a session's summary each time it changes, and once
	// at once when the session joins a tree that is already followed. It
	// is called from Run's goroutine, which it holds up, so it must not
	// block. Nil tells nobody.
	Notify func(sessionID string, s Summarized)
	// Overlaps is told the overlaps between sessions' changes each time
	// they change (the whole list, empty when none): sessions in
	// different trees of one repository that change the same file. It is
	// called from Run's goroutine, like Notify, and must not block. Nil
	// computes none.
	Overlaps func([]Overlap)
	// Workspace is the directory the paths given to Changed are under, as
	// the file watchers name it. When it is reached through a symbolic
	// link, paths under it are mapped to its real path, which is how git
	// names trees. Empty takes paths as given.
	Workspace string
	// Quiet is DefaultQuiet's setting; MaxWait DefaultMaxWait's and
	// BasePoll DefaultBasePoll's.
	Quiet, MaxWait, BasePoll time.Duration
	// Logger receives what goes wrong; nil discards it.
	Logger *slog.Logger
}

// Live keeps what each session changed in its working tree up to date
// and tells Notify. Sessions in the same tree, counted from the same base,
// share one Tracker, so a write is diffed once however many sessions see
// it.
//
// One goroutine, Run, owns the trees and is the only one that runs git.
// Follow, Forget and Changed only hand it sessions and paths, so neither
// the session manager's events nor the file watchers wait for git.
type Live struct {
	notify                   func(sessionID string, s Summarized)
	onOverlaps               func([]Overlap)
	log                      *slog.Logger
	quiet, maxWait, basePoll time.Duration
	// workspace, as the watchers name it, and its real path, as git does.
	workspace, realWorkspace string

	// mu guards in; wake (cap 1) tells Run that something came.
	mu   sync.Mutex
	in   inbox
	wake chan struct{}
}

// inbox is what Follow, Forget and Changed handed Run since it last
// looked.
type inbox struct {
	added   []follow
	removed []string
	changed []string // absolute paths, real ones under the workspace
}

// follow is a session to follow: the directory it works in and what its
// changes count from.
type follow struct {
	id, dir string
	from    []string
}

// NewLive returns a Live that follows nothing yet; Run does the work.
func NewLive(opts LiveOptions) *Live {
	l := &Live{
		notify:     opts.Notify,
		onOverlaps: opts.Overlaps,
		log:        opts.Logger,
		quiet:      orDefault(opts.Quiet, DefaultQuiet),
		maxWait:    orDefault(opts.MaxWait, DefaultMaxWait),
		basePoll:   orDefault(opts.BasePoll, DefaultBasePoll),
		workspace:  opts.Workspace,
		wake:       make(chan struct{}, 1),
	}
	if l.notify == nil {
		l.notify = func(string, Summarized) {}
	}
	if l.log == nil {
		l.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l.realWorkspace = opts.Workspace
	if real, err := filepath.EvalSymlinks(opts.Workspace); err == nil && opts.Workspace != "" {
		l.realWorkspace = real
	}
	return l
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Follow starts following the tree that holds dir for a session, or
// follows it anew when what its changes count from changed (a merge). Its
// changes count from Base's commit for from: where the tree's HEAD left
// from (a branch or commit, and the branch's merged tip once merged), or
// HEAD itself when from is empty. It does not block: Run finds the tree,
// and says at debug level when there is none (no repository, no git),
// which is nothing wrong.
func (l *Live) Follow(sessionID, dir string, from ...string) {
	l.mu.Lock()
	l.in.added = append(l.in.added, follow{id: sessionID, dir: dir, from: from})
	l.mu.Unlock()
	l.poke()
}

// Forget stops following a session's tree. It does not block.
func (l *Live) Forget(sessionID string) {
	l.mu.Lock()
	l.in.removed = append(l.in.removed, sessionID)
	l.mu.Unlock()
	l.poke()
}

// Changed notes a write to path (absolute, as a file watcher reports it)
// in whichever tree holds it. It does not block.
func (l *Live) Changed(path string) {
	path = l.real(path)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.in.changed) > maxChanged {
		return // cut short: Run diffs every tree whole
	}
	l.in.changed = append(l.in.changed, path)
	l.poke()
}

// real maps a path under the workspace, as the watchers name it, to the
// same path under the workspace's real path.
func (l *Live) real(path string) string {
	if l.realWorkspace == l.workspace {
		return path
	}
	rest, ok := strings.CutPrefix(path, l.workspace)
	if !ok || (rest != "" && rest[0] != filepath.Separator) {
		return path // not under it: a sibling whose name starts alike
	}
	return l.realWorkspace + rest
}

func (l *Live) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take empties the inbox.
func (l *Live) take() inbox {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.in
	l.in = inbox{}
	return in
}

// Run keeps the summaries until ctx ends. Each time something comes (or
// a tree's wait ends, or the base poll ticks) it takes what the other
// goroutines handed it, applies it to the trees, and updates the trees
// that are due.
func (l *Live) Run(ctx context.Context) {
	ts := trees{byKey: map[string]*tree{}, bySession: map[string]string{}}
	var told []Overlap // the overlaps last told
	// Armed only while an update waits for its tree's writes to pause.
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	poll := time.NewTicker(l.basePoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wake:
		case <-timer.C:
		case <-poll.C:
			ts.checkBases(ctx)
		}
		now := time.Now()
		l.apply(ctx, &ts, l.take(), now)
		next, ok := l.updateDue(ctx, &ts, now)
		if ts.overlapsStale && l.onOverlaps != nil && ctx.Err() == nil {
			ts.overlapsStale = false
			if o := l.overlaps(ctx, &ts); !reflect.DeepEqual(o, told) {
				told = o
				l.onOverlaps(slices.Clone(o))
			}
		}
		if ok {
			timer.Reset(next)
		}
	}
}

// apply brings the trees up to date with what came since the last look:
// sessions followed and forgotten, files written.
func (l *Live) apply(ctx context.Context, ts *trees, in inbox, now time.Time) {
	// Follow before forgetting: a session made and destroyed since the
	// last look is in both lists, and must not stay followed.
	for _, f := range in.added {
		l.follow(ctx, ts, f)
	}
	ts.forget(in.removed)
	ts.note(in.changed, now)
}

// trees is Run's own state: the trees followed, by top and base branch,
// and which one each session works in.
type trees struct {
	byKey     map[string]*tree
	bySession map[string]string
	// overlapsStale says the overlaps must be computed again: a summary
	// changed, or a session came or went.
	overlapsStale bool
}

// tree is one working tree and the sessions that work in it.
type tree struct {
	tracker  *Tracker
	sessions map[string]bool
	pending  map[string]bool // paths relative to the top, changed since the last update
	full     bool            // the next update diffs the whole tree
	first    time.Time       // when the oldest pending change came
	last     time.Time       // when the newest did
	sent     Summarized
	// repo is the real path of the repository's common directory, which
	// the worktrees of one repository share; "" when unknown.
	repo string
	// hunks caches, by path, the hunks of files another tree changes too
	// (overlaps), as of sent; an update drops what it diffed again.
	hunks map[string]*fileHunks
}

// follow finds a session's tree and adds the session to it, making the
// tree when it is the first.
func (l *Live) follow(ctx context.Context, ts *trees, f follow) {
	top, err := realTop(ctx, f.dir)
	if err != nil {
		// No repository, or no git: nothing to compare with, and nothing
		// wrong either.
		level := slog.LevelWarn
		if errors.Is(err, gitexec.ErrNotRepo) || errors.Is(err, gitexec.ErrNoGit) || ctx.Err() != nil {
			level = slog.LevelDebug
		}
		l.log.Log(ctx, level, "cannot follow the session's changes", "session", f.id, "err", err)
		return
	}
	key := top + "\x00" + strings.Join(f.from, "\x00")
	if old, ok := ts.bySession[f.id]; ok {
		if old == key {
			return
		}
		ts.forget([]string{f.id})
	}
	t := ts.byKey[key]
	if t == nil {
		t = &tree{tracker: NewTracker(top, f.from...), sessions: map[string]bool{}, full: true}
		if l.onOverlaps != nil {
			if t.repo, err = repoOf(ctx, top); err != nil {
				l.log.Debug("no overlaps for the session's tree", "session", f.id, "err", err)
			}
		}
		ts.byKey[key] = t
	} else if t.sent.Base != "" {
		// The newcomer has heard nothing yet. (Before the tree's first
		// summary there is nothing to tell: that summary goes to every
		// session of the tree, the newcomer included.)
		l.notify(f.id, t.sent)
	}
	t.sessions[f.id] = true
	ts.bySession[f.id] = key
	ts.overlapsStale = true
}

// realTop returns the top of the tree that holds dir with symbolic links
// resolved: the watchers report real paths, so the top must be one.
func realTop(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, topTimeout)
	defer cancel()
	top, err := Top(ctx, dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(top); err == nil {
		top = real
	}
	return top, nil
}

// forget takes sessions out of their trees, and a tree left with none
// out of the trees.
func (ts *trees) forget(ids []string) {
	for _, id := range ids {
		key, ok := ts.bySession[id]
		if !ok {
			continue
		}
		delete(ts.bySession, id)
		ts.overlapsStale = true
		t := ts.byKey[key]
		delete(t.sessions, id)
		if len(t.sessions) == 0 {
			delete(ts.byKey, key)
		}
	}
}

// note marks each written path pending in the tree that holds it.
func (ts *trees) note(changed []string, now time.Time) {
	for _, abs := range changed {
		if t, rel := ts.innermost(abs); t != nil {
			t.touch(rel, now)
		}
	}
	if len(changed) > maxChanged {
		// Changed cut the list short: what it left out may be anywhere.
		for _, t := range ts.byKey {
			t.full = true
		}
	}
}

// innermost returns the tree that holds abs, the deepest when trees nest
// (a worktree inside the workspace), and abs relative to its top.
func (ts *trees) innermost(abs string) (*tree, string) {
	var (
		best *tree
		rel  string
	)
	for _, t := range ts.byKey {
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

// checkBases marks for a full update, due at once, every tree whose base
// moved.
func (ts *trees) checkBases(ctx context.Context) {
	for _, t := range ts.byKey {
		if moved, err := t.tracker.BaseMoved(ctx); err == nil && moved {
			t.full = true
			t.first, t.last = time.Time{}, time.Time{}
		}
	}
}

// touch notes a write to rel, a path relative to the tree's top.
func (t *tree) touch(rel string, now time.Time) {
	if t.pending == nil {
		t.pending = map[string]bool{}
	}
	t.pending[rel] = true
	if t.first.IsZero() {
		t.first = now
	}
	t.last = now
}

// dueIn reports whether the tree has an update pending and how long
// until it is due: a full one with no write to wait out is due at once;
// otherwise the update waits until the writes have been quiet for quiet,
// or until maxWait after the first, whichever is sooner.
func (t *tree) dueIn(now time.Time, quiet, maxWait time.Duration) (time.Duration, bool) {
	if t.first.IsZero() {
		return 0, t.full
	}
	at := t.last.Add(quiet)
	if limit := t.first.Add(maxWait); limit.Before(at) {
		at = limit
	}
	return at.Sub(now), true
}

// updateDue updates the trees that are due and returns how long until
// the next one is; ok is false when no update is pending.
func (l *Live) updateDue(ctx context.Context, ts *trees, now time.Time) (next time.Duration, ok bool) {
	for _, t := range ts.byKey {
		wait, pending := t.dueIn(now, l.quiet, l.maxWait)
		switch {
		case !pending:
		case wait <= 0:
			if l.update(ctx, t) {
				ts.overlapsStale = true
			}
		case !ok || wait < next:
			next, ok = wait, true
		}
	}
	return next, ok
}

// update makes a tree's summary again and tells its sessions when it
// changed. It reports whether what overlaps compare may have changed:
// the summary, or the lines of a file whose hunks were cached (an edit
// that moves a change keeps its counts).
func (l *Live) update(ctx context.Context, t *tree) (overlapsStale bool) {
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
			l.log.Warn("cannot summarize a session's changes", "tree", t.tracker.Dir(), "err", err)
		}
		return false
	}
	if len(paths) == 0 || s.Base != t.sent.Base {
		overlapsStale = len(t.hunks) > 0
		t.hunks = nil
	}
	for p := range t.hunks {
		if slicesContainsUnder(paths, p) {
			delete(t.hunks, p)
			overlapsStale = true
		}
	}
	if reflect.DeepEqual(s, t.sent) && t.sent.Base != "" {
		return overlapsStale
	}
	t.sent = s
	for id := range t.sessions {
		l.notify(id, s)
	}
	return true
}
