package sessions

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Timing holds the delays of status detection. Zero fields take the
// defaults; tests shorten them to milliseconds.
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

// HookConfig lets agents whose CLI has notification hooks (Claude Code)
// tell the server themselves when they wait for their user, which beats
// every guess made from their output.
type HookConfig struct {
	// URL is the loopback endpoint hooks post to; the session's id is
	// appended as the last path element.
	URL string
	// SettingsFile is a Claude Code settings file whose hooks run the
	// hook command, which posts to $AGENTMUX_HOOK_URL with
	// $AGENTMUX_HOOK_SECRET.
	SettingsFile string
}

// Hook endpoint errors.
var (
	// ErrHookSecret means a hook call did not carry the session's secret.
	ErrHookSecret = errors.New("wrong hook secret")
)

// Environment variables a hook command reads.
const (
	EnvHookURL    = "AGENTMUX_HOOK_URL"
	EnvHookSecret = "AGENTMUX_HOOK_SECRET"
)

// HookHeader carries a session's hook secret.
const HookHeader = "X-Agentmux-Hook-Secret"

// ClaudeHookSettings returns a Claude Code settings file that runs command
// (a shell command line) on the hooks that tell whether Claude waits for
// its user: a notification (a permission prompt, or idle at the prompt),
// the end of a turn, a question asked with the AskUserQuestion tool, a
// prompt submitted, and the start of a session (Claude at its prompt, once
// past its dialogs). The names are those of Claude Code's settings schema
// (2.1).
func ClaudeHookSettings(command string) []byte {
	type hook struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type matcher struct {
		Matcher string `json:"matcher,omitempty"`
		Hooks   []hook `json:"hooks"`
	}
	h := []hook{{Type: "command", Command: command, Timeout: 10}}
	settings := map[string]any{"hooks": map[string][]matcher{
		"Notification":     {{Hooks: h}},
		"Stop":             {{Hooks: h}},
		"UserPromptSubmit": {{Hooks: h}},
		"SessionStart":     {{Hooks: h}},
		"PreToolUse":       {{Matcher: "AskUserQuestion", Hooks: h}},
	}}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		panic(err) // only plain maps and strings: cannot fail
	}
	return append(b, '\n')
}

// newSecret returns a fresh hook secret.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}

// hookPayload is the part of Claude Code's hook input the server reads.
type hookPayload struct {
	Event     string `json:"hook_event_name"`
	Source    string `json:"source"`
	Message   string `json:"message"`
	ToolName  string `json:"tool_name"`
	ToolInput struct {
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	} `json:"tool_input"`
}

// Hook applies a call from the agent's hooks: secret must be the current
// run's, payload Claude Code's hook input. It returns ErrHookSecret for a
// wrong secret (or when no run is going) and ErrInvalid for input it
// cannot read.
func (s *Session) Hook(secret string, payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The secret first: a caller without it learns nothing, not even
	// how its input would be read.
	if s.secret == "" || subtle.ConstantTimeCompare([]byte(secret), []byte(s.secret)) != 1 {
		return ErrHookSecret
	}
	var p hookPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("%w: hook input is not JSON: %w", ErrInvalid, err)
	}
	switch p.Event {
	case "Notification":
		msg := cleanText(p.Message)
		if msg == "" {
			msg = "the agent needs your attention"
		}
		s.hookedLocked()
		s.startWaitingLocked(msg)
	case "Stop":
		s.hookedLocked()
		s.startWaitingLocked("the agent finished and waits for your next prompt")
	case "PreToolUse":
		if p.ToolName != "AskUserQuestion" {
			return nil // other tools do not wait for the user
		}
		msg := "the agent asks you a question"
		if qs := p.ToolInput.Questions; len(qs) > 0 && cleanText(qs[0].Question) != "" {
			msg = "the agent asks: " + cleanText(qs[0].Question)
		}
		s.hookedLocked()
		s.startWaitingLocked(msg)
	case "UserPromptSubmit":
		s.hookedLocked()
		s.endWaitingLocked("prompt submitted")
	case "SessionStart":
		// Claude is at its prompt, past its dialogs: started, resumed,
		// cleared or compacted, it waits for the user.
		s.hookedLocked()
		why := "Claude is ready for your first prompt"
		if p.Source == "resume" {
			why = "Claude resumed the conversation and waits for your prompt"
		}
		s.startWaitingLocked(why)
	default:
		return fmt.Errorf("%w: unknown hook event %q", ErrInvalid, p.Event)
	}
	return nil
}

// hookedLocked notes that this run's agent reports through hooks, so the
// guess from a trailing question mark is no longer needed. mu must be held.
func (s *Session) hookedLocked() {
	if !s.hooked {
		s.hooked = true
		s.log.Debug("the agent reports through hooks; the question-mark guess is off for this run")
	}
}

// startWaitingLocked marks the session waiting for its user and says so
// once: further signals before the user answers change nothing. mu must
// be held.
func (s *Session) startWaitingLocked(why string) {
	if s.phase != phaseRunning || s.waiting {
		return
	}
	s.waiting = true
	s.log.Info("session waits for input", "why", why)
	s.setRunStatusLocked(why)
	s.emit(Event{Kind: EventNeedsInput, Session: s.infoLocked(), Message: fmt.Sprintf("Session '%s' needs input: %s", s.name, why)})
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
	s.startWaitingLocked(why)
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
		ask, asks = asksQuestion(s.ring.last(4096))
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
		s.startWaitingLocked("the agent asks: " + ask)
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
