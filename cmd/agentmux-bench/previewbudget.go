package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// The preview part of the abuse: the third security review found that
// preview WebSockets (a dev server's hot reload), which hold their
// connections, could take every slot of the server's listener, so that
// /api/health did not answer until they closed. It opens hot-reload
// sockets through a preview until the server refuses one (its budget),
// then a crowd more, each kept open after its answer, and while all are
// held, a client types and a fresh client attaches.
const (
	// previewMaxHeld bounds the hot-reload sockets opened while looking
	// for the budget: a server without one takes them all.
	previewMaxHeld = 512
	// previewCrowd is how many more preview requests are sent once the
	// budget is spent, each on a connection of its own kept open: as many
	// as the server's listener holds (256).
	previewCrowd = 256
)

// previewBudgetResult is what holding the previews' budget did to the
// server's own clients.
type previewBudgetResult struct {
	// Held hot-reload sockets were opened through a preview before one
	// was refused (HeldRefusal says how); Crowd more preview requests were
	// sent, each kept open, and Refused of them were answered 503.
	Held        int    `json:"held"`
	HeldRefusal string `json:"heldRefusal,omitempty"`
	Crowd       int    `json:"crowd"`
	Refused     int    `json:"refused"`
	CrowdError  string `json:"crowdError,omitempty"`
	// Echo is a client's keystroke echo while they are held.
	Echo      echoStats `json:"echo"`
	EchoError string    `json:"echoError,omitempty"`
	// HealthProbes GET /api/health were timed while they are held.
	HealthProbes   int     `json:"healthProbes"`
	HealthFailures int     `json:"healthFailures"`
	HealthP50Ms    float64 `json:"healthP50Ms"`
	HealthMaxMs    float64 `json:"healthMaxMs"`
	// Attached reports whether a fresh client got session.attached while
	// they are held, after AttachMs.
	Attached    bool    `json:"attached"`
	AttachMs    float64 `json:"attachMs"`
	AttachError string  `json:"attachError,omitempty"`
}

// measurePreviewBudget holds the previews' budget and a crowd more while
// keys are typed into typing and a fresh client attaches to attachTo.
func measurePreviewBudget(ctx context.Context, e *benchEnv, typing *readySession, attachTo string, keys int) (*previewBudgetResult, error) {
	app, err := startHotReloadApp()
	if err != nil {
		return nil, err
	}
	defer app.close()
	target, cookie, err := previewSignIn(ctx, e.api, app.port)
	if err != nil {
		return nil, err
	}
	held := &connSet{}
	defer held.closeAll()
	r := &previewBudgetResult{}
	for r.Held < previewMaxHeld {
		status, err := previewUpgrade(ctx, target, cookie, held)
		if err != nil {
			r.HeldRefusal = err.Error()
			break
		}
		if status != http.StatusSwitchingProtocols {
			r.HeldRefusal = fmt.Sprintf("answered %d", status)
			break
		}
		r.Held++
	}
	e.logf("abuse: %d hot-reload sockets held through a preview (then %s)", r.Held, r.HeldRefusal)
	for range previewCrowd {
		status, err := previewUpgrade(ctx, target, cookie, held)
		if err != nil {
			r.CrowdError = err.Error()
			break
		}
		r.Crowd++
		if status == http.StatusServiceUnavailable {
			r.Refused++
		}
	}

	probes := startHealthProbes(ctx, e.api)
	attach := attachFresh(ctx, e, attachTo, held)
	done := make(chan struct{})
	close(done) // keys, no more: nothing else is being sent
	rtts, echoErr := typeDuringAbuse(ctx, typing, keys, done)
	health := probes.end()

	r.Echo = echoSummary(rtts)
	if echoErr != nil {
		r.EchoError = echoErr.Error()
	}
	r.Attached, r.AttachMs, r.AttachError = attach.ok, attach.ms, attach.err
	r.HealthProbes, r.HealthFailures, r.HealthP50Ms, r.HealthMaxMs = health.probes, health.failures, health.p50Ms, health.maxMs
	e.logf("abuse: with the previews held, %d keys echoed (p50 %s), attach %v", r.Echo.Keys, micros(r.Echo.P50Micros), r.Attached)
	return r, nil
}

// hotReloadApp is a dev server's hot-reload socket: it takes every
// WebSocket and holds it until the client closes it, or close.
type hotReloadApp struct {
	port int
	srv  *http.Server
	// wg tracks the handlers of the sockets taken, which Server.Close
	// does not end: close closes their sockets and waits for them.
	wg sync.WaitGroup

	// mu protects the fields below.
	mu     sync.Mutex
	closed bool
	socks  map[*websocket.Conn]struct{}
}

