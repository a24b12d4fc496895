package agentmcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a manager whose agents are told the endpoint, the endpoint over
// a real listener, and a way to read a session's secret.
type env struct {
	mgr   *sessions.Manager
	ts    *httptest.Server
	calls chan Call
	log   *testutil.SyncBuffer // the endpoint's log
}

func newEnv(t testing.TB) *env { return newEnvIn(t, t.TempDir(), 8) }

// newEnvIn is newEnv for a workspace, running at most maxSessions.
func newEnvIn(t testing.TB, workspace string, maxSessions int, tune ...func(*Options)) *env {
	t.Helper()
	// The shell profile runs $SHELL as a login shell, whose start-up
	// files are the machine's: a plain sh starts in milliseconds.
	t.Setenv("SHELL", "/bin/sh")
	e := &env{calls: make(chan Call, 64), log: &testutil.SyncBuffer{}}
	var srv *Server
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { srv.ServeHTTP(w, r) }))
	var err error
	e.mgr, err = sessions.NewManager(sessions.Options{Workspace: workspace, MCP: &sessions.MCPConfig{URL: e.ts.URL}, MaxSessions: maxSessions, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Sessions: e.mgr, Version: "test", OnCall: e.onCall, Logger: slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, f := range tune {
		f(&opts)
	}
	if srv, err = New(opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = e.mgr.Shutdown(ctx, time.Second)
		e.mgr.Close()
		e.ts.Close()
	})
	return e
}

// onCall keeps the feed's lines for the tests that read them; OnCall
// must not block, so a benchmark's thousands are dropped.
func (e *env) onCall(c Call) {
	select {
	case e.calls <- c:
	default:
	}
}

