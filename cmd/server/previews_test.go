package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/wire"
)

// serveApp is a dev server an agent starts: it listens on the loopback
// address, on the port in args if any, says where, and answers every
// request with its path. It listens with SO_REUSEPORT, so that two of
// them may hold one port.
func serveApp(args []string) {
	addr := "127.0.0.1:0"
	if len(args) > 0 {
		addr = "127.0.0.1:" + args[0]
	}
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
		}); err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	fmt.Printf("app listening on %d\n", ln.Addr().(*net.TCPAddr).Port)
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "app at "+r.URL.Path)
	}))
	os.Exit(1)
}

var appPort = regexp.MustCompile(`app listening on (\d+)`)

// startApp runs a session whose agent starts a dev server (on the port in
// args, if any), and returns the session's id and the server's port.
func startApp(t *testing.T, e *apiEnv, args ...string) (string, int) {
	t.Helper()
	s := e.createCommand(append([]string{os.Args[0], "serve-app"}, args...))
	var port int
	testutil.Eventually(t, waitTimeout, "the app to listen", func() bool {
		m := appPort.FindStringSubmatch(screen(t, e, s.ID))
		if m != nil {
			port, _ = strconv.Atoi(m[1])
		}
		return m != nil
	})
	return s.ID, port
}

// portEntry is a port as GET /api/ports lists it.
type portEntry struct {
	Port      int    `json:"port"`
	PID       int    `json:"pid"`
	Command   string `json:"command"`
	SessionID string `json:"sessionId"`
	URL       string `json:"url"`
}

// TestPortsListedWithTheirSession: a dev server an agent started is
// listed with its session and the address of its preview, every client
// is told when it appears, and agentmux's own listeners are not listed.
func TestPortsListedWithTheirSession(t *testing.T) {
	e := newAPI(t)
	conn := watchWS(t, e)
	id, port := startApp(t, e)

	resp, b := e.do(http.MethodGet, "/api/ports", "")
	wantStatus(t, "list ports", resp, b, http.StatusOK)
	var got struct{ Ports []portEntry }
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got.Ports, func(p portEntry) bool { return p.Port == port })
	if i < 0 {
		t.Fatalf("port %d not listed: %s", port, b)
	}
	tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port
	if p := got.Ports[i]; p.SessionID != id || p.PID == 0 || p.Command == "" ||
		p.URL != fmt.Sprintf("http://%d.localhost:%d/", port, tsPort) {
		t.Errorf("port %d listed as %+v", port, p)
	}
	hooks := e.srv.hooks.ln.Addr().(*net.TCPAddr).Port
	for _, p := range got.Ports {
		if p.Port == hooks {
			t.Errorf("agentmux's own hook listener %d is listed", hooks)
		}
	}
	collectUntil(t, conn, "ports.changed with the app", func(ev watchEvent) bool {
		return ev.Type == wire.TypePortsChanged && strings.Contains(string(ev.Raw), `"port":`+strconv.Itoa(port)+`,`)
	})
}