func startHotReloadApp() (*hotReloadApp, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the previewed app: %w", err)
	}
	a := &hotReloadApp{port: ln.Addr().(*net.TCPAddr).Port, socks: make(map[*websocket.Conn]struct{})}
	up := websocket.Upgrader{}
	a.srv = &http.Server{ReadHeaderTimeout: requestTimeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		if !a.hold(c) {
			return
		}
		defer a.wg.Done()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	})}
	go a.srv.Serve(ln) //nolint:errcheck // ends with close
	return a, nil
}

// hold counts c among the sockets close ends; false once close began.
func (a *hotReloadApp) hold(c *websocket.Conn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.socks[c] = struct{}{}
	a.wg.Add(1)
	return true
}

// close stops the app: its listener, and every socket it holds.
func (a *hotReloadApp) close() {
	_ = a.srv.Close()
	a.mu.Lock()
	a.closed = true
	for c := range a.socks {
		_ = c.Close()
	}
	a.mu.Unlock()
	a.wg.Wait()
}

// previewSignIn signs in on port's preview as agentmux's page does, and
// returns where to send the preview's requests (the server's address and
// the preview's Host) and the Cookie that carries the sign-in ("" for a
// server whose previews ask for none).
func previewSignIn(ctx context.Context, api *apiClient, port int) (target previewTarget, cookie string, err error) {
	var link struct{ URL string }
	if err := api.do(ctx, http.MethodPost, "/api/ports/"+strconv.Itoa(port)+"/preview", nil, &link); err != nil {
		return previewTarget{}, "", fmt.Errorf("ask for a preview of port %d: %w", port, err)
	}
	u, err := url.Parse(link.URL)
	if err != nil {
		return previewTarget{}, "", fmt.Errorf("preview link %q: %w", link.URL, err)
	}
	target = previewTarget{addr: strings.TrimPrefix(api.base, "http://"), host: u.Host}
	if u.Query().Get("ticket") == "" {
		return target, "", nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api.base+u.RequestURI(), nil)
	if err != nil {
		return previewTarget{}, "", err
	}
	req.Host = u.Host
	hc := &http.Client{Timeout: requestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return previewTarget{}, "", fmt.Errorf("sign in on the preview: %w", err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()
	cookies := resp.Cookies()
	if len(cookies) == 0 {
		return previewTarget{}, "", fmt.Errorf("sign in on the preview: %d and no cookie", resp.StatusCode)
	}
	return target, cookies[0].Name + "=" + cookies[0].Value, nil
}

// previewTarget is where a preview's requests go: the server's address,
// with the preview's Host.
type previewTarget struct{ addr, host string }

// previewUpgrade asks the preview for its app's hot-reload socket, as the
// app's own page does, on a connection of its own that it keeps open in
// held whatever the answer, and returns the answer's status.
func previewUpgrade(ctx context.Context, t previewTarget, cookie string, held *connSet) (int, error) {
	d := net.Dialer{Timeout: writeTimeout}
	c, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return 0, fmt.Errorf("dial: %w", err)
	}
	if !held.add(func() { c.Close() }) {
		return 0, errors.New("the held connections were closed")
	}
	_ = c.SetDeadline(time.Now().Add(requestTimeout))
	head := "GET /hmr HTTP/1.1\r\nHost: " + t.host + "\r\nOrigin: http://" + t.host +
		"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	if cookie != "" {
		head += "Cookie: " + cookie + "\r\n"
	}
	if _, err := c.Write([]byte(head + "\r\n")); err != nil {
		return 0, fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	_ = c.SetDeadline(time.Time{})
	return resp.StatusCode, nil
}

// previewRows are the report's rows of the preview part of the abuse.
func previewRows(p *previewBudgetResult) [][2]string {
	held := fmt.Sprintf("%d hot-reload sockets held through a preview", p.Held)
	if p.HeldRefusal != "" {
		held += " (the next " + p.HeldRefusal + ")"
	}
	crowd := fmt.Sprintf("%d more preview requests kept open, %d answered 503%s", p.Crowd, p.Refused, firstErr(p.CrowdError))
	echo := echoLine(p.Echo)
	if p.EchoError != "" {
		echo += "; typing FAILED: " + p.EchoError
	}
	health := fmt.Sprintf("GET /api/health p50 %s, max %s over %d probes", millis(p.HealthP50Ms), millis(p.HealthMaxMs), p.HealthProbes)
	if p.HealthFailures > 0 {
		health += fmt.Sprintf(", %d FAILED", p.HealthFailures)
	}
	return [][2]string{{
		"the same: the previews' budget held (" + held + "; " + crowd + ")",
		fmt.Sprintf("a client's keystroke echo, %d keys: %s; a fresh client %s; %s", p.Echo.Keys, echo, attachLine(p.Attached, p.AttachMs, p.AttachError), health),
	}}
}
