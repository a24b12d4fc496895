package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// browserRequest is a request as a browser sends it from a page at origin:
// Origin and Sec-Fetch-Site as the browser sets them, and the body's type
// as a form or a fetch without a preflight gives it. Empty strings leave
// a header out.
func (e *apiEnv) browserRequest(method, path, origin, site, ctype, body string, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for name, v := range map[string]string{"Origin": origin, "Sec-Fetch-Site": site, "Content-Type": ctype} {
		if v != "" {
			req.Header.Set(name, v)
		}
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return e.send(req)
}

// TestCrossSiteRequestsCannotDriveTheAPI: finding 1. A page on another
// site sends what a browser lets it send without a CORS preflight: a form
// (text/plain, urlencoded, multipart) or fetch with mode no-cors, whose
// body is a session with a command. Nothing may run, stop or resume.
func TestCrossSiteRequestsCannotDriveTheAPI(t *testing.T) {
	e := newAPI(t)
	victim := e.createCommand(sleeper())
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := fmt.Sprintf(`{"name":"pwned","command":["sh","-c","touch %s"]}`, marker)
	// A text/plain form sends name=value and a line break: a field
	// named {"command":[...],"name":"a with the value b"} makes that JSON.
	form := fmt.Sprintf(`{"command":["sh","-c","touch %s"],"name":"a=b"}`+"\r\n", marker)

	type attempt struct {
		name, origin, site, ctype, body string
	}
	pages := []attempt{
		{"form text/plain", "http://evil.test", "cross-site", "text/plain", form},
		{"fetch no-cors", "http://evil.test", "cross-site", "text/plain;charset=UTF-8", evil},
		{"fetch no-cors, empty body", "http://evil.test", "cross-site", "text/plain;charset=UTF-8", ""},
		{"form urlencoded, empty", "http://evil.test", "cross-site", "application/x-www-form-urlencoded", ""},
		{"form multipart", "http://evil.test", "cross-site", "multipart/form-data; boundary=x", "--x--"},
		{"old browser, no Sec-Fetch-Site", "http://evil.test", "", "text/plain", evil},
		{"old browser, JSON claimed", "http://evil.test", "", "application/json", evil},
		{"sandboxed frame", "null", "cross-site", "text/plain", evil},
		{"sandboxed frame, old browser", "null", "", "text/plain", evil},
		{"another port of localhost", "http://127.0.0.1:3000", "same-site", "text/plain", evil},
		{"https page on this host", "https://" + e.ts.Listener.Addr().String(), "", "application/json", evil},
	}
	for _, a := range pages {
		resp, b := e.browserRequest(http.MethodPost, "/api/sessions", a.origin, a.site, a.ctype, a.body)
		msg := wantError(t, "create: "+a.name, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
		if !strings.Contains(msg, "refused") {
			t.Errorf("create: %s: message %q does not say it refused", a.name, msg)
		}
		resp, b = e.browserRequest(http.MethodDelete, "/api/sessions/"+victim.ID, a.origin, a.site, "", "")
		wantError(t, "delete: "+a.name, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
		resp, b = e.browserRequest(http.MethodPost, "/api/sessions/"+victim.ID+"/resume", a.origin, a.site, a.ctype, "")
		wantError(t, "resume: "+a.name, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	}
	if got := ids(e.list()); len(got) != 1 || got[0] != victim.ID {
		t.Fatalf("sessions after the attack: %v, want only %s", got, victim.ID)
	}
	if s := e.get(victim.ID); s.Status != "active" || !s.Running {
		t.Errorf("the victim session is %s (running %v), want active and running", s.Status, s.Running)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the attacker's command ran")
	}
	// One line says what happened; a page retrying in a loop does not
	// flood the log.
	if n := len(linesWith(e.log.String(), "level=WARN", "refused a request from another web page")); n != 1 {
		t.Errorf("%d log lines about refused requests, want 1 (rate limited):\n%s", n, e.log)
	}

	// The UI (same origin, JSON) and scripts (no browser headers) still
	// work.
	resp, b := e.browserRequest(http.MethodPost, "/api/sessions", e.ts.URL, "same-origin", "application/json", `{"name":"ui"}`)
	ui := decodeSession(t, b)
	wantStatus(t, "the UI's create", resp, b, http.StatusCreated)
	resp, b = e.browserRequest(http.MethodDelete, "/api/sessions/"+ui.ID, e.ts.URL, "same-origin", "", "")
	wantStatus(t, "the UI's delete", resp, b, http.StatusNoContent)
	resp, b = e.browserRequest(http.MethodPost, "/api/sessions", "", "", "application/json", `{"name":"script"}`)
	wantStatus(t, "a script's create", resp, b, http.StatusCreated)
}

// TestEveryRouteIsGuarded: every route the router registers, with every
// method it takes, is behind the one gate: from another site, anything
// but reading a page or an asset (any method but GET, HEAD and OPTIONS,
// any read of the API, the WebSocket upgrade) is refused before its
// handler runs. A route added beside the gate fails here.
func TestEveryRouteIsGuarded(t *testing.T) {
	e := newAPI(t)
	victim := e.createCommand(sleeper())
	checked := 0
	for _, r := range e.srv.newRouter().Routes() {
		path := strings.ReplaceAll(strings.ReplaceAll(r.Path, ":id", victim.ID), "*", "x")
		switch {
		case r.Method == http.MethodOptions:
			continue // a preflight, which the gate lets through and nothing grants
		case (r.Method == http.MethodGet || r.Method == http.MethodHead) && path != "/ws" && !strings.HasPrefix(path, "/api/"):
			continue // a page or an asset
		}
		what := r.Method + " " + r.Path
		resp, b := e.browserRequest(r.Method, path, "http://evil.test", "cross-site", "application/json", "{}")
		if r.Method == http.MethodHead {
			wantStatus(t, what, resp, b, http.StatusForbidden)
		} else {
			wantError(t, what, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d routes checked: the router's routes were not found", checked)
	}
	if got := ids(e.list()); len(got) != 1 || got[0] != victim.ID {
		t.Fatalf("sessions after the requests: %v, want only %s", got, victim.ID)
	}
	if s := e.get(victim.ID); s.Status != "active" || !s.Running {
		t.Errorf("the victim session is %s (running %v), want active and running", s.Status, s.Running)
	}
}

// TestStateChangesNeedJSONBodies: even from the page's own origin, a body
// must be JSON; a request without a body needs no type.
func TestStateChangesNeedJSONBodies(t *testing.T) {
	e := newAPI(t)
	for _, ctype := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""} {
		resp, b := e.browserRequest(http.MethodPost, "/api/sessions", e.ts.URL, "same-origin", ctype, `{"name":"x"}`)
		msg := wantError(t, "Content-Type "+ctype, resp, b, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType)
		if !strings.Contains(msg, "application/json") {
			t.Errorf("Content-Type %q: message %q does not say what to send", ctype, msg)
		}
	}
	if n := len(e.list()); n != 0 {
		t.Fatalf("%d sessions made by refused requests", n)
	}
	// curl -XPOST without a body starts the default agent.
	resp, b := e.browserRequest(http.MethodPost, "/api/sessions", "", "", "", "")
	wantStatus(t, "no body", resp, b, http.StatusCreated)
}

// TestTokenCookieFromAnotherPort: finding 2. The SameSite=Strict cookie is
// sent to 127.0.0.1:8080 by a page on 127.0.0.1:3000 (ports are not part
// of a site), so the token alone does not stop such a page; the origin
// check does, for the API and the WebSocket.
func TestTokenCookieFromAnotherPort(t *testing.T) {
	const token = "s3cret"
	e := newAPI(t, "--token", token)
	cookie := guard.TokenCookie + "=" + token
	other := "http://127.0.0.1:3000"
	resp, b := e.browserRequest(http.MethodPost, "/api/sessions", other, "same-site", "text/plain", `{"name":"pwned"}`, "Cookie", cookie)
	wantError(t, "create from another port", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	// Even a page that somehow sends JSON.
	resp, b = e.browserRequest(http.MethodPost, "/api/sessions", other, "same-site", "application/json", `{"name":"pwned"}`, "Cookie", cookie)
	wantError(t, "JSON create from another port", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	if _, status, err := dialWS(t, url, http.Header{"Origin": {other}, "Sec-Fetch-Site": {"same-site"}, "Cookie": {cookie}}); err == nil || status != http.StatusForbidden {
		t.Errorf("WebSocket from another port with the cookie: status %d err %v, want 403", status, err)
	}
	e.token = token
	if n := len(e.list()); n != 0 {
		t.Fatalf("%d sessions made from another port", n)
	}
	// The server's own page, with the same cookie, may.
	e.token = ""
	resp, b = e.browserRequest(http.MethodPost, "/api/sessions", e.ts.URL, "same-origin", "application/json", `{"name":"mine"}`, "Cookie", cookie)
	wantStatus(t, "create from the server's own page", resp, b, http.StatusCreated)
	conn, _, err := dialWS(t, url, http.Header{"Origin": {e.ts.URL}, "Sec-Fetch-Site": {"same-origin"}, "Cookie": {cookie}})
	if err != nil {
		t.Fatalf("WebSocket from the server's own page: %v", err)
	}
	roundTrip(t, conn)
}

// TestWebSocketOriginScheme: finding 9. An https page on this host and
// port is another origin than this http server.
func TestWebSocketOriginScheme(t *testing.T) {
	e := newAPI(t)
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	for _, origin := range []string{"https://" + e.ts.Listener.Addr().String(), "null"} {
		_, status, err := dialWS(t, url, http.Header{"Origin": {origin}})
		if err == nil || status != http.StatusForbidden {
			t.Errorf("Origin %s: status %d err %v, want 403", origin, status, err)
		}
	}
	resp, b := e.browserRequest(http.MethodGet, "/ws", "http://evil.test", "cross-site", "", "", "Connection", "Upgrade", "Upgrade", "websocket")
	if msg := wantError(t, "upgrade from another site", resp, b, http.StatusForbidden, wire.CodePermissionDenied); !strings.Contains(msg, "--allowed-origins") {
		t.Errorf("message %q does not say how to trust a page", msg)
	}
}

// TestSignInRedirectStaysHere: finding 7. Signing in redirects to a page
// on this server, never to another host: the address is relative to the
// page asked for (so it also holds behind a path-prefix proxy).
func TestSignInRedirectStaysHere(t *testing.T) {
	e := newAPI(t, "--token", "s3cret")
	for path, want := range map[string]string{
		"//evil.example/?token=s3cret":        "./",
		"//evil.example?token=s3cret":         "./evil.example",
		"/%5Cevil.example/?token=s3cret":      "./",
		"///evil.example/x?a=1&token=s3cret":  "./x?a=1",
		"/docs/?tab=2&token=s3cret":           "./?tab=2",
		"/?token=s3cret":                      "./",
		"/a%2F%2Fb/?token=s3cret":             "./",
		"/%2F%2Fevil.example/?token=s3cret":   "./",
		"/\\/evil.example/?token=s3cret":      "./",
		"/%09/evil.example/?token=s3cret":     "./",
		"/./../..//evil.example?token=s3cret": "./evil.example",
	} {
		resp, b := rawRequest(t, e.ts.Listener.Addr().String(), "GET "+path+" HTTP/1.1\r\nHost: "+e.ts.Listener.Addr().String()+"\r\nConnection: close\r\n\r\n")
		wantStatus(t, path, resp, b, http.StatusSeeOther)
		loc := resp.Header.Get("Location")
		if loc != want {
			t.Errorf("%s: Location %q, want %q", path, loc, want)
		}
		base, _ := url.Parse("http://" + e.ts.Listener.Addr().String() + "/proxy/8080/")
		if ref, err := url.Parse(loc); err != nil || base.ResolveReference(ref).Host != base.Host {
			t.Errorf("%s: Location %q leaves the server", path, loc)
		}
	}
}

// rawRequest sends raw, a whole HTTP/1.1 request exactly as written, to
// addr and reads the response.
func rawRequest(t *testing.T, addr, raw string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// TestCrossOriginResourcePolicy: finding 8. No page on another origin can
// load a response as a script or an image: a workspace's .js in
// particular.
func TestCrossOriginResourcePolicy(t *testing.T) {
	e := newAPI(t)
	writeWS(t, e.dir, "app.js", "alert(1)\n")
	for _, path := range []string{"/api/files?path=app.js", "/", "/api/sessions", "/api/health", "/nope", "/api/nope"} {
		resp, b := e.do(http.MethodGet, path, "")
		if got := resp.Header.Get("Cross-Origin-Resource-Policy"); got != "same-origin" {
			t.Errorf("%s (%d %.40s): Cross-Origin-Resource-Policy %q, want same-origin", path, resp.StatusCode, b, got)
		}
	}
	resp, b := e.browserRequest(http.MethodPost, "/api/sessions", "http://evil.test", "cross-site", "text/plain", "")
	wantStatus(t, "refused", resp, b, http.StatusForbidden)
	if got := resp.Header.Get("Cross-Origin-Resource-Policy"); got != "same-origin" {
		t.Errorf("a refusal: Cross-Origin-Resource-Policy %q", got)
	}
}

// TestOnlyBearerTokens: finding 9. The token goes as "Bearer <token>";
// a bare token or another scheme is refused.
func TestOnlyBearerTokens(t *testing.T) {
	e := newAPI(t, "--token", "s3cret")
	for _, auth := range []string{"s3cret", "Basic s3cret", "Token s3cret", "Bearers3cret", "Bearer", "Bearer wrong"} {
		resp, b := e.do(http.MethodGet, "/api/sessions", "", "Authorization", auth)
		wantError(t, "Authorization: "+auth, resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
	}
	// A wrong scheme loses to a right cookie? No: the header is what the
	// client chose to send, and it is wrong.
	resp, b := e.do(http.MethodGet, "/api/sessions", "", "Authorization", "s3cret", "Cookie", guard.TokenCookie+"=s3cret")
	wantError(t, "bare token beside the cookie", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret"} {
		resp, b := e.do(http.MethodGet, "/api/sessions", "", "Authorization", auth)
		wantStatus(t, "Authorization: "+auth, resp, b, http.StatusOK)
	}
}

// TestNamesRefuseFormatCharacters: finding 9. A name with a bidi override
// or a zero-width character could pass for another tab's.
func TestNamesRefuseFormatCharacters(t *testing.T) {
	e := newAPI(t)
	for _, name := range []string{"build\u202egnp.exe", "bu\u200bild", "\u2066build\u2069", "\ufeffbuild", "x\u00ady", "a\u200db",
		// Hangul fillers are letters that draw nothing; U+2028 breaks the
		// line; U+034F and U+180B join or vary nothing visible.
		"\u3164", "build\u3164", "\u115f\u1160", "a\uffa0", "two\u2028lines", "para\u2029", "a\u034fb", "a\u180bb"} {
		resp, b := e.do(http.MethodPost, "/api/sessions", fmt.Sprintf(`{"name":%q}`, name))
		msg := wantError(t, fmt.Sprintf("name %+q", name), resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
		if !strings.Contains(msg, "U+") {
			t.Errorf("name %+q: message %q does not name the character", name, msg)
		}
	}
	if n := len(e.list()); n != 0 {
		t.Fatalf("%d sessions with refused names", n)
	}
	for _, name := range []string{"build ✓", "日本語 café", "한국어 세션", "❤️ fix"} {
		e.create(fmt.Sprintf(`{"name":%q}`, name))
	}
}

// TestLongSessionIDsAreNotEchoed: finding 3, on the HTTP side. A session
// route with an id longer than a UUID is answered without repeating it.
func TestLongSessionIDsAreNotEchoed(t *testing.T) {
	e := newAPI(t)
	long := strings.Repeat("A", 32<<10)
	for _, req := range []struct{ method, path string }{
		{http.MethodGet, "/api/sessions/" + long},
		{http.MethodDelete, "/api/sessions/" + long},
		{http.MethodPost, "/api/sessions/" + long + "/resume"},
		{http.MethodGet, "/api/" + long},
	} {
		resp, b := e.do(req.method, req.path, "")
		if resp.StatusCode != http.StatusNotFound || len(b) > 512 || strings.Contains(string(b), "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA") {
			t.Errorf("%s %.40s...: status %d, %d bytes: %.300s", req.method, req.path, resp.StatusCode, len(b), b)
		}
	}
}

// testLimits are short enough for a test to see them act.
var testLimits = httpLimits{
	readHeader: 300 * time.Millisecond,
	read:       time.Second,
	write:      5 * time.Second,
	idle:       time.Second,
}

// serveWithLimits serves h as run does, with limits and a cap of max
// connections; it returns the address and the log.
func serveWithLimits(t *testing.T, h http.Handler, limits httpLimits, max int) (string, *testutil.SyncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &testutil.SyncBuffer{}
	log := slog.New(slog.NewTextHandler(logBuf, nil))
	srv := newHTTPServer(h, log, limits)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(limitListen(ln, max, "test", log))
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String(), logBuf
}

// TestListenerTimeouts: finding 5. A connection that sends half a header,
// half a body, or nothing after its response is closed by the server.
func TestListenerTimeouts(t *testing.T) {
	addr, _ := serveWithLimits(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}), testLimits, 100)
	for name, send := range map[string]string{
		"half a header":              "POST /api/sessions HTTP/1.1\r\nHost: x\r\n",
		"half a body":                "POST /api/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"na",
		"idle after a response":      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"nothing at all":             "",
		"a body trickling past read": "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(c, send); err != nil {
			t.Fatal(err)
		}
		trickled := make(chan struct{})
		if name == "a body trickling past read" {
			// A byte every 100 ms keeps the header and idle timers happy;
			// only the read timeout ends it. The writes fail once the
			// server or this test closes the connection.
			go func() {
				defer close(trickled)
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for range tick.C {
					if _, err := c.Write([]byte("x")); err != nil {
						return
					}
				}
			}()
		} else {
			close(trickled)
		}
		start := time.Now()
		_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
		rd := bufio.NewReader(c)
		if strings.HasPrefix(send, "GET") {
			resp, err := http.ReadResponse(rd, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			resp.Body.Close()
		}
		// Returns when the server closes: a reset when the body was
		// still coming.
		_, err = io.Copy(io.Discard, rd)
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s: %v (after %v), want the server to close the connection", name, err, time.Since(start))
		}
		if took := time.Since(start); took > waitTimeout/2 {
			t.Errorf("%s: closed after %v", name, took)
		}
		c.Close()
		<-trickled
	}
}

// holdHandler answers /hold once the test sends a token on release (or the
// request ends), after a token on entered; anything else at once, 204.
func holdHandler(entered, release chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// getOn sends a GET of path on c and reads the answer's status.
func getOn(c net.Conn, path string) (int, error) {
	_ = c.SetDeadline(time.Now().Add(waitTimeout))
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// dialGet dials addr and GETs path in a goroutine; the answer's status, or
// the error, comes on the channel.
func dialGet(addr, path string) <-chan error {
	answer := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			answer <- err
			return
		}
		defer c.Close()
		status, err := getOn(c, path)
		if err == nil && status != http.StatusNoContent {
			err = fmt.Errorf("status %d, want 204", status)
		}
		answer <- err
	}()
	return answer
}

// TestConnectionCap: finding 5. At the cap, when every connection is in a
// request, a new connection waits for one to end, and the log says so
// once.
func TestConnectionCap(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	addr, log := serveWithLimits(t, holdHandler(entered, release),
		httpLimits{readHeader: waitTimeout, read: waitTimeout, write: waitTimeout, idle: waitTimeout}, 3)
	var held []<-chan error
	for range 3 {
		held = append(held, dialGet(addr, "/hold"))
		<-entered
	}
	// The fourth and fifth connect (the kernel's backlog, or Accept's
	// hand) but are not served while three requests are in progress.
	answers := []<-chan error{dialGet(addr, "/"), dialGet(addr, "/")}
	testutil.Eventually(t, waitTimeout, "the cap logged", func() bool {
		return len(linesWith(log.String(), "connection limit reached")) > 0
	})
	for _, a := range answers {
		select {
		case err := <-a:
			t.Fatalf("a connection over the cap was served: %v", err)
		default:
		}
	}
	release <- struct{}{}
	release <- struct{}{}
	for _, a := range answers {
		if err := <-a; err != nil {
			t.Errorf("a waiting connection: %v, want 204 once requests ended", err)
		}
	}
	release <- struct{}{}
	for _, h := range held {
		if err := <-h; err != nil {
			t.Errorf("a held request: %v", err)
		}
	}
	if n := len(linesWith(log.String(), "level=WARN", "connection limit reached", "limit=3")); n != 1 {
		t.Errorf("%d lines about the cap, want 1:\n%s", n, log)
	}
}

// TestConnectionCapClosesIdle: at the cap a newcomer is served: the
// listener closes for it the oldest connection that has sent no request
// (once it has had quietGrace to), or one kept alive between requests;
// never one in a request.
func TestConnectionCapClosesIdle(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	addr, log := serveWithLimits(t, holdHandler(entered, release),
		httpLimits{readHeader: waitTimeout, read: waitTimeout, write: waitTimeout, idle: waitTimeout}, 2)
	busy := dialGet(addr, "/hold")
	<-entered
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if err := <-dialGet(addr, "/"); err != nil {
		t.Fatalf("newcomer with a silent connection open: %v", err)
	}
	expectClosedConn(t, silent, "the silent connection")

	kept, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if status, err := getOn(kept, "/"); err != nil || status != http.StatusNoContent {
		t.Fatalf("keep-alive request: %d %v", status, err)
	}
	if err := <-dialGet(addr, "/"); err != nil {
		t.Fatalf("newcomer with a kept-alive connection open: %v", err)
	}
	expectClosedConn(t, kept, "the kept-alive connection")

	select {
	case err := <-busy:
		t.Fatalf("the request in progress ended: %v", err)
	default:
	}
	release <- struct{}{}
	if err := <-busy; err != nil {
		t.Errorf("the request in progress: %v", err)
	}
	if n := len(linesWith(log.String(), "level=WARN", "connection limit reached")); n != 1 {
		t.Errorf("%d lines about the cap, want 1:\n%s", n, log)
	}
}

// expectClosedConn fails the test unless the server closes c within
// waitTimeout.
func expectClosedConn(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitTimeout))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d, %v; want it closed by the server", what, n, err)
	}
}

// TestBothListenersHaveLimits: run's listener closes a connection that
// sends half a header (after the default 10 s), and the hook listener is
// made with the same limits and capped.
func TestBothListenersHaveLimits(t *testing.T) {
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(defaultLimits.readHeader + waitTimeout))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Errorf("half a header: %v after %v, want the server to close it", err, time.Since(start))
	}
	if took := time.Since(start); took < defaultLimits.readHeader/2 {
		t.Errorf("closed after %v, before the header timeout %v", took, defaultLimits.readHeader)
	}

	e := newAPI(t)
	srv := e.srv.hooks.http
	if srv.ReadHeaderTimeout != defaultLimits.readHeader || srv.ReadTimeout != defaultLimits.read ||
		srv.WriteTimeout != defaultLimits.write || srv.IdleTimeout != defaultLimits.idle {
		t.Errorf("hook listener timeouts %v %v %v %v, want %+v", srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout, defaultLimits)
	}
	if _, ok := e.srv.hooks.ln.(*limitListener); !ok {
		t.Errorf("hook listener %T is not capped", e.srv.hooks.ln)
	}
}
