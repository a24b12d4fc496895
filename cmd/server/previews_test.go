package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/testutil"
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
		return ev.Type == wire.TypePortsChanged && strings.Contains(string(ev.raw), `"port":`+strconv.Itoa(port)+`,`)
	})
}

// TestPreviewOriginServesOnlyTheApp: on the app's preview origin every
// path, agentmux's API included, is the app's; a page of that origin is a
// foreign page to agentmux's API; agentmux's own ports are never proxied.
func TestPreviewOriginServesOnlyTheApp(t *testing.T) {
	e := newAPI(t)
	_, port := startApp(t, e)
	tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port
	origin := fmt.Sprintf("http://%d.localhost:%d", port, tsPort)
	for _, path := range []string{"/", "/api/sessions", "/ws", "/api/health"} {
		resp, b := e.do(http.MethodGet, path, "", "Host", strings.TrimPrefix(origin, "http://"))
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

// TestPreviewSignInWithToken: with a token, the UI gets a ticket link for
// a preview, which signs the browser in on that origin alone.
func TestPreviewSignInWithToken(t *testing.T) {
	e := newAPI(t, "--token", "s3cret")
	e.token = "s3cret"
	_, port := startApp(t, e)
	tsPort := e.ts.Listener.Addr().(*net.TCPAddr).Port
	host := fmt.Sprintf("%d.localhost:%d", port, tsPort)

	resp, b := e.do(http.MethodGet, "/", "", "Host", host, "Authorization", "Bearer wrong")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the preview without its sign-in: %d %q", resp.StatusCode, b)
	}
	resp, b = e.do(http.MethodPost, fmt.Sprintf("/api/ports/%d/preview", port), "")
	wantStatus(t, "a sign-in link", resp, b, http.StatusOK)
	var link struct{ URL string }
	if err := json.Unmarshal(b, &link); err != nil || !strings.HasPrefix(link.URL, "http://"+host+"/.agentmux/sign-in?ticket=") {
		t.Fatalf("sign-in link %s (%v)", b, err)
	}
	req, err := http.NewRequest(http.MethodGet, e.ts.URL+strings.TrimPrefix(link.URL, "http://"+host), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	signIn, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	signIn.Body.Close()
	if signIn.StatusCode != http.StatusSeeOther || len(signIn.Cookies()) != 1 {
		t.Fatalf("sign-in: %d, cookies %v", signIn.StatusCode, signIn.Cookies())
	}
	c := signIn.Cookies()[0]
	resp, b = e.do(http.MethodGet, "/page", "", "Host", host, "Authorization", "Bearer wrong", "Cookie", c.Name+"="+c.Value)
	if resp.StatusCode != http.StatusOK || string(b) != "app at /page" {
		t.Errorf("signed in on the preview: %d %q", resp.StatusCode, b)
	}
	resp, b = e.do(http.MethodPost, "/api/ports/80/preview", "")
	wantError(t, "a system port", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
}
