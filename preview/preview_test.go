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

// backend is an app's dev server: it echoes what it was asked, streams
// an event, and echoes WebSocket messages.
func backend(t *testing.T) (port int) {
	t.Helper()
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
		io.WriteString(w, "host="+r.Host+" path="+r.URL.Path+" fwd="+r.Header.Get("X-Forwarded-Host")+" cookie="+r.Header.Get("Cookie"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
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

func get(t *testing.T, addr, host, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPreviewHostNeverReachesAgentmux: on a preview Host every path,
// agentmux's API, WebSocket and UI included, goes to the app, with the
// Host the app accepts; any other Host goes to agentmux.
func TestPreviewHostNeverReachesAgentmux(t *testing.T) {
	port := backend(t)
	p := newPreviews(t, Options{})
	addr, hit := serve(t, p)
	host := strconv.Itoa(port) + ".localhost:8080"
	for _, path := range []string{"/", "/api/sessions", "/ws", "/app.js", "/api/health"} {
		code, body := get(t, addr, host, path)
		want := "host=localhost:" + strconv.Itoa(port) + " path=" + path + " fwd=" + host
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
// and event stream pass through, and outlive the listener's deadlines.
func TestPreviewPassesWebSocketsAndStreams(t *testing.T) {
	port := backend(t)
	addr, _ := serve(t, newPreviews(t, Options{}))
	host := strconv.Itoa(port) + ".localhost:8080"

	h := http.Header{"Host": {host}, "Origin": {"http://" + host}}
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
	code, body := get(t, addr, strconv.Itoa(free)+".localhost", "/")
	if code != http.StatusBadGateway || !strings.Contains(body, "Nothing listens on port "+strconv.Itoa(free)) || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("a port nothing listens on: %d %q", code, body)
	}
	if *hit {
		t.Error("a refused preview reached agentmux")
	}
}

// TestPreviewAsksForTheToken: with a token, a preview origin needs its
// own sign-in, through a ticket from agentmux's origin or the bearer
// token; the sign-in cookie never reaches the app.
func TestPreviewAsksForTheToken(t *testing.T) {
	port := backend(t)
	p := newPreviews(t, Options{Token: "s3cret"})
	addr, _ := serve(t, p)
	host := strconv.Itoa(port) + ".localhost:8080"

	if code, _ := get(t, addr, host, "/"); code != http.StatusUnauthorized {
		t.Fatalf("no sign-in: %d, want 401", code)
	}
	if code, _ := get(t, addr, host, "/", "Authorization", "Bearer s3cret"); code != http.StatusOK {
		t.Errorf("bearer token: %d, want 200", code)
	}
	if code, _ := get(t, addr, host, "/", "Authorization", "Bearer wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong bearer token: %d, want 401", code)
	}

	link := p.SignInURL("localhost:8080", port, false)
	u, err := url.Parse(link)
	if err != nil || u.Host != host || u.Path != SignInPath {
		t.Fatalf("sign-in link %q", link)
	}
	// A ticket for another port, an expired one and a forged one are refused.
	other := p.SignInURL("localhost:8080", port+1, false)
	ou, _ := url.Parse(other)
	for what, q := range map[string]string{
		"another port's": ou.RawQuery,
		"expired":        "ticket=" + url.QueryEscape(p.ticket(port, time.Now().Add(-time.Second))),
		"forged":         "ticket=9999999999.00",
	} {
		if code, _ := get(t, addr, host, SignInPath+"?"+q); code != http.StatusUnauthorized {
			t.Errorf("%s ticket: %d, want 401", what, code)
		}
	}

	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+u.RequestURI(), nil)
	req.Host = host
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Fatalf("sign-in: %d, cookies %+v; want a redirect and one HttpOnly cookie", resp.StatusCode, cookies)
	}
	cookie := cookies[0].Name + "=" + cookies[0].Value + "; theirs=1"
	code, body := get(t, addr, host, "/", "Cookie", cookie)
	if code != http.StatusOK || !strings.HasSuffix(body, "cookie=theirs=1") {
		t.Errorf("signed in: %d %q; want the app, without agentmux's cookie", code, body)
	}
	// The cookie is for that port's origin alone.
	if code, _ := get(t, addr, strconv.Itoa(port+1)+".localhost:8080", "/", "Cookie", cookie); code != http.StatusUnauthorized {
		t.Errorf("another port with this cookie: %d, want 401", code)
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
	if code, body := get(t, addr, strconv.Itoa(port)+".localhost", "/"); code != http.StatusOK || body != "v6 app" {
		t.Fatalf("a dev server on [::1] only: %d %q", code, body)
	}
}
