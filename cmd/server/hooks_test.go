package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// fakeClaude stands in for Claude Code: it finds the hook command in the
// settings file it is given, as Claude does, and calls it with the input
// Claude gives each hook.
const fakeClaude = claudeHooks + `echo "started"
call '{"hook_event_name":"Notification","message":"Claude needs your permission to use Bash"}'
read answer
call '{"hook_event_name":"UserPromptSubmit","prompt":"go on"}'
call '{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}'
call '{"hook_event_name":"PreToolUse","tool_name":"AskUserQuestion","tool_input":{"questions":[{"question":"Which database?"}]}}'
read answer
call '{"hook_event_name":"UserPromptSubmit","prompt":"postgres"}'
printf 'Shall I go on? '
sleep 60
`

// claudeHooks begins a shell stand-in for Claude Code: it finds the hook
// command in the settings file it is given, as Claude does, and defines
// call, which runs it with a hook's input.
const claudeHooks = `#!/bin/sh
settings=
while [ $# -gt 0 ]; do
	case "$1" in --settings) settings=$2; shift ;; esac
	shift
done
hook=$(sed -n 's/^ *"command": "\(.*\)",$/\1/p' "$settings" | head -n 1)
call() { printf '%s' "$1" | sh -c "$hook"; }
`

// installFakeClaude puts fakeClaude first on PATH as claude.
func installFakeClaude(t *testing.T) {
	t.Helper()
	installClaude(t, fakeClaude)
}

