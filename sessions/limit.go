package sessions

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// StatusLimited is the status of a session whose agent an account's usage
// limit stopped: it waits for the limit to reset (Info.Limit says when).
const StatusLimited Status = "limited"

// Limit is an account's usage limit that stopped a session's agent. It
// holds until the agent works again: the user typed, or agentmux typed
// the continue prompt at the reset.
type Limit struct {
	// Since is when the agent reported it.
	Since time.Time `json:"since"`
	// ResetsAt is when the limit resets, as the agent said; absent when
	// it did not say, and then nothing continues by itself.
	ResetsAt *time.Time `json:"resetsAt,omitempty"`
	// Message is the agent's words for it.
	Message string `json:"message"`
	// Continue says agentmux types the continue prompt once the limit
	// has reset (package afterlimit): on by default for a session the
	// limit stopped in the middle of a turn, which is all of them, since
	// the agents report a limit when it refuses their turn.
	Continue bool `json:"continue"`
	// ContinuedAt is when agentmux queued the continue prompt, which it
	// does once.
	ContinuedAt *time.Time `json:"continuedAt,omitempty"`
}

// ErrNotLimited says a session is not waiting for a limit to reset, or
// has been continued already.
var ErrNotLimited = errors.New("the session is not stopped by a usage limit")

// continueAuthor queues the continue prompt.
var continueAuthor = Author{ID: "agentmux:continue", Name: "agentmux"}

// maxLimitMessage bounds the agent's words kept for a limit.
const maxLimitMessage = 512

// noteLimitLocked records that an account's limit stopped the agent,
// resetting at resetsAt (zero when not said), in the agent's words msg.
// The session is limited from now until its agent works again. mu must
// be held.
func (s *Session) noteLimitLocked(resetsAt time.Time, msg string) {
	if s.run.phase != phaseRunning {
		return
	}
	msg = cleanText(msg)
	if len(msg) > maxLimitMessage {
		msg = msg[:maxLimitMessage]
	}
	if msg == "" {
		msg = "the account's usage limit is reached"
	}
	l := &Limit{Since: time.Now().UTC(), Message: msg, Continue: s.continueByDefault}
	if !resetsAt.IsZero() {
		t := resetsAt.UTC()
		l.ResetsAt = &t
	}
	if old := s.limit; old != nil && sameReset(old.ResetsAt, l.ResetsAt) {
		return // the same stop, said again
	}
	s.limit = l
	s.log.Info("the account's usage limit stopped the agent", "resetsAt", l.ResetsAt, "message", msg)
	// Said now when the agent waits already; else when it does.
	s.announceLimitLocked()
}

// awaitsResetLocked reports whether the session waits for its limit to
// reset, and has not been continued: no prompt is typed meanwhile. mu
// must be held.
func (s *Session) awaitsResetLocked() bool {
	return s.limit != nil && (s.limit.ContinuedAt == nil || time.Now().Before(s.menuClosing))
}

// menuClose is how long the continue prompt waits after the Escape that
// closes the menu a limit may have opened: Claude Code asks "What do you
// want to do?" at an account's first limit, Codex offers another model,
// and either would take the prompt's Enter as its answer. At the prompt,
// one Escape does nothing.
const menuClose = 500 * time.Millisecond

// announceLimitLocked makes the waiting session limited and tells
// clients, once. mu must be held.
func (s *Session) announceLimitLocked() {
	l := s.limit
	if l == nil || !s.det.limit(limitWords(l)) {
		return
	}
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
	s.emit(Event{Kind: EventNeedsInput, Session: s.infoLocked(), Message: fmt.Sprintf("Session '%s' %s", s.name, limitWords(l))})
}

// explainLimitLocked tells clients of a change to the limit, its status
// unchanged, with the reason said anew. mu must be held.
func (s *Session) explainLimitLocked() {
	if st, _ := s.det.shown(); st == StatusLimited {
		s.det.explain(limitWords(s.limit))
	}
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
}

