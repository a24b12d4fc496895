package sessions

import (
	"strings"
	"testing"
	"time"
)

// statusInput is a status line input as Claude Code 2.1 gives it, with
// the figures agentmux reads.
const statusInput = `{"session_id":"x","cwd":"/w","model":{"id":"claude-sonnet-4-5","display_name":"Sonnet 4.5"},
"workspace":{"current_dir":"/w","project_dir":"/w"},"version":"2.1.197",
"cost":{"total_cost_usd":0.4213,"total_duration_ms":5000,"total_lines_added":3,"total_lines_removed":1},
"context_window":{"total_input_tokens":18230,"total_output_tokens":2101,"context_window_size":200000,"used_percentage":12.5,"remaining_percentage":87.5},
"rate_limits":{"five_hour":{"used_percentage":31,"resets_at":1795993200},"seven_day":{"used_percentage":4.5,"resets_at":"2026-12-03T08:00:00Z"}}}`

func TestParseClaudeStatus(t *testing.T) {
	now := time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)
	u, err := ParseClaudeStatus([]byte(statusInput), now)
	if err != nil {
		t.Fatal(err)
	}
	if u.Model != "Sonnet 4.5" || *u.CostUSD != 0.4213 || *u.InputTokens != 18230 || *u.OutputTokens != 2101 ||
		*u.ContextPercent != 12.5 || u.ContextSize != 200000 || u.Source != "claude-statusline" || !u.UpdatedAt.Equal(now) {
		t.Errorf("usage %+v", u)
	}
	if len(u.Windows) != 2 || u.Windows[0].Name != "five_hour" || u.Windows[0].UsedPercent != 31 ||
		!u.Windows[0].ResetsAt.Equal(time.Unix(1795993200, 0)) || !u.Windows[1].ResetsAt.Equal(time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("windows %+v", u.Windows)
	}

	// An API key's input has no windows; figures out of range, or of the
	// wrong kind, are left out rather than shown.
	u, err = ParseClaudeStatus([]byte(`{"model":{"id":"m"},"cost":{"total_cost_usd":-1},"context_window":{"used_percentage":140},"rate_limits":{"five_hour":{"used_percentage":"lots"}}}`), now)
	if err == nil {
		t.Errorf("a window's percentage as a string was taken: %+v", u)
	}
	u, err = ParseClaudeStatus([]byte(`{"model":{"id":"m"},"cost":{"total_cost_usd":-1},"context_window":{"used_percentage":140},"rate_limits":{"five_hour":{"used_percentage":101}}}`), now)
	if err != nil || u.Model != "m" || u.CostUSD != nil || u.ContextPercent != nil || len(u.Windows) != 0 {
		t.Errorf("out of range: %+v %v", u, err)
	}
	if _, err := ParseClaudeStatus([]byte("not json"), now); err == nil {
		t.Error("not JSON was taken")
	}
}

// TestStatusLine: a report with the run's secret becomes the session's
// usage and is announced once per change; without it nothing changes.
func TestStatusLine(t *testing.T) {
	m := hookedManager(t, nil)
	var log eventLog
	m.Subscribe(log.add)
	s, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	secret := envOf(t, s)[EnvHookSecret]
	if err := s.StatusLine("wrong", []byte(statusInput)); err != ErrHookSecret {
		t.Errorf("a wrong secret: %v", err)
	}
	if s.Info().Usage != nil {
		t.Fatal("usage from a wrong secret")
	}
	for range 2 {
		if err := s.StatusLine(secret, []byte(statusInput)); err != nil {
			t.Fatal(err)
		}
	}
	if u := s.Info().Usage; u == nil || *u.CostUSD != 0.4213 {
		t.Fatalf("usage %+v", u)
	}
	changed := strings.Replace(statusInput, "0.4213", "0.5", 1)
	if err := s.StatusLine(secret, []byte(changed)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range log.since(0) {
		if ev.Kind == EventUsage {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d usage events for two changes", n)
	}
}
