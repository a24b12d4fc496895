package sessions

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmux/agentmux/sessions/output"
)

// Timing holds the delays of status detection and flow control. Zero
// fields take the defaults; tests shorten them to milliseconds, or
// lengthen them so a slow machine cannot trip them.
type Timing struct {
	// QuestionQuiet is how long output must pause, its last line ending
	// with '?', before a session counts as waiting; default 1.5 s.
	QuestionQuiet time.Duration
	// IdleAfter is how long a running session may be silent before it
	// counts as idle; default 5 minutes.
	IdleAfter time.Duration
	// WarnAfter is the silence after which session.warning says the
	// session may be stuck; default 30 minutes.
	WarnAfter time.Duration
	// ErrorAfter is the silence after which that warning becomes an
	// error; default 2 hours.
	ErrorAfter time.Duration
	// StallAfter is how long a client pacing the program (see Pacer) may
	// go without consuming anything while output waits for it before it
	// paces no more; default 2 s.
	StallAfter time.Duration
}

func (t Timing) withDefaults() Timing {
	if t.QuestionQuiet <= 0 {
		t.QuestionQuiet = 1500 * time.Millisecond
	}
	if t.IdleAfter <= 0 {
		t.IdleAfter = 5 * time.Minute
	}
	if t.WarnAfter <= 0 {
		t.WarnAfter = 30 * time.Minute
	}
	if t.ErrorAfter <= 0 {
		t.ErrorAfter = 2 * time.Hour
	}
	if t.StallAfter <= 0 {
		t.StallAfter = output.DefaultStallAfter
	}
	return t
}

// Severity grades a session.warning.
type Severity string

