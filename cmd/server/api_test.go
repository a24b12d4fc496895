package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/httpapi/apitest"
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

// api is e's client: its requests and the checks of the API's replies
// are apitest's, which httpapi's own tests share.
func (e *apiEnv) api() *apitest.Client {
	return &apitest.Client{T: e.t, URL: e.ts.URL, HTTP: e.client, Token: e.token}
}

// do sends a request; header holds name, value pairs.
func (e *apiEnv) do(method, path, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	return e.api().Do(method, path, body, header...)
}

func (e *apiEnv) send(req *http.Request) (*http.Response, []byte) {
	e.t.Helper()
	return e.api().Send(req)
}

func (e *apiEnv) create(body string) wire.Session {
	e.t.Helper()
	return e.api().Create(body)
}

func (e *apiEnv) createCommand(argv []string) wire.Session {
	e.t.Helper()
	return e.api().CreateCommand(argv)
}

func (e *apiEnv) list() []wire.Session {
	e.t.Helper()
	return e.api().List()
}

func (e *apiEnv) get(id string) wire.Session {
	e.t.Helper()
	return e.api().Get(id)
}

// The checks of the API's replies, by the names these tests use.
var (
	wantStatus       = apitest.WantStatus
	wantError        = apitest.WantError
	decodeSession    = apitest.DecodeSession
	checkSessionJSON = apitest.CheckSessionJSON
	ids              = apitest.IDs
)

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
// roundTrip is apitest's: a heartbeat there and back.
var roundTrip = apitest.RoundTrip

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