// limitWords says a limit and what happens at its reset, as a status's
// reason.
func limitWords(l *Limit) string {
	switch {
	case l.ResetsAt == nil:
		return "stopped at the usage limit; the reset time is not known"
	case l.Continue:
		return "stopped at the usage limit; it goes on at " + l.ResetsAt.Local().Format("15:04 MST")
	}
	return "stopped at the usage limit; it resets at " + l.ResetsAt.Local().Format("15:04 MST")
}

func sameReset(a, b *time.Time) bool {
	return a == nil && b == nil || a != nil && b != nil && a.Equal(*b)
}

// limitLocked returns a copy of the session's limit, or nil. mu must be
// held.
func (s *Session) limitLocked() *Limit {
	if s.limit == nil {
		return nil
	}
	l := *s.limit
	return &l
}

// liftLimitLocked ends the limit: the agent works again. mu must be held.
func (s *Session) liftLimitLocked() {
	s.limit = nil
}

// SetContinue turns on or off the continue prompt at the reset of the
// limit that stopped the session; a session continued already, or not
// limited, is ErrNotLimited.
func (m *Manager) SetContinue(id string, on bool) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == nil || s.limit.ContinuedAt != nil {
		return ErrNotLimited
	}
	if s.limit.Continue == on {
		return nil
	}
	s.limit.Continue = on
	s.explainLimitLocked()
	return nil
}

// ContinueAfterLimit queues text for the agent the limit stopped, as
// agentmux, or sends on the prompts queued meanwhile, once: it marks the limit continued before queueing, so a
// restart never queues it again. A session not limited, with the
// continue prompt turned off, or continued already is ErrNotLimited.
// The prompt is typed when the agent waits at its prompt, at once or
// after a resume.
func (s *Session) ContinueAfterLimit(text string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == nil || !s.limit.Continue || s.limit.ContinuedAt != nil {
		return ErrNotLimited
	}
	t := now.UTC()
	s.limit.ContinuedAt = &t
	// Saved first: the record that says it was continued is in the
	// store before the prompt can be.
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
	if s.run.in != nil && s.det.isWaiting() {
		if err := s.typeLocked([]byte{0x1b}, false, "the Escape that closes a limit's menu"); err == nil {
			in := s.run.in
			s.menuClosing = time.Now().Add(menuClose)
			time.AfterFunc(menuClose, func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				if s.run.in == in && s.det.isWaiting() {
					s.deliverLocked()
				}
			})
		}
	}
	if len(s.prompts.snapshot().Prompts) > 0 {
		// Prompts queued while the limit held go first: the next of
		// them continues the work.
		if s.det.isWaiting() {
			s.deliverLocked()
		}
		return nil
	}
	if err := s.queuePromptLocked(continueAuthor, text); err != nil {
		return fmt.Errorf("queue the continue prompt: %w", err)
	}
	return nil
}

// limitResetLocked returns when the account's full window resets, as the
// agent last reported its windows; zero when none is full. Both full, the
// later reset is the one that lets the agent go on. mu must be held.
func (s *Session) limitResetLocked() time.Time {
	var at time.Time
	if s.usage == nil {
		return at
	}
	now := time.Now()
	for _, w := range s.usage.Windows {
		if w.UsedPercent >= 100 && w.ResetsAt != nil && w.ResetsAt.After(now) && w.ResetsAt.After(at) {
			at = *w.ResetsAt
		}
	}
	return at
}

// learnResetLocked takes a limit's reset time from the windows the agent
// reported since it said the limit: Claude Code's status line shows the
// full window after its StopFailure hook. mu must be held.
func (s *Session) learnResetLocked() {
	l := s.limit
	if l == nil || l.ContinuedAt != nil {
		return
	}
	at := s.limitResetLocked()
	if at.IsZero() || l.ResetsAt != nil && l.ResetsAt.Equal(at) {
		return
	}
	at = at.UTC()
	l.ResetsAt = &at
	s.explainLimitLocked()
}

