package preview

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newPreviews(t *testing.T, opts Options) *Previews {
	t.Helper()
	if opts.Own == nil {
		opts.Own = func(int) bool { return false }
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPort(t *testing.T) {
	p := newPreviews(t, Options{Domain: "dev.example.com"})
	for host, want := range map[string]int{
		"5173.localhost:8080":      5173,
		"5173.localhost":           5173,
		"5173.LOCALHOST.:8080":     5173,
		"3000.dev.example.com":     3000,
		"3000.dev.example.com:443": 3000,
		"65535.localhost":          65535,
		"localhost:8080":           0,
		"x.localhost":              0,
		"05173.localhost":          0,
		"99999.localhost":          0,
		"123456.localhost":         0,
		"5173.evil.com":            0,
		"5173.example.com":         0,
		"a.5173.localhost":         0,
		".localhost":               0,
		"127.0.0.1:8080":           0,
	} {
		got, ok := p.Port(host)
		if ok != (want != 0) || got != want {
			t.Errorf("Port(%q) = %d, %v; want %d", host, got, ok, want)
		}
	}
}

// app is an app's dev server: it echoes what it was asked, streams an
// event, and echoes WebSocket messages on a socket that, like a dev
// server's hot reload, accepts its own origin alone. hits counts the
// requests that reached it.
type app struct {
	port int
	hits atomic.Int64
}

func backend(t *testing.T) *app {
	t.Helper()
	a := &app{}
	up := websocket.Upgrader{CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "http://"+r.Host }}
	mux := http.NewServeMux()
	mux.HandleFunc("/hmr", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			mt, b, err := c.ReadMessage()
			if err != nil {
				return
			}
			if c.WriteMessage(mt, b) != nil {
				return
			}
		}
	})
	mux.HandleFunc("/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // the client hangs up
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "host="+r.Host+" path="+r.URL.Path+" fwd="+r.Header.Get("X-Forwarded-Host")+
			" origin="+r.Header.Get("Origin")+" auth="+r.Header.Get("Authorization")+" cookie="+r.Header.Get("Cookie"))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.port = srv.Listener.Addr().(*net.TCPAddr).Port
	return a
}

// serve runs Split in front of a stand-in for agentmux's own routes,
// with the short deadlines agentmux's listener has for its own requests.
func serve(t *testing.T, p *Previews) (addr string, agentmuxHit *bool) {
	t.Helper()
	hit := false
	srv := httptest.NewUnstartedServer(p.Split(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hit = true
		io.WriteString(w, "agentmux "+r.URL.Path)
	})))
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Config.WriteTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), &hit
}

