// Package checks runs the workspace's check script (scripts.Check, for
// example npm test) at the end of every turn of every session's agent, in
// the session's tree, so that what the agent reported ("done, all tests
// pass") can be told from what was verified.
//
// A check runs once the turn's checkpoint is taken, and its result is
// kept with that checkpoint. A session has at most one check running:
// when its agent starts working again, or its next turn ends, before the
// check ended, the check is stopped and its result is Superseded, since
// the tree it was checking is changing. Each check runs within a time
// limit and only when the script is approved (scripts.Trust); a script
// that is not approved, or none at all, is no check and no result.
package checks

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/agentmux/agentmux/scripts"
)

// DefaultLimit is how long a check may run when Options.Limit is 0.
const DefaultLimit = 10 * time.Minute

// Store keeps the results by session and checkpoint: the subset of
// sessions/store.Store that a Runner uses.
type Store interface {
	PutCheck(session string, checkpoint int, result []byte) error
	Checks(session string) (map[int][]byte, error)
}

// Options are what a Runner needs. Trust, Store, Env and Report are
// required.
type Options struct {
	// Trust says which check script is in force and whether it may run.
	Trust *scripts.Trust
	// Store keeps the results.
	Store Store
	// Env returns the environment the check of session runs with: the
	// server's, with the session's AGENTMUX_* variables.
	Env func(session string) ([]string, error)
	// Busy reports whether session's agent is working now, no longer
	// waiting for its user: a turn whose agent went on at once (a queued
	// prompt answered it) is not checked. Optional.
	Busy func(session string) bool
	// Report is told each check that starts (Running) and each that
	// ends, in the order they happen for a session. It may block briefly;
	// it must not call the Runner.
	Report func(session string, checkpoint int, r scripts.Result)
	// Limit bounds each check's run; 0 means DefaultLimit.
	Limit time.Duration
	// Log receives the failures to store, with the session id.
	Log *slog.Logger
}

// Runner runs the checks. Its methods are safe for concurrent use;
// Close ends every check it runs and waits for them.
type Runner struct {
	opts Options
	// ctx ends with Close; every check's context derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu protects running and moves.
	mu sync.Mutex
	// running is each session's check under way.
	running map[string]*check
	// moves counts, per session, the times its agent started working
	// again: a Start that read Busy before one has to look again.
	moves map[string]uint64
}

// check is a check under way.
type check struct {
	checkpoint int
	stop       context.CancelFunc
	// superseded is set, under the Runner's mu, before stop is called
	// to supersede it; a check stopped by Close is not. forgotten is set
	// with it when the session is gone: nothing is kept of it.
	superseded, forgotten bool
}

// New returns a Runner for opts.
func New(opts Options) (*Runner, error) {
	switch {
	case opts.Trust == nil, opts.Store == nil, opts.Env == nil, opts.Report == nil:
		return nil, errors.New("checks: Trust, Store, Env and Report are required")
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Busy == nil {
		opts.Busy = func(string) bool { return false }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Runner{opts: opts, ctx: ctx, cancel: cancel, running: map[string]*check{}, moves: map[string]uint64{}}, nil
}

// Script returns the check script in force and whether it may run: none
// set, or one not approved, is no check.
func (r *Runner) Script() (scripts.Script, bool) { return r.opts.Trust.Runnable(scripts.Check) }

// Start checks session's checkpoint, the tree at dir, in the background:
// the turn that made it ended. A check of the session's still under way
// is superseded. Nothing runs when there is no check script that may run.
func (r *Runner) Start(session, dir string, checkpoint int) {
	log := r.opts.Log.With("session", session, "checkpoint", checkpoint)
	sc, ok := r.Script()
	if !ok {
		log.Debug("no check: no approved check script in force")
		return
	}
	r.mu.Lock()
	moves := r.moves[session]
	r.mu.Unlock()
	busy := r.opts.Busy(session)
	env, err := r.opts.Env(session)

	r.mu.Lock()
	if r.ctx.Err() != nil {
		r.mu.Unlock()
		return
	}
	r.supersedeLocked(session)
	if busy || r.moves[session] != moves {
		r.mu.Unlock()
		// The agent is at work on the next turn already: this tree is
		// gone before a check could tell anything of it.
		r.finish(session, checkpoint, scripts.Result{Status: scripts.Superseded, ExitCode: -1, Hash: sc.Hash})
		return
	}
	if err != nil {
		r.mu.Unlock()
		log.Warn("no check: the session's environment", "err", err)
		return
	}
	ctx, stop := context.WithCancel(r.ctx)
	c := &check{checkpoint: checkpoint, stop: stop}
	r.running[session] = c
	r.wg.Add(1)
	r.mu.Unlock()

	r.opts.Report(session, checkpoint, scripts.Result{Status: scripts.Running, ExitCode: -1, Hash: sc.Hash})
	go func() {
		defer r.wg.Done()
		defer stop()
		res := scripts.Exec(ctx, scripts.Command{Text: sc.Text, Dir: dir, Env: env, Limit: r.opts.Limit})
		r.mu.Lock()
		if r.running[session] == c {
			delete(r.running, session)
		}
		drop := res.Status == scripts.Superseded && !c.superseded || c.forgotten
		r.mu.Unlock()
		if drop {
			return // the server is stopping, or the session is gone: nothing to keep
		}
		log.Info("check ended", "status", res.Status, "exitCode", res.ExitCode, "took", time.Duration(res.DurationMs)*time.Millisecond)
		r.finish(session, checkpoint, res)
	}()
}

// Supersede stops session's check under way, if any: its agent started
// working again.
func (r *Runner) Supersede(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.moves[session]++
	r.supersedeLocked(session)
}

// Forget stops session's check and forgets it: the session is gone.
func (r *Runner) Forget(session string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.running[session]; c != nil {
		c.forgotten = true
	}
	r.supersedeLocked(session)
	delete(r.moves, session)
}

func (r *Runner) supersedeLocked(session string) {
	if c := r.running[session]; c != nil {
		c.superseded = true
		c.stop()
		delete(r.running, session)
	}
}

// Results returns session's stored results by checkpoint id, with the
// check under way as Running.
func (r *Runner) Results(session string) (map[int]scripts.Result, error) {
	stored, err := r.opts.Store.Checks(session)
	if err != nil {
		return nil, err
	}
	out := make(map[int]scripts.Result, len(stored)+1)
	for id, b := range stored {
		var res scripts.Result
		if err := json.Unmarshal(b, &res); err != nil {
			r.opts.Log.Warn("a stored check could not be read", "session", session, "checkpoint", id, "err", err)
			continue
		}
		out[id] = res
	}
	r.mu.Lock()
	if c := r.running[session]; c != nil {
		out[c.checkpoint] = scripts.Result{Status: scripts.Running, ExitCode: -1}
	}
	r.mu.Unlock()
	return out, nil
}

// finish stores and reports an ended check.
func (r *Runner) finish(session string, checkpoint int, res scripts.Result) {
	b, err := json.Marshal(res)
	if err == nil {
		err = r.opts.Store.PutCheck(session, checkpoint, b)
	}
	if err != nil {
		r.opts.Log.Error("store a check", "session", session, "checkpoint", checkpoint, "err", err)
	}
	r.opts.Report(session, checkpoint, res)
}

// Close stops every check under way, without a result, and waits for
// them.
func (r *Runner) Close() {
	r.mu.Lock()
	r.cancel()
	r.mu.Unlock()
	r.wg.Wait()
}
