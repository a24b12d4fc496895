package sessions

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
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
	// The context window's tokens are the last message's: the session's
	// come from the transcript.
	if u.Model != "Sonnet 4.5" || *u.CostUSD != 0.4213 || u.InputTokens != nil || u.OutputTokens != nil ||
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

// assistantLine is a transcript line as Claude Code 2.1 writes it for one
// block of an assistant message: each block's line repeats the message's
// usage.
func assistantLine(id string, in, cacheRead, out int) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%s","message":{"id":%q,"role":"assistant","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":%d}}}`+"\n", id, id, in, cacheRead, out)
}

// TestTurnUsage: through the agent's hooks, each turn's tokens come from
// the transcript, read once at its Stop hook, and its cost from the
// status line, also when that comes after the turn ended; the turns add
// up to the session's usage.
func TestTurnUsage(t *testing.T) {
	m := hookedManager(t, nil)
	s, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	secret := envOf(t, s)[EnvHookSecret]
	path := filepath.Join(t.TempDir(), "conversation.jsonl")
	write := func(lines ...string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
			t.Fatal(err)
		}
	}
	hook := func(event string) {
		t.Helper()
		if err := s.Hook(secret, fmt.Appendf(nil, `{"hook_event_name":%q,"transcript_path":%q}`, event, path)); err != nil {
			t.Fatal(err)
		}
	}
	cost := func(usd string) {
		t.Helper()
		in := strings.Replace(statusInput, "0.4213", usd, 1)
		in = strings.Replace(in, `"session_id":"x"`, fmt.Sprintf(`"session_id":"x","transcript_path":%q`, path), 1)
		if err := s.StatusLine(secret, []byte(in)); err != nil {
			t.Fatal(err)
		}
	}

	// Claude at its prompt as it starts: a wait that ends no turn.
	cost("0")
	hook("SessionStart")
	// Turn 1: two API calls, the first in two blocks (one line each).
	hook("UserPromptSubmit")
	cost("0.1")
	write(`{"type":"user","message":{"role":"user","content":"hi"}}`+"\n",
		assistantLine("m1", 100, 0, 3), assistantLine("m1", 100, 0, 20), assistantLine("m2", 10, 100, 7))
	hook("Stop")
	cost("0.25") // the status line after the Stop hook: still turn 1's
	// Turn 2: one call, which Claude writes to the transcript after the
	// Stop hook: the status line's report after it brings it.
	hook("UserPromptSubmit")
	hook("Stop")
	write(assistantLine("m3", 5, 230, 40))
	cost("0.4")

	turns := s.Turns()
	want := []struct {
		in, out int64
		cost    float64
	}{{210, 27, 0.25}, {235, 40, 0.4 - 0.25}}
	if len(turns) != len(want) {
		t.Fatalf("turns %+v", turns)
	}
	var in, out int64
	var usd float64
	for i, w := range want {
		tu := turns[i]
		if tu.Turn != i+1 || *tu.InputTokens != w.in || *tu.OutputTokens != w.out || math.Abs(*tu.CostUSD-w.cost) > 1e-9 {
			t.Errorf("turn %d: %d in, %d out, $%v; want %+v", i+1, *tu.InputTokens, *tu.OutputTokens, *tu.CostUSD, w)
		}
		in, out, usd = in+*tu.InputTokens, out+*tu.OutputTokens, usd+*tu.CostUSD
	}
	u := s.Info().Usage
	if u == nil || *u.InputTokens != in || *u.OutputTokens != out || math.Abs(*u.CostUSD-usd) > 1e-9 {
		t.Errorf("the session's usage %+v is not its turns' sum: %d in, %d out, $%v", u, in, out, usd)
	}
	// Turn 3: Claude writes its last message after the Stop hook and
	// reports nothing after it: the watch on the transcript reads it.
	hook("UserPromptSubmit")
	hook("Stop")
	write(assistantLine("m4", 1, 9, 2))
	testutil.Eventually(t, hookTimeout, "turn 3's tokens, written after its Stop hook", func() bool {
		ts := s.Turns()
		return len(ts) == 3 && *ts[2].InputTokens == 10 && *ts[2].OutputTokens == 2
	})
	if u := s.Info().Usage; *u.InputTokens != in+10 || *u.OutputTokens != out+2 {
		t.Errorf("the session's usage %+v after turn 3", u)
	}
	// Each byte of the transcript was read once.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	s.tailMu.Lock()
	read := s.transcript.tail.read
	s.tailMu.Unlock()
	if read != fi.Size() {
		t.Errorf("read %d bytes of a %d-byte transcript", read, fi.Size())
	}
}

