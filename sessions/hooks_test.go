package sessions

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/testutil"
)

const hookTimeout = 10 * time.Second

func TestNewPermission(t *testing.T) {
	const cwd = "/work/repo"
	huge := strings.Repeat("x", 900<<10)
	cases := []struct {
		name, tool, input string
		want              Permission
		reason            string
	}{
		{"write inside the directory", "Write", `{"file_path":"/work/repo/docs/plan.md","content":"# Plan\n"}`,
			Permission{"Write", "docs/plan.md"}, "Claude wants to use Write on docs/plan.md"},
		{"a whole file written", "Write", `{"file_path":"/work/repo/big.txt","content":"` + huge + `"}`,
			Permission{"Write", "big.txt"}, "Claude wants to use Write on big.txt"},
		{"edit outside the directory", "Edit", `{"file_path":"/etc/hosts","old_string":"a","new_string":"b"}`,
			Permission{"Edit", "/etc/hosts"}, "Claude wants to use Edit on /etc/hosts"},
		{"a sibling is outside", "Read", `{"file_path":"/work/repo2/x.go"}`,
			Permission{"Read", "/work/repo2/x.go"}, "Claude wants to use Read on /work/repo2/x.go"},
		{"relative path kept", "Read", `{"file_path":"x.go"}`, Permission{"Read", "x.go"}, "Claude wants to use Read on x.go"},
		{"notebook", "NotebookEdit", `{"notebook_path":"/work/repo/a.ipynb","new_source":"1"}`,
			Permission{"NotebookEdit", "a.ipynb"}, "Claude wants to use NotebookEdit on a.ipynb"},
		{"bash, on one line", "Bash", `{"command":"npm test &&\necho ok","description":"Run the tests"}`,
			Permission{"Bash", "npm test && echo ok"}, "Claude wants to use Bash: npm test && echo ok"},
		{"web fetch", "WebFetch", `{"url":"https://example.com/a","prompt":"summarise"}`,
			Permission{"WebFetch", "https://example.com/a"}, "Claude wants to use WebFetch on https://example.com/a"},
		{"another tool: its JSON", "mcp__db__query", `{ "sql": "select 1",
			"limit": 5 }`,
			Permission{"mcp__db__query", `{"sql":"select 1","limit":5}`}, `Claude wants to use mcp__db__query: {"sql":"select 1","limit":5}`},
		{"no input", "ExitPlanMode", `{}`, Permission{"ExitPlanMode", ""}, "Claude wants to use ExitPlanMode"},
		{"missing input", "Task", ``, Permission{"Task", ""}, "Claude wants to use Task"},
		{"a write without its path", "Write", `{"content":"hi"}`, Permission{"Write", `{"content":"hi"}`}, `Claude wants to use Write: {"content":"hi"}`},
		{"terminal escapes in a command", "Bash", `{"command":"echo \u001b[2Jhi\u0007"}`,
			Permission{"Bash", "echo  [2Jhi"}, "Claude wants to use Bash: echo  [2Jhi"},
		{"escapes in a tool's name", "Evil\u001b]0;x\u0007", `{}`, Permission{"Evil ]0;x", ""}, "Claude wants to use Evil ]0;x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, r := newPermission(c.tool, json.RawMessage(c.input), cwd)
			if got != c.want {
				t.Errorf("newPermission = %+v, want %+v", got, c.want)
			}
			if r != c.reason {
				t.Errorf("reason %q, want %q", r, c.reason)
			}
		})
	}
}

// TestNewPermissionClipsHugeInput: a command, a path or another tool's
// input can be as large as the hook's body (1 MiB); what is shown is a
// short, valid prefix with an ellipsis.
func TestNewPermissionClipsHugeInput(t *testing.T) {
	big := strings.Repeat("é", 400<<10) // 800 KiB, two bytes a character
	cases := []struct{ tool, input, prefix string }{
		{"Bash", `{"command":"echo ` + big + `"}`, "echo éé"},
		{"Write", `{"file_path":"/tmp/` + big + `","content":"x"}`, "/tmp/éé"},
		{"mcp__x__y", `{"blob":"` + big + `"}`, `{"blob":"éé`},
	}
	for _, c := range cases {
		p, r := newPermission(c.tool, json.RawMessage(c.input), "/work")
		if len(p.Summary) > maxSummary+len("…") || !strings.HasSuffix(p.Summary, "…") ||
			!strings.HasPrefix(p.Summary, c.prefix) || !utf8.ValidString(p.Summary) {
			t.Errorf("%s: summary of %d bytes %.40q…, want at most %d bytes, valid, starting %q and ending with an ellipsis",
				c.tool, len(p.Summary), p.Summary, maxSummary+len("…"), c.prefix)
		}
		if len(r) > 200 {
			t.Errorf("%s: reason of %d bytes", c.tool, len(r))
		}
	}
	if p, _ := newPermission(strings.Repeat("T", 1000), json.RawMessage(`{}`)); len(p.Tool) > maxToolName+len("…") {
		t.Errorf("tool name of %d bytes kept", len(p.Tool))
	}
}

