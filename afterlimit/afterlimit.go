// Package afterlimit continues the sessions an account's usage limit
// stopped, once the limit resets: when the 5-hour or weekly window runs
// out, every session stops mid-task, usually hours before anyone is back
// to nudge them.
//
// At each limit's reset time plus a margin, the Planner sends the session
// on (sessions.Session.ContinueAfterLimit: the prompts queued meanwhile,
// or the continue prompt), one session at a time in the order they
// stopped, each once the one before works again, so a reset is not met
// by every session at once. The plan is the sessions' own Limit, which
// the session database keeps: it survives a restart of agentmux, and a
// limit marks itself continued before anything is queued, so nothing is
// sent twice. Anyone typing into the session first lifts the limit, and
// with it the plan.
package afterlimit

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/agentmux/agentmux/sessions"
)

// Defaults of a Planner.
const (
	// DefaultMargin is how long after a reset the planner waits: the
	// agents' reset times are rounded, and a prompt a moment early is
	// refused again.
	DefaultMargin = 2 * time.Minute
	// DefaultText is the continue prompt.
	DefaultText = "continue"
	// settle is how long a session sent on must go without being
	// limited again before the next is sent: a reset time said wrong
	// shows as the agent refused at once, and that should not be met by
	// every session.
	settle = 10 * time.Second
	// startBound is how long the planner waits for a session it sent on
	// to work again before it sends on the next: an agent that never
	// starts (its resume failed) must not hold the others.
	startBound = 2 * time.Minute
)

// Planner sends the sessions a limit stopped on at its reset. Run is its
// one goroutine.
type Planner struct {
	mgr    *sessions.Manager
	clock  clockwork.Clock
	margin time.Duration
	text   string
	log    *slog.Logger
	// continued is told of each session sent on, for the activity feed.
	continued func(info sessions.Info, lim sessions.Limit, text string)
	wake      chan struct{}
}

// Options configure a Planner; zero fields take the defaults.
type Options struct {
	// Margin is how long after a reset to wait; Text, the prompt.
	Margin time.Duration
	Text   string
	// Clock tells the time; tests give a fake one.
	Clock clockwork.Clock
	// Continued, when set, is told of each session sent on, in Run's
	// goroutine, with the limit that had stopped it and the prompt typed
	// (empty when the prompts queued meanwhile went on instead).
	Continued func(info sessions.Info, lim sessions.Limit, text string)
	Log       *slog.Logger
}

// New returns a Planner for the sessions of mgr; start its Run.
func New(mgr *sessions.Manager, opts Options) *Planner {
	return &Planner{
		mgr:       mgr,
		clock:     cmp.Or[clockwork.Clock](opts.Clock, clockwork.NewRealClock()),
		margin:    cmp.Or(opts.Margin, DefaultMargin),
		text:      cmp.Or(opts.Text, DefaultText),
		log:       cmp.Or(opts.Log, slog.Default()),
		continued: opts.Continued,
		wake:      make(chan struct{}, 1),
	}
}

// Run plans until ctx ends. It looks at the sessions when a limit or a
// status changes, and at the next reset.
func (p *Planner) Run(ctx context.Context) {
	cancel := p.mgr.Subscribe(func(ev sessions.Event) {
		switch ev.Kind {
		case sessions.EventStatus, sessions.EventUpdated, sessions.EventDestroyed:
			select {
			case p.wake <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	var sent *sent
	for {
		now := p.clock.Now()
		if sent != nil && sent.done(p.mgr, now) {
			sent = nil
		}
		var next time.Time
		if sent == nil {
			sent, next = p.sendNext(now)
		}
		if sent != nil {
			next = sent.at.Add(startBound)
			if at := sent.at.Add(settle); at.After(now) {
				next = at
			}
		}
		var timer <-chan time.Time
		var t clockwork.Timer
		if !next.IsZero() {
			at := p.clock.Now()
			t = p.clock.NewTimer(next.Sub(at))
			timer = t.Chan()
			// A clock that jumped between its reading and the timer's
			// arming (a fake one does, in tests) would have the timer
			// fire late: look again.
			if p.clock.Since(at) > time.Second {
				t.Stop()
				continue
			}
		}
		select {
		case <-ctx.Done():
		case <-p.wake:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// sent is a session sent on, which the planner waits for to work again.
type sent struct {
	id string
	at time.Time
}

// done reports whether the session sent on has worked again for a while,
// was stopped by a limit again, is gone, or was given its time.
func (s *sent) done(mgr *sessions.Manager, now time.Time) bool {
	ss, err := mgr.Get(s.id)
	if err != nil || now.Sub(s.at) >= startBound {
		return true
	}
	l := ss.Info().Limit
	return l == nil && now.Sub(s.at) >= settle || l != nil && l.ContinuedAt == nil
}

// sendNext sends on the first session, in the order they stopped, whose
// limit has reset, and returns it; or else when the next one is due.
func (p *Planner) sendNext(now time.Time) (*sent, time.Time) {
	type due struct {
		s   *sessions.Session
		lim sessions.Limit
		at  time.Time
	}
	var all []due
	for _, s := range p.mgr.List() {
		l := s.Info().Limit
		if l == nil || !l.Continue || l.ContinuedAt != nil || l.ResetsAt == nil {
			continue
		}
		all = append(all, due{s, *l, l.ResetsAt.Add(p.margin)})
	}
	slices.SortFunc(all, func(a, b due) int { return a.lim.Since.Compare(b.lim.Since) })
	var next time.Time
	for _, d := range all {
		if d.at.After(now) {
			if next.IsZero() || d.at.Before(next) {
				next = d.at
			}
			continue
		}
		if p.send(d.s, d.lim, now) {
			return &sent{id: d.s.ID(), at: now}, time.Time{}
		}
	}
	return nil, next
}

// send sends one session on: the prompt is typed once its agent waits at
// its prompt, so one that no longer runs (agentmux restarted) is resumed.
func (p *Planner) send(s *sessions.Session, lim sessions.Limit, now time.Time) bool {
	queued := len(s.Queue().Prompts) > 0
	if err := s.ContinueAfterLimit(p.text, now); err != nil {
		if !errors.Is(err, sessions.ErrNotLimited) {
			p.log.Warn("continue a session after its usage limit reset", "session", s.ID(), "err", err)
		}
		return false
	}
	info := s.Info()
	p.log.Info("the usage limit reset: the session goes on", "session", info.ID, "resetAt", lim.ResetsAt)
	if !info.Running {
		if _, err := p.mgr.Resume(info.ID); err != nil {
			p.log.Warn("resume a session to continue it after its usage limit reset", "session", info.ID, "err", err)
		}
	}
	if p.continued != nil {
		text := p.text
		if queued {
			text = ""
		}
		p.continued(info, lim, text)
	}
	return true
}
