package sessions

import (
	"cmp"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/internal/clip"
)

// HookConfig lets agents whose CLI has notification hooks (Claude Code)
// or a notify program (Codex) tell the server themselves when they wait
// for their user, which beats every guess made from their output.
type HookConfig struct {
	// URL is the loopback endpoint hooks post to; the session's id is
	// appended as the last path element.
	URL string
	// SettingsFile is a Claude Code settings file whose hooks run the
	// hook command, which posts to $AGENTMUX_HOOK_URL with
	// $AGENTMUX_HOOK_SECRET.
	SettingsFile string
	// NotifyCommand is the program and arguments Codex runs as its notify
	// program; Codex appends the notification (JSON) as the last
	// argument, and the program posts it to $AGENTMUX_HOOK_URL with
	// $AGENTMUX_HOOK_SECRET.
	NotifyCommand []string
}

// agentArgs returns the arguments that point an agent of profile p at the
// hooks, or nil when it has none or the server takes no hook calls (h is
// nil).
func (h *HookConfig) agentArgs(p Profile) []string {
	switch {
	case h == nil:
		return nil
	case p.Hooks:
		// Claude Code reads extra settings, here its hooks, from a file.
		return []string{"--settings", h.SettingsFile}
	case p.Notify && len(h.NotifyCommand) > 0:
		// A -c override holds for this run only: the user's own
		// ~/.codex/config.toml is left as it is.
		return []string{"-c", "notify=" + tomlStrings(h.NotifyCommand)}
	}
	return nil
}

// tomlString returns s as a TOML basic string: JSON's string escapes are
// all TOML's too.
func tomlString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err) // a string: cannot fail
	}
	return string(b)
}

// tomlStrings returns ss as a TOML array of basic strings. JSON's string
// escapes (\", \\, \n, \uXXXX, ...) are all TOML's too, so a JSON array of
// strings is that TOML array.
func tomlStrings(ss []string) string {
	b, err := json.Marshal(ss)
	if err != nil {
		panic(err) // a slice of strings: cannot fail
	}
	return string(b)
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
// its user: a permission request (the dialog asking to allow a tool, which
// Claude tells its hooks just before it draws it, and names the tool and
// its input; the notification about it comes seconds later), a
// notification (a permission prompt, or idle at the prompt), the end of a
// turn, a question asked with the AskUserQuestion tool, a prompt
// submitted, and the start of a session (Claude at its prompt, once past
// its dialogs); and the end of a turn an API error ended, which says when
// a usage limit did. The names are those of Claude Code's settings schema
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
	settings := map[string]any{
		// The status line's input says what the session spends; the
		// command shows the user's own line after handing it over.
		"statusLine": map[string]any{"type": "command", "command": command + " statusline", "padding": 0},
		"hooks": map[string][]matcher{
			"Notification":      {{Hooks: h}},
			"Stop":              {{Hooks: h}},
			"StopFailure":       {{Hooks: h}},
			"UserPromptSubmit":  {{Hooks: h}},
			"SessionStart":      {{Hooks: h}},
			"PreToolUse":        {{Matcher: "AskUserQuestion", Hooks: h}},
			"PermissionRequest": {{Hooks: h}},
		},
	}
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

// hookPayload is the part of Claude Code's hook input, or of Codex's
// notification, the server reads.
type hookPayload struct {
	// Type and ThreadID are a Codex notification's; Claude's input has
	// neither.
	Type     string `json:"type"`
	ThreadID string `json:"thread-id"`
	Event    string `json:"hook_event_name"`
	Source   string `json:"source"`
	Message  string `json:"message"`
	Cwd      string `json:"cwd"`
	ToolName string `json:"tool_name"`
	// ToolInput is read per tool: a Write's holds the whole file.
	ToolInput json.RawMessage `json:"tool_input"`
	// TranscriptPath is the conversation's transcript, which Claude
	// Code names in every hook's input.
	TranscriptPath string `json:"transcript_path"`
	// Error, ErrorDetails and LastAssistantMessage are StopFailure's:
	// the API error that ended the turn ("rate_limit" for a usage
	// limit), and what Claude showed for it.
	Error                string `json:"error"`
	ErrorDetails         string `json:"error_details"`
	LastAssistantMessage string `json:"last_assistant_message"`
}

// askedQuestion returns the first question of an AskUserQuestion's input,
// cleaned, or "".
func askedQuestion(input json.RawMessage) string {
	var in struct {
		Questions []struct {
			Question string `json:"question"`
		} `json:"questions"`
	}
	if json.Unmarshal(input, &in) != nil || len(in.Questions) == 0 {
		return ""
	}
	return cleanText(in.Questions[0].Question)
}

// Hook applies a call from the agent's hooks: secret must be the current
// run's, payload Claude Code's hook input or Codex's notification. It
// returns ErrHookSecret for a wrong secret (or when no run is going) and
// ErrInvalid for input it cannot read.
func (s *Session) Hook(secret string, payload []byte) error {
	s.mu.Lock()
	// The secret first: a caller without it learns nothing, not even
	// how its input would be read.
	ok := s.isSecretLocked(secret)
	s.mu.Unlock()
	if !ok {
		return ErrHookSecret
	}
	var p hookPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("%w: hook input is not JSON: %w", ErrInvalid, err)
	}
	if p.Event == "" && p.Type != "" {
		return s.codexNotify(secret, p)
	}
	if p.Event == "Stop" || p.Event == "StopFailure" {
		// Before the turn is counted as ended: what it spent is in the
		// transcript, and what Claude writes there after the hook is
		// read as it comes. Outside the lock: it reads the file.
		s.readTranscript(p.TranscriptPath)
		defer s.followTranscript(p.TranscriptPath)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSecretLocked(secret) {
		return ErrHookSecret // the run ended meanwhile
	}
	switch p.Event {
	case "Notification":
		msg := cleanText(p.Message)
		if msg == "" {
			msg = "the agent needs your attention"
		}
		s.hooked()
		// A permission dialog or a question: a queued prompt would
		// answer it.
		s.startWaitingLocked(msg, false)
	case "Stop":
		s.hooked()
		s.startTurnEndWaitLocked("the agent finished and waits for your next prompt")
	case "StopFailure":
		s.hooked()
		if msg := cmp.Or(p.LastAssistantMessage, p.ErrorDetails); p.Error == "rate_limit" && isUsageLimit(msg) {
			reset := s.limitResetLocked()
			if reset.IsZero() {
				reset, _ = claudeReset(msg, time.Now())
				s.fullWindowLocked(claudeLimitWindow(msg), reset)
			}
			s.noteLimitLocked(reset, msg)
		}
		why := "the turn ended on an API error (" + clip.Quote(p.Error) + ")"
		s.startTurnEndWaitLocked(why)
	case "PreToolUse":
		if p.ToolName != "AskUserQuestion" {
			return nil // other tools do not wait for the user
		}
		msg := "the agent asks you a question"
		if q := askedQuestion(p.ToolInput); q != "" {
			msg = "the agent asks: " + q
		}
		s.hooked()
		s.startWaitingLocked(msg, false)
	case "PermissionRequest":
		s.hooked()
		if p.ToolName == "AskUserQuestion" {
			return nil // its PreToolUse hook has said the question
		}
		s.startPermissionWaitLocked(newPermission(p.ToolName, p.ToolInput, p.Cwd, s.cwd))
	case "UserPromptSubmit":
		s.hooked()
		s.endWaitingLocked("prompt submitted")
	case "SessionStart":
		// Claude is at its prompt, past its dialogs: started, resumed,
		// cleared or compacted, it waits for the user.
		s.hooked()
		why := "Claude is ready for your first prompt"
		if p.Source == "resume" {
			why = "Claude resumed the conversation and waits for your prompt"
		}
		s.startWaitingLocked(why, true)
	default:
		return fmt.Errorf("%w: unknown hook event %s", ErrInvalid, clip.Quote(p.Event))
	}
	return nil
}

// isSecretLocked reports whether secret is the current run's hook secret.
// mu must be held.
func (s *Session) isSecretLocked(secret string) bool {
	return s.run.secret != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(s.run.secret)) == 1
}

