package sessions

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/pty"
)

// Typing text and then submitting it, for the prompt queue and for keys
// held while a session woke. An agent's line editor that sees text and an
// Enter arrive together may take the whole for a paste, where Enter is a
// line break (Claude Code does, and on a busy machine anything may arrive
// together): the text goes first, and the Enter on its own once the
// program has taken the text. Taken means the terminal holds none of it
// unread, and the program has since redrawn and gone quiet (or, if it
// draws nothing, stayed quiet a while longer); submitBound is the last
// resort. Input typed meanwhile waits behind the Enter, so nothing gets
// between the text and its submit.
const (
	// takenQuiet is the pause in output, after a redraw that followed the
	// text, that says the program has dealt with it.
	takenQuiet = 100 * time.Millisecond
	// unechoedQuiet is how long a program that draws nothing in answer
	// must have left the text read before the Enter goes. Long, as the
	// program may still be busy with the text: a loaded machine can keep
	// one from drawing for hundreds of milliseconds.
	unechoedQuiet = time.Second
	// submitBound is how long the Enter waits for the text to be taken
	// before it is sent anyway.
	submitBound = 5 * time.Second
	// typingPoll is how often the terminal is looked at while an Enter
	// waits: unread input has no notification.
	typingPoll = 10 * time.Millisecond
)

// typing is text sent to a run whose Enter waits for the program to take
// it. Its fields are set once, except after, which the session's
// promptQueue's mu guards.
type typing struct {
	in    *inputQueue
	proc  *pty.Process
	since int64 // unix nanoseconds, just before the text was queued
	what  string
	// after is input that came while the Enter waited; it follows it.
	after []byte
}

// Paste puts text at the program's input as one marked paste, and no
// Enter: a shell shows it at its prompt for the user to read, edit or
// clear, and runs none of it. A program that has not asked for marked
// pastes gets nothing (ErrNoPaste): each line break would run a line.
func (s *Session) Paste(text string) error {
	s.mu.Lock()
	running, marked := s.run.in != nil, s.ring.BracketedPaste()
	s.mu.Unlock()
	switch {
	case !running:
		return fmt.Errorf("%w: nothing to paste into", ErrNotRunning)
	case !marked:
		return fmt.Errorf("%w: its lines would run as they arrive, so nothing was pasted", ErrNoPaste)
	}
	return s.input([]byte("\x1b[200~"+text+"\x1b[201~"), false)
}

// typeLocked types text into the current run and, when submit is set,
// then the Enter that submits it once the program has taken the text. mu
// must be held, and no other typing may be under way.
func (s *Session) typeLocked(text []byte, submit bool, what string) error {
	since := time.Now().UnixNano()
	if len(text) > 0 {
		s.ring.NoteInput()
		if err := s.run.in.push(text); err != nil {
			return err
		}
	}
	if !submit {
		return nil
	}
	t := &typing{in: s.run.in, proc: s.run.proc, since: since, what: what}
	s.prompts.startTyping(t)
	go s.submitWhenTaken(t)
	return nil
}

// typeKeysLocked types keys as the user typed them: a last Enter waits
// until the rest has been taken. mu must be held.
func (s *Session) typeKeysLocked(keys []byte, what string) error {
	if held, err := s.prompts.holdTyped(keys); held {
		return err // behind the Enter under way
	}
	if n := len(keys); n > 1 && keys[n-1] == '\r' {
		return s.typeLocked(keys[:n-1], true, what)
	}
	return s.typeLocked(keys, false, what)
}

// startTyping records t as the Enter under way.
func (pq *promptQueue) startTyping(t *typing) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.typing = t
}

// isTyping reports whether t is the Enter under way: it was not dropped.
func (pq *promptQueue) isTyping(t *typing) bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.typing == t
}

// endTyping ends t, the Enter under way, and returns what was typed
// while it waited.
func (pq *promptQueue) endTyping(t *typing) (after []byte) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.typing = nil
	return t.after
}

// dropTyping forgets the Enter under way, if any, and what waits behind
// it.
func (pq *promptQueue) dropTyping() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.typing = nil
}

