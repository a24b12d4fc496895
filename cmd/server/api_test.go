package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// apiEnv is a server built as run builds it, its router behind a real HTTP
// server.
type apiEnv struct {
	t      *testing.T
	dir    string // the workspace
	srv    *server
	ts     *httptest.Server
	client *http.Client
	log    *testutil.SyncBuffer
	// token, when set, goes with every request that carries no
	// Authorization of its own.
	token string
}

// newAPI starts a server whose default sessions run sleeper(), over a fresh
// workspace; args are further flags. Everything stops when the test ends.
func newAPI(t *testing.T, args ...string) *apiEnv {
	t.Helper()
	dir := t.TempDir()
	base := []string{"--workspace", dir, "--data-dir", t.TempDir(), "--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", "1s"}
	cfg, err := parseConfig(append(base, args...), noEnv, io.Discard)
	if err != nil {
		t.Fatalf("parseConfig: %v", err)
	}
	e := &apiEnv{t: t, dir: dir, log: &testutil.SyncBuffer{}}
	logger := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if e.srv, err = newServer(cfg, logger); err != nil {
		t.Fatalf("newServer: %v", err)
	}
	e.ts = httptest.NewServer(e.srv.handler())
	e.client = newHTTPClient(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := e.srv.mgr.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("shut sessions down: %v", err)
		}
		if err := e.srv.hub.Close(ctx); err != nil {
			t.Errorf("close hub: %v", err)
		}
		if err := e.srv.close(); err != nil {
			t.Errorf("close: %v", err)
		}
		e.ts.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", e.log)
		}
	})
	return e
}

// at returns e reporting to t, for use inside t's subtest: a subtest must
// not fail its parent from its own goroutine.
func (e *apiEnv) at(t *testing.T) *apiEnv {
	c := *e
	c.t = t
	return &c
}

// do sends a request; header holds name, value pairs.
func (e *apiEnv) do(method, path, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // a client sends Request.Host, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return e.send(req)
}

func (e *apiEnv) send(req *http.Request) (*http.Response, []byte) {
	e.t.Helper()
	if e.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}

// wantStatus fails the test unless resp has status want.
func wantStatus(t testing.TB, what string, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, resp.StatusCode, want, body)
	}
}

