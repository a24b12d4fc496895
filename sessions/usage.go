package sessions

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Usage is what a session's agent reported it spends: its own figures,
// never a guess. A field it did not report is absent.
type Usage struct {
	// Model is the model the agent runs, as it names it for people.
	Model string `json:"model,omitempty"`
	// CostUSD is the session's cost so far, as the agent estimates it.
	CostUSD *float64 `json:"costUsd,omitempty"`
	// InputTokens and OutputTokens count the session's tokens so far.
	InputTokens  *int64 `json:"inputTokens,omitempty"`
	OutputTokens *int64 `json:"outputTokens,omitempty"`
	// ContextPercent is how full the model's context window is, 0 to
	// 100; ContextSize is the window's size in tokens.
	ContextPercent *float64 `json:"contextPercent,omitempty"`
	ContextSize    int64    `json:"contextSize,omitempty"`
	// Windows are the account's usage windows the agent reported (a
	// subscription's 5-hour and weekly limits).
	Windows []LimitWindow `json:"windows,omitempty"`
	// Source says where the figures came from: "claude-statusline".
	Source string `json:"source"`
	// UpdatedAt is when the agent last reported.
	UpdatedAt time.Time `json:"updatedAt"`
}

// LimitWindow is one of the account's usage windows.
type LimitWindow struct {
	// Name is "five_hour" or "seven_day", as Claude Code names them.
	Name string `json:"name"`
	// UsedPercent is how much of the window is used, 0 to 100.
	UsedPercent float64 `json:"usedPercent"`
	// ResetsAt is when the window starts afresh; absent when not said.
	ResetsAt *time.Time `json:"resetsAt,omitempty"`
}

// Limits of what a status line report may carry.
const (
	// MaxStatusLineBytes bounds a status line report: Claude Code's input
	// to its status line is a few hundred bytes.
	MaxStatusLineBytes = 64 << 10
	// maxModelBytes bounds the model's name kept.
	maxModelBytes = 128
)

// claudeStatus is the part of Claude Code's status line input (2.1) that
// the server reads.
type claudeStatus struct {
	Model struct {
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
	} `json:"model"`
	Cost *struct {
		TotalCostUSD *float64 `json:"total_cost_usd"`
	} `json:"cost"`
	ContextWindow *struct {
		ContextWindowSize int64    `json:"context_window_size"`
		UsedPercentage    *float64 `json:"used_percentage"`
	} `json:"context_window"`
	RateLimits map[string]struct {
		UsedPercentage *float64        `json:"used_percentage"`
		ResetsAt       json.RawMessage `json:"resets_at"`
	} `json:"rate_limits"`
	// TranscriptPath is the conversation's transcript (claudeusage.go).
	TranscriptPath string `json:"transcript_path"`
}

// ParseClaudeStatus reads Claude Code's status line input into a Usage
// taken at now. Figures out of range are left out rather than shown.
func ParseClaudeStatus(payload []byte, now time.Time) (Usage, error) {
	u, _, err := parseClaudeStatus(payload, now)
	return u, err
}

// parseClaudeStatus is ParseClaudeStatus, and the transcript the input
// names.
func parseClaudeStatus(payload []byte, now time.Time) (Usage, string, error) {
	var in claudeStatus
	if err := json.Unmarshal(payload, &in); err != nil {
		return Usage{}, "", fmt.Errorf("%w: status line input is not JSON: %w", ErrInvalid, err)
	}
	u := Usage{Source: "claude-statusline", UpdatedAt: now.UTC()}
	u.Model = cleanText(in.Model.DisplayName)
	if u.Model == "" {
		u.Model = cleanText(in.Model.ID)
	}
	if len(u.Model) > maxModelBytes {
		u.Model = u.Model[:maxModelBytes]
	}
	if in.Cost != nil && finite(in.Cost.TotalCostUSD) && *in.Cost.TotalCostUSD >= 0 {
		u.CostUSD = in.Cost.TotalCostUSD
	}
	// The context window's tokens are its last message's, not the
	// session's: those come from the transcript (claudeusage.go).
	if cw := in.ContextWindow; cw != nil {
		if finite(cw.UsedPercentage) && *cw.UsedPercentage >= 0 && *cw.UsedPercentage <= 100 {
			u.ContextPercent = cw.UsedPercentage
		}
		if cw.ContextWindowSize > 0 {
			u.ContextSize = cw.ContextWindowSize
		}
	}
	for _, name := range []string{"five_hour", "seven_day"} {
		w, ok := in.RateLimits[name]
		if !ok || !finite(w.UsedPercentage) || *w.UsedPercentage < 0 || *w.UsedPercentage > 100 {
			continue
		}
		lw := LimitWindow{Name: name, UsedPercent: *w.UsedPercentage}
		if t, ok := parseResetTime(w.ResetsAt); ok {
			lw.ResetsAt = &t
		}
		u.Windows = append(u.Windows, lw)
	}
	return u, in.TranscriptPath, nil
}

// parseResetTime reads a window's reset time, which Claude Code gives as
// Unix seconds or as an RFC 3339 string.
func parseResetTime(raw json.RawMessage) (time.Time, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t.UTC(), true
		}
		raw = json.RawMessage(s) // a number in a string
	}
	secs, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || secs <= 0 || math.IsInf(secs, 0) || secs > 1e11 {
		return time.Time{}, false
	}
	return time.Unix(int64(secs), 0).UTC(), true
}

func finite(f *float64) bool { return f != nil && !math.IsNaN(*f) && !math.IsInf(*f, 0) }

// StatusLine takes Claude Code's status line input, which `agentmux hook
// statusline` forwards with the run's hook secret: the session's usage as
// the agent reports it. A report that changes nothing announces nothing.
func (s *Session) StatusLine(secret string, payload []byte) error {
	s.mu.Lock()
	ok := s.isSecretLocked(secret)
	s.mu.Unlock()
	if !ok {
		return ErrHookSecret
	}
	u, transcript, err := parseClaudeStatus(payload, time.Now())
	if err != nil {
		return err
	}
	// Claude writes its transcript a moment after its Stop hook: what a
	// turn's last message spent is often read here, after the turn.
	if transcript != "" {
		s.readTranscript(transcript)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isSecretLocked(secret) {
		return ErrHookSecret // the run ended meanwhile
	}
	// The tokens are the transcript's, which the turns divide.
	s.noteUsageLocked(withTranscriptTokens(u, s.transcript))
	return nil
}

// noteUsageLocked keeps an agent's report of what it spends, and tells
// clients when its figures changed. mu must be held.
func (s *Session) noteUsageLocked(u Usage) {
	if s.usage != nil && sameFigures(*s.usage, u) {
		s.usage.UpdatedAt = u.UpdatedAt
		return
	}
	s.usage = &u
	s.turns.reported(s.usage)
	s.emit(Event{Kind: EventUsage, Session: s.infoLocked()})
	s.learnResetLocked()
}

// sameFigures reports whether two reports say the same, their times
// aside.
func sameFigures(a, b Usage) bool {
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// usageLocked returns a copy of the session's usage. mu must be held.
func (s *Session) usageLocked() *Usage {
	if s.usage == nil {
		return nil
	}
	u := *s.usage
	u.Windows = append([]LimitWindow(nil), u.Windows...)
	return &u
}