// noRedirects is a client that shows redirects rather than following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// request sends method path to addr with Host host and header (name,
// value pairs), and returns the response with its body read.
func request(t *testing.T, method, addr, host, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func get(t *testing.T, addr, host, path string, header ...string) (int, string) {
	t.Helper()
	resp, body := request(t, http.MethodGet, addr, host, path, header...)
	return resp.StatusCode, body
}

// signIn signs in on port's preview as the UI's frame does, with a
// ticket from SignInURL, and returns the Cookie header that carries the
// sign-in.
func signIn(t *testing.T, p *Previews, addr string, port int) string {
	t.Helper()
	link, err := p.SignInURL("localhost:8080", port, false)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(link)
	if err != nil || u.Host != strconv.Itoa(port)+".localhost:8080" || u.Path != SignInPath {
		t.Fatalf("sign-in link %q (%v)", link, err)
	}
	resp, _ := request(t, http.MethodGet, addr, u.Host, u.RequestURI(), "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "cross-site")
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly || !cookies[0].Partitioned {
		t.Fatalf("sign-in: %d, cookies %+v; want a redirect and one HttpOnly, Partitioned cookie", resp.StatusCode, cookies)
	}
	return cookies[0].Name + "=" + cookies[0].Value
}

// TestPreviewHostNeverReachesAgentmux: on a preview Host every path,
// agentmux's API, WebSocket and UI included, goes to the app, with the
// Host the app accepts; any other Host goes to agentmux.
func TestPreviewHostNeverReachesAgentmux(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{})
	addr, hit := serve(t, p)
	cookie := signIn(t, p, addr, a.port)
	host := strconv.Itoa(a.port) + ".localhost:8080"
	for _, path := range []string{"/", "/api/sessions", "/ws", "/app.js", "/api/health"} {
		code, body := get(t, addr, host, path, "Cookie", cookie)
		want := "host=localhost:" + strconv.Itoa(a.port) + " path=" + path + " fwd=" + host
		if code != http.StatusOK || !strings.HasPrefix(body, want) {
			t.Errorf("GET %s on %s = %d %q, want the app's %q", path, host, code, body, want)
		}
	}
	if *hit {
		t.Fatal("a request on a preview origin reached agentmux")
	}
	if code, body := get(t, addr, "localhost:8080", "/api/sessions"); code != http.StatusOK || body != "agentmux /api/sessions" {
		t.Errorf("agentmux's own Host: %d %q", code, body)
	}
}

// TestPreviewPassesWebSocketsAndStreams: a dev server's hot-reload socket
// and event stream pass through from the preview's own pages, and outlive
// the listener's deadlines.
func TestPreviewPassesWebSocketsAndStreams(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{})
	addr, _ := serve(t, p)
	cookie := signIn(t, p, addr, a.port)
	host := strconv.Itoa(a.port) + ".localhost:8080"

	h := http.Header{"Host": {host}, "Origin": {"http://" + host}, "Cookie": {cookie}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/hmr", h)
	if err != nil {
		t.Fatalf("WebSocket through the preview: %v", err)
	}
	defer c.Close()
	// Past the listener's 300 ms deadlines, which a preview clears.
	time.Sleep(500 * time.Millisecond) // the elapsed time is what is tested
	if err := c.WriteMessage(websocket.TextMessage, []byte("hot reload")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, b, err := c.ReadMessage(); err != nil || string(b) != "hot reload" {
		t.Fatalf("echo = %q, %v", b, err)
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/events", nil)
	req.Host = host
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Fatalf("the event stream's first event = %q, %v; it must arrive while the stream is open", line, err)
	}
}

// TestPreviewRefusesWhatItMustNotShow: system ports and agentmux's own are
// never proxied; a port nothing listens on gets a page that retries.
func TestPreviewRefusesWhatItMustNotShow(t *testing.T) {
	p := newPreviews(t, Options{Own: func(port int) bool { return port == 8080 }})
	addr, hit := serve(t, p)
	if code, body := get(t, addr, "22.localhost", "/"); code != http.StatusForbidden || !strings.Contains(body, "below 1024") {
		t.Errorf("port 22: %d %q", code, body)
	}
	if code, body := get(t, addr, "8080.localhost", "/api/sessions"); code != http.StatusForbidden || !strings.Contains(body, "agentmux") {
		t.Errorf("agentmux's own port: %d %q", code, body)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	code, body := get(t, addr, strconv.Itoa(free)+".localhost", "/", "Cookie", signIn(t, p, addr, free))
	if code != http.StatusBadGateway || !strings.Contains(body, "Nothing listens on port "+strconv.Itoa(free)) || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("a port nothing listens on: %d %q", code, body)
	}
	if *hit {
		t.Error("a refused preview reached agentmux")
	}
}

// TestPreviewNeedsSignIn: with or without a token, a preview origin
// serves only a browser that signed in there, with a ticket that works
// once, for its port, within a minute; the cookie it gets lasts hours,
// for that port, and only while this process's key signs it.
func TestPreviewNeedsSignIn(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{})
	addr, _ := serve(t, p)
	host := strconv.Itoa(a.port) + ".localhost:8080"

	if code, body := get(t, addr, host, "/"); code != http.StatusUnauthorized || !strings.Contains(body, "Preview view") {
		t.Fatalf("no sign-in: %d %q, want 401 saying where to sign in", code, body)
	}
	link, err := p.SignInURL("localhost:8080", a.port, false)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(link)
	resp, _ := request(t, http.MethodGet, addr, host, u.RequestURI())
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("first use of a ticket: %d %v", resp.StatusCode, resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if ck.MaxAge < int(time.Hour/time.Second) || ck.MaxAge > int(24*time.Hour/time.Second) {
		t.Errorf("the sign-in cookie lasts %d s, want hours", ck.MaxAge)
	}
	if code, body := get(t, addr, host, u.RequestURI()); code != http.StatusUnauthorized || !strings.Contains(body, "works once") {
		t.Errorf("a ticket used again: %d %q, want 401", code, body)
	}
	cookie := ck.Name + "=" + ck.Value
	if code, body := get(t, addr, host, "/page", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, "path=/page") {
		t.Errorf("signed in: %d %q", code, body)
	}

	// A ticket for another port is spent there and good for nothing after.
	other, _ := p.SignInURL("localhost:8080", a.port+1, false)
	ou, _ := url.Parse(other)
	if code, _ := get(t, addr, host, ou.RequestURI()); code != http.StatusUnauthorized {
		t.Errorf("another port's ticket: %d, want 401", code)
	}
	if code, _ := get(t, addr, ou.Host, ou.RequestURI()); code != http.StatusUnauthorized {
		t.Errorf("a ticket tried on the wrong port first, then on its own: %d, want 401", code)
	}
	expired, err := p.mint(a.port, time.Now().Add(-2*ticketLife))
	if err != nil {
		t.Fatal(err)
	}
	for what, tk := range map[string]string{"expired": expired, "forged": strings.Repeat("0", 32), "empty": ""} {
		if code, _ := get(t, addr, host, SignInPath+"?ticket="+url.QueryEscape(tk)); code != http.StatusUnauthorized {
			t.Errorf("%s ticket: %d, want 401", what, code)
		}
	}

	// The cookie is for that port's origin alone, until it expires, and
	// only while this process's key signs it.
	if code, _ := get(t, addr, strconv.Itoa(a.port+1)+".localhost:8080", "/", "Cookie", cookie); code != http.StatusUnauthorized {
		t.Errorf("another port with this cookie: %d, want 401", code)
	}
	stale := cookieName + "=" + p.cookieValue(a.port, time.Now().Add(-time.Second))
	if code, _ := get(t, addr, host, "/", "Cookie", stale); code != http.StatusUnauthorized {
		t.Errorf("an expired cookie: %d, want 401", code)
	}
	restarted := newPreviews(t, Options{})
	again := cookieName + "=" + restarted.cookieValue(a.port, time.Now().Add(time.Hour))
	if code, _ := get(t, addr, host, "/", "Cookie", again); code != http.StatusUnauthorized {
		t.Errorf("a cookie of another process's key: %d, want 401", code)
	}
	exp, _, _ := strings.Cut(ck.Value, ".")
	if code, _ := get(t, addr, host, "/", "Cookie", cookieName+"="+exp+"."+strings.Repeat("a", 64)); code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d, want 401", code)
	}
}

// TestPreviewTicketsAreBounded: tickets minted and never used are kept
// to maxTickets, the oldest dropped first.
func TestPreviewTicketsAreBounded(t *testing.T) {
	p := newPreviews(t, Options{})
	now := time.Now()
	first, _ := p.mint(5173, now)
	var last string
	for i := range maxTickets + 10 {
		last, _ = p.mint(5173, now.Add(time.Duration(i+1)*time.Millisecond))
	}
	if n := len(p.tickets); n != maxTickets {
		t.Errorf("%d tickets kept, want %d", n, maxTickets)
	}
	if p.redeem(first, 5173, now) {
		t.Error("the oldest ticket survived the bound")
	}
	if !p.redeem(last, 5173, now) {
		t.Error("the newest ticket was dropped")
	}
}

// TestPreviewForwardsNothingOfAgentmux: agentmux's token, as a bearer
// token, signs in on a preview and stops there; agentmux's cookies stop
// there too; the app's own Authorization and cookies pass as sent.
func TestPreviewForwardsNothingOfAgentmux(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{Token: "s3cret"})
	addr, _ := serve(t, p)
	host := strconv.Itoa(a.port) + ".localhost:8080"

	code, body := get(t, addr, host, "/", "Authorization", "Bearer s3cret")
	if code != http.StatusOK || !strings.Contains(body, "auth= ") {
		t.Errorf("the token as a bearer token: %d %q; want the app, without the token", code, body)
	}
	if strings.Contains(body, "s3cret") {
		t.Errorf("the token reached the app: %q", body)
	}
	for _, bad := range []string{"Bearer wrong", "Basic czNjcmV0", "Bearer"} {
		if code, _ := get(t, addr, host, "/", "Authorization", bad); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", bad, code)
		}
	}
	cookie := signIn(t, p, addr, a.port)
	theirs := `theirs=1; quoted="a b,c"; agentmux=kept`
	code, body = get(t, addr, host, "/", "Authorization", "Basic dTpw",
		"Cookie", "agentmux_token=s3cret; "+cookie+"; "+theirs, "Cookie", "agentmux_other=x")
	if code != http.StatusOK || !strings.HasSuffix(body, " auth=Basic dTpw cookie="+theirs) {
		t.Errorf("signed in with the app's own Authorization and cookies: %d %q; want them as sent, and none of agentmux's", code, body)
	}
	if strings.Contains(body, "s3cret") || strings.Contains(body, cookieName) {
		t.Errorf("agentmux's cookies reached the app: %q", body)
	}
}

