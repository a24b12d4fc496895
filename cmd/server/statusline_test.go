package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// statusLineInput is what Claude Code gives its status line command.
const statusLineInput = `{"session_id":"x","model":{"id":"claude-sonnet-4-5","display_name":"Sonnet 4.5"},
"cost":{"total_cost_usd":0.4213},"context_window":{"total_input_tokens":18230,"total_output_tokens":2101,"context_window_size":200000,"used_percentage":12.2},
"rate_limits":{"five_hour":{"used_percentage":31,"resets_at":1795993200}}}`

// TestStatusLineCommand runs `agentmux hook statusline` as Claude Code
// runs its status line: with a Claude session's hook variables and the
// input on stdin. The session's usage is what the input says, in its
// JSON and in GET /api/usage, and the command prints a short line of its
// own; with the user's own status line set in the project, it prints
// exactly what theirs prints, from the same input.
func TestStatusLineCommand(t *testing.T) {
	installClaude(t, "#!/bin/sh\nexec sleep 60\n")
	e := newAPI(t)
	s := e.create(`{"agent":"claude","name":"spender"}`)
	_, environ := e.hooked(s.ID)
	input := func(dir string) string {
		return strings.Replace(statusLineInput, `"session_id":"x"`, `"session_id":"x","workspace":{"project_dir":"`+dir+`"}`, 1)
	}
	run := func(dir string) string {
		t.Helper()
		in := input(dir)
		cmd := exec.Command(os.Args[0], "hook", "statusline")
		cmd.Env = append(os.Environ(),
			sessions.EnvHookURL+"="+envValue(environ, sessions.EnvHookURL),
			sessions.EnvHookSecret+"="+envValue(environ, sessions.EnvHookSecret))
		cmd.Stdin = strings.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("agentmux hook statusline: %v", err)
		}
		return string(out)
	}
	if got := run(e.dir); got != "Sonnet 4.5 · context 12% · $0.42 · 5h 31%\n" {
		t.Errorf("the default line %q", got)
	}
	u := e.get(s.ID).Usage
	if u == nil || *u.CostUSD != 0.4213 || *u.ContextPercent != 12.2 || len(u.Windows) != 1 || u.Windows[0].UsedPercent != 31 {
		t.Fatalf("the session's usage %+v", u)
	}
	_, body := e.do("GET", "/api/usage", "")
	var reply httpapi.UsageReply
	if err := json.Unmarshal(body, &reply); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if len(reply.Sessions) != 1 || reply.Sessions[0].ID != s.ID || reply.Totals.CostUSD != 0.4213 || reply.Totals.InputTokens != 0 ||
		len(reply.Windows) != 1 || reply.Windows[0].SessionID != s.ID || reply.Windows[0].Name != "five_hour" {
		t.Errorf("GET /api/usage: %s", body)
	}
	if resp, body := e.do("GET", "/api/usage?since=yesterday", ""); resp.StatusCode != 400 {
		t.Errorf("a bad since: %d %s", resp.StatusCode, body)
	}
	_, body = e.do("GET", "/api/usage?since=2999-01-01T00:00:00Z", "")
	if err := json.Unmarshal(body, &reply); err != nil || len(reply.Sessions) != 0 || reply.Totals.CostUSD != 0 {
		t.Errorf("since the future: %s", body)
	}

	// The user's own status line, unchanged.
	if err := os.MkdirAll(filepath.Join(e.dir, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := `{"statusLine":{"type":"command","command":"printf '[mine] '; tr -d '\\n' | head -c 40"}}`
	if err := os.WriteFile(filepath.Join(e.dir, ".claude", "settings.json"), []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := run(e.dir), "[mine] "+strings.ReplaceAll(input(e.dir), "\n", "")[:40]; got != want {
		t.Errorf("the user's line %q, want %q", got, want)
	}
}

// TestLimitedSession: Claude's StopFailure hook for a usage limit makes
// the session limited, with the reset of the full window its status line
// reported; the session's continue at the reset can be turned off, and
// asking that of a session no limit stopped is refused.
func TestLimitedSession(t *testing.T) {
	installClaude(t, "#!/bin/sh\nexec sleep 60\n")
	e := newAPI(t)
	s := e.create(`{"agent":"claude","name":"night"}`)
	other := e.create(`{"agent":"claude","name":"day"}`)
	sess, environ := e.hooked(s.ID)
	secret := envValue(environ, sessions.EnvHookSecret)
	resets := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	if err := sess.StatusLine(secret, fmt.Appendf(nil, `{"model":{"display_name":"Opus"},"rate_limits":{"five_hour":{"used_percentage":100,"resets_at":%d}}}`, resets.Unix())); err != nil {
		t.Fatal(err)
	}
	if err := sess.Hook(secret, []byte(`{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"You've hit your session limit · resets 3am (UTC)"}`)); err != nil {
		t.Fatal(err)
	}
	got := e.get(s.ID)
	if got.Status != string(sessions.StatusLimited) || got.Limit == nil || got.Limit.ResetsAt == nil || !got.Limit.ResetsAt.Equal(resets) ||
		!got.Limit.Continue || !strings.Contains(got.Limit.Message, "session limit") {
		t.Fatalf("after the limit: %s %+v", got.Status, got.Limit)
	}
	if resp, body := e.do("PATCH", "/api/sessions/"+s.ID, `{"continueAfterLimit":false}`); resp.StatusCode != 200 {
		t.Fatalf("turning continuing off: %d %s", resp.StatusCode, body)
	}
	if l := e.get(s.ID).Limit; l == nil || l.Continue {
		t.Errorf("continuing still on: %+v", l)
	}
	resp, body := e.do("PATCH", "/api/sessions/"+other.ID, `{"continueAfterLimit":true}`)
	if resp.StatusCode != 409 || !strings.Contains(string(body), "not stopped by a usage limit") {
		t.Errorf("for a session no limit stopped: %d %s", resp.StatusCode, body)
	}
}

// hooked returns the session id names and its agent's environment, once the
// agent has its hook variables.
func (e *apiEnv) hooked(id string) (*sessions.Session, []byte) {
	e.t.Helper()
	sess, err := e.srv.mgr.Get(id)
	if err != nil {
		e.t.Fatal(err)
	}
	var environ []byte
	testutil.Eventually(e.t, waitTimeout, "the agent's hook variables", func() bool {
		environ, _ = os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
		return envValue(environ, sessions.EnvHookSecret) != ""
	})
	return sess, environ
}

// TestCheckpointTurns: each checkpoint in the list carries what the
// agent's turns that ended since the one before spent, a turn that
// changed nothing (and so took no checkpoint) counting with the next.
func TestCheckpointTurns(t *testing.T) {
	installClaude(t, "#!/bin/sh\nexec sleep 60\n")
	e := newShipAPI(t)
	s := e.create(`{"agent":"claude","name":"spender"}`)
	sess, environ := e.hooked(s.ID)
	secret := envValue(environ, sessions.EnvHookSecret)
	// A second session, whose first checkpoint tells that the ones asked
	// for before it are done with: they are taken in turn.
	other := e.create(`{"agent":"claude","name":"barrier"}`)
	otherSess, otherEnv := e.hooked(other.ID)
	transcript := filepath.Join(t.TempDir(), "conversation.jsonl")
	turn := func(n int, file string) {
		t.Helper()
		if file != "" {
			writeIn(t, e.dir, file, fmt.Sprintf("turn %d\n", n))
		}
		hook := func(event string) {
			if err := sess.Hook(secret, fmt.Appendf(nil, `{"hook_event_name":%q,"transcript_path":%q}`, event, transcript)); err != nil {
				t.Fatal(err)
			}
		}
		// As Claude does: the prompt, the answer in the transcript, the
		// turn's end.
		hook("UserPromptSubmit")
		line := fmt.Sprintf(`{"type":"assistant","message":{"id":"m%d","usage":{"input_tokens":%d,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"output_tokens":%d}}}`+"\n", n, 100*n, n)
		f, err := os.OpenFile(transcript, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		f.Close()
		hook("Stop")
	}
	type listed struct {
		Checkpoints []struct {
			ID    int
			Usage *sessions.Spent
		}
	}
	// The list once it has n checkpoints, the last with its turns
	// unless the session's agent reports none.
	checkpoints := func(id string, n int, turns bool) listed {
		t.Helper()
		var list listed
		testutil.Eventually(t, waitTimeout, fmt.Sprintf("%d checkpoints of %s", n, id), func() bool {
			resp, b := e.do(http.MethodGet, "/api/sessions/"+id+"/checkpoints", "")
			if resp.StatusCode != http.StatusOK {
				return false
			}
			list = listed{}
			decodeJSON(t, b, &list)
			return len(list.Checkpoints) == n && (!turns || list.Checkpoints[n-1].Usage != nil)
		})
		return list
	}
	turn(1, "a.txt")
	checkpoints(s.ID, 1, true)
	turn(2, "") // nothing changed: no checkpoint
	// Turn 2's snapshot is done with before turn 3 changes the tree.
	if err := otherSess.Hook(envValue(otherEnv, sessions.EnvHookSecret), []byte(`{"hook_event_name":"Stop"}`)); err != nil {
		t.Fatal(err)
	}
	checkpoints(other.ID, 1, false)
	turn(3, "b.txt")
	list := checkpoints(s.ID, 2, true)
	want := []sessions.Spent{{Turns: 1, InputTokens: ptr[int64](100), OutputTokens: ptr[int64](1)}, {Turns: 2, InputTokens: ptr[int64](500), OutputTokens: ptr[int64](5)}}
	for i, cp := range list.Checkpoints {
		got := cp.Usage
		if got == nil || got.Turns != want[i].Turns || *got.InputTokens != *want[i].InputTokens || *got.OutputTokens != *want[i].OutputTokens {
			b, _ := json.Marshal(got)
			t.Errorf("checkpoint %d: %s, want %d turns, %d in, %d out", cp.ID, b, want[i].Turns, *want[i].InputTokens, *want[i].OutputTokens)
		}
	}
}

func ptr[T any](v T) *T { return &v }
