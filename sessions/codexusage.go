package sessions

import (
	"bytes"
	"encoding/json"
	"os"
	"time"

	"github.com/agentmux/agentmux/pty"
)

// Codex records what each turn spent in its conversation's rollout file,
// as token_count events: the conversation's total and the last turn's
// tokens, the model's context window, and the account's rate-limit
// windows. The file is read at the end of each turn (jsonltail.go).

// codexTokenCount is the part of a token_count event agentmux reads.
type codexTokenCount struct {
	Type    string `json:"type"`
	Payload struct {
		Type string `json:"type"`
		Info *struct {
			Total struct {
				Input  int64 `json:"input_tokens"`
				Output int64 `json:"output_tokens"`
			} `json:"total_token_usage"`
			Last struct {
				Total int64 `json:"total_tokens"`
			} `json:"last_token_usage"`
			ContextWindow int64 `json:"model_context_window"`
		} `json:"info"`
		RateLimits *struct {
			Primary   *codexWindow `json:"primary"`
			Secondary *codexWindow `json:"secondary"`
		} `json:"rate_limits"`
	} `json:"payload"`
}

type codexWindow struct {
	UsedPercent   *float64 `json:"used_percent"`
	WindowMinutes int      `json:"window_minutes"`
	ResetsAt      *int64   `json:"resets_at"`
}

// readCodexUsage reads what the run's conversation spent since the last
// read, and keeps the newest figures as the session's usage.
func (s *Session) readCodexUsage(proc *pty.Process) {
	path := openRollout(proc)
	if path == "" {
		return
	}
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	if s.rollout == nil || s.rollout.path != path {
		s.rollout = &jsonlTail{path: path} // a new conversation: read it from its start
	}
	u, err := readRollout(s.rollout, time.Now())
	if err != nil {
		s.log.Warn("read Codex's record of what the turn spent", "file", path, "err", err)
	}
	if u == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noteUsageLocked(*u)
}

// readRollout reads the rollout's new lines and returns the usage its
// newest token_count event says, nil when none came.
func readRollout(t *jsonlTail, now time.Time) (*Usage, error) {
	lines, err := t.lines()
	if err != nil {
		return nil, err
	}
	var last *codexTokenCount
	for line := range lines {
		if !bytes.Contains(line, []byte(`"token_count"`)) {
			continue
		}
		var ev codexTokenCount
		if json.Unmarshal(line, &ev) == nil && ev.Payload.Type == "token_count" && ev.Payload.Info != nil {
			last = &ev
		}
	}
	if last == nil {
		return nil, nil
	}
	return codexUsage(last, now), nil
}

// codexUsage is a token_count event as a Usage. Codex reports no cost;
// the context used is the last turn's tokens over the model's window.
func codexUsage(ev *codexTokenCount, now time.Time) *Usage {
	info := ev.Payload.Info
	in, out := info.Total.Input, info.Total.Output
	u := &Usage{Source: "codex-rollout", UpdatedAt: now.UTC(), InputTokens: &in, OutputTokens: &out}
	if info.ContextWindow > 0 {
		u.ContextSize = info.ContextWindow
		p := min(100, 100*float64(info.Last.Total)/float64(info.ContextWindow))
		u.ContextPercent = &p
	}
	if rl := ev.Payload.RateLimits; rl != nil {
		for i, w := range []*codexWindow{rl.Primary, rl.Secondary} {
			if w == nil || !finite(w.UsedPercent) || *w.UsedPercent < 0 || *w.UsedPercent > 100 {
				continue
			}
			lw := LimitWindow{Name: codexWindowName(w.WindowMinutes, i), UsedPercent: *w.UsedPercent}
			if w.ResetsAt != nil && *w.ResetsAt > 0 {
				t := time.Unix(*w.ResetsAt, 0).UTC()
				lw.ResetsAt = &t
			}
			u.Windows = append(u.Windows, lw)
		}
	}
	return u
}

// codexWindowName names a Codex window as Claude Code's are named, by its
// length: primary and secondary otherwise.
func codexWindowName(minutes, i int) string {
	switch minutes {
	case 300:
		return "five_hour"
	case 7 * 24 * 60:
		return "seven_day"
	}
	return []string{"primary", "secondary"}[i]
}

// openRollout returns the newest rollout file a Codex run holds open, or
// "".
func openRollout(proc *pty.Process) string {
	if proc == nil {
		return ""
	}
	files, err := proc.OpenFiles(codexRollout.MatchString)
	if err != nil || len(files) == 0 {
		return ""
	}
	newest, newestTime := "", time.Time{}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && !fi.ModTime().Before(newestTime) {
			newest, newestTime = f, fi.ModTime()
		}
	}
	return newest
}