// TestClaudeReset reads the reset time from Claude Code's words for a
// usage limit: a time today or tomorrow, or a date a day or more ahead,
// in the zone it names.
func TestClaudeReset(t *testing.T) {
	now := time.Date(2026, 11, 29, 22, 41, 0, 0, time.UTC)
	for _, tc := range []struct {
		msg  string
		want time.Time
	}{
		{"You've hit your session limit · resets 2:01am (UTC)", time.Date(2026, 11, 30, 2, 1, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 11pm (UTC)", time.Date(2026, 11, 29, 23, 0, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 10pm (UTC)", time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)},
		// A reset within the minute, its seconds dropped.
		{"You've hit your session limit · resets 10:41pm (UTC)", time.Date(2026, 11, 29, 22, 41, 0, 0, time.UTC)},
		{"You've hit your session limit · resets 12:30am (UTC)", time.Date(2026, 11, 30, 0, 30, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Dec 1, 4:46am (UTC)", time.Date(2026, 12, 1, 4, 46, 0, 0, time.UTC)},
		{"You've hit your weekly limit · resets Jan 2, 9am (UTC)", time.Date(2027, 1, 2, 9, 0, 0, 0, time.UTC)},
		// 3am in Paris is 2am UTC.
		{"You've hit your session limit · resets 3am (Europe/Paris)", time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)},
	} {
		got, ok := claudeReset(tc.msg, now)
		if !ok || !got.Equal(tc.want) {
			t.Errorf("%q: %v %v, want %v", tc.msg, got, ok, tc.want)
		}
	}
	for _, msg := range []string{"You've hit your session limit", "resets 13pm (UTC)", "resets 2am (Nowhere/Else)", "resets Foo 3, 2am (UTC)"} {
		if got, ok := claudeReset(msg, now); ok {
			t.Errorf("%q gave %v", msg, got)
		}
	}
	if isUsageLimit("API Error: Request rejected (429) · This request would exceed your account's rate limit.") || !isUsageLimit("You've hit your session limit · resets 2:01am (UTC)") {
		t.Error("a throttled key and a usage limit are told apart wrongly")
	}
}

// TestLimitFromClaudesWords: at an account's first limit Claude Code
// opens a menu and runs no status line while it is up, so its StopFailure
// hook's words give the reset, and the window they name shows used up.
func TestLimitFromClaudesWords(t *testing.T) {
	m := hookedManager(t, func(o *Options) { o.ContinueAfterLimit = true })
	s, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	secret := envOf(t, s)[EnvHookSecret]
	if err := s.StatusLine(secret, []byte(statusInput)); err != nil { // five_hour at 31 %
		t.Fatal(err)
	}
	msg := "You've hit your session limit · resets 3am (UTC)"
	if err := s.Hook(secret, fmt.Appendf(nil, `{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":%q}`, msg)); err != nil {
		t.Fatal(err)
	}
	want, _ := claudeReset(msg, time.Now())
	info := s.Info()
	if info.Status != StatusLimited || info.Limit == nil || info.Limit.ResetsAt == nil || !info.Limit.ResetsAt.Equal(want) || info.Limit.Message != msg || !info.Limit.Continue {
		t.Fatalf("status %s, limit %+v; want limited until %v", info.Status, info.Limit, want)
	}
	w := info.Usage.Windows
	if len(w) != 2 || w[0].Name != "five_hour" || w[0].UsedPercent != 100 || !w[0].ResetsAt.Equal(want) || w[1].Name != "seven_day" || w[1].UsedPercent != 4.5 {
		t.Errorf("windows %+v", w)
	}
	// An API key's throttling, which Claude calls rate_limit too, is no
	// usage limit: the turn just ended.
	s2, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Hook(envOf(t, s2)[EnvHookSecret], []byte(`{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"API Error: Request rejected (429) · This request would exceed your account's rate limit."}`)); err != nil {
		t.Fatal(err)
	}
	if info := s2.Info(); info.Status != StatusWaiting || info.Limit != nil {
		t.Errorf("a throttled key: %s %+v", info.Status, info.Limit)
	}
}
