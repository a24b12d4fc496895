package sessions

import (
	"errors"
	"fmt"
	"time"
)

// Keys typed into a session with no process wake it: they are held, the
// session is resumed, and the new run gets them once it is ready to take
// them. A program that has not set up its terminal yet (raw mode, its
// prompt) would lose or mangle keys sent before, and an agent's line
// editor drawn late would find a typed Enter gone. Ready means: for an
// agent that reports through hooks, its first waiting (Claude's
// SessionStart hook); for others, the first quiet moment after output;
// and for both, a bound as the last resort. A last Enter goes on its own
// once the rest has been taken (typing.go).
const (
	// MaxHeldInput bounds the keys held for one session while it wakes.
	MaxHeldInput = 64 << 10
	// heldBound is how long held keys wait for a new run without hooks
	// to go quiet after its first output before they are sent anyway.
	heldBound = 3 * time.Second
	// heldHookBound is heldBound for an agent that reports through hooks:
	// Claude Code takes seconds to draw its prompt on a busy machine, and
	// its hook says when it has.
	heldHookBound = 15 * time.Second
	// heldQuiet is the pause after output that says a run without hooks
	// has drawn its screen and reads its terminal.
	heldQuiet = 200 * time.Millisecond
)

// Type sends keys to a session. A session whose agent is not running is
// resumed, and the keys (and any typed meanwhile, in order) reach the new
// run once it reads its terminal. If the resume fails the held keys are
// dropped and the error says so.
func (m *Manager) Type(s *Session, p []byte) error {
	err := s.Write(p)
	if !errors.Is(err, ErrNotRunning) || !wakes(p) {
		return err
	}
	first, err := s.hold(p)
	if err != nil || !first {
		return err
	}
	if _, err := m.Resume(s.id); err != nil && !errors.Is(err, ErrRunning) {
		// ErrRunning: someone else's resume won the race, and its run
		// delivers the keys.
		n := len(s.prompts.dropHeld())
		return fmt.Errorf("resume session %s for the keys typed into it: %w; %s typed were dropped", s.id, err, plural(n, "byte"))
	}
	return nil
}

// plural says n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// wakes reports whether input typed into a session with no process should
// resume it: not the reports a terminal sends by itself (a focus event as
// the user clicks the pane), and not control keys alone (Ctrl+C or Ctrl+D
// pressed at an agent that just ended must not start it again). Enter
// does.
func wakes(p []byte) bool {
	if isTerminalReport(p) {
		return false
	}
	for _, c := range p {
		if c == '\r' || c >= 0x20 && c != 0x7f {
			return true
		}
	}
	return false
}

// hold keeps keys typed while no process runs. first reports whether they
// are the first, whose typist resumes the session.
func (s *Session) hold(p []byte) (first bool, err error) {
	s.mu.Lock()
	if s.run.in != nil && !s.prompts.holding() {
		s.mu.Unlock()
		// A run started since the Write: it takes the keys as usual.
		return false, s.Write(p)
	}
	defer s.mu.Unlock()
	return s.prompts.hold(p)
}

// hold adds keys to those held for the run being started, refusing whole
// what would take them past MaxHeldInput. first reports whether they are
// the first.
func (pq *promptQueue) hold(p []byte) (first bool, err error) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	first = pq.held == nil
	return first, pq.holdLocked(p)
}

// holdLocked is hold. pq.mu must be held.
func (pq *promptQueue) holdLocked(p []byte) error {
	if len(pq.held)+len(p) > MaxHeldInput {
		return fmt.Errorf("%w: %d bytes already wait for session %s to resume and read its terminal; at most %d are held, so these %d were refused",
			ErrInputFull, len(pq.held), pq.id, MaxHeldInput, len(p))
	}
	pq.held = append(pq.held, p...)
	return nil
}

// holding reports whether keys are held for a run being started.
func (pq *promptQueue) holding() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.held != nil
}

// dropHeld forgets the held keys, returning them.
func (pq *promptQueue) dropHeld() []byte {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	held := pq.held
	pq.held = nil
	return held
}

// armHeld starts watching a new run, whose input is in, for the moment it
// is ready to take the keys held for it.
func (s *Session) armHeld(in *inputQueue) {
	if !s.prompts.holding() {
		return
	}
	bound, byOutput := heldBound, true
	if s.hooks != nil && s.profile.Hooks {
		// Its output says nothing of its prompt: its first waiting does
		// (startWaitingLocked).
		bound, byOutput = heldHookBound, false
	}
	go s.awaitReady(in, s.lastOutput.Load(), bound, byOutput)
}

// awaitReady sends the held keys to the run whose input is in once it
// goes quiet after output (when byOutput), or at bound from started (unix
// nanoseconds, the run's start), unless something else sent them first or
// the run ended.
func (s *Session) awaitReady(in *inputQueue, started int64, bound time.Duration, byOutput bool) {
	deadline := time.Unix(0, started).Add(bound)
	quiet := func() bool {
		last := s.lastOutput.Load()
		return byOutput && last > started && time.Since(time.Unix(0, last)) >= heldQuiet
	}
	s.poll(quiet, func(quiet bool) bool {
		switch {
		case s.run.in != in || !s.prompts.holding():
			// The run ended, or something else sent the keys.
		case quiet:
			s.flushHeldLocked("the program went quiet after its first output")
		case time.Now().After(deadline):
			s.flushHeldLocked(fmt.Sprintf("no sign of readiness within %s", bound))
		default:
			return false
		}
		return true
	})
}

// flushHeldLocked sends the held keys to the running program. mu must be
// held.
func (s *Session) flushHeldLocked(why string) bool {
	if s.run.in == nil {
		return false
	}
	keys := s.prompts.dropHeld()
	if keys == nil {
		return false
	}
	n := len(keys)
	if err := s.typeKeysLocked(keys, "the held keys (typed while the session was stopped, or its first input)"); err != nil {
		// A fresh run's queue is empty and holds 1 MiB: only a program
		// that never read a byte gets here.
		s.log.Warn("could not send the held keys (typed while the session was stopped, or its first input)", "bytes", n, "err", err)
		return false
	}
	s.touch()
	s.log.Info("sent the held keys (typed while the session was stopped, or its first input)", "bytes", n, "when", why)
	s.prompts.sitOut(false)
	s.endWaitingLocked("input from the user")
	return true
}

// heldLostLocked tells the user, once, that a run ended before it could
// take the keys held for it. mu must be held.
func (s *Session) heldLostLocked() {
	if n := len(s.prompts.dropHeld()); n > 0 {
		s.emit(Event{Kind: EventWarning, Session: s.infoLocked(), Severity: SeverityWarning,
			Message: fmt.Sprintf("Session '%s' ended before it read the %s typed while it was stopped; they were dropped.", s.name, plural(n, "byte"))})
	}
}