// TestPreviewRefusesOtherSites: a preview lends its origin to its own
// pages alone. A WebSocket or a fetch from another page is refused before
// it reaches the app, and so is a cross-site subresource; the app's own
// pages' requests reach it as from its own origin; navigations pass, with
// the browser's Origin.
func TestPreviewRefusesOtherSites(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{Domain: "dev.example.com"})
	addr, _ := serve(t, p)
	cookie := signIn(t, p, addr, a.port)
	host := strconv.Itoa(a.port) + ".localhost:8080"
	own := "http://" + host
	local := "http://localhost:" + strconv.Itoa(a.port)

	foreign := []string{
		"http://localhost:9999",              // a page on another port
		"http://localhost:8080",              // agentmux's own page: the UI never asks a preview
		"http://3000.localhost:8080",         // another preview
		"http://evil.test",                   // any site
		"https://" + host,                    // the preview's host, another scheme
		"null",                               // a sandboxed frame
		"http://" + host + ".evil.test:8080", // a look-alike
	}
	for _, origin := range foreign {
		before := a.hits.Load()
		h := http.Header{"Host": {host}, "Origin": {origin}, "Cookie": {cookie}}
		c, resp, err := websocket.DefaultDialer.Dial("ws://"+addr+"/hmr", h)
		if err == nil {
			c.Close()
			t.Errorf("a WebSocket from %s was opened", origin)
		} else if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("a WebSocket from %s: %v, want 403", origin, err)
		}
		for _, mode := range []string{"cors", "no-cors", "same-origin", ""} {
			if code, body := get(t, addr, host, "/data", "Origin", origin, "Sec-Fetch-Mode", mode, "Cookie", cookie); code != http.StatusForbidden {
				t.Errorf("a fetch (mode %q) from %s: %d %q, want 403", mode, origin, code, body)
			}
		}
		resp2, body := request(t, http.MethodPost, addr, host, "/form", "Origin", origin, "Sec-Fetch-Mode", "cors", "Cookie", cookie)
		if resp2.StatusCode != http.StatusForbidden {
			t.Errorf("a POST from %s: %d %q, want 403", origin, resp2.StatusCode, body)
		}
		if n := a.hits.Load() - before; n != 0 {
			t.Errorf("%d requests from %s reached the app", n, origin)
		}
	}
	// A script or an image another site asks for carries no Origin.
	before := a.hits.Load()
	for _, dest := range []string{"script", "image", "empty"} {
		if code, _ := get(t, addr, host, "/app.js", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Sec-Fetch-Dest", dest, "Cookie", cookie); code != http.StatusForbidden {
			t.Errorf("a cross-site %s: %d, want 403", dest, code)
		}
	}
	if n := a.hits.Load() - before; n != 0 {
		t.Errorf("%d cross-site subresources reached the app", n)
	}

	// The preview's own pages: as from the app's own origin.
	h := http.Header{"Host": {host}, "Origin": {own}, "Cookie": {cookie}}
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/hmr", h)
	if err != nil {
		t.Fatalf("the preview's own page's WebSocket: %v", err)
	}
	c.Close()
	if code, body := get(t, addr, host, "/data", "Origin", own, "Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, " origin="+local+" ") {
		t.Errorf("the preview's own fetch: %d %q, want the app with Origin %s", code, body, local)
	}
	// Behind a TLS proxy on the preview domain, the own origin is https.
	dom := strconv.Itoa(a.port) + ".dev.example.com"
	domCookie := cookie // the cookie is the port's, whatever name reached it
	if code, body := get(t, addr, dom, "/data", "Origin", "https://"+dom, "X-Forwarded-Proto", "https", "Sec-Fetch-Mode", "cors", "Cookie", domCookie); code != http.StatusOK || !strings.Contains(body, " origin="+local+" ") {
		t.Errorf("the preview's own fetch behind a TLS proxy: %d %q, want the app with Origin %s", code, body, local)
	}
	// No Origin and no Sec-Fetch-Site: not a browser's (curl, a test runner).
	if code, body := get(t, addr, host, "/data", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, " origin= ") {
		t.Errorf("a request from no page: %d %q", code, body)
	}
	// Navigations pass: the UI's frame, a link, a form another site posts,
	// whose Origin the app sees as it is.
	if code, body := get(t, addr, host, "/", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Dest", "iframe", "Sec-Fetch-Site", "cross-site", "Cookie", cookie); code != http.StatusOK || !strings.Contains(body, "path=/ ") {
		t.Errorf("the UI's frame: %d %q", code, body)
	}
	resp, body := request(t, http.MethodPost, addr, host, "/form", "Origin", "http://evil.test", "Sec-Fetch-Mode", "navigate", "Sec-Fetch-Site", "cross-site", "Cookie", cookie)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, " origin=http://evil.test ") {
		t.Errorf("another site's form: %d %q, want the app, with that site's Origin", resp.StatusCode, body)
	}
	// A navigation that asks to upgrade is a WebSocket all the same.
	if code, _ := get(t, addr, host, "/hmr", "Sec-Fetch-Mode", "navigate", "Upgrade", "websocket", "Connection", "Upgrade", "Origin", "http://evil.test", "Cookie", cookie); code != http.StatusForbidden {
		t.Errorf("an upgrade marked as a navigation, from another page: %d, want 403", code)
	}
}