// eventLog records a manager's events.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

func (l *eventLog) since(n int) []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs[min(n, len(l.evs)):]...)
}

func (l *eventLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.evs)
}

// waitFor waits for the first event from index from on that matches.
func (l *eventLog) waitFor(t *testing.T, from int, what string, match func(Event) bool) Event {
	t.Helper()
	var got Event
	testutil.Eventually(t, hookTimeout, what, func() bool {
		for _, ev := range l.since(from) {
			if match(ev) {
				got = ev
				return true
			}
		}
		return false
	})
	return got
}

// TestPermissionRequestHook runs an agent whose profile takes hooks and
// calls Hook as its hooks would: a PermissionRequest makes it wait at once,
// naming the tool and its file in the reason and in Info.Permission; the
// notification Claude sends later about the same dialog changes nothing;
// the user's answer ends the wait and the permission with it.
func TestPermissionRequestHook(t *testing.T) {
	workspace := t.TempDir()
	profile := Profile{Name: "hooked", Start: []string{"sh", "-c", `read answer; echo "got $answer"; exec sleep 60`}, Hooks: true}
	m, err := NewManager(Options{
		Workspace: workspace,
		Profiles:  map[string]Profile{"hooked": profile},
		Hooks:     &HookConfig{URL: "http://127.0.0.1:1/hooks", SettingsFile: filepath.Join(t.TempDir(), "hooks.json")},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
		defer cancel()
		if err := m.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	var log eventLog
	m.Subscribe(log.add)
	s, err := m.Create(CreateOptions{Name: "perm", Agent: "hooked"})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	secret := s.run.secret
	s.mu.Unlock()
	hook := func(payload any) {
		t.Helper()
		b, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Hook(secret, b); err != nil {
			t.Fatalf("Hook(%.80s): %v", b, err)
		}
	}

	// Claude quotes the whole file a Write would create.
	from := log.len()
	hook(map[string]any{
		"hook_event_name": "PermissionRequest",
		"cwd":             workspace,
		"tool_name":       "Write",
		"tool_input":      map[string]string{"file_path": filepath.Join(workspace, "docs", "plan.md"), "content": strings.Repeat("plan\n", 150_000)},
	})
	const reason = "Claude wants to use Write on docs/plan.md"
	want := Permission{Tool: "Write", Summary: "docs/plan.md"}
	// The status changed before Hook returned: no wait for a deadline.
	info := s.Info()
	if info.Status != StatusWaiting || info.Reason != reason || info.Permission == nil || *info.Permission != want {
		t.Fatalf("after the PermissionRequest: %s, %q, %+v; want waiting, %q, %+v", info.Status, info.Reason, info.Permission, reason, want)
	}
	st := log.waitFor(t, from, "a status event", func(ev Event) bool { return ev.Kind == EventStatus })
	if st.Session.Status != StatusWaiting || st.Session.Permission == nil || *st.Session.Permission != want {
		t.Errorf("status event %s, %+v; want waiting, %+v", st.Session.Status, st.Session.Permission, want)
	}
	ni := log.waitFor(t, from, "a needsInput event", func(ev Event) bool { return ev.Kind == EventNeedsInput })
	if !strings.Contains(ni.Message, reason) || ni.Session.Permission == nil || *ni.Session.Permission != want {
		t.Errorf("needsInput %q, %+v; want the reason and %+v", ni.Message, ni.Session.Permission, want)
	}

	// Seconds later Claude notifies about the same dialog: still the
	// permission's wait, said once.
	n := log.len()
	hook(map[string]any{"hook_event_name": "Notification", "message": "Claude needs your permission to use Write"})
	if evs := log.since(n); len(evs) != 0 {
		t.Errorf("the later notification made %d events: %+v", len(evs), evs)
	}
	if info := s.Info(); info.Reason != reason || info.Permission == nil {
		t.Errorf("after the notification: %q, %+v; want the permission's", info.Reason, info.Permission)
	}

	// The user answers the dialog.
	n = log.len()
	if err := s.Write([]byte("1\r")); err != nil {
		t.Fatal(err)
	}
	st = log.waitFor(t, n, "a status event after the answer", func(ev Event) bool { return ev.Kind == EventStatus })
	if st.Session.Status != StatusActive || st.Session.Permission != nil {
		t.Errorf("after the answer: %s, %+v; want active, no permission", st.Session.Status, st.Session.Permission)
	}
	if info := s.Info(); info.Permission != nil {
		t.Errorf("Info().Permission = %+v after the answer", info.Permission)
	}

	// AskUserQuestion's permission request is its question, which its
	// PreToolUse hook says: no second reason.
	n = log.len()
	hook(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": "AskUserQuestion", "tool_input": map[string]any{"questions": []any{}}})
	if info := s.Info(); info.Status != StatusActive || len(log.since(n)) != 0 {
		t.Errorf("AskUserQuestion's permission request: %s, events %+v; want active, none", info.Status, log.since(n))
	}
}
