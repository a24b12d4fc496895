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

// startWaitingLocked marks the session waiting for its user and says so
// once: further signals before the user answers change nothing. mu must
// be held.
//
// atPrompt says the agent waits at its prompt, where a queued prompt may
// be typed, rather than at a question (a permission dialog) that typing
// it would answer. Keys held for a resumed run, or else the next queued
// prompt, answer the wait at once, and nobody is told it began.
func (s *Session) startWaitingLocked(why string, atPrompt bool) {
	s.waitLocked(why, atPrompt, false, nil)
}

// startTurnEndWaitLocked marks the session waiting at the agent's prompt
// on a signal that comes before the agent has ended its turn on screen:
// Claude Code shows "running stop hook" until its Stop hook has returned,
// and only then redraws its prompt and takes a submit as a new turn. mu
// must be held.
func (s *Session) startTurnEndWaitLocked(why string) {
	s.waitLocked(why, true, true, nil)
}

// startPermissionWaitLocked marks the session waiting for its user to
// allow what perm asks, why saying it in a sentence, and keeps perm for
// its status until the wait ends. A dialog, not a prompt: a queued prompt
// would answer it. mu must be held.
func (s *Session) startPermissionWaitLocked(perm Permission, why string) {
	s.waitLocked(why, false, false, &perm)
}

// waitLocked is startWaitingLocked, with what the wait asks to allow when
// it is a permission request. mu must be held.
func (s *Session) waitLocked(why string, atPrompt, redraws bool, perm *Permission) {
	// A setup or run script's bell or question is not the agent's turn
	// ending.
	if s.run.phase != phaseRunning || s.setup.running || s.runOf != "" || !s.det.startWaiting(time.Now(), why, atPrompt, redraws, perm) {
		return // not running, or waiting already, for a reason said first
	}
	s.log.Info("session waits for input", "why", why)
	s.turns.turnEnded(s.usage, time.Now())
	// Told before held keys or a queued prompt can answer the wait: a
	// turn answered at once ended all the same (its checkpoint is due).
	s.emit(Event{Kind: EventTurnEnded, Session: s.infoLocked(), Message: why})
	if s.awaitsResetLocked() {
		// Neither held keys nor queued prompts: the limit would refuse
		// them; the reset's continue sends the queue on.
		s.announceLimitLocked()
		return
	}
	if s.flushHeldLocked("the agent waits for input") || s.deliverLocked() {
		return
	}
	s.announceWaitLocked()
}

// announceWaitLocked tells clients that the session waits for its user,
// unless they were told already. mu must be held.
func (s *Session) announceWaitLocked() {
	_, why, _, ok := s.det.wait()
	if !ok || s.run.phase != phaseRunning || !s.det.settle(why) {
		return
	}
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
	s.emit(Event{Kind: EventNeedsInput, Session: s.infoLocked(), Message: fmt.Sprintf("Session '%s' needs input: %s", s.name, why)})
}

// endWaitingLocked ends a waiting period, if one is under way (see
// detector.endWaiting), and wakes the silence watcher, whose deadlines
// moved. mu must be held.
func (s *Session) endWaitingLocked(why string) {
	if !s.det.endWaiting(time.Now()) {
		return
	}
	// What the agent reports from now on is its next turn's.
	s.turns.working()
	s.liftLimitLocked()
	s.setRunStatusLocked(why)
	select {
	case s.run.wake <- struct{}{}:
	default:
	}
}

// setRunStatusLocked sets a running session's status from its detector
// and announces a change. mu must be held.
func (s *Session) setRunStatusLocked(why string) {
	if s.run.phase != phaseRunning {
		return
	}
	if !s.det.settle(why) {
		return
	}
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
		s.mu.Lock()
		proc, codex := s.run.proc, s.profile.Conversation == ConversationCodex
		s.mu.Unlock()
		if codex {
			// Codex does not notify a turn that failed: its record says
			// so, and a pause in its output is when to look.
			s.readCodexRollout(proc)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.phase != phaseRunning {
		return t.ErrorAfter, false
	}
	quiet, resumed := s.det.heard(t, lastOut)
	if resumed {
		s.setRunStatusLocked("output resumed")
	}
	if asks && !s.det.isHooked() {
		// A question in the output may be the prompt's own (a shell's
		// "?"), and nothing tells it from a dialog's: the queue goes in.
		s.startWaitingLocked("the agent asks: "+ask, true)
	}
	wentIdle, warnings := s.det.silent(t, quiet)
	if wentIdle {
		s.setRunStatusLocked(fmt.Sprintf("no output for %s", round(t.IdleAfter)))
	}
	for _, sev := range warnings {
		after := t.WarnAfter
		if sev == SeverityError {
			after = t.ErrorAfter
		}
		s.warnLocked(sev, after)
	}
	return s.det.next(t, lastOut, quiet, last != *checked)
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
