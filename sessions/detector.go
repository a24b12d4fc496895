package sessions

import (
	"sync"
	"time"
)

// detector tells, for a session's current run, whether the agent waits
// for its user (at its prompt, or at a question or a permission dialog
// that a typed prompt would answer), whether it is idle, and how far the
// warnings that it may be stuck have gone. It learns from what the agent
// signals (a bell, a notification, its hooks, a question in its output)
// and from silence; each method applies one such signal and reports what
// changed. The Session acts on that: it announces statuses and warnings,
// and answers a wait with held keys or a queued prompt. It also keeps the
// status that was announced, which the Session sets from it (settle) or,
// as a run starts or ends, itself (show).
//
// Lock order: a Session's mu, then the detector's mu. The detector calls
// nothing outside itself while it holds its mu (no Session method, no
// ring, no observer, no channel), so its mu is a leaf: taking it can never
// wait for a Session.
type detector struct {
	// mu protects the fields below.
	mu sync.Mutex
	// waiting is set from a signal that the agent waits for its user
	// until input, or the run's end, ends it. promptable says the wait
	// is at the agent's prompt, where a queued prompt may be typed;
	// permission, when the wait is a permission request, is what it
	// asks to allow.
	waiting    bool
	promptable bool
	permission *Permission
	// waitSince and waitWhy are when the wait under way began and the
	// signal's reason for it; waitRedraws, that the signal came before
	// the agent's last redraw of its turn.
	waitSince   time.Time
	waitWhy     string
	waitRedraws bool
	// limited is set while a wait is for an account's usage limit to
	// reset.
	limited bool
	// idle is set when the run has been silent past IdleAfter.
	idle bool
	// warned is how far the warnings about a silent run have gone.
	warned warnLevel
	// hooked reports whether the agent reports through hooks, which
	// turns the question-mark guess off for the run.
	hooked bool
	// waitEnded is when the user last ended a wait: silence counts from
	// then when that is later than the last output.
	waitEnded time.Time
	// status is the session's status as clients were last told it, and
	// reason why. A run's start or end sets them; while it runs, they
	// follow the fields above. Announced changes are made under the
	// Session's mu as well, which orders the announcements.
	status Status
	reason string
}

// warnLevel is how far a silent session's warnings have gone.
type warnLevel uint8

const (
	warnNone warnLevel = iota
	warnWarning
	warnError
)

// reset starts detection afresh for a new run: nothing waits, nothing is
// idle or warned, and no hook has spoken yet.
func (d *detector) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting, d.promptable, d.permission, d.limited = false, false, nil, false
	d.idle, d.warned, d.hooked = false, warnNone, false
	d.waitEnded = time.Time{}
}

// runEnded drops what only a running agent can be: waiting, asking for a
// permission, idle. What the warnings reached and whether hooks spoke stay
// until the next run resets them.
func (d *detector) runEnded() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.waiting, d.idle, d.permission, d.limited = false, false, nil, false
}

// startWaiting marks the agent waiting for its user from now, for why,
// at its prompt when atPrompt, for perm when it asks for a permission;
// redraws says the agent will still redraw its screen to end its turn.
// It reports whether a wait began: false when one was under way, whose
// reason stands.
func (d *detector) startWaiting(now time.Time, why string, atPrompt, redraws bool, perm *Permission) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting {
		return false
	}
	d.waiting, d.promptable, d.permission = true, atPrompt, perm
	d.waitSince, d.waitWhy, d.waitRedraws = now, why, redraws
	return true
}

// wait returns when the wait under way began, why, and whether the agent
// will still redraw to end its turn; ok is false when it does not wait.
func (d *detector) wait() (since time.Time, why string, redraws, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waitSince, d.waitWhy, d.waitRedraws, d.waiting
}

// endWaiting ends a wait, at now. The user is back, so silence counts
// afresh from now: an agent that then says nothing for the idle or stuck
// limits is idle or stuck, and one that answers at once is not. It reports
// whether a wait was under way.
func (d *detector) endWaiting(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.waiting {
		return false
	}
	d.waiting, d.idle, d.warned = false, false, warnNone
	d.permission, d.limited = nil, false
	d.waitEnded = now
	return true
}

// isWaiting reports whether the agent waits for its user.
func (d *detector) isWaiting() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting
}

// atPrompt reports whether the agent waits at its prompt, where a queued
// prompt may be typed, rather than at a question that it would answer.
func (d *detector) atPrompt() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting && d.promptable
}