// holdTyped keeps input that comes while an Enter waits, for after it.
// held reports whether an Enter waits; err, whether p was refused.
func (pq *promptQueue) holdTyped(p []byte) (held bool, err error) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	held = pq.typing != nil
	return held, pq.holdTypedLocked(p)
}

// holdBehind keeps input typed by the user behind what waits before it:
// keys held for the run being started, which go first, or an Enter under
// way. It reports whether it held p, and err whether p was refused.
func (pq *promptQueue) holdBehind(p []byte) (held bool, err error) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	switch {
	case pq.held != nil:
		return true, pq.holdLocked(p)
	case pq.typing != nil:
		return true, pq.holdTypedLocked(p)
	}
	return false, nil
}

// holdTypedLocked appends p to what waits behind the Enter under way, if
// there is one, refusing whole what would take it past MaxHeldInput.
// pq.mu must be held.
func (pq *promptQueue) holdTypedLocked(p []byte) error {
	t := pq.typing
	if t == nil {
		return nil
	}
	if len(t.after)+len(p) > MaxHeldInput {
		return fmt.Errorf("%w: %d bytes already wait for session %s's agent to take %s; at most %d are held, so these %d were refused",
			ErrInputFull, len(t.after), pq.id, t.what, MaxHeldInput, len(p))
	}
	t.after = append(t.after, p...)
	return nil
}

// submitWhenTaken sends t's Enter once the program has taken its text, or
// at submitBound. It gives up when the typing is dropped (the run ended,
// or the user interrupted).
func (s *Session) submitWhenTaken(t *typing) {
	bound := time.Unix(0, t.since).Add(submitBound)
	s.poll(func() bool { return s.taken(t) }, func(taken bool) bool {
		switch {
		case !s.prompts.isTyping(t):
			// Dropped: the run ended, or the user interrupted.
		case taken || time.Now().After(bound):
			s.submitLocked(t, taken)
		default:
			return false
		}
		return true
	})
}

// poll is how the session's short-lived typing helpers (awaitReady,
// deliverWhenSettled, submitWhenTaken) wait for the program, whose
// readiness has no notification (unread input, a quiet moment): until
// act reports it is done, it calls ready without mu and then act with
// its answer under mu, once at once and then every typingPoll. act ends
// it when the run or the typing it waits for is gone.
func (s *Session) poll(ready func() bool, act func(ready bool) (done bool)) {
	tick := time.NewTicker(typingPoll)
	defer tick.Stop()
	for {
		r := ready()
		s.mu.Lock()
		done := act(r)
		s.mu.Unlock()
		if done {
			return
		}
		<-tick.C
	}
}

// taken reports whether the program has taken t's text: written to the
// terminal, none of it unread, and the program quiet since (see the top
// of this file).
func (s *Session) taken(t *typing) bool {
	if t.in.busy() {
		return false
	}
	if n, err := t.proc.Unread(); err != nil || n > 0 {
		return false // an error: the run is ending, and the Enter with it
	}
	now, last := time.Now().UnixNano(), s.lastOutput.Load()
	if last > t.since {
		return time.Duration(now-last) >= takenQuiet
	}
	return time.Duration(now-t.since) >= unechoedQuiet
}

// submitLocked sends t's Enter, then what was typed while it waited. mu
// must be held, and t be the Enter under way.
func (s *Session) submitLocked(t *typing, taken bool) {
	after := s.prompts.endTyping(t)
	if s.run.in != t.in {
		return
	}
	if !taken {
		s.log.Warn("the agent has not taken the text typed into it; submitting anyway", "what", t.what, "after", submitBound)
	}
	s.ring.NoteInput()
	if err := t.in.push([]byte{'\r'}); err != nil {
		s.log.Warn("could not submit", "what", t.what, "err", err)
		return
	}
	s.log.Debug("submitted", "what", t.what, "after", time.Since(time.Unix(0, t.since)).Round(time.Millisecond))
	if len(after) > 0 {
		if err := s.typeKeysLocked(after, "keys typed while "+t.what+" was submitted"); err != nil {
			s.log.Warn("could not send the keys typed while a submit waited", "bytes", len(after), "err", err)
		}
	} else if s.det.isWaiting() {
		// The agent waited again before the Enter went: the queue's turn
		// was put off until now.
		s.deliverLocked()
	}
}
