package sessions

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/textrule"
)

// ErrNotWaiting means an answer came for a session that no longer waits
// for it: the agent moved on, or waits at another request than the one
// the answer was given to.
var ErrNotWaiting = errors.New("the session no longer waits for that answer")

// ErrNoDialog means the session's agent asks permission in a dialog
// whose keys agentmux does not know: it is answered in its terminal.
var ErrNoDialog = errors.New("agentmux does not know the keys of this agent's permission dialog")

// The kinds of Answer.
const (
	AnswerAllow = "allow"
	AnswerDeny  = "deny"
	AnswerReply = "reply"
)

// MaxReply bounds a reply's text in bytes: an answer to a question, not
// a document.
const MaxReply = 4 << 10

// Answer is a person's answer to a session that waits for them, given
// without sitting at its terminal: from another agentmux's hub, or any
// client of the API.
type Answer struct {
	// Kind is AnswerAllow, AnswerDeny or AnswerReply.
	Kind string
	// Permission is the request an Allow or Deny answers. It is refused
	// unless the session still waits at a request for the same tool and
	// summary: an Allow clicked long after the dialog went must not type
	// into whatever the agent shows now.
	Permission *Permission
	// Text is a reply: typed, then submitted once the agent took it.
	Text string
}

// Check reports what makes a malformed, as ErrInvalid.
func (a Answer) Check() error {
	switch a.Kind {
	case AnswerAllow, AnswerDeny:
		if a.Permission == nil {
			return fmt.Errorf("%w: an %s names the permission request it answers (tool and summary)", ErrInvalid, a.Kind)
		}
	case AnswerReply:
		switch {
		case a.Text == "":
			return fmt.Errorf("%w: a reply needs its text", ErrInvalid)
		case len(a.Text) > MaxReply:
			return fmt.Errorf("%w: a reply is at most %d bytes; this one has %d", ErrInvalid, MaxReply, len(a.Text))
		case !utf8.ValidString(a.Text):
			return fmt.Errorf("%w: a reply must be UTF-8", ErrInvalid)
		}
		// A line break would submit part of the reply early, and any
		// other control character is a key.
		if r, bad := textrule.FirstNotLine(a.Text); bad {
			return fmt.Errorf("%w: a reply is one line of text; it holds %q", ErrInvalid, r)
		}
	default:
		return fmt.Errorf("%w: an answer is allow, deny or a reply, not %q", ErrInvalid, a.Kind)
	}
	return nil
}

// permissionKeys returns what an agent's permission dialog takes as
// Allow and Deny, for the agents whose dialog we have seen. Claude Code
// 2.1's dialog lists "1. Yes" first, whatever its other choices; a digit
// picks its choice wherever the highlight is, and Esc cancels it, which
// Claude reports as the user rejecting the tool. (The browser's answer
// card has the same table, web/src/models/answers.ts.)
func permissionKeys(agent string) (allow, deny []byte, ok bool) {
	if agent == ProfileClaude {
		return []byte("1"), []byte("\x1b"), true
	}
	return nil, nil, false
}

// Answer types a person's answer into a session that waits for it: the
// agent's own keys for an Allow or a Deny, or a reply's text and then
// its Enter. It is refused (ErrNotWaiting) unless the session waits, at
// the very permission request an Allow or Deny names.
func (s *Session) Answer(a Answer) error {
	if err := a.Check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.in == nil {
		return fmt.Errorf("session %s: %w", s.id, ErrNotRunning)
	}
	if !s.det.isWaiting() {
		return fmt.Errorf("session %s: %w: it is %s", s.id, ErrNotWaiting, s.infoLocked().Status)
	}
	var keys []byte
	switch a.Kind {
	case AnswerAllow, AnswerDeny:
		asked := s.det.permissionAsked()
		if asked == nil || *asked != *a.Permission {
			return fmt.Errorf("session %s: %w: it does not wait at the permission request for %s", s.id, ErrNotWaiting, textrule.Shown(a.Permission.Tool))
		}
		allow, deny, ok := permissionKeys(s.profile.Name)
		if !ok {
			return fmt.Errorf("session %s (%s): %w", s.id, s.profile.Name, ErrNoDialog)
		}
		keys = deny
		if a.Kind == AnswerAllow {
			keys = allow
		}
	default:
		// The text, then its Enter on its own once the agent took the
		// text, as typed keys are (typeKeysLocked).
		keys = []byte(a.Text + "\r")
	}
	if held, err := s.prompts.holdBehind(keys); held {
		return err
	}
	s.prompts.sitOut(false)
	s.endWaitingLocked("an answer from its user")
	if err := s.typeKeysLocked(keys, "an answer"); err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	s.touch()
	return nil
}