// The severities of session.warning.
const (
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// warnLevel is how far a silent session's warnings have gone.
type warnLevel uint8

const (
	warnNone warnLevel = iota
	warnWarning
	warnError
)

// startWaitingLocked marks the session waiting for its user and says so
// once: further signals before the user answers change nothing. mu must
// be held.
//
// atPrompt says the agent waits at its prompt, where a queued prompt may
// be typed, rather than at a question (a permission dialog) that typing
// it would answer. Keys held for a resumed run, or else the next queued
// prompt, answer the wait at once, and nobody is told it began.
func (s *Session) startWaitingLocked(why string, atPrompt bool) {
	if s.phase != phaseRunning || s.waiting {
		return
	}
	s.waiting, s.promptable = true, atPrompt
	s.log.Info("session waits for input", "why", why)
	if s.flushHeldLocked("the agent waits for input") || s.deliverLocked() {
		return
	}
	s.setRunStatusLocked(why)
	s.emit(Event{Kind: EventNeedsInput, Session: s.infoLocked(), Message: fmt.Sprintf("Session '%s' needs input: %s", s.name, why)})
}

// startPermissionWaitLocked marks the session waiting for its user to
// allow what perm asks, why saying it in a sentence, and keeps perm for
// its status until the wait ends. A dialog, not a prompt: a queued prompt would answer it. mu must
// be held.
func (s *Session) startPermissionWaitLocked(perm Permission, why string) {
	if s.phase != phaseRunning || s.waiting {
		return // waiting already, for a reason said first
	}
	s.permission = &perm
	s.startWaitingLocked(why, false)
}

// endWaitingLocked ends a waiting period. The user is back, so silence
// counts afresh from now: an agent that then says nothing for the idle or
// stuck limits is idle or stuck, and one that answers at once is not.
// mu must be held.
func (s *Session) endWaitingLocked(why string) {
	if !s.waiting {
		return
	}
	s.waiting, s.idle, s.warned = false, false, warnNone
	s.permission = nil
	s.waitEnded = time.Now()
	s.setRunStatusLocked(why)
	select { // the watcher's deadlines moved
	case s.wake <- struct{}{}:
	default:
	}
}

// setRunStatusLocked sets a running session's status from its flags and
// announces a change. mu must be held.
func (s *Session) setRunStatusLocked(why string) {
	if s.phase != phaseRunning {
		return
	}
	next := StatusActive
	switch {
	case s.waiting:
		next = StatusWaiting
	case s.idle:
		next = StatusIdle
	}
	if next == s.status {
		return
	}
	s.status, s.reason = next, why
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
}

// alerted handles an alert found in the output. Only the run's reader
// calls it.
func (s *Session) alerted(a alert) {
	why := "the agent rang the bell"
	if a.kind == alertNotification {
		why = "the agent sent a notification"
		if a.text != "" {
			why = "the agent says: " + a.text
		}
	}
	s.mu.Lock()
	s.startWaitingLocked(why, true) // a bell or a notification says nothing of a question
	s.mu.Unlock()
}

// noteOutput wakes the watcher on the first output after it asked to be
// woken: after a silence, so the question guess runs QuestionQuiet after
// the burst ends and an idle or warned session recovers at once. Only the
// run's reader calls it, after storing lastOutput.
func (s *Session) noteOutput(wake chan<- struct{}) {
	if s.armed.Load() && s.armed.CompareAndSwap(true, false) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// watchQuiet keeps a run's silence-driven state: the question-mark guess,
// idle, and the stuck warnings. The run's reader starts it, with the run's
// start time, and closes stop when the run ends. It wakes when a deadline passes or on wake; under
// continuous output, once per QuestionQuiet, never once per read.
func (s *Session) watchQuiet(t Timing, started int64, stop <-chan struct{}, wake <-chan struct{}) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	// checked is the output time the question guess last looked at; the
	// run's start time (lastOutput before any output) marks nothing yet.
	checked := started
	for {
		select {
		case <-stop:
			return
		case <-wake:
		case <-timer.C:
		}
		for {
			last := s.lastOutput.Load()
			next, arm := s.reviewQuiet(t, last, &checked)
			if arm {
				s.armed.Store(true)
				// Output that came before the reader could see the flag
				// would wake nobody: look again instead of sleeping.
				if s.lastOutput.Load() != last {
					continue
				}
			}
			timer.Reset(next)
			break
		}
	}
}

// reviewQuiet brings the silence-driven state up to date for output last
// seen at last (unix nanoseconds); checked is the output time the question
// guess last looked at, so each burst is looked at once. It returns how long until the next
// deadline, and whether the next output must wake the watcher because no
// deadline would notice it in time.
func (s *Session) reviewQuiet(t Timing, last int64, checked *int64) (time.Duration, bool) {
	lastOut := time.Unix(0, last)
	var ask string
	asks := false
	if last != *checked && time.Since(lastOut) >= t.QuestionQuiet {
		*checked = last
		ask, asks = asksQuestion(s.ring.Last(4096))
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.phase != phaseRunning {
		return t.ErrorAfter, false
	}
	// The question guess looks at output; idle and stuck at silence, which
	// also restarts when the user ends a wait.
	quiet := time.Since(lastOut)
	if s.waitEnded.After(lastOut) {
		quiet = time.Since(s.waitEnded)
	}
	if quiet < t.WarnAfter {
		s.warned = warnNone // output cleared it
	}
	if s.idle && quiet < t.IdleAfter {
		s.idle = false
		s.setRunStatusLocked("output resumed")
	}
	if asks && !s.hooked {
		// A question in the output may be the prompt's own (a shell's
		// "?"), and nothing tells it from a dialog's: the queue goes in.
		s.startWaitingLocked("the agent asks: "+ask, true)
	}
	if !s.idle && quiet >= t.IdleAfter {
		s.idle = true
		s.setRunStatusLocked(fmt.Sprintf("no output for %s", round(t.IdleAfter)))
	}
	// A session waiting for its user is not stuck.
	if !s.waiting && s.warned < warnWarning && quiet >= t.WarnAfter {
		s.warned = warnWarning
		s.warnLocked(SeverityWarning, t.WarnAfter)
	}
	if !s.waiting && s.warned < warnError && quiet >= t.ErrorAfter {
		s.warned = warnError
		s.warnLocked(SeverityError, t.ErrorAfter)
	}

	// The next deadline is the earliest one still ahead.
	next := time.Duration(1<<63 - 1)
	consider := func(left time.Duration, pending bool) {
		if pending && left > 0 && left < next {
			next = left
		}
	}
	outQuiet := time.Since(lastOut)
	consider(t.QuestionQuiet-outQuiet, last != *checked)
	consider(t.IdleAfter-quiet, !s.idle)
	consider(t.WarnAfter-quiet, s.warned < warnWarning)
	consider(t.ErrorAfter-quiet, s.warned < warnError)
	// With no question deadline pending, only a wake notices new output
	// in time.
	arm := last == *checked || s.idle || s.warned != warnNone
	return next, arm
}

func (s *Session) warnLocked(sev Severity, after time.Duration) {
	msg := fmt.Sprintf("No output for %s. Session '%s' may be stuck.", round(after), s.name)
	s.log.Warn("session silent", "for", round(after), "severity", sev)
	s.emit(Event{Kind: EventWarning, Session: s.infoLocked(), Message: msg, Severity: sev})
}

// round shows a duration as people write it: 30m0s as 30m, 1.5s as 1.5s.
func round(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
