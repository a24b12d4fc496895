package checkpoint

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// autoTimeout bounds one checkpoint taken in the background.
const autoTimeout = time.Minute

// Auto takes checkpoints in the background when asked to, one at a time,
// so sessions ending their turns together do not run git side by side. A
// session asked for again before its turn comes is taken once. Its
// methods are safe for concurrent use; Run is its one goroutine.
type Auto struct {
	// Opts bound what each checkpoint keeps and how many are kept.
	Opts Options
	// Taken is told of each checkpoint made (not of a tree unchanged
	// since the last), of the tree at dir as it was from began, when the
	// snapshot started; it runs in Run's goroutine. Optional.
	Taken func(session, dir string, cp Checkpoint, began time.Time)
	// Log receives failures, with the session id.
	Log *slog.Logger

	// mu protects pending: by session, what to do and where, in the
	// order asked for (order).
	mu      sync.Mutex
	pending map[string]job
	order   []string
	wake    chan struct{}
}

// job is what Auto does next for one session: snapshot the tree at dir,
// or, once the session is gone, delete its checkpoints from the
// repository at dir.
type job struct {
	dir  string
	drop bool
}

// NewAuto returns an Auto that takes checkpoints with opts and reports
// to log; start its Run.
func NewAuto(opts Options, taken func(session, dir string, cp Checkpoint, began time.Time), log *slog.Logger) *Auto {
	return &Auto{Opts: opts, Taken: taken, Log: log, pending: make(map[string]job), wake: make(chan struct{}, 1)}
}

// Request asks for a checkpoint of the tree at dir for session. It never
// blocks.
func (a *Auto) Request(session, dir string) { a.add(session, job{dir: dir}) }

// Drop deletes a session that is gone's checkpoints from the repository
// at dir (any work tree of it), in place of what was asked for it. It
// never blocks.
func (a *Auto) Drop(session, dir string) { a.add(session, job{dir: dir, drop: true}) }

func (a *Auto) add(session string, j job) {
	a.mu.Lock()
	if _, ok := a.pending[session]; !ok {
		a.order = append(a.order, session)
	}
	a.pending[session] = j
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run takes the requested checkpoints until ctx ends; one in progress
// then stops with it.
func (a *Auto) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		for {
			session, j, ok := a.next()
			if !ok {
				break
			}
			a.do(ctx, session, j)
		}
	}
}

// next takes the oldest request off the list.
func (a *Auto) next() (session string, j job, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.order) == 0 {
		return "", job{}, false
	}
	session, a.order = a.order[0], a.order[1:]
	j = a.pending[session]
	delete(a.pending, session)
	return session, j, true
}

func (a *Auto) do(ctx context.Context, session string, j job) {
	tctx, cancel := context.WithTimeout(ctx, autoTimeout)
	defer cancel()
	if j.drop {
		if err := Delete(tctx, j.dir, session); err != nil && !errors.Is(err, gitexec.ErrNotRepo) && ctx.Err() == nil {
			a.Log.Warn("checkpoints of a deleted session not removed", "session", session, "dir", j.dir, "err", err)
		}
		return
	}
	began := time.Now()
	cp, created, err := Take(tctx, j.dir, session, a.Opts)
	switch {
	case errors.Is(err, gitexec.ErrNotRepo):
		// A session outside any repository has nothing to snapshot.
	case err != nil:
		if ctx.Err() == nil {
			a.Log.Warn("checkpoint not taken", "session", session, "dir", j.dir, "err", err)
		}
	case created && a.Taken != nil:
		a.Taken(session, j.dir, cp, began)
	}
}
