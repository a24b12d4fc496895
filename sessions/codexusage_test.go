package sessions

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tokenCount is a token_count event as codex-cli 0.171 records it: the
// conversation's tokens, the last turn's, and a 5-hour window.
func tokenCount(input, output, last int) string {
	return `{"timestamp":"2026-11-29T21:25:22.638Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":` +
		strconv.Itoa(input) + `,"cached_input_tokens":0,"output_tokens":` + strconv.Itoa(output) + `,"total_tokens":0},"last_token_usage":{"total_tokens":` + strconv.Itoa(last) +
		`},"model_context_window":200000},"rate_limits":{"primary":{"used_percent":31.5,"window_minutes":300,"resets_at":1795993200},"secondary":null}}}` + "\n"
}

// TestRolloutReader: each read takes the newest token_count of what was
// written since the last, reads each byte once, and keeps a line cut in
// the middle for the next read.
func TestRolloutReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	write := func(s string) {
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	r := &jsonlTail{path: path}
	now := time.Now()
	read := func() (*Usage, error) {
		news, err := readRollout(r)
		if err != nil || news.tokens == nil && news.windows == nil {
			return nil, err
		}
		u := codexUsage(nil, news, now)
		return &u, nil
	}
	if u, err := read(); u != nil || err != nil {
		t.Fatalf("an empty file: %+v %v", u, err)
	}
	write(`{"type":"session_meta","payload":{}}` + "\n" + tokenCount(42, 12, 54) + tokenCount(84, 24, 54))
	u, err := read()
	if err != nil || u == nil || *u.InputTokens != 84 || *u.OutputTokens != 24 || u.ContextSize != 200000 || *u.ContextPercent != 0.027 ||
		u.CostUSD != nil || u.Source != "codex-rollout" || len(u.Windows) != 1 || u.Windows[0].Name != "five_hour" || u.Windows[0].UsedPercent != 31.5 {
		t.Fatalf("after two turns: %+v %v", u, err)
	}
	// Nothing new: nothing read.
	if u, _ := read(); u != nil {
		t.Errorf("an unchanged file gave %+v", u)
	}
	// A line cut by the read waits for its end.
	line := tokenCount(200, 50, 1000)
	write(line[:40])
	if u, _ := read(); u != nil {
		t.Errorf("half a line gave %+v", u)
	}
	write(line[40:])
	if u, _ := read(); u == nil || *u.InputTokens != 200 || *u.ContextPercent != 0.5 {
		t.Errorf("the rest of the line gave %+v", u)
	}
	fi, _ := f.Stat()
	if r.off != fi.Size() {
		t.Errorf("read to %d of %d bytes", r.off, fi.Size())
	}
}

// TestRolloutFailedTurn: a turn Codex's usage limit refused is a
// token_count without figures but with the windows (the full one's
// reset), then a task_complete with the error; the tokens before stay.
func TestRolloutFailedTurn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollout.jsonl")
	refused := `{"timestamp":"2026-11-29T22:44:07.898Z","ordinal":9,"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"limit_id":"codex","primary":{"used_percent":100.0,"window_minutes":300,"resets_at":1795993446},"secondary":{"used_percent":17.0,"window_minutes":10080,"resets_at":1796392241},"rate_limit_reached_type":"rate_limit_reached"}}}` + "\n" +
		`{"timestamp":"2026-11-29T22:44:07.910Z","ordinal":10,"type":"event_msg","payload":{"type":"task_complete","turn_id":"t","last_agent_message":null,"error":{"message":"You’ve hit your usage limit. Try again at 11:04 PM.","codex_error_info":"usage_limit_exceeded"}}}` + "\n"
	if err := os.WriteFile(path, []byte(tokenCount(42, 12, 54)+refused), 0o600); err != nil {
		t.Fatal(err)
	}
	news, err := readRollout(&jsonlTail{path: path})
	if err != nil {
		t.Fatal(err)
	}
	if news.failed == nil || news.failed.Info != "usage_limit_exceeded" || !strings.Contains(news.failed.Message, "usage limit") {
		t.Fatalf("the failed turn: %+v", news.failed)
	}
	u := codexUsage(nil, news, time.Now())
	if u.InputTokens == nil || *u.InputTokens != 42 || len(u.Windows) != 2 || u.Windows[0].Name != "five_hour" || u.Windows[0].UsedPercent != 100 ||
		!u.Windows[0].ResetsAt.Equal(time.Unix(1795993446, 0)) || u.Windows[1].Name != "seven_day" {
		t.Errorf("usage %+v", u)
	}
	// A turn that ended well after it says the agent went on.
	if err := os.WriteFile(path, []byte(tokenCount(42, 12, 54)+refused+`{"type":"event_msg","payload":{"type":"task_complete","turn_id":"u","error":null}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if news, _ := readRollout(&jsonlTail{path: path}); news.failed != nil {
		t.Errorf("a failure before a turn that ended well: %+v", news.failed)
	}
}