// codexNotify applies a notification from Codex's notify program, whose
// run's secret is secret.
//
// Codex notifies the end of a turn of any of its threads, and a turn of
// the user's conversation starts others (one names the conversation, and
// may end first); so a notification counts only when its thread is the
// conversation: the one learned, or the one whose record the run holds
// open now, which a new conversation (/new) is before the poll learns it.
// A notification without a thread id is the conversation's.
//
// It leaves the question-mark guess on: Codex notifies only the end of a
// turn, not its approval prompts, which the guess may still catch.
func (s *Session) codexNotify(secret string, p hookPayload) error {
	if p.Type != "agent-turn-complete" {
		return fmt.Errorf("%w: unknown Codex notification %s", ErrInvalid, clip.Quote(p.Type))
	}
	s.mu.Lock()
	proc := s.run.proc
	s.mu.Unlock()
	conv := s.conv.current()
	// Outside the lock: the look at the run's open files reads /proc.
	if p.ThreadID != "" && p.ThreadID != conv && (proc == nil || openConversation(proc) != p.ThreadID) {
		s.log.Debug("a Codex thread other than the conversation finished a turn", "thread", clip.Quote(p.ThreadID), "conversation", conv)
		return nil
	}
	// Outside the lock, and before the turn is counted as ended: what it
	// spent is in Codex's file.
	s.readCodexRollout(proc)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSecretLocked(secret) {
		return ErrHookSecret // the run ended meanwhile
	}
	s.startWaitingLocked("Codex finished its turn and waits for your next prompt", true)
	return nil
}

// hooked notes that this run's agent reports through hooks, so the guess
// from a trailing question mark is no longer needed. Its callers hold mu,
// so the note cannot outlive the run the hook spoke for.
func (s *Session) hooked() {
	if s.det.hook() {
		s.log.Debug("the agent reports through hooks; the question-mark guess is off for this run")
	}
}
