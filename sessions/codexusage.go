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
// windows; and how each turn ended, as task_complete events, which for a
// turn that failed (its usage limit reached) carry the error. Codex's
// notify program says when a turn ended well, not when one failed: the
// file is read at each notification, and when the run's output pauses
// (jsonltail.go), so nothing is read while the session is idle.

// codexEvent is the part of a rollout line agentmux reads.
type codexEvent struct {
	Type    string `json:"type"`
	Payload struct {
		Type string `json:"type"`
		// Info and RateLimits are a token_count's; Info is null in the
		// one a refused request records.
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
		// Error is a task_complete's, for a turn that failed.
		Error *codexError `json:"error"`
	} `json:"payload"`
}

type codexWindow struct {
	UsedPercent   *float64 `json:"used_percent"`
	WindowMinutes int      `json:"window_minutes"`
	ResetsAt      *int64   `json:"resets_at"`
}

// codexError is why a Codex turn failed; Info is
// "usage_limit_exceeded" for the account's limit.
type codexError struct {
	Message string `json:"message"`
	Info    string `json:"codex_error_info"`
}

// rolloutNews is what a read of a rollout found: the newest figures,
// and a turn that failed after them.
type rolloutNews struct {
	tokens  *codexEvent
	windows *codexEvent
	failed  *codexError
}

// readCodexRollout reads what the run's conversation recorded since the
// last read: the newest figures become the session's usage, and a turn
// that failed ends the turn (its usage limit reached: limited).
func (s *Session) readCodexRollout(proc *pty.Process) {
	path := openRollout(proc)
	if path == "" {
		return
	}
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	if s.rollout == nil || s.rollout.path != path {
		s.rollout = &jsonlTail{path: path} // a new conversation: read it from its start
	}
	news, err := readRollout(s.rollout)
	if err != nil {
		s.log.Warn("read Codex's record of its turns", "file", path, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.proc != proc {
		return // the run ended meanwhile
	}
	if news.tokens != nil || news.windows != nil {
		s.noteUsageLocked(codexUsage(s.usage, news, time.Now()))
	}
	if f := news.failed; f != nil {
		if f.Info == "usage_limit_exceeded" {
			s.noteLimitLocked(s.limitResetLocked(), f.Message)
		}
		s.startWaitingLocked("Codex's turn failed: "+cleanText(f.Message), true)
	}
}

// readRollout reads the rollout's new lines.
func readRollout(t *jsonlTail) (rolloutNews, error) {
	var news rolloutNews
	lines, err := t.lines()
	if err != nil {
		return news, err
	}
	for line := range lines {
		tokens, done := bytes.Contains(line, []byte(`"token_count"`)), bytes.Contains(line, []byte(`"task_complete"`))
		if !tokens && !done {
			continue
		}
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil || ev.Type != "event_msg" {
			continue
		}
		switch ev.Payload.Type {
		case "token_count":
			if ev.Payload.Info != nil {
				news.tokens = &ev
			}
			if ev.Payload.RateLimits != nil {
				news.windows = &ev
			}
		case "task_complete":
			// A later turn's end says the agent went on.
			news.failed = ev.Payload.Error
		}
	}
	return news, nil
}

// codexUsage is the figures news brings over the usage before (the
// tokens of the last token_count that had them, the windows of the last
// that had those). Codex reports no cost; the context used is the last
// turn's tokens over the model's window.
func codexUsage(before *Usage, news rolloutNews, now time.Time) Usage {
	u := Usage{Source: "codex-rollout"}
	if before != nil {
		u = *before
	}
	u.UpdatedAt = now.UTC()
	if ev := news.tokens; ev != nil {
		info := ev.Payload.Info
		in, out := info.Total.Input, info.Total.Output
		u.InputTokens, u.OutputTokens = &in, &out
		u.ContextSize, u.ContextPercent = 0, nil
		if info.ContextWindow > 0 {
			u.ContextSize = info.ContextWindow
			p := min(100, 100*float64(info.Last.Total)/float64(info.ContextWindow))
			u.ContextPercent = &p
		}
	}
	if ev := news.windows; ev != nil {
		rl := ev.Payload.RateLimits
		u.Windows = nil
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