// sleeper starts a session, named name, whose agent does nothing.
func (e *env) sleeper(t testing.TB, name string) *sessions.Session {
	t.Helper()
	s, err := e.mgr.Create(sessions.CreateOptions{Name: name, Command: []string{"sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// secretOf reads the MCP secret a session's agent was given, from its
// process's environment.
func secretOf(t testing.TB, s *sessions.Session) string {
	t.Helper()
	var secret string
	testutil.Eventually(t, 10*time.Second, "the MCP secret in the agent's environment", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(kv, sessions.EnvMCPSecret+"="); ok && err == nil {
				secret = v
			}
		}
		return secret != ""
	})
	return secret
}

func connect(t testing.TB, e *env, secret string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.ts.URL, HTTPClient: &http.Client{Transport: bearer{secret: secret, next: http.DefaultTransport}}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestToolsForACaller: a session's agent lists the sessions (itself
// marked), queues a prompt for another, authored as itself, and waits for
// it to wait for input.
func TestToolsForACaller(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	worker, err := e.mgr.Create(sessions.CreateOptions{Name: "worker", Command: []string{"sh", "-c", `printf 'ready\a'; read l; echo "got:$l"; printf '\a'; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, e, secretOf(t, planner))
	ctx := context.Background()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "get_diff,list_sessions,read_screen,send_prompt,start_session,stop_session,wait_for" {
		t.Fatalf("tools %v", names)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions"})
	if err != nil || res.IsError {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
	listing := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(listing, "planner (id "+planner.ID()) || !strings.Contains(listing, "(this is you)") || !strings.Contains(listing, "worker (id "+worker.ID()) {
		t.Fatalf("list_sessions said:\n%s", listing)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait_for", Arguments: map[string]any{"sessionId": worker.ID(), "timeoutSeconds": 20}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "waits for input") {
		t.Fatalf("wait_for the worker's first wait: %v %+v", err, res)
	}
	authors := make(chan string, 4)
	stop := e.mgr.Subscribe(func(ev sessions.Event) {
		if ev.Kind == sessions.EventPromptQueued {
			authors <- ev.Prompt.Author.Name
		}
	})
	defer stop()
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_prompt", Arguments: map[string]any{"sessionId": worker.ID(), "text": "build it"}})
	if err != nil || res.IsError {
		t.Fatalf("send_prompt: %v %+v", err, res)
	}
	if got := <-authors; got != "agent planner" {
		t.Errorf("the prompt's author %q, want the calling agent's", got)
	}
	testutil.Eventually(t, 10*time.Second, "the prompt to reach the worker", func() bool { return strings.Contains(output(worker), "got:build it") })
	if q := worker.Queue(); len(q.Prompts) != 0 {
		t.Errorf("left in the queue: %+v", q.Prompts)
	}

	// Arguments that do not fit a tool's schema are refused, with words
	// that say so.
	for _, bad := range []struct {
		tool string
		args map[string]any
	}{
		{"send_prompt", map[string]any{"sessionId": worker.ID()}},
		{"read_screen", map[string]any{"sessionId": worker.ID(), "scrollbackLines": "many"}},
		{"wait_for", map[string]any{"sessionId": worker.ID(), "after": 3}},
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bad.tool, Arguments: bad.args})
		if err != nil || !res.IsError || !strings.Contains(textOf(res), "do not fit the tool's schema") {
			t.Errorf("%s with %v: %v %s", bad.tool, bad.args, err, textOf(res))
		}
	}

	// Its own session it may neither prompt nor wait for.
	for _, tool := range []string{"send_prompt", "wait_for"} {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"sessionId": planner.ID(), "text": "x"}})
		if err != nil || !res.IsError {
			t.Errorf("%s on itself: %v %+v", tool, err, res)
		}
	}
}

// TestAuth: no secret, a wrong one, an ended run's, and a browser-shaped
// request are refused before any MCP is spoken.
func TestAuth(t *testing.T) {
	e := newEnv(t)
	s, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	secret := secretOf(t, s)
	post := func(header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, e.ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post(map[string]string{"Authorization": "Bearer " + secret}); got != http.StatusOK {
		t.Fatalf("the agent's own secret: %d", got)
	}
	for what, h := range map[string]map[string]string{
		"no secret":    {},
		"a wrong one":  {"Authorization": "Bearer " + strings.Repeat("0", 64)},
		"a page":       {"Authorization": "Bearer " + secret, "Origin": "http://evil.test"},
		"a navigation": {"Authorization": "Bearer " + secret, "Sec-Fetch-Mode": "navigate"},
	} {
		want := http.StatusUnauthorized
		if h["Origin"] != "" || h["Sec-Fetch-Mode"] != "" {
			want = http.StatusForbidden
		}
		if got := post(h); got != want {
			t.Errorf("%s: %d, want %d", what, got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.mgr.Destroy(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if got := post(map[string]string{"Authorization": "Bearer " + secret}); got != http.StatusUnauthorized {
		t.Errorf("an ended run's secret: %d", got)
	}
}

// output returns what a session's ring holds.
func output(s *sessions.Session) string {
	st := s.StreamState()
	b := make([]byte, st.End-st.Start)
	n, _ := s.ReadOutput(b, st.Start)
	return string(b[:n])
}

// TestStartAndStopSessions: an agent starts sessions with a first prompt,
// up to its limit; a session it started starts none; it stops only its
// own.
func TestStartAndStopSessions(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	other := e.sleeper(t, "other")
	cs := connect(t, e, secretOf(t, planner))
	ctx := context.Background()
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	var started []string
	for i := range DefaultMaxStarted {
		res := call("start_session", map[string]any{"agent": "shell", "name": "helper " + strconv.Itoa(i), "prompt": "echo hello from the planner: $((6*7))"})
		if res.IsError {
			t.Fatalf("start %d: %+v", i, res.Content[0])
		}
		out, _ := res.StructuredContent.(map[string]any)
		id, _ := out["sessionId"].(string)
		s, err := e.mgr.Get(id)
		if err != nil || s.Info().StartedBy != planner.ID() {
			t.Fatalf("the started session %q: %v", id, err)
		}
		started = append(started, id)
	}
	if res := call("start_session", map[string]any{"agent": "shell"}); !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "the most you may") {
		t.Fatalf("a start past the limit: %+v", res.Content)
	}
	first, _ := e.mgr.Get(started[0])
	// A shell never waits for input as an agent does: its first prompt is
	// typed in as a command once it shows its prompt, and runs.
	testutil.Eventually(t, 20*time.Second, "the shell to run its first prompt", func() bool {
		return strings.Contains(output(first), "hello from the planner: 42")
	})

	// A started session starts none.
	helper := connect(t, e, secretOf(t, first))
	if res, err := helper.CallTool(ctx, &mcp.CallToolParams{Name: "start_session", Arguments: map[string]any{"agent": "shell"}}); err != nil || !res.IsError {
		t.Fatalf("a started session started one: %v %+v", err, res)
	}

	if res := call("stop_session", map[string]any{"sessionId": other.ID()}); !res.IsError {
		t.Fatal("stopped a session it did not start")
	}
	if res := call("stop_session", map[string]any{"sessionId": started[1]}); res.IsError {
		t.Fatalf("stop its own: %+v", res.Content)
	}
	if _, err := e.mgr.Get(started[1]); err == nil {
		t.Fatal("the stopped session is still listed")
	}
	if res := call("start_session", map[string]any{"agent": "shell", "name": "again"}); res.IsError {
		t.Fatalf("a start once one was stopped: %+v", res.Content)
	}
}

// call calls a tool and fails the test on a transport error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// textOf is a result's text.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestReadScreen: the screen as a terminal shows it, the redraws and
// colours interpreted, and the scrollback asked for.
func TestReadScreen(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	script := `for i in $(seq 1 40); do echo "old line $i"; done; printf '\033[1;31mbuilding 10%%\033[0m\rbuilding 100%%\n'; printf 'done\n'; exec sleep 60`
	worker, err := e.mgr.Create(sessions.CreateOptions{Name: "worker", Command: []string{"sh", "-c", script}, Cols: 60, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the worker's output", func() bool { return strings.Contains(output(worker), "done") })
	cs := connect(t, e, secretOf(t, planner))
	res := call(t, cs, "read_screen", map[string]any{"sessionId": worker.ID(), "scrollbackLines": 5})
	if res.IsError {
		t.Fatalf("read_screen: %s", textOf(res))
	}
	out := res.StructuredContent.(map[string]any)
	var screen, history []string
	for _, l := range out["screen"].([]any) {
		screen = append(screen, l.(string))
	}
	for _, l := range out["scrollback"].([]any) {
		history = append(history, l.(string))
	}
	// The last line feed leaves the cursor on the tenth row, blank.
	wantScreen := []string{"old line 34", "old line 35", "old line 36", "old line 37", "old line 38", "old line 39", "old line 40", "building 100%", "done"}
	if strings.Join(screen, "|") != strings.Join(wantScreen, "|") {
		t.Errorf("screen %q, want %q", screen, wantScreen)
	}
	if strings.Join(history, "|") != "old line 29|old line 30|old line 31|old line 32|old line 33" {
		t.Errorf("scrollback %q", history)
	}
	if text := textOf(res); !strings.Contains(text, "worker's screen (60x10") || strings.Contains(text, "\x1b") || !strings.Contains(text, "old line 29\n") {
		t.Errorf("the text:\n%s", text)
	}
	// A screen not yet full keeps its first line.
	short, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "echo line-one; echo line-two; exec sleep 60"}, Cols: 40, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the short output", func() bool { return strings.Contains(output(short), "line-two") })
	res = call(t, cs, "read_screen", map[string]any{"sessionId": short.ID()})
	if got := res.StructuredContent.(map[string]any)["screen"]; fmt.Sprint(got) != "[line-one line-two]" {
		t.Errorf("the short screen %v", got)
	}
	// A progress bar redrawn in place for far more than is played: the
	// screen is drawn from its end.
	bar, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", `echo start; seq -f 'progress %g' 1 60000 | tr '\n' '\r'; printf '\033[2Kall done\n'; exec sleep 60`}, Cols: 40, Rows: 10})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the progress bar to end", func() bool { return strings.Contains(output(bar), "all done") })
	res = call(t, cs, "read_screen", map[string]any{"sessionId": bar.ID()})
	if got := res.StructuredContent.(map[string]any)["screen"]; fmt.Sprint(got) != "[all done]" {
		t.Errorf("the progress bar's screen %v", got)
	}
	if res := call(t, cs, "read_screen", map[string]any{"sessionId": worker.ID(), "scrollbackLines": 5000}); !res.IsError {
		t.Error("5000 lines of scrollback were given")
	}
	if res := call(t, cs, "read_screen", map[string]any{"sessionId": "nope"}); !res.IsError || !strings.Contains(textOf(res), "list_sessions gives the ids") {
		t.Errorf("an unknown session: %s", textOf(res))
	}
}

// git runs git in dir.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestWorktreeSessionAndDiff: an agent starts a shell in a new worktree
// from a base it names, the shell runs its prompt there, and get_diff
// gives the change against that base, with its patch cut at maxBytes.
func TestWorktreeSessionAndDiff(t *testing.T) {
	repo := t.TempDir()
	git(t, repo, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(repo, "a.txt"), []byte("one\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "first")
	git(t, repo, "branch", "release")
	os.WriteFile(filepath.Join(repo, "b.txt"), []byte("on main only\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "second")
	e := newEnvIn(t, repo, 8)
	planner := e.sleeper(t, "planner")
	cs := connect(t, e, secretOf(t, planner))
	if res := call(t, cs, "start_session", map[string]any{"agent": "shell", "base": "release"}); !res.IsError || !strings.Contains(textOf(res), "give the branch too") {
		t.Fatalf("a base without a branch: %s", textOf(res))
	}
	if res := call(t, cs, "start_session", map[string]any{"agent": "shell", "branch": "fix", "base": "no-such"}); !res.IsError || !strings.Contains(textOf(res), "names no commit") {
		t.Fatalf("a base that names nothing: %s", textOf(res))
	}
	res := call(t, cs, "start_session", map[string]any{"agent": "shell", "name": "fixer", "branch": "fix", "base": "release",
		"prompt": "printf 'two\\nthree\\n' >> a.txt && echo patched-$((40+2))"})
	if res.IsError {
		t.Fatalf("start in a worktree: %s", textOf(res))
	}
	id := res.StructuredContent.(map[string]any)["sessionId"].(string)
	fixer, _ := e.mgr.Get(id)
	if wt := fixer.Info().Worktree; wt == nil || wt.Branch != "fix" || wt.Base != "release" {
		t.Fatalf("its worktree: %+v", wt)
	}
	if _, err := os.Stat(filepath.Join(fixer.Info().Cwd, "b.txt")); err == nil {
		t.Error("the worktree started at main, not at the base")
	}
	testutil.Eventually(t, 20*time.Second, "the shell to run its prompt", func() bool { return strings.Contains(output(fixer), "patched-42") })

	res = call(t, cs, "get_diff", map[string]any{"sessionId": id})
	if res.IsError {
		t.Fatalf("get_diff: %s", textOf(res))
	}
	out := res.StructuredContent.(map[string]any)
	files := out["files"].([]any)
	if len(files) != 1 || files[0].(map[string]any)["path"] != "a.txt" || out["additions"].(float64) != 2 || out["truncated"] != false {
		t.Fatalf("get_diff: %+v", out)
	}
	if p := out["patch"].(string); !strings.Contains(p, "+two\n+three\n") {
		t.Errorf("the patch:\n%s", p)
	}
	if text := textOf(res); !strings.Contains(text, "fixer on branch fix changed 1 file") || !strings.Contains(text, "modified a.txt +2 -0") {
		t.Errorf("the text:\n%s", text)
	}
	res = call(t, cs, "get_diff", map[string]any{"sessionId": id, "maxBytes": 10})
	if out := res.StructuredContent.(map[string]any); res.IsError || out["truncated"] != true || len(out["patch"].(string)) > 200 {
		t.Errorf("a diff cut at 10 bytes: %+v", out)
	}
	notRepo, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "exec sleep 60"}, Cwd: t.TempDir()})
	if err == nil {
		if res := call(t, cs, "get_diff", map[string]any{"sessionId": notRepo.ID()}); !res.IsError || !strings.Contains(textOf(res), "in no git repository") {
			t.Errorf("a diff outside a repository: %s", textOf(res))
		}
	}
}

// TestCallsAreAnnounced: every call, done or refused, is a line for the
// activity feed, naming the caller and the session it was about.
func TestCallsAreAnnounced(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	other := e.sleeper(t, "other")
	cs := connect(t, e, secretOf(t, planner))
	res := call(t, cs, "start_session", map[string]any{"agent": "shell", "name": "tests"})
	id := res.StructuredContent.(map[string]any)["sessionId"].(string)
	call(t, cs, "stop_session", map[string]any{"sessionId": other.ID()})
	call(t, cs, "list_sessions", nil)
	for _, want := range []Call{
		{Caller: planner.ID(), Tool: "start_session", Text: "planner started 'tests'", Target: id},
		{Caller: planner.ID(), Tool: "stop_session", Text: "planner's stop_session was refused", Target: other.ID(), Err: "you did not start other: only the sessions you started are yours to stop"},
		{Caller: planner.ID(), Tool: "list_sessions", Text: "planner listed the sessions"},
	} {
		select {
		case got := <-e.calls:
			if got.Time.IsZero() {
				t.Errorf("%s: no time", got.Tool)
			}
			got.Time = time.Time{}
			if got != want {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no line for %s", want.Tool)
		}
	}
}

// TestStartRefusedWhenFull: a start past --max-sessions is refused with
// words that say so, and starts nothing.
func TestStartRefusedWhenFull(t *testing.T) {
	e := newEnvIn(t, t.TempDir(), 2)
	planner := e.sleeper(t, "planner")
	e.sleeper(t, "")
	cs := connect(t, e, secretOf(t, planner))
	res := call(t, cs, "start_session", map[string]any{"agent": "shell"})
	if !res.IsError || !strings.Contains(textOf(res), "--max-sessions") {
		t.Fatalf("a start past the limit: %s", textOf(res))
	}
	if n := len(e.mgr.List()); n != 2 {
		t.Errorf("%d sessions listed", n)
	}
}

// TestBridge: an agent that speaks MCP only over a pipe to a program it
// starts gets the same tools through the bridge, and a bridge without the
// run's variables says where they come from.
func TestBridge(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agentSide, bridgeSide := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- Bridge(ctx, e.ts.URL, secretOf(t, planner), "test", bridgeSide) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, agentSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools through the bridge: %v %+v", err, tools)
	}
	res := call(t, cs, "list_sessions", nil)
	if res.IsError || !strings.Contains(textOf(res), "planner (id "+planner.ID()) || !strings.Contains(textOf(res), "(this is you)") {
		t.Fatalf("list_sessions through the bridge: %s", textOf(res))
	}
	if res := call(t, cs, "read_screen", map[string]any{"sessionId": "nope"}); !res.IsError {
		t.Error("an error did not come through the bridge")
	}
	cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the bridge ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the bridge outlived its agent")
	}
	if err := Bridge(ctx, "", "", "test", bridgeSide); err == nil || !strings.Contains(err.Error(), "AGENTMUX_MCP_URL") {
		t.Errorf("a bridge without the variables: %v", err)
	}
}

// TestWaitForOutcomes: wait_for says when a session's agent exits, gives
// up at its timeout with the status it has, ends when its caller goes
// away, and refuses a bad timeout. A run that ended holds no secret.
func TestWaitForOutcomes(t *testing.T) {
	e := newEnv(t)
	planner := e.sleeper(t, "planner")
	busy := e.sleeper(t, "busy")
	quitter, err := e.mgr.Create(sessions.CreateOptions{Name: "quitter", Command: []string{"sh", "-c", "read line; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	quitterSecret := secretOf(t, quitter)
	cs := connect(t, e, secretOf(t, planner))

	res := call(t, cs, "wait_for", map[string]any{"sessionId": busy.ID(), "timeoutSeconds": 1})
	if out := res.StructuredContent.(map[string]any); res.IsError || out["outcome"] != "timeout" || out["status"] != "active" {
		t.Errorf("a wait that times out: %+v %s", out, textOf(res))
	}
	if res := call(t, cs, "wait_for", map[string]any{"sessionId": busy.ID(), "timeoutSeconds": -1}); !res.IsError {
		t.Error("a negative timeout was taken")
	}

	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		got <- call(t, cs, "wait_for", map[string]any{"sessionId": quitter.ID(), "timeoutSeconds": 30})
	}()
	if err := quitter.Write([]byte("bye\r")); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		if out := res.StructuredContent.(map[string]any); res.IsError || out["outcome"] != "exited" || !strings.Contains(textOf(res), "quitter is not running") {
			t.Errorf("a wait for a run that exits: %+v %s", out, textOf(res))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait outlived the run")
	}
	if _, ok := e.mgr.Caller(quitterSecret); ok {
		t.Error("an ended run's secret still names its session")
	}

	// A caller that goes away, its connection closed, ends its wait.
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait_for","arguments":{"sessionId":"` + busy.ID() + `"}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.ts.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+secretOf(t, planner))
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	ended := make(chan error, 1)
	waits := strings.Count(e.log.String(), "waiting for a session")
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			err = fmt.Errorf("answered %d: %s", resp.StatusCode, b)
		}
		ended <- err
	}()
	testutil.Eventually(t, 10*time.Second, "the wait to begin", func() bool {
		return strings.Count(e.log.String(), "waiting for a session") > waits
	})
	cancel()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Fatalf("the wait's request: %v", err)
	}
	// Its end is told to the feed, as the caller's giving up.
	testutil.Eventually(t, 10*time.Second, "the cancelled wait's line", func() bool {
		for {
			select {
			case c := <-e.calls:
				if c.Tool == "wait_for" && strings.Contains(c.Err, "stopped waiting for busy") {
					return true
				}
			default:
				return false
			}
		}
	})
}

// TestDeeperStarts: with a depth of 2, a session an agent started may
// start one more, which starts none.
func TestDeeperStarts(t *testing.T) {
	e := newEnvIn(t, t.TempDir(), 8, func(o *Options) { o.MaxDepth = 2 })
	planner := e.sleeper(t, "planner")
	start := func(by *sessions.Session, name string) (*sessions.Session, *mcp.CallToolResult) {
		t.Helper()
		res := call(t, connect(t, e, secretOf(t, by)), "start_session", map[string]any{"agent": "shell", "name": name})
		if res.IsError {
			return nil, res
		}
		s, err := e.mgr.Get(res.StructuredContent.(map[string]any)["sessionId"].(string))
		if err != nil {
			t.Fatal(err)
		}
		return s, res
	}
	child, res := start(planner, "child")
	if child == nil {
		t.Fatalf("the planner's start: %s", textOf(res))
	}
	grandchild, res := start(child, "grandchild")
	if grandchild == nil || grandchild.Info().StartedBy != child.ID() {
		t.Fatalf("the child's start: %s", textOf(res))
	}
	if s, res := start(grandchild, "too deep"); s != nil || !strings.Contains(textOf(res), "2 levels below the session a person started") {
		t.Fatalf("the grandchild's start: %s", textOf(res))
	}
}