// wantError checks an API error: the status, JSON content, exactly the
// {"error":{"code","message"}} shape, the code and a non-empty message. It
// returns the message.
func wantError(t testing.TB, what string, resp *http.Response, body []byte, status int, code string) string {
	t.Helper()
	wantStatus(t, what, resp, body, status)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want JSON", what, ct)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			// Files only for MERGE_CONFLICT.
			Files []string `json:"files"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("%s: body %s is not the error shape: %v", what, body, err)
	}
	if e.Error.Code != code {
		t.Errorf("%s: code %q, want %q; body %s", what, e.Error.Code, code, body)
	}
	if e.Error.Message == "" {
		t.Errorf("%s: empty error message; body %s", what, body)
	}
	if (e.Error.Files != nil) != (code == wire.CodeMergeConflict) {
		t.Errorf("%s: files %v in a %s error; only MERGE_CONFLICT names files", what, e.Error.Files, code)
	}
	return e.Error.Message
}

// sessionKeys are the fields of Session JSON (SPEC 3) while it runs; exitCode
// appears once the run ended and worktree only for worktree sessions.
var sessionKeys = []string{"id", "name", "status", "agent", "command", "cwd", "createdAt", "lastActivityAt", "cols", "rows", "running"}

// decodeSession decodes {"session": Session}, checking the wrapper and the
// field names.
func decodeSession(t testing.TB, body []byte) wire.Session {
	t.Helper()
	var wrap map[string]json.RawMessage
	if err := json.Unmarshal(body, &wrap); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	raw, ok := wrap["session"]
	if !ok || len(wrap) != 1 {
		t.Fatalf("body %s: want exactly {\"session\":...}", body)
	}
	return checkSessionJSON(t, raw)
}

func checkSessionJSON(t testing.TB, raw json.RawMessage) wire.Session {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("decode session %s: %v", raw, err)
	}
	for _, k := range sessionKeys {
		if _, ok := fields[k]; !ok {
			t.Errorf("session %s has no %q", raw, k)
		}
	}
	for k := range fields {
		if !slices.Contains(sessionKeys, k) && k != "exitCode" && k != "worktree" && k != "permission" {
			t.Errorf("session %s has unexpected field %q", raw, k)
		}
	}
	var s wire.Session
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("decode session %s: %v", raw, err)
	}
	return s
}

// create posts a session and expects 201.
func (e *apiEnv) create(body string) wire.Session {
	e.t.Helper()
	resp, b := e.do(http.MethodPost, "/api/sessions", body)
	wantStatus(e.t, "create "+body, resp, b, http.StatusCreated)
	return decodeSession(e.t, b)
}

func (e *apiEnv) createCommand(argv []string) wire.Session {
	e.t.Helper()
	b, err := json.Marshal(map[string]any{"command": argv})
	if err != nil {
		e.t.Fatal(err)
	}
	return e.create(string(b))
}

func (e *apiEnv) list() []wire.Session {
	e.t.Helper()
	resp, b := e.do(http.MethodGet, "/api/sessions", "")
	wantStatus(e.t, "list", resp, b, http.StatusOK)
	var wrap struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(b, &wrap); err != nil || wrap.Sessions == nil {
		e.t.Fatalf("list body %s: want {\"sessions\":[...]} (err %v)", b, err)
	}
	out := make([]wire.Session, len(wrap.Sessions))
	for i, raw := range wrap.Sessions {
		out[i] = checkSessionJSON(e.t, raw)
	}
	return out
}

func (e *apiEnv) get(id string) wire.Session {
	e.t.Helper()
	resp, b := e.do(http.MethodGet, "/api/sessions/"+id, "")
	wantStatus(e.t, "get "+id, resp, b, http.StatusOK)
	return decodeSession(e.t, b)
}

func ids(list []wire.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

func TestHealth(t *testing.T) {
	e := newAPI(t)
	resp, b := e.do(http.MethodGet, "/api/health", "")
	wantStatus(t, "health", resp, b, http.StatusOK)
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if h["status"] != "ok" {
		t.Errorf("status = %v, want ok", h["status"])
	}
	if v, ok := h["version"].(string); !ok || v == "" {
		t.Errorf("version = %#v, want a non-empty string", h["version"])
	}
	if ms, ok := h["uptimeMs"].(float64); !ok || ms < 0 {
		t.Errorf("uptimeMs = %#v, want a non-negative number", h["uptimeMs"])
	}
}

func TestCreateSessionDefaults(t *testing.T) {
	e := newAPI(t)
	before := time.Now()
	s := e.create("{}")
	after := time.Now()

	if u, err := uuid.Parse(s.ID); err != nil || u.Version() != 4 || u.String() != s.ID {
		t.Errorf("id %q is not a lower-case UUIDv4 (err %v)", s.ID, err)
	}
	if s.Status != "active" {
		t.Errorf("status = %q, want active", s.Status)
	}
	if s.Cols != 80 || s.Rows != 24 {
		t.Errorf("size = %dx%d, want 80x24", s.Cols, s.Rows)
	}
	if s.Agent != "custom" {
		t.Errorf("agent = %q, want custom (from --agent-cmd)", s.Agent)
	}
	if want := []string{"sh", "-c", "exec sleep 60"}; !slices.Equal(s.Command, want) {
		t.Errorf("command = %q, want %q", s.Command, want)
	}
	if s.Cwd != e.dir {
		t.Errorf("cwd = %q, want the workspace %q", s.Cwd, e.dir)
	}
	if s.Name == "" {
		t.Error("name is empty; want a generated one")
	}
	if s.ExitCode != nil {
		t.Errorf("exitCode = %d on a running session; want it absent", *s.ExitCode)
	}
	// Re-read createdAt as text: it must be RFC 3339 and taken during the
	// request.
	var raw struct {
		Session struct {
			CreatedAt      string `json:"createdAt"`
			LastActivityAt string `json:"lastActivityAt"`
		} `json:"session"`
	}
	_, b := e.do(http.MethodGet, "/api/sessions/"+s.ID, "")
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	created, err := time.Parse(time.RFC3339, raw.Session.CreatedAt)
	if err != nil {
		t.Errorf("createdAt %q is not RFC 3339: %v", raw.Session.CreatedAt, err)
	} else if created.Before(before.Truncate(time.Second)) || created.After(after) {
		t.Errorf("createdAt %v is outside the request (%v .. %v)", created, before, after)
	}
	if _, err := time.Parse(time.RFC3339, raw.Session.LastActivityAt); err != nil {
		t.Errorf("lastActivityAt %q is not RFC 3339: %v", raw.Session.LastActivityAt, err)
	}
}

func TestCreateSessionWithOptions(t *testing.T) {
	e := newAPI(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	s := e.create(`{"name":"build","cwd":"sub","command":["sleep","60"],"cols":120,"rows":40}`)
	if s.Name != "build" || s.Cwd != sub || s.Cols != 120 || s.Rows != 40 || !slices.Equal(s.Command, []string{"sleep", "60"}) {
		t.Errorf("session = %+v; want name build, cwd %s, 120x40, command [sleep 60]", s, sub)
	}
	// 0 means the default size; so does an absent body.
	s = e.create(`{"cols":0,"rows":0}`)
	if s.Cols != 80 || s.Rows != 24 {
		t.Errorf("cols/rows 0: size %dx%d, want 80x24", s.Cols, s.Rows)
	}
	req, err := http.NewRequest(http.MethodPost, e.ts.URL+"/api/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := e.send(req)
	wantStatus(t, "create without a body", resp, b, http.StatusCreated)
	decodeSession(t, b)
}

func TestListOldestFirstAndGet(t *testing.T) {
	e := newAPI(t)
	if got := e.list(); len(got) != 0 {
		t.Fatalf("fresh server lists %d sessions", len(got))
	}
	var want []string
	for _, name := range []string{"a", "b", "c"} {
		want = append(want, e.create(`{"name":"`+name+`"}`).ID)
	}
	list := e.list()
	if !slices.Equal(ids(list), want) {
		t.Fatalf("list ids %v, want creation order %v", ids(list), want)
	}
	for i, name := range []string{"a", "b", "c"} {
		if list[i].Name != name {
			t.Errorf("list[%d].name = %q, want %q", i, list[i].Name, name)
		}
		if i > 0 && list[i].CreatedAt.Before(list[i-1].CreatedAt) {
			t.Errorf("list[%d] created before list[%d]", i, i-1)
		}
	}
	got := e.get(want[1])
	if got.ID != want[1] || got.Name != "b" || got.Status != "active" {
		t.Errorf("get = %+v, want session b, active", got)
	}
}

func TestGetUnknownSession(t *testing.T) {
	e := newAPI(t)
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		resp, b := e.do(http.MethodGet, "/api/sessions/"+id, "")
		wantError(t, "get "+id, resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	}
}

func TestCreateBadRequests(t *testing.T) {
	e := newAPI(t)
	if err := os.WriteFile(filepath.Join(e.dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 129)
	for _, tc := range []struct {
		name, body string
		msg        string // in the error message
	}{
		{"malformed JSON", `{"name":`, "bad request body"},
		{"not an object", `[1,2]`, "bad request body"},
		{"unknown field", `{"nmae":"x"}`, "nmae"},
		{"wrong type", `{"cols":"80"}`, "cols"},
		{"command not a list", `{"command":"sh"}`, "command"},
		{"two JSON values", `{} {}`, "more than one"},
		{"trailing garbage", `{}x`, ""},
		{"cols too large", `{"cols":1001}`, "1001"},
		{"cols negative", `{"cols":-1}`, "-1"},
		{"rows too large", `{"rows":1001}`, "1001"},
		{"nonexistent cwd", `{"cwd":"no/such/dir"}`, "does not exist"},
		{"cwd is a file", `{"cwd":"file"}`, "not a directory"},
		{"empty program", `{"command":[""]}`, "program"},
		{"unknown agent", `{"agent":"nope"}`, "nope"},
		{"long name", `{"name":"` + long + `"}`, "128"},
		{"worktree without a branch", `{"worktree":{}}`, "branch"},
		{"worktree and cwd", `{"cwd":".","worktree":{"branch":"feature"}}`, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.at(t)
			resp, b := e.do(http.MethodPost, "/api/sessions", tc.body)
			msg := wantError(t, tc.body, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not mention %q", msg, tc.msg)
			}
		})
	}
	if n := len(e.list()); n != 0 {
		t.Errorf("after bad requests %d sessions are listed, want 0", n)
	}
}

func TestCreateSpawnFailure(t *testing.T) {
	e := newAPI(t)
	resp, b := e.do(http.MethodPost, "/api/sessions", `{"command":["/nonexistent/x"]}`)
	msg := wantError(t, "nonexistent command", resp, b, http.StatusBadRequest, wire.CodePTYSpawnFailed)
	if !strings.Contains(msg, "/nonexistent/x") {
		t.Errorf("message %q does not name the command", msg)
	}
	if n := len(e.list()); n != 0 {
		t.Errorf("after a failed spawn %d sessions are listed, want 0", n)
	}

	t.Run("claude not installed", func(t *testing.T) {
		e := e.at(t)
		if _, err := exec.LookPath("claude"); err == nil {
			t.Skip("claude is installed here")
		}
		resp, b := e.do(http.MethodPost, "/api/sessions", `{"agent":"claude"}`)
		msg := wantError(t, "agent claude", resp, b, http.StatusBadRequest, wire.CodePTYSpawnFailed)
		if !strings.Contains(msg, "not installed") {
			t.Errorf("message %q does not say claude is not installed", msg)
		}
		if n := len(e.list()); n != 0 {
			t.Errorf("%d sessions listed, want 0", n)
		}
	})
}

func TestSessionLimit(t *testing.T) {
	e := newAPI(t, "--max-sessions", "4")
	var made []string
	for range 4 {
		made = append(made, e.create("{}").ID)
	}
	resp, b := e.do(http.MethodPost, "/api/sessions", "{}")
	wantError(t, "fifth session", resp, b, http.StatusConflict, wire.CodeSessionLimitReached)
	if got := ids(e.list()); !slices.Equal(got, made) {
		t.Fatalf("after the refused create the list is %v, want %v", got, made)
	}
	// Destroying one makes room again.
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+made[0], "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	e.create("{}")
	if n := len(e.list()); n != 4 {
		t.Errorf("%d sessions listed, want 4", n)
	}
}

func TestDeleteStopsProcess(t *testing.T) {
	e := newAPI(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := e.createCommand(pidSleeper(pidFile))
	other := e.create("{}")
	pid := testutil.ReadPID(t, waitTimeout, pidFile)

	resp, b := e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	if len(b) != 0 {
		t.Errorf("204 with body %q", b)
	}
	waitGone(t, pid)

	resp, b = e.do(http.MethodGet, "/api/sessions/"+s.ID, "")
	wantError(t, "get deleted", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	if got := ids(e.list()); !slices.Equal(got, []string{other.ID}) {
		t.Errorf("list after delete = %v, want only %s", got, other.ID)
	}
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantError(t, "delete twice", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}

func TestDeleteUnknown(t *testing.T) {
	e := newAPI(t)
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+uuid.NewString(), "")
	wantError(t, "delete unknown", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}

func TestResume(t *testing.T) {
	e := newAPI(t)

	running := e.create("{}")
	resp, b := e.do(http.MethodPost, "/api/sessions/"+running.ID+"/resume", "")
	wantStatus(t, "resume a running session", resp, b, http.StatusConflict)

	resp, b = e.do(http.MethodPost, "/api/sessions/"+uuid.NewString()+"/resume", "")
	wantError(t, "resume unknown", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)

	// The first run exits 3 at once; the resumed run finds its marker and
	// keeps running, so the reply's status cannot race with its end.
	marker := filepath.Join(t.TempDir(), "marker")
	s := e.createCommand([]string{"sh", "-c", `if [ -e "$0" ]; then exec sleep 60; fi; : > "$0"; exit 3`, marker})
	var ended wire.Session
	testutil.Eventually(t, waitTimeout, "the first run to end", func() bool {
		ended = e.get(s.ID)
		return ended.ExitCode != nil
	})
	if ended.Status != "error" || *ended.ExitCode != 3 {
		t.Errorf("after exit 3: status %q exitCode %d, want error and 3", ended.Status, *ended.ExitCode)
	}

	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/resume", "")
	wantStatus(t, "resume an exited session", resp, b, http.StatusOK)
	got := decodeSession(t, b)
	if got.ID != s.ID || got.Status != "active" || got.ExitCode != nil {
		t.Errorf("resumed = %+v, want the same id, active, no exitCode", got)
	}
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/resume", "")
	wantStatus(t, "resume again", resp, b, http.StatusConflict)
}

func TestUnknownAPIRoute(t *testing.T) {
	e := newAPI(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/x"},
		{http.MethodPost, "/api/x/y"},
		{http.MethodGet, "/api/"},
	} {
		resp, b := e.do(tc.method, tc.path, "")
		msg := wantError(t, tc.method+" "+tc.path, resp, b, http.StatusNotFound, wire.CodeNotFound)
		if !strings.Contains(msg, tc.path) {
			t.Errorf("%s %s: message %q does not name the path", tc.method, tc.path, msg)
		}
	}
}

func TestIndexPage(t *testing.T) {
	e := newAPI(t)
	resp, b := e.do(http.MethodGet, "/", "")
	wantStatus(t, "GET /", resp, b, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type %q, want text/html", ct)
	}
	if !strings.Contains(string(b), "agentmux") {
		t.Errorf("page does not mention agentmux:\n%s", b)
	}
}

func TestToken(t *testing.T) {
	const token = "s3cret"
	e := newAPI(t, "--token", token)
	bearer := []string{"Authorization", "Bearer " + token}

	t.Run("api without token", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/api/sessions", "")
		wantError(t, "no token", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
		resp, b = e.do(http.MethodPost, "/api/sessions", "{}")
		wantError(t, "create without token", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
		resp, b = e.do(http.MethodGet, "/api/sessions", "", "Authorization", "Bearer wrong")
		wantError(t, "wrong token", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
		// ?token= is for pages, not for the API.
		resp, b = e.do(http.MethodGet, "/api/sessions?token="+token, "")
		wantError(t, "query token on the API", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
	})
	t.Run("api with bearer", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/api/sessions", "", bearer...)
		wantStatus(t, "bearer", resp, b, http.StatusOK)
	})
	t.Run("health is open", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/api/health", "")
		wantStatus(t, "health", resp, b, http.StatusOK)
	})
	t.Run("query token sets cookie", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/?token="+token, "")
		wantStatus(t, "GET /?token=", resp, b, http.StatusSeeOther)
		// Relative, so it holds behind a path-prefix proxy.
		if loc := resp.Header.Get("Location"); loc != "./" {
			t.Errorf("Location %q, want ./", loc)
		}
		var ck *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == guard.TokenCookie {
				ck = c
			}
		}
		if ck == nil {
			t.Fatalf("no %s cookie in %q", guard.TokenCookie, resp.Header.Values("Set-Cookie"))
		}
		if ck.Value != token || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "" || ck.Secure {
			t.Errorf("cookie %q: want value %q, HttpOnly, SameSite=Strict, no Path (the page's directory), not Secure over http", ck.String(), token)
		}
		// Over https (here, as a TLS-ending proxy says it), Secure too.
		for _, h := range [][2]string{{"X-Forwarded-Proto", "https"}, {"Forwarded", `for=1.2.3.4;proto="https"`}} {
			resp, _ := e.do(http.MethodGet, "/?token="+token, "", h[0], h[1])
			if sc := resp.Header.Get("Set-Cookie"); !strings.Contains(sc, "; Secure") || !strings.Contains(sc, "HttpOnly") || !strings.Contains(sc, "SameSite=Strict") {
				t.Errorf("%s: Set-Cookie %q, want HttpOnly, SameSite=Strict and Secure", h[0], sc)
			}
		}

		req, err := http.NewRequest(http.MethodGet, e.ts.URL+"/api/sessions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		resp, b = e.send(req)
		wantStatus(t, "API with the cookie", resp, b, http.StatusOK)

		// Other query parameters survive the redirect.
		resp, b = e.do(http.MethodGet, "/index.html?tab=2&token="+token, "")
		wantStatus(t, "GET /index.html?tab=2&token=", resp, b, http.StatusSeeOther)
		if loc := resp.Header.Get("Location"); loc != "./index.html?tab=2" {
			t.Errorf("Location %q, want ./index.html?tab=2", loc)
		}
	})
	t.Run("wrong query token", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/?token=wrong", "")
		wantError(t, "wrong ?token=", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
		if len(resp.Cookies()) != 0 {
			t.Errorf("wrong token set cookies %q", resp.Header.Values("Set-Cookie"))
		}
	})
	t.Run("page without token", func(t *testing.T) {
		e := e.at(t)
		// The page itself is open; what it fetches is not.
		resp, b := e.do(http.MethodGet, "/", "")
		wantStatus(t, "GET /", resp, b, http.StatusOK)
	})
	t.Run("websocket", func(t *testing.T) {
		e := e.at(t)
		resp, b := e.do(http.MethodGet, "/ws", "")
		wantError(t, "GET /ws", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)

		url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
		if _, status, err := dialWS(t, url, nil); err == nil || status != http.StatusUnauthorized {
			t.Errorf("dial without token: status %d err %v, want 401", status, err)
		}
		if _, status, err := dialWS(t, url+"?token="+token, nil); err == nil || status != http.StatusUnauthorized {
			t.Errorf("dial with ?token=: status %d err %v, want 401", status, err)
		}
		conn, _, err := dialWS(t, url, http.Header{"Authorization": {"Bearer " + token}})
		if err != nil {
			t.Fatalf("dial with bearer: %v", err)
		}
		roundTrip(t, conn)
		conn.Close()
		conn, _, err = dialWS(t, url, http.Header{"Cookie": {guard.TokenCookie + "=" + token}})
		if err != nil {
			t.Fatalf("dial with cookie: %v", err)
		}
		roundTrip(t, conn)
		conn.Close()
	})
}

// roundTrip checks the connection is served: a heartbeat gets its reply.
func roundTrip(t testing.TB, conn *websocket.Conn) {
	t.Helper()
	if err := conn.WriteJSON(map[string]any{"type": "heartbeat", "timestamp": 42}); err != nil {
		t.Fatalf("send heartbeat: %v", err)
	}
	if m := expectWS(t, conn, "heartbeat"); len(m.Timestamp) == 0 || string(m.Timestamp) == "0" {
		t.Errorf("heartbeat reply without timestamp: %+v", m)
	}
}

func TestWebSocketOrigin(t *testing.T) {
	t.Run("same origin only", func(t *testing.T) {
		e := newAPI(t)
		url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
		if _, status, err := dialWS(t, url, http.Header{"Origin": {"http://evil.example"}}); err == nil || status != http.StatusForbidden {
			t.Errorf("foreign origin: status %d err %v, want 403", status, err)
		}
		conn, _, err := dialWS(t, url, http.Header{"Origin": {e.ts.URL}})
		if err != nil {
			t.Fatalf("own origin %s: %v", e.ts.URL, err)
		}
		roundTrip(t, conn)
		conn.Close()
		conn, _, err = dialWS(t, url, nil)
		if err != nil {
			t.Fatalf("no origin (not a browser): %v", err)
		}
		roundTrip(t, conn)
		conn.Close()
	})
	t.Run("allowed origins", func(t *testing.T) {
		e := newAPI(t, "--allowed-origins", "http://good.example, http://other.example")
		url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
		for _, origin := range []string{"http://good.example", "http://other.example"} {
			conn, _, err := dialWS(t, url, http.Header{"Origin": {origin}})
			if err != nil {
				t.Fatalf("allowed origin %s: %v", origin, err)
			}
			roundTrip(t, conn)
			conn.Close()
		}
		if _, status, err := dialWS(t, url, http.Header{"Origin": {"http://evil.example"}}); err == nil || status != http.StatusForbidden {
			t.Errorf("foreign origin: status %d err %v, want 403", status, err)
		}
	})
}

// TestEventsReachWebSocket checks the wiring of the manager's events to the
// hub: sessions made and destroyed through the API are announced to every
// connection, attached or not.
func TestEventsReachWebSocket(t *testing.T) {
	e := newAPI(t)
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	conn, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	roundTrip(t, conn) // the connection is registered before the create

	s := e.create(`{"name":"watched"}`)
	var created struct {
		Type    string          `json:"type"`
		Session json.RawMessage `json:"session"`
	}
	for created.Type != "session.created" {
		_, raw, err := readWS(conn)
		if err != nil {
			t.Fatalf("waiting for session.created: %v", err)
		}
		if err := json.Unmarshal(raw, &created); err != nil {
			t.Fatal(err)
		}
	}
	if got := checkSessionJSON(t, created.Session); got.ID != s.ID || got.Name != "watched" {
		t.Errorf("session.created for %+v, want %s", got, s.ID)
	}

	resp, b := e.do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	if m := expectWS(t, conn, "session.destroyed"); m.SessionID != s.ID {
		t.Errorf("session.destroyed for %q, want %s", m.SessionID, s.ID)
	}
	conn.Close()
}

func TestSecurityHeadersAndConfig(t *testing.T) {
	e := newAPI(t, "--max-sessions", "3")
	for _, path := range []string{"/", "/api/health", "/api/sessions", "/nope"} {
		res, err := http.Get(e.ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		h := res.Header
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-eval") ||
			strings.Contains(strings.SplitN(strings.SplitN(csp, "script-src", 2)[1], ";", 2)[0], "unsafe-inline") ||
			!strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", path, h)
		}
	}
	res, err := http.Get(e.ts.URL + "/api/config")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var cfg struct {
		Workspace   string `json:"workspace"`
		MaxSessions int    `json:"maxSessions"`
	}
	if err := json.NewDecoder(res.Body).Decode(&cfg); err != nil || cfg.Workspace != e.dir || cfg.MaxSessions != 3 {
		t.Fatalf("/api/config = %+v, %v; want workspace %s and 3 sessions", cfg, err, e.dir)
	}
}

// TestFilesAreNeverCached: a document rewritten within the second of its
// last load must not come back from a cache revalidated by a one-second
// Last-Modified.
func TestFilesAreNeverCached(t *testing.T) {
	e := newAPI(t)
	if err := os.MkdirAll(filepath.Join(e.dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "docs", "live.md"), []byte("version one"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(e.ts.URL + "/api/files?path=docs/live.md")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("Last-Modified") != "" {
		t.Fatalf("headers %v: want Cache-Control no-store and no Last-Modified", res.Header)
	}
}
