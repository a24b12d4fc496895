package agentmcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
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
	mgr *sessions.Manager
	ts  *httptest.Server
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{}
	var srv *Server
	e.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { srv.ServeHTTP(w, r) }))
	var err error
	e.mgr, err = sessions.NewManager(sessions.Options{Workspace: t.TempDir(), MCPURL: e.ts.URL, MaxSessions: 8, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if srv, err = New(Options{Sessions: e.mgr, Version: "test"}); err != nil {
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

// secretOf reads the MCP secret a session's agent was given, from its
// process's environment.
func secretOf(t *testing.T, s *sessions.Session) string {
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

// bearer adds the secret to each request.
type bearer struct{ secret string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, e *env, secret string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: e.ts.URL, HTTPClient: &http.Client{Transport: bearer{secret}}, DisableStandaloneSSE: true, MaxRetries: -1,
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
	planner, err := e.mgr.Create(sessions.CreateOptions{Name: "planner", Command: []string{"sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
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
	if strings.Join(names, ",") != "list_sessions,send_prompt,start_session,stop_session,wait_for" {
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
	planner, err := e.mgr.Create(sessions.CreateOptions{Name: "planner", Command: []string{"sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := e.mgr.Create(sessions.CreateOptions{Name: "other", Command: []string{"sh", "-c", "exec sleep 60"}})
	if err != nil {
		t.Fatal(err)
	}
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
		res := call("start_session", map[string]any{"agent": "shell", "name": "helper " + strconv.Itoa(i), "prompt": "echo hello from the planner"})
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
	// Its first prompt waits in its queue, by the planner, for the agent's
	// first wait. (A shell never waits as an agent does: typing the first
	// prompt into a shell is still to be built.)
	if q := first.Queue(); len(q.Prompts) != 1 || q.Prompts[0].Author.Name != "agent planner" || q.Prompts[0].Text != "echo hello from the planner" {
		t.Fatalf("the started session's queue: %+v", q.Prompts)
	}

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