// previewSignIn signs a browser in on port's preview as the UI does: it
// asks agentmux's own origin for the sign-in link (POST, as the page
// does) and follows it on the preview's origin. It returns that origin's
// Host and the Cookie header that carries the sign-in.
func previewSignIn(t *testing.T, hc *http.Client, agentmux string, port int, header ...string) (host, cookie string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, agentmux+fmt.Sprintf("/api/ports/%d/preview", port), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	wantStatus(t, "a sign-in link", resp, b, http.StatusOK)
	var link struct{ URL string }
	if err := json.Unmarshal(b, &link); err != nil {
		t.Fatalf("sign-in link %s: %v", b, err)
	}
	u, err := url.Parse(link.URL)
	if err != nil || u.Path != preview.SignInPath || !strings.HasPrefix(u.Host, strconv.Itoa(port)+".localhost:") {
		t.Fatalf("sign-in link %q (%v)", link.URL, err)
	}
	req, err = http.NewRequest(http.MethodGet, agentmux+u.RequestURI(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = u.Host
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	c := resp.Cookies()[0]
	return u.Host, c.Name + "=" + c.Value
}

// TestPreviewOriginServesOnlyTheApp: on the app's preview origin every
// path, agentmux's API included, is the app's; a page of that origin is a
// foreign page to agentmux's API; agentmux's own ports are never proxied.
func TestPreviewOriginServesOnlyTheApp(t *testing.T) {
	e := newAPI(t)
	_, port := startApp(t, e)
	tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port
	origin := fmt.Sprintf("http://%d.localhost:%d", port, tsPort)
	host, cookie := previewSignIn(t, e.client, e.ts.URL, port)
	if host != strings.TrimPrefix(origin, "http://") {
		t.Fatalf("signed in on %s, want %s", host, origin)
	}
	for _, path := range []string{"/", "/api/sessions", "/ws", "/api/health"} {
		resp, b := e.do(http.MethodGet, path, "", "Host", host, "Cookie", cookie)
		if resp.StatusCode != http.StatusOK || string(b) != "app at "+path {
			t.Errorf("GET %s on the preview origin: %d %q, want the app's page", path, resp.StatusCode, b)
		}
	}
	before := len(e.list())
	resp, b := e.browserRequest(http.MethodPost, "/api/sessions", origin, "same-site", "application/json", `{"command":["sh"]}`)
	wantError(t, "the app's page creating a session", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	if n := len(e.list()); n != before {
		t.Errorf("%d sessions after the app's request, want %d", n, before)
	}
	hooks := e.srv.hooks.ln.Addr().(*net.TCPAddr).Port
	e.srv.own.add(e.ts.Listener.Addr())
	for _, own := range []int{hooks, tsPort} {
		resp, b := e.do(http.MethodGet, "/api/sessions", "", "Host", fmt.Sprintf("%d.localhost:%d", own, tsPort))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "is agentmux&#39;s own") {
			t.Errorf("agentmux's own port %d as a preview: %d %q", own, resp.StatusCode, b)
		}
	}
}

// TestPreviewSignIn: with or without a token, a preview origin asks for
// its own sign-in, which the UI gets from agentmux's origin as a link
// good once; agentmux's token signs in there too, and reaches the app in
// neither case.
func TestPreviewSignIn(t *testing.T) {
	for _, token := range []string{"", "s3cret"} {
		t.Run("token="+token, func(t *testing.T) {
			var e *apiEnv
			if token == "" {
				e = newAPI(t)
			} else {
				e = newAPI(t, "--token", token)
				e.token = token
			}
			_, port := startApp(t, e)
			tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port
			host := fmt.Sprintf("%d.localhost:%d", port, tsPort)

			resp, b := e.do(http.MethodGet, "/", "", "Host", host, "Authorization", "Bearer wrong")
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the preview without its sign-in: %d %q", resp.StatusCode, b)
			}
			var auth []string
			if token != "" {
				auth = []string{"Authorization", "Bearer " + token}
			}
			got, cookie := previewSignIn(t, e.client, e.ts.URL, port, auth...)
			if got != host {
				t.Fatalf("signed in on %s, want %s", got, host)
			}
			resp, b = e.do(http.MethodGet, "/page", "", "Host", host, "Authorization", "Bearer wrong", "Cookie", cookie)
			if resp.StatusCode != http.StatusOK || string(b) != "app at /page" {
				t.Errorf("signed in on the preview: %d %q", resp.StatusCode, b)
			}
			if token != "" {
				resp, b = e.do(http.MethodGet, "/page", "", "Host", host)
				if resp.StatusCode != http.StatusOK || string(b) != "app at /page" {
					t.Errorf("with the token as a bearer token: %d %q", resp.StatusCode, b)
				}
			}
			resp, b = e.do(http.MethodPost, "/api/ports/80/preview", "")
			wantError(t, "a system port", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
			// Another site cannot mint a ticket: the link is agentmux's
			// own page's alone.
			resp, b = e.browserRequest(http.MethodPost, fmt.Sprintf("/api/ports/%d/preview", port), "http://localhost:9999", "same-site", "", "")
			wantError(t, "a sign-in link for another site's page", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
		})
	}
}

// TestPreviewDoesNotLaunderASecondAgentmux: the finding. The preview made
// any site's request look like the app's own, so a page on another port
// drove a second, token-less agentmux through the first one's preview,
// over its WebSocket and its API. Now another page's WebSocket and fetch
// are refused before they reach the app, whichever page it is (another
// port, another preview, agentmux's own page), signed in or not; the
// preview's own pages, the second agentmux's UI, still work.
func TestPreviewDoesNotLaunderASecondAgentmux(t *testing.T) {
	e := newAPI(t)
	second := newAPI(t)
	port := second.ts.Listener.Addr().(*net.TCPAddr).Port
	host, cookie := previewSignIn(t, e.client, e.ts.URL, port)
	wsURL := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port

	for _, origin := range []string{
		"http://localhost:9999",                         // a page on another port
		fmt.Sprintf("http://3000.localhost:%d", tsPort), // another preview's app
		e.ts.URL,                                 // agentmux's own page
		fmt.Sprintf("http://127.0.0.1:%d", port), // the second agentmux's own address
	} {
		for _, withCookie := range []bool{false, true} {
			h := http.Header{"Host": {host}, "Origin": {origin}}
			if withCookie {
				h.Set("Cookie", cookie)
			}
			conn, status, err := dialWS(t, wsURL, h)
			if err == nil {
				conn.Close()
				t.Errorf("a WebSocket from %s (signed in: %v) reached the second agentmux", origin, withCookie)
			} else if status != http.StatusForbidden {
				t.Errorf("a WebSocket from %s (signed in: %v): %d %v, want 403", origin, withCookie, status, err)
			}
			resp, b := e.do(http.MethodPost, "/api/sessions", `{"command":["sh","-c","id"]}`, "Host", host, "Origin", origin,
				"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Cookie", h.Get("Cookie"))
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "refuses") {
				t.Errorf("a POST from %s (signed in: %v): %d %q, want the preview's 403", origin, withCookie, resp.StatusCode, b)
			}
		}
	}
	if n := len(second.list()); n != 0 {
		t.Errorf("the second agentmux has %d sessions after the attempts, want none", n)
	}
	if n := second.srv.hub.Connections(); n != 0 {
		t.Errorf("the second agentmux has %d WebSockets after the attempts, want none", n)
	}

	// Its own UI, on the preview's origin, works as on its own.
	own := "http://" + host
	conn, status, err := dialWS(t, wsURL, http.Header{"Host": {host}, "Origin": {own}, "Cookie": {cookie}})
	if err != nil {
		t.Fatalf("the second agentmux's own page's WebSocket through the preview: %d %v", status, err)
	}
	defer conn.Close()
	heartbeat(t, conn, "the second agentmux's WebSocket through the preview")
	resp, b := e.do(http.MethodPost, "/api/sessions", `{"name":"through the preview"}`, "Host", host, "Origin", own,
		"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors", "Cookie", cookie)
	wantStatus(t, "the second agentmux's own page creating a session", resp, b, http.StatusCreated)
}

// TestPreviewBudgetLeavesAgentmuxRoom: the finding. Preview WebSockets,
// which hold their connections, took every slot of the listener, and
// /api/health did not answer until they closed. Now previews have a
// budget of their own: at the real numbers, with the budget held by
// hot-reload sockets and a crowd more asking, health, a page and a new
// WebSocket of agentmux's answer at once.
func TestPreviewBudgetLeavesAgentmuxRoom(t *testing.T) {
	up := websocket.Upgrader{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}))
	defer app.Close()
	appPort := app.Listener.Addr().(*net.TCPAddr).Port

	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	hc := newHTTPClient(t)
	host, cookie := previewSignIn(t, hc, r.url(""), appPort)
	hc.CloseIdleConnections()
	wsURL := "ws://" + r.addr + "/hmr"
	header := http.Header{"Host": {host}, "Origin": {"http://" + host}, "Cookie": {cookie}}

	for i := range preview.DefaultMaxConnections {
		conn, status, err := dialWS(t, wsURL, header)
		if err != nil {
			t.Fatalf("hot-reload socket %d of the budget's %d: %d %v", i+1, preview.DefaultMaxConnections, status, err)
		}
		t.Cleanup(func() { conn.Close() })
	}
	// A crowd more, each kept open after its answer, as many as the
	// listener takes: every one is told the budget is spent.
	upgrade := "GET /hmr HTTP/1.1\r\nHost: " + host + "\r\nOrigin: http://" + host + "\r\nCookie: " + cookie +
		"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	for i := range maxConnections {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatalf("preview request %d over the budget: %v", i+1, err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(waitTimeout))
		if _, err := io.WriteString(c, upgrade); err != nil {
			t.Fatalf("preview request %d over the budget: %v", i+1, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("preview request %d over the budget: %v", i+1, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("preview request %d over the budget: %d, want 503", i+1, resp.StatusCode)
		}
	}

	expectHealthy(t, r)
	page := newHTTPClient(t)
	page.Timeout = answerTimeout
	resp, err := page.Get(r.url("/"))
	if err != nil {
		t.Fatalf("agentmux's page with the preview budget spent: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("agentmux's page with the preview budget spent: %d", resp.StatusCode)
	}
	conn, status, err := dialWS(t, "ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatalf("agentmux's WebSocket with the preview budget spent: %d %v", status, err)
	}
	defer conn.Close()
	heartbeat(t, conn, "agentmux's WebSocket with the preview budget spent")
	if n := len(linesWith(r.log.String(), "level=WARN", "preview connection budget exhausted")); n != 1 {
		t.Errorf("%d log lines about the preview budget, want 1 (rate limited)", n)
	}
}