// claudeReset reads the reset time in Claude Code's words for a usage
// limit, "You've hit your session limit · resets 2:01am (UTC)", or
// "resets Dec 1, 4:46am (Europe/Paris)" a day or more ahead: the time in
// the zone named, the next such moment after now. Claude's status line,
// which gives the reset as a number, is not run while the menu Claude
// opens at an account's first limit is open.
func claudeReset(msg string, now time.Time) (time.Time, bool) {
	m := claudeResetWords.FindStringSubmatch(msg)
	if m == nil {
		return time.Time{}, false
	}
	loc, err := time.LoadLocation(m[6])
	if err != nil {
		return time.Time{}, false
	}
	hour, _ := strconv.Atoi(m[3])
	minute, _ := strconv.Atoi(m[4]) // "" for "3pm": 0
	if hour < 1 || hour > 12 || minute > 59 {
		return time.Time{}, false
	}
	hour %= 12
	if m[5] == "pm" {
		hour += 12
	}
	local := now.In(loc)
	if m[1] == "" {
		at := time.Date(local.Year(), local.Month(), local.Day(), hour, minute, 0, 0, loc)
		// Claude drops the seconds: a reset in this minute is said as
		// the minute, which has begun.
		if at.Before(now.Add(-time.Minute)) {
			at = at.AddDate(0, 0, 1)
		}
		return at.UTC(), true
	}
	month, err := time.Parse("Jan", m[1])
	day, _ := strconv.Atoi(m[2])
	if err != nil || day < 1 || day > 31 {
		return time.Time{}, false
	}
	at := time.Date(local.Year(), month.Month(), day, hour, minute, 0, 0, loc)
	if at.Before(now.AddDate(0, 0, -1)) {
		at = at.AddDate(1, 0, 0) // "Jan 2" said in December
	}
	return at.UTC(), true
}

var claudeResetWords = regexp.MustCompile(`resets (?:([A-Z][a-z]{2}) (\d{1,2}), )?(\d{1,2})(?::(\d{2}))?(am|pm) \(([^)]+)\)`)

// isUsageLimit tells Claude Code's words for an account's usage limit
// from those for an API key's throttling, which its StopFailure hook
// names rate_limit alike: "API Error: Request rejected (429) · …" after
// its retries, a moment's limit rather than one that resets hours on.
func isUsageLimit(msg string) bool {
	return !strings.HasPrefix(strings.TrimSpace(msg), "API Error")
}

// claudeLimitWindow names the window Claude Code's words for a usage
// limit say is used up: "session limit" is the 5-hour one, "weekly
// limit" the week's; "" for others (a model's own, a spend cap).
func claudeLimitWindow(msg string) string {
	switch {
	case strings.Contains(msg, "hit your session limit"):
		return "five_hour"
	case strings.Contains(msg, "hit your weekly limit"):
		return "seven_day"
	}
	return ""
}

// fullWindowLocked shows the account's window name used up until reset,
// as the agent's words say, where its last report of the window is
// older: Claude Code does not run its status line while the menu it
// opens at an account's first limit is up. mu must be held.
func (s *Session) fullWindowLocked(name string, reset time.Time) {
	if name == "" || reset.IsZero() || s.usage == nil {
		return
	}
	u := *s.usage
	u.Windows = slices.Clone(u.Windows)
	at := reset.UTC()
	full := LimitWindow{Name: name, UsedPercent: 100, ResetsAt: &at}
	if i := slices.IndexFunc(u.Windows, func(w LimitWindow) bool { return w.Name == name }); i >= 0 {
		u.Windows[i] = full
	} else {
		u.Windows = append(u.Windows, full)
	}
	u.UpdatedAt = time.Now().UTC()
	s.noteUsageLocked(u)
}