// installClaude puts script first on PATH as claude.
func installClaude(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestClaudeHookSettings(t *testing.T) {
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(sessions.ClaudeHookSettings("'/opt/agent mux' hook"), &settings); err != nil {
		t.Fatal(err)
	}
	for _, event := range []string{"Notification", "Stop", "StopFailure", "UserPromptSubmit", "PreToolUse", "SessionStart", "PermissionRequest"} {
		m := settings.Hooks[event]
		if len(m) != 1 || len(m[0].Hooks) != 1 || m[0].Hooks[0].Type != "command" || m[0].Hooks[0].Command != "'/opt/agent mux' hook" {
			t.Errorf("%s: %+v, want one command hook running the given command", event, m)
		}
	}
	if m := settings.Hooks["PreToolUse"]; len(m) == 1 && m[0].Matcher != "AskUserQuestion" {
		t.Errorf("PreToolUse matcher %q, want AskUserQuestion only", m[0].Matcher)
	}
	if m := settings.Hooks["PermissionRequest"]; len(m) == 1 && m[0].Matcher != "" {
		t.Errorf("PermissionRequest matcher %q, want every tool", m[0].Matcher)
	}
	if len(settings.Hooks) != 7 {
		t.Errorf("%d hook events, want 7", len(settings.Hooks))
	}
}

// TestPermissionRequestHook posts Claude's PermissionRequest hook input, as
// its hook command does, with a Write's whole file in it: the session waits
// at once, and session.status, session.needsInput and the session's view
// name the tool and the file, never the file's content.
func TestPermissionRequestHook(t *testing.T) {
	installClaude(t, "#!/bin/sh\nexec sleep 60\n")
	e := newAPI(t)
	next := statusEvents(t, e, nil)
	s := e.create(`{"agent":"claude","name":"perm"}`)
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
	secret, hookURL := envValue(environ, sessions.EnvHookSecret), envValue(environ, sessions.EnvHookURL)
	post := func(payload any) {
		t.Helper()
		body, err := json.Marshal(payload)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodPost, hookURL, bytes.NewReader(body))
		req.Header.Set(sessions.HookHeader, secret)
		if resp, b := e.send(req); resp.StatusCode != http.StatusNoContent {
			t.Fatalf("PermissionRequest of %d bytes: status %d; body %s", len(body), resp.StatusCode, b)
		}
	}

	content := strings.Repeat("A plan, line after line.\n", 36_000) // 900 KB: the listener takes up to 1 MiB
	post(map[string]any{
		"hook_event_name": "PermissionRequest",
		"session_id":      s.ID,
		"cwd":             s.Cwd,
		"permission_mode": "default",
		"tool_name":       "Write",
		"tool_input":      map[string]string{"file_path": filepath.Join(s.Cwd, "docs", "plan.md"), "content": content},
	})
	const reason = "Claude wants to use Write on docs/plan.md"
	want := sessions.Permission{Tool: "Write", Summary: "docs/plan.md"}
	m := next("session.status", "")
	if m.Status != "waiting" || m.Reason != reason || m.Permission == nil || *m.Permission != want {
		t.Errorf("session.status %+v, permission %+v; want waiting, %q, %+v", m, m.Permission, reason, want)
	}
	ni := next("session.needsInput", "")
	if !strings.Contains(ni.Message, reason) || ni.Permission == nil || *ni.Permission != want {
		t.Errorf("session.needsInput %q, permission %+v; want the reason and %+v", ni.Message, ni.Permission, want)
	}
	if v := e.get(s.ID); v.Permission == nil || *v.Permission != want {
		t.Errorf("GET the session: permission %+v, want %+v", v.Permission, want)
	}

	// Typing answers the dialog: active, and the permission is gone.
	if err := sess.Write([]byte("1")); err != nil {
		t.Fatal(err)
	}
	if m := next("session.status", ""); m.Status != "active" || m.Permission != nil {
		t.Errorf("after the answer: %+v, permission %+v; want active and none", m, m.Permission)
	}
	if v := e.get(s.ID); v.Permission != nil {
		t.Errorf("GET the session after the answer: permission %+v", v.Permission)
	}

	// A command as large: the reason quotes its start only.
	post(map[string]any{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": map[string]string{"command": "echo " + content}})
	m = next("session.status", "waiting")
	if !strings.HasPrefix(m.Reason, "Claude wants to use Bash: echo A plan, line after line. A plan") || len(m.Reason) > 200 ||
		m.Permission == nil || len(m.Permission.Summary) > 200 {
		t.Errorf("a huge command: reason of %d bytes %.100q, permission %+v", len(m.Reason), m.Reason, m.Permission)
	}
}

// statusEvents returns a function that reads a WebSocket connection's
// messages until one of type typ (and status, when given) arrives.
func statusEvents(t *testing.T, e *apiEnv, header http.Header) func(typ, status string) wsMsg {
	t.Helper()
	conn, _, err := dialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", header)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	roundTrip(t, conn)
	return func(typ, status string) wsMsg {
		t.Helper()
		for {
			m := expectWS(t, conn, typ)
			if status == "" || m.Status == status {
				return m
			}
		}
	}
}

// TestClaudeHooks runs a fake Claude Code that reports through its hooks:
// a permission prompt and a question make the session wait, the user's
// input ends it, and the question-mark guess stays out of it.
func TestClaudeHooks(t *testing.T) {
	installFakeClaude(t)
	e := newAPI(t, "--question-quiet", "100ms", "--token", "s3cret")
	e.token = "s3cret"
	next := statusEvents(t, e, http.Header{"Authorization": {"Bearer s3cret"}})

	s := e.create(`{"agent":"claude","name":"hooked"}`)
	if !slices.Contains(s.Command, "--settings") {
		t.Fatalf("claude runs as %q, without --settings", s.Command)
	}
	m := next("session.status", "waiting")
	if m.Message != "" || !strings.Contains(m.Reason, "Claude needs your permission to use Bash") {
		t.Errorf("waiting for %+v, want the notification's message", m)
	}
	if ni := next("session.needsInput", ""); !strings.Contains(ni.Message, "'hooked'") || !strings.Contains(ni.Message, "permission") {
		t.Errorf("needsInput message %q", ni.Message)
	}

	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The secret is in the agent's environment, never on a command line.
	pid := sess.Pid()
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	secret := envValue(environ, sessions.EnvHookSecret)
	if len(secret) < 32 || bytes.Contains(cmdline, []byte(secret)) {
		t.Fatalf("hook secret %q in the environment, command line %q", secret, cmdline)
	}

	if err := sess.Write([]byte("yes\r")); err != nil {
		t.Fatal(err)
	}
	if m := next("session.status", ""); m.Status != "active" {
		t.Errorf("after the answer: %+v, want active", m)
	}
	m = next("session.status", "waiting")
	if !strings.Contains(m.Reason, "Which database?") {
		t.Errorf("AskUserQuestion made %+v, want the question as reason", m)
	}
	next("session.needsInput", "")
	if err := sess.Write([]byte("postgres\r")); err != nil {
		t.Fatal(err)
	}
	next("session.status", "active")

	// The agent's last line ends with '?', but it reports through hooks:
	// no guess. A plain agent asking the same shows when the guess would
	// have come.
	testutil.Eventually(t, waitTimeout, "the last line", func() bool {
		st := sess.StreamState()
		b := make([]byte, st.End-st.Start)
		n, _ := sess.ReadOutput(b, st.Start)
		return bytes.Contains(b[:n], []byte("Shall I go on?"))
	})
	plain := e.createCommand([]string{"sh", "-c", "printf 'Shall I go on? '; sleep 60"})
	for {
		m := next("session.status", "waiting")
		if m.SessionID == plain.ID {
			break
		}
		t.Fatalf("the hooked session guessed it waits: %+v", m)
	}
}

// fakeCodex stands in for Codex: it finds the program given as its notify
// setting (-c notify=[...], a TOML array of plain strings here) and, at the
// end of a turn, runs it with the notification as its last argument, as
// Codex does. Like Codex it records the conversation in a rollout file it
// holds open, and a turn of the conversation starts one of another thread
// (Codex's task title), whose end is notified too.
const fakeCodex = `#!/bin/sh
notify=
while [ $# -gt 0 ]; do
	case "$1" in -c) case "$2" in notify=*) notify=${2#notify=} ;; esac; shift ;; esac
	shift
done
eval "set -- $(printf '%s' "$notify" | sed 's/^\[//; s/\]$//; s/,/ /g')"
conv=01a21ae5-de64-77d0-8685-5f2b725b3410
dir=$(mktemp -d)/sessions/2026/01/02
mkdir -p "$dir"
exec 3>>"$dir/rollout-2026-01-02T03-04-05-$conv.jsonl"
turn() {
	"$@" '{"type":"agent-turn-complete","thread-id":"'"$thread"'","turn-id":"1","cwd":"/w","client":"codex-tui","input-messages":["'"$prompt"'"],"last-assistant-message":"Done."}'
}
echo "started"
read prompt
thread=01a21ae5-ffae-74f0-92e9-50f7c221da3d turn "$@"
echo "title done"
read more
thread=$conv turn "$@"
printf 'Done. '
read prompt
echo "working on $prompt"
sleep 60
`

// installFakeCodex puts fakeCodex first on PATH as codex.
func installFakeCodex(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "codex"), []byte(fakeCodex), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// TestCodexNotify runs a fake Codex that reports the end of its turn
// through its notify program: the session waits, and the user's next
// prompt ends the wait.
func TestCodexNotify(t *testing.T) {
	installFakeCodex(t)
	e := newAPI(t)
	next := statusEvents(t, e, nil)

	s := e.create(`{"agent":"codex","name":"notified"}`)
	i := slices.Index(s.Command, "-c")
	if i < 0 || i+1 >= len(s.Command) || !strings.HasPrefix(s.Command[i+1], "notify=[") {
		t.Fatalf("codex runs as %q, without -c notify=[...]", s.Command)
	}
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
	cmdline, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/cmdline")
	secret := envValue(environ, sessions.EnvHookSecret)
	if len(secret) < 32 || bytes.Contains(cmdline, []byte(secret)) {
		t.Fatalf("hook secret %q in the environment, command line %q", secret, cmdline)
	}

	if err := sess.Write([]byte("rename foo\r")); err != nil {
		t.Fatal(err)
	}
	// The task title's thread ended its turn (the notify program has
	// returned): not the conversation's, so no wait.
	testutil.Eventually(t, waitTimeout, "the title's notification", func() bool {
		st := sess.StreamState()
		b := make([]byte, st.End-st.Start)
		n, _ := sess.ReadOutput(b, st.Start)
		return bytes.Contains(b[:n], []byte("title done"))
	})
	if st := e.get(s.ID).Status; st != "active" {
		t.Errorf("status %s after another thread's turn ended, want active", st)
	}
	if err := sess.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	m := next("session.status", "waiting")
	if m.Reason != "Codex finished its turn and waits for your next prompt" {
		t.Errorf("waiting for %q, want the end of Codex's turn", m.Reason)
	}
	if ni := next("session.needsInput", ""); !strings.Contains(ni.Message, "'notified'") {
		t.Errorf("needsInput message %q", ni.Message)
	}
	if err := sess.Write([]byte("go on\r")); err != nil {
		t.Fatal(err)
	}
	if m := next("session.status", ""); m.Status != "active" {
		t.Errorf("after the next prompt: %+v, want active", m)
	}
}

// TestHookEndpointRefusals tries the hook endpoint without the right
// secret, from a browser page and from another machine.
func TestHookEndpointRefusals(t *testing.T) {
	installFakeClaude(t)
	e := newAPI(t)
	next := statusEvents(t, e, nil)
	s := e.create(`{"agent":"claude"}`)
	next("session.status", "waiting")
	sess, _ := e.srv.mgr.Get(s.ID)
	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
	secret := envValue(environ, sessions.EnvHookSecret)
	hookURL := envValue(environ, sessions.EnvHookURL)

	host, _, _ := net.SplitHostPort(e.srv.hooks.ln.Addr().String())
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("hook listener on %s, want a loopback address", host)
	}
	if want := "http://" + e.srv.hooks.ln.Addr().String() + "/hooks/" + s.ID; hookURL != want {
		t.Errorf("hook URL %q, want %q", hookURL, want)
	}

	stop := `{"hook_event_name":"Stop"}`
	post := func(url, secret, body string, header ...string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if secret != "" {
			req.Header.Set(sessions.HookHeader, secret)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, b := e.send(req)
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name, url, secret, body string
		header                  []string
		want                    int
	}{
		{"no secret", hookURL, "", stop, nil, http.StatusUnauthorized},
		{"wrong secret", hookURL, strings.Repeat("0", len(secret)), stop, nil, http.StatusUnauthorized},
		{"wrong secret, bad input", hookURL, "nope", "{", nil, http.StatusUnauthorized},
		{"a prefix of the secret", hookURL, secret[:len(secret)-1], stop, nil, http.StatusUnauthorized},
		{"another session", strings.TrimSuffix(hookURL, s.ID) + "6f1c1c7e-0000-4000-8000-000000000000", secret, stop, nil, http.StatusUnauthorized},
		{"from a web page", hookURL, secret, stop, []string{"Origin", "http://evil.test"}, http.StatusForbidden},
		{"not JSON", hookURL, secret, "{", nil, http.StatusBadRequest},
		{"unknown event", hookURL, secret, `{"hook_event_name":"Explode"}`, nil, http.StatusBadRequest},
		{"not on the main listener", e.ts.URL + "/hooks/" + s.ID, secret, stop, []string{"Content-Type", "application/json"}, http.StatusMethodNotAllowed},
	}
	for _, c := range cases {
		if code, body := post(c.url, c.secret, c.body, c.header...); code != c.want {
			t.Errorf("%s: status %d, want %d; body %s", c.name, code, c.want, body)
		}
	}

	// From another machine: the listener only binds loopback, and the
	// handler checks the peer too.
	req := httptest.NewRequest(http.MethodPost, "/hooks/"+s.ID, strings.NewReader(stop))
	req.RemoteAddr = "192.0.2.7:40000"
	req.Header.Set(sessions.HookHeader, secret)
	rec := httptest.NewRecorder()
	e.srv.hooks.http.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("from 192.0.2.7: status %d, want 403", rec.Code)
	}

	// None of that changed anything: the session still waits for the
	// notification's answer, and the right secret is taken.
	if st := e.get(s.ID).Status; st != "waiting" {
		t.Errorf("status %s after refused calls, want waiting", st)
	}
	if code, body := post(hookURL, secret, `{"hook_event_name":"UserPromptSubmit"}`); code != http.StatusNoContent {
		t.Fatalf("right secret: status %d; body %s", code, body)
	}
	next("session.status", "active")

	// A run's secret dies with it.
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	if code, _ := post(hookURL, secret, stop); code != http.StatusUnauthorized {
		t.Errorf("after the session ended: status %d, want 401", code)
	}
}

func TestHookCommandWithoutServer(t *testing.T) {
	var stderr bytes.Buffer
	if code := hookMain(nil, strings.NewReader("{}"), noEnv, &stderr); code != 0 {
		t.Errorf("exit %d, want 0: a hook must never block the agent", code)
	}
	if !strings.Contains(stderr.String(), sessions.EnvHookURL) {
		t.Errorf("stderr %q does not say what is missing", stderr.String())
	}
	stderr.Reset()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	env := envOf(map[string]string{sessions.EnvHookURL: "http://" + addr + "/hooks/x", sessions.EnvHookSecret: "s"})
	if code := hookMain(nil, strings.NewReader("{}"), env, &stderr); code != 0 || stderr.Len() == 0 {
		t.Errorf("server gone: exit %d, stderr %q; want 0 and a reason", code, stderr.String())
	}
}

// envValue returns the value of key in a /proc/<pid>/environ image.
func envValue(environ []byte, key string) string {
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if k, v, ok := bytes.Cut(kv, []byte("=")); ok && string(k) == key {
			return string(v)
		}
	}
	return ""
}