// TestPreviewBudget: previews hold at most their budget of connections
// at once; the next is told to come back, and a slot freed is taken.
func TestPreviewBudget(t *testing.T) {
	a := backend(t)
	p := newPreviews(t, Options{MaxConnections: 3})
	addr, hit := serve(t, p)
	cookie := signIn(t, p, addr, a.port)
	host := strconv.Itoa(a.port) + ".localhost:8080"
	h := http.Header{"Host": {host}, "Origin": {"http://" + host}, "Cookie": {cookie}}
	var held []*websocket.Conn
	for range 3 {
		c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/hmr", h)
		if err != nil {
			t.Fatalf("a WebSocket within the budget: %v", err)
		}
		held = append(held, c)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+addr+"/hmr", h); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a WebSocket over the budget: %v, want 503", err)
	}
	resp, body := request(t, http.MethodGet, addr, host, "/", "Cookie", cookie)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "all 3") {
		t.Errorf("a page over the budget: %d %q (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	// agentmux's own requests are not the previews' to refuse.
	if code, _ := get(t, addr, "localhost:8080", "/api/health"); code != http.StatusOK || !*hit {
		t.Errorf("agentmux with the preview budget spent: %d", code)
	}
	held[0].Close()
	waitFor(t, "a slot freed by a closed WebSocket", func() bool {
		code, _ := get(t, addr, host, "/", "Cookie", cookie)
		return code == http.StatusOK
	})
	for _, c := range held[1:] {
		c.Close()
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPreviewReachesADevServerOnIPv6Loopback: a dev server that listens on
// "localhost" may have bound ::1 alone; its preview reaches it there.
func TestPreviewReachesADevServerOnIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "v6 app")
	})}}
	srv.Start()
	defer srv.Close()
	p := newPreviews(t, Options{})
	defer p.Close()
	addr, _ := serve(t, p)
	port := ln.Addr().(*net.TCPAddr).Port
	if code, body := get(t, addr, strconv.Itoa(port)+".localhost", "/", "Cookie", signIn(t, p, addr, port)); code != http.StatusOK || body != "v6 app" {
		t.Fatalf("a dev server on [::1] only: %d %q", code, body)
	}
}