// runStatus returns the status a running agent's state makes: waiting
// before idle before active.
func (d *detector) runStatus() Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.runStatusLocked()
}

// runStatusLocked is runStatus. d.mu must be held.
func (d *detector) runStatusLocked() Status {
	switch {
	case d.waiting && d.limited:
		return StatusLimited
	case d.waiting:
		return StatusWaiting
	case d.idle:
		return StatusIdle
	}
	return StatusActive
}

// limit marks the wait under way as one for a usage limit to reset, and
// settles the status on it, why being its reason; it reports whether the
// status changed.
func (d *detector) limit(why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.waiting || d.limited {
		return false
	}
	d.limited = true
	d.status, d.reason = StatusLimited, why
	return true
}

// settle sets the status from the running agent's state, why becoming its
// reason, and reports whether it changed.
func (d *detector) settle(why string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	next := d.runStatusLocked()
	if next == d.status {
		return false
	}
	d.status, d.reason = next, why
	return true
}

// show sets the status and its reason, as a run starts or ends.
func (d *detector) show(status Status, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status, d.reason = status, reason
}

// explain gives the status a new reason, the status unchanged.
func (d *detector) explain(reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reason = reason
}

// shown returns the status as clients were last told it, and its reason.
func (d *detector) shown() (Status, string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status, d.reason
}

// permissionAsked returns a copy of what the current wait asks to allow,
// or nil when it asks for no permission.
func (d *detector) permissionAsked() *Permission {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.permission == nil {
		return nil
	}
	p := *d.permission
	return &p
}

// hook notes that the agent reports through hooks. It reports whether
// this is the run's first hook call.
func (d *detector) hook() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	first := !d.hooked
	d.hooked = true
	return first
}

// isHooked reports whether the agent has reported through hooks this run.
func (d *detector) isHooked() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hooked
}

// heard brings the silence state up to date with output last seen at
// lastOut, before the Session looks for a question in it: output clears
// the stuck warnings and ends idleness. It returns how long the run has
// been quiet (since lastOut, or since its user ended a wait when that is
// later: the question guess looks at output, idle and stuck at silence),
// and whether idleness ended.
func (d *detector) heard(t Timing, lastOut time.Time) (quiet time.Duration, resumed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	quiet = time.Since(lastOut)
	if d.waitEnded.After(lastOut) {
		quiet = time.Since(d.waitEnded)
	}
	if quiet < t.WarnAfter {
		d.warned = warnNone
	}
	if d.idle && quiet < t.IdleAfter {
		d.idle = false
		resumed = true
	}
	return quiet, resumed
}

// silent applies a silence of quiet, after the Session has looked for a
// question: past IdleAfter the run is idle, and past WarnAfter and then
// ErrorAfter it earns one warning each, unless it waits for its user,
// which is not being stuck. It reports whether the run went idle, and the
// warnings due, in order.
func (d *detector) silent(t Timing, quiet time.Duration) (wentIdle bool, warnings []Severity) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.idle && quiet >= t.IdleAfter {
		d.idle = true
		wentIdle = true
	}
	if !d.waiting && d.warned < warnWarning && quiet >= t.WarnAfter {
		d.warned = warnWarning
		warnings = append(warnings, SeverityWarning)
	}
	if !d.waiting && d.warned < warnError && quiet >= t.ErrorAfter {
		d.warned = warnError
		warnings = append(warnings, SeverityError)
	}
	return wentIdle, warnings
}

// next returns how long until the earliest silence deadline still ahead,
// for output last seen at lastOut and a run quiet for quiet; asking says
// the question guess has yet to look at that output. arm reports that no
// deadline would notice new output in time, so the next output must wake
// the watcher.
func (d *detector) next(t Timing, lastOut time.Time, quiet time.Duration, asking bool) (next time.Duration, arm bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	next = time.Duration(1<<63 - 1)
	consider := func(left time.Duration, pending bool) {
		if pending && left > 0 && left < next {
			next = left
		}
	}
	consider(t.QuestionQuiet-time.Since(lastOut), asking)
	consider(t.IdleAfter-quiet, !d.idle)
	consider(t.WarnAfter-quiet, d.warned < warnWarning)
	consider(t.ErrorAfter-quiet, d.warned < warnError)
	// With no question deadline pending, only a wake notices new output
	// in time.
	return next, !asking || d.idle || d.warned != warnNone
}
