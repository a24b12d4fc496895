package sessions

import (
	"fmt"
	"strings"

	"github.com/agentmux/agentmux/scripts"
)

// Check is the check of one of the session's turns: the workspace's check
// script run in the session's tree once the turn's checkpoint was taken
// (package checks runs it). It tells what the agent reported from what
// was verified.
type Check struct {
	// Checkpoint is the turn's checkpoint: the tree that was checked.
	Checkpoint int `json:"checkpoint"`
	// Status, ExitCode, DurationMs, Output and Hash are the script's run
	// (scripts.Result).
	Status     scripts.Status `json:"status"`
	ExitCode   int            `json:"exitCode"`
	DurationMs int64          `json:"durationMs"`
	Output     string         `json:"output"`
	Hash       string         `json:"hash,omitempty"`
	// Sent reports that the failure was queued to the agent as a prompt
	// (SendFailures).
	Sent bool `json:"sent,omitempty"`
	// Held reports a failure that was not sent because MaxFailuresSent
	// failures in a row had been already.
	Held bool `json:"held,omitempty"`
}

// CheckOf is the check of checkpoint that ran as r.
func CheckOf(checkpoint int, r scripts.Result) Check {
	return Check{Checkpoint: checkpoint, Status: r.Status, ExitCode: r.ExitCode, DurationMs: r.DurationMs, Output: r.Output, Hash: r.Hash}
}

// MaxFailuresSent is how many failed checks in a row go to the agent
// before agentmux stops sending them and says so: an agent that cannot
// make the check pass is not kept going round.
const MaxFailuresSent = 3

// checkAuthor is who a failure sent to the agent is queued by.
var checkAuthor = Author{ID: "agentmux", Name: "agentmux check"}

// failureTail bounds how much of a failed check's output its prompt
// holds: the end of a report, where the failures and the summary are.
const failureTail = 4 << 10

// sessionCheck is the session's part for the checks of its turns. The
// Session's mu protects it: its changes are announced.
type sessionCheck struct {
	// last is the last turn's check, running or ended; nil before the
	// first.
	last *Check
	// sendFailures says whether a failed check is queued to the agent.
	sendFailures bool
	// sent counts the failures sent in a row; a pass, or sending turned
	// on again, starts it over.
	sent int
}

// NoteCheck announces the check of one of the session's turns, running or
// ended (EventCheck), and records it as the session's last unless a later
// turn's check started already (an earlier one, superseded by it, ends
// after it: announced, so that its checkpoint says so, but not the last).
// The last one's failure, with SendFailures on, is queued to the agent as
// a prompt, at most MaxFailuresSent in a row.
func (m *Manager) NoteCheck(id string, c Check) error {
	return m.withListed(id, func(s *Session) error { return s.noteCheckLocked(c) })
}

// noteCheckLocked is NoteCheck. mu must be held.
func (s *Session) noteCheckLocked(c Check) error {
	if last := s.check.last; last != nil && c.Checkpoint < last.Checkpoint {
		s.emit(Event{Kind: EventCheck, Session: s.infoLocked(), Check: &c})
		return nil
	}
	switch c.Status {
	case scripts.Passed:
		s.check.sent = 0
	case scripts.Failed, scripts.Timeout:
		if !s.check.sendFailures {
			break
		}
		if s.check.sent >= MaxFailuresSent {
			c.Held = true
			break
		}
		if err := s.queuePromptLocked(checkAuthor, failurePrompt(c)); err != nil {
			s.log.Warn("send the failed check to the agent", "checkpoint", c.Checkpoint, "err", err)
			break
		}
		s.check.sent++
		c.Sent = true
	}
	s.check.last = &c
	s.emit(Event{Kind: EventCheck, Session: s.infoLocked(), Check: &c})
	return nil
}

// SetSendFailures turns on or off sending the session's failed checks to
// its agent. Turning it on starts the count of failures sent over.
func (m *Manager) SetSendFailures(id string, on bool) error {
	return m.withListed(id, func(s *Session) error {
		if on && !s.check.sendFailures {
			s.check.sent = 0
		}
		s.check.sendFailures = on
		s.emit(Event{Kind: EventCheck, Session: s.infoLocked()})
		return nil
	})
}

// withListed runs fn on session id under its mu, unless it is gone
// (ErrNotFound): what fn changes is announced in order with its other
// changes.
func (m *Manager) withListed(id string, fn func(*Session) error) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.phase == phaseClosed {
		return ErrNotFound
	}
	return fn(s)
}

// failurePrompt is what the agent is told of a failed check.
func failurePrompt(c Check) string {
	out := c.Output
	if len(out) > failureTail {
		out = out[len(out)-failureTail:]
		if i := strings.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	out = strings.TrimRight(strings.ToValidUTF8(out, ""), "\n")
	how := fmt.Sprintf("failed with exit code %d", c.ExitCode)
	if c.Status == scripts.Timeout {
		how = "ran past its time limit and was stopped"
	}
	if out == "" {
		return fmt.Sprintf("The workspace's check %s after your last turn, with no output. Please find out why and fix it.", how)
	}
	return fmt.Sprintf("The workspace's check %s after your last turn. The end of its output:\n\n```\n%s\n```\n\nPlease fix what it reports.", how, strings.ReplaceAll(out, "```", "'''"))
}
