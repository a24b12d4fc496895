package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/miekg/dns"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/hub"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// The hub's tests run real agentmux workspaces, each a process of its own
// (the helper server) with its own token and workspace directory, and
// the hub on loopback beside them: its listener, its WebSockets to each
// workspace and its page's WebSocket are all real.

// testWorkspace is one agentmux workspace process.
type testWorkspace struct {
	proc  *helperProc
	dir   string
	data  string
	token string
	name  string
	args  []string
}

// startWorkspace starts a workspace listening on addr (host:0 for any
// port) with token (none when empty).
func startWorkspace(t *testing.T, addr, token, name string) *testWorkspace {
	t.Helper()
	w := newWorkspace(t, token, name)
	w.start(t, addr)
	return w
}

// newWorkspace makes a workspace's directories and flags; start starts it.
func newWorkspace(t *testing.T, token, name string) *testWorkspace {
	w := &testWorkspace{dir: t.TempDir(), data: t.TempDir(), token: token, name: name}
	w.args = []string{"--workspace", w.dir, "--data-dir", w.data, "--agent", "shell", "--name", name, "--question-quiet", "200ms"}
	if token != "" {
		w.args = append(w.args, "--token", token)
	}
	return w
}

func (w *testWorkspace) start(t *testing.T, addr string) {
	t.Helper()
	w.proc = startHelper(t, append([]string{"--addr", addr}, w.args...)...)
	w.proc.waitServing()
}

func (w *testWorkspace) url() string { return "http://" + w.proc.addr }

// do sends a request to the workspace's API with its token.
func (w *testWorkspace) do(t *testing.T, method, path, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, w.url()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if w.token != "" {
		req.Header.Set("Authorization", "Bearer "+w.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && json.Unmarshal(b, v) != nil {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

// create starts a session running script in sh and returns its id.
func (w *testWorkspace) create(t *testing.T, name, script string) string {
	t.Helper()
	return w.createWith(t, map[string]any{"name": name, "command": []string{"sh", "-c", script}})
}

// createWith creates the session req describes and returns its id.
func (w *testWorkspace) createWith(t *testing.T, req map[string]any) string {
	t.Helper()
	name := req["name"]
	body, _ := json.Marshal(req)
	var out struct {
		Session wire.Session `json:"session"`
	}
	if code := w.do(t, http.MethodPost, "/api/sessions", string(body), &out); code != http.StatusCreated {
		t.Fatalf("create %v: status %d", name, code)
	}
	return out.Session.ID
}

// asks is a session that asks a question and writes the reply it gets
// to answer.txt in the workspace.
const asks = `printf 'Proceed with the migration? '; read x; printf '%s' "got:$x" > answer.txt; sleep 600`

// tokenFile writes a token file the way a Secret is mounted.
func tokenFile(t *testing.T, token string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(name, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// runningHub is agentmux hub running in this process, as main runs it.
type runningHub struct {
	addr   string
	stderr *testutil.SyncBuffer
}

func startHub(t *testing.T, args ...string) *runningHub {
	t.Helper()
	h := &runningHub{stderr: &testutil.SyncBuffer{}}
	sigs := make(chan os.Signal, 1)
	addrs := make(chan string, 1)
	done := make(chan int, 1)
	go func() {
		done <- hubMain(sigs, append([]string{"--addr", "127.0.0.1:0", "--log-level", "debug"}, args...), noEnv, h.stderr, func(a string) { addrs <- a })
	}()
	select {
	case h.addr = <-addrs:
	case code := <-done:
		t.Fatalf("hub exited with %d: %s", code, h.stderr)
	case <-time.After(waitTimeout):
		t.Fatal("hub did not listen")
	}
	t.Cleanup(func() {
		sigs <- syscall.SIGTERM
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("hub exited with %d", code)
			}
		case <-time.After(waitTimeout):
			t.Errorf("hub did not stop")
		}
		if t.Failed() {
			t.Logf("hub log:\n%s", h.stderr)
		}
	})
	return h
}

func (h *runningHub) inbox(t *testing.T) hub.Inbox {
	t.Helper()
	var in hub.Inbox
	if err := getJSON(http.DefaultClient, "http://"+h.addr+"/api/inbox", &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// answer posts to the hub's answer API, from origin when not empty.
func (h *runningHub) answer(t *testing.T, origin string, body any) (int, wire.ErrorBody) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.addr+"/api/inbox/answer", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e wire.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return resp.StatusCode, e
}

func workspaceView(in hub.Inbox, url string) (hub.WorkspaceView, bool) {
	i := slices.IndexFunc(in.Workspaces, func(w hub.WorkspaceView) bool { return w.URL == url })
	if i < 0 {
		return hub.WorkspaceView{}, false
	}
	return in.Workspaces[i], true
}

// TestHubInbox follows workspaces from a peers file: two reachable, one
// with a wrong token, one with nothing listening; lists their sessions
// with the one that waits first; answers it from the hub; loses a
// workspace killed and finds it again once restarted, listed once; and
// drops a workspace taken off the file.
func TestHubInbox(t *testing.T) {
	alpha := startWorkspace(t, "127.0.0.1:0", "tok-alpha", "alpha")
	beta := startWorkspace(t, "127.0.0.1:0", "", "beta")
	gamma := startWorkspace(t, "127.0.0.1:0", "tok-gamma", "gamma")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := "http://" + ln.Addr().String()
	ln.Close()
	silent := silentListener(t)

	peers := filepath.Join(t.TempDir(), "peers")
	lines := []string{
		"# the team's workspaces",
		alpha.url() + " " + tokenFile(t, "tok-alpha") + " https://alpha.example.com",
		beta.url() + " -",
		gamma.url() + " " + tokenFile(t, "not-gammas-token"),
		nobody + " -",
		silent + " -",
	}
	if err := os.WriteFile(peers, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHub(t, "--peers", peers, "--discover-every", "1s")

	alpha.create(t, "build", "echo building; sleep 600")
	waiting := beta.create(t, "migrate", asks)

	var in hub.Inbox
	testutil.Eventually(t, waitTimeout, "the inbox to show every workspace as it is, and the waiting session first", func() bool {
		in = h.inbox(t)
		a, _ := workspaceView(in, alpha.url())
		b, _ := workspaceView(in, beta.url())
		g, _ := workspaceView(in, gamma.url())
		n, _ := workspaceView(in, nobody)
		s, _ := workspaceView(in, silent)
		return len(in.Workspaces) == 5 && a.Reachable && b.Reachable && !g.Reachable && !n.Reachable && !s.Reachable &&
			strings.HasPrefix(g.Error, "token rejected") && strings.HasPrefix(n.Error, "refused") && strings.HasPrefix(s.Error, "timeout") &&
			len(in.Sessions) == 2 && in.Sessions[0].NeedsInput
	})
	if a, _ := workspaceView(in, alpha.url()); a.Name != "alpha" || a.OpenURL != "https://alpha.example.com/" {
		t.Errorf("alpha: %+v; want its own name and the UI's address from the peers file", a)
	}
	first := in.Sessions[0]
	if first.ID != waiting || first.WorkspaceName != "beta" || first.Status != "waiting" || !strings.Contains(first.Reason, "Proceed with the migration?") ||
		first.WaitingSince == nil || first.OpenURL != beta.url()+"/?session="+waiting {
		t.Errorf("the waiting session: %+v", first)
	}
	if second := in.Sessions[1]; second.WorkspaceName != "alpha" || second.NeedsInput || second.OpenURL != "https://alpha.example.com/?session="+second.ID {
		t.Errorf("the other session: %+v", second)
	}

	// The workspace's own clients learn who answered.
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+beta.proc.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answered := make(chan wire.AnsweredMessage, 1)
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var m wire.AnsweredMessage
			if json.Unmarshal(b, &m) == nil && m.Type == wire.TypeSessionAnswered {
				answered <- m
			}
		}
	}()

	// A page on another origin may not answer; the hub's own may.
	reply := map[string]any{"workspace": beta.url(), "sessionId": waiting, "answer": map[string]string{"text": "yes please"}, "by": "tester"}
	if code, e := h.answer(t, "http://evil.example", reply); code != http.StatusForbidden {
		t.Errorf("an answer from a foreign page: %d %+v, want 403", code, e)
	}
	if _, resp, err := websocket.DefaultDialer.Dial("ws://"+h.addr+"/ws", http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("the hub's WebSocket from a foreign page: %v, %v; want 403", err, resp)
	}
	if code, e := h.answer(t, "", reply); code != http.StatusNoContent {
		t.Fatalf("answer: %d %+v", code, e)
	}
	testutil.Eventually(t, waitTimeout, "the reply to reach the session", func() bool {
		b, _ := os.ReadFile(filepath.Join(beta.dir, "answer.txt"))
		return string(b) == "got:yes please"
	})
	select {
	case m := <-answered:
		if m.SessionID != waiting || m.Answer != "reply" || m.By != "tester (hub)" || m.Text != "yes please" {
			t.Errorf("session.answered %+v", m)
		}
	case <-time.After(waitTimeout):
		t.Error("the workspace's clients were not told who answered")
	}
	if code, e := h.answer(t, "", reply); code != http.StatusConflict || e.Error.Code != wire.CodeNotWaiting {
		t.Errorf("a second answer: %d %+v, want 409 NOT_WAITING", code, e)
	}
	for _, bad := range []map[string]any{
		{"workspace": "http://elsewhere:1", "sessionId": waiting, "answer": "allow"},
		{"workspace": beta.url(), "sessionId": "no-such-session", "answer": "allow"},
	} {
		if code, _ := h.answer(t, "", bad); code != http.StatusNotFound {
			t.Errorf("answer %v: %d, want 404", bad, code)
		}
	}
	if code, e := h.answer(t, "", map[string]any{"workspace": beta.url(), "sessionId": waiting, "answer": map[string]string{"text": "two\nlines"}}); code != http.StatusBadRequest {
		t.Errorf("a reply of two lines: %d %+v, want 400", code, e)
	}

	// Killed, beta is unreachable; restarted on its address, it is back,
	// once, with its session.
	addr := beta.proc.addr
	if err := beta.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	beta.proc.wait(waitTimeout)
	testutil.Eventually(t, waitTimeout, "the hub to mark beta unreachable", func() bool {
		b, _ := workspaceView(h.inbox(t), beta.url())
		return !b.Reachable && b.Error != "" && b.Sessions == 0
	})
	beta.start(t, addr)
	testutil.Eventually(t, waitTimeout, "beta back, with its session, once", func() bool {
		in = h.inbox(t)
		b, _ := workspaceView(in, beta.url())
		n := 0
		for _, s := range in.Sessions {
			if s.ID == waiting {
				n++
			}
		}
		return b.Reachable && len(in.Workspaces) == 5 && n == 1
	})

	// Taken off the file, a workspace goes.
	if err := os.WriteFile(peers, []byte(strings.Join(lines[:3], "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, "the workspaces taken off the peers file to go", func() bool {
		in = h.inbox(t)
		_, g := workspaceView(in, gamma.url())
		return len(in.Workspaces) == 2 && !g
	})
}

// silentListener is a workspace's address that takes connections and
// never answers, as a hung process or a dropped route looks.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// permissionAsker stands in for Claude Code at a permission dialog: it
// calls its PermissionRequest hook as Claude does, then reads one key, as
// Claude's dialog does, and writes it to answer.txt.
const permissionAsker = claudeHooks + `call '{"hook_event_name":"PermissionRequest","tool_name":"Write","tool_input":{"file_path":"'"$PWD"'/docs/plan.md","content":"the plan"}}'
stty -icanon -echo min 1
printf 'Do you want to create plan.md?\n 1. Yes\n 2. No\n'
key=$(dd bs=1 count=1 2>/dev/null)
printf '%s' "$key" > answer.txt
sleep 600
`

// TestHubAllowsPermission answers a permission dialog from the hub: the
// workspace types what its agent's dialog takes, only while it still
// waits at the request the hub showed.
func TestHubAllowsPermission(t *testing.T) {
	installClaude(t, permissionAsker)
	w := startWorkspace(t, "127.0.0.1:0", "tok-w", "claude-box")
	var out struct {
		Session wire.Session `json:"session"`
	}
	if code := w.do(t, http.MethodPost, "/api/sessions", `{"agent":"claude","name":"plan"}`, &out); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	id := out.Session.ID
	h := startHub(t, "--peers", writePeers(t, w.url()+" "+tokenFile(t, "tok-w")))
	var s hub.SessionView
	testutil.Eventually(t, waitTimeout, "the permission request in the inbox", func() bool {
		in := h.inbox(t)
		if len(in.Sessions) != 1 {
			return false
		}
		s = in.Sessions[0]
		return s.NeedsInput && s.Permission != nil
	})
	if s.Permission.Tool != "Write" || s.Permission.Summary != "docs/plan.md" {
		t.Errorf("permission %+v", s.Permission)
	}
	stale := map[string]any{"workspace": w.url(), "sessionId": id, "answer": "deny", "permission": map[string]string{"tool": "Bash", "summary": "rm -rf /"}}
	if code, e := h.answer(t, "", stale); code != http.StatusConflict || e.Error.Code != wire.CodeNotWaiting {
		t.Errorf("an answer to another request: %d %+v, want 409 NOT_WAITING", code, e)
	}
	allow := map[string]any{"workspace": w.url(), "sessionId": id, "answer": "allow", "permission": s.Permission, "by": "alice"}
	if code, e := h.answer(t, "", allow); code != http.StatusNoContent {
		t.Fatalf("allow: %d %+v", code, e)
	}
	testutil.Eventually(t, waitTimeout, "Claude's dialog to get its Allow key", func() bool {
		b, _ := os.ReadFile(filepath.Join(w.dir, "answer.txt"))
		return string(b) == "1"
	})
	testutil.Eventually(t, waitTimeout, "the inbox to show the session at work", func() bool {
		in := h.inbox(t)
		return len(in.Sessions) == 1 && !in.Sessions[0].NeedsInput && in.Sessions[0].Permission == nil
	})
}

func writePeers(t *testing.T, lines ...string) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// testDNS is a DNS server on loopback whose records a test changes.
type testDNS struct {
	mu  sync.Mutex
	a   map[string][]string // name -> IPv4 addresses
	srv map[string][]dns.SRV
	pc  net.PacketConn
}

func startDNS(t *testing.T) *testDNS {
	t.Helper()
	d := &testDNS{a: map[string][]string{}, srv: map[string][]dns.SRV{}}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.pc = pc
	started := make(chan struct{})
	server := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(d.serve), NotifyStartedFunc: func() { close(started) }}
	served := make(chan error, 1)
	go func() { served <- server.ActivateAndServe() }()
	<-started
	t.Cleanup(func() {
		if err := server.Shutdown(); err != nil {
			t.Errorf("DNS server shutdown: %v", err)
		}
		<-served
	})
	return d
}

func (d *testDNS) set(name string, ips ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(ips) == 0 {
		delete(d.a, name)
		return
	}
	d.a[name] = ips
}

func (d *testDNS) setSRV(name string, recs ...dns.SRV) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.srv[name] = recs
}

func (d *testDNS) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	d.mu.Lock()
	known := false
	for _, q := range r.Question {
		hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
		if ips, ok := d.a[q.Name]; ok {
			known = true
			if q.Qtype == dns.TypeA {
				for _, ip := range ips {
					hdr.Rrtype = dns.TypeA
					m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.ParseIP(ip)})
				}
			}
		}
		if recs, ok := d.srv[q.Name]; ok {
			known = true
			if q.Qtype == dns.TypeSRV {
				for _, rec := range recs {
					hdr.Rrtype = dns.TypeSRV
					rec.Hdr = hdr
					m.Answer = append(m.Answer, &rec)
				}
			}
		}
	}
	d.mu.Unlock()
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	_ = w.WriteMsg(m)
}

// resolver asks this server only, as a pod asks the cluster's DNS.
func (d *testDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dialer net.Dialer
		return dialer.DialContext(ctx, "udp", d.pc.LocalAddr().String())
	}}
}

// runHub runs h until the test ends.
func runHub(t *testing.T, h *hub.Hub) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// TestHubDiscoversByDNS follows the workspaces a name's records give, as
// a headless Service's do: a workspace added, one removed, one replaced
// at a new address; then SRV records, each with its own port.
func TestHubDiscoversByDNS(t *testing.T) {
	// One port on several loopback addresses, as pods share their
	// Service's port.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 here: %v", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	at := func(ip string) string { return fmt.Sprintf("%s:%d", ip, port) }
	w2 := startWorkspace(t, at("127.0.0.2"), "shared", "pod-2")
	w3 := startWorkspace(t, at("127.0.0.3"), "shared", "pod-3")
	w4 := startWorkspace(t, at("127.0.0.4"), "shared", "pod-4")
	w2.create(t, "two", "sleep 600")

	d := startDNS(t)
	const name = "agentmux-workspaces.team.svc.cluster.local."
	d.set(name, "127.0.0.2", "127.0.0.3")
	h, err := hub.New(hub.Options{
		Discover:          []hub.Discovery{{Name: name, Port: port}},
		DiscoverTokenFile: tokenFile(t, "shared"),
		DiscoverOpenURL:   "https://{name}.agentmux.example.com/",
		Every:             100 * time.Millisecond,
		Resolver:          d.resolver(),
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	runHub(t, h)
	reachable := func(want ...*testWorkspace) func() bool {
		return func() bool {
			in := h.Inbox()
			if len(in.Workspaces) != len(want) {
				return false
			}
			for _, w := range want {
				v, ok := workspaceView(in, w.url())
				if !ok || !v.Reachable || v.Name != w.name {
					return false
				}
			}
			return true
		}
	}
	testutil.Eventually(t, waitTimeout, "both workspaces of the name", reachable(w2, w3))
	in := h.Inbox()
	if v, _ := workspaceView(in, w2.url()); v.OpenURL != "https://pod-2.agentmux.example.com/" || v.Sessions != 1 {
		t.Errorf("pod-2: %+v", v)
	}
	if len(in.Sessions) != 1 || in.Sessions[0].OpenURL != "https://pod-2.agentmux.example.com/?session="+in.Sessions[0].ID {
		t.Errorf("sessions %+v", in.Sessions)
	}

	d.set(name, "127.0.0.2")
	testutil.Eventually(t, waitTimeout, "a workspace removed from DNS to go", reachable(w2))
	d.set(name, "127.0.0.4")
	testutil.Eventually(t, waitTimeout, "a workspace replaced at a new address", reachable(w4))
	d.set(name)
	testutil.Eventually(t, waitTimeout, "no workspace once the name has none", reachable())

	// SRV records: each target and port a workspace.
	const srv = "_http._tcp.agentmux-workspaces.team.svc.cluster.local."
	d.set("pod-2.team.", "127.0.0.2")
	d.set("pod-3.team.", "127.0.0.3")
	d.setSRV(srv, dns.SRV{Target: "pod-2.team.", Port: uint16(port)}, dns.SRV{Target: "pod-3.team.", Port: uint16(port)})
	hs, err := hub.New(hub.Options{
		Discover: []hub.Discovery{{Name: srv}}, DiscoverTokenFile: tokenFile(t, "shared"),
		Every: 100 * time.Millisecond, Resolver: d.resolver(),
	})
	if err != nil {
		t.Fatal(err)
	}
	runHub(t, hs)
	testutil.Eventually(t, waitTimeout, "the SRV records' workspaces", func() bool {
		in := hs.Inbox()
		return len(in.Workspaces) == 2 && in.Workspaces[0].Reachable && in.Workspaces[1].Reachable
	})
}

func TestHubConfig(t *testing.T) {
	peers := writePeers(t, "http://10.0.0.5:8080 -")
	cfg, err := parseHubConfig([]string{"--peer", "http://a.example:8080/, https://b.example", "--discover", "dns:ws.team.svc:8080"}, envOf(map[string]string{
		"AGENTMUX_HUB_ADDR":                "0.0.0.0:9090",
		"AGENTMUX_HUB_PEER":                "http://ignored.example", // the flag wins
		"AGENTMUX_HUB_PEERS":               peers,
		"AGENTMUX_HUB_TOKEN":               "hubtok",
		"AGENTMUX_HUB_DISCOVER_EVERY":      "30s",
		"AGENTMUX_HUB_DISCOVER_TOKEN_FILE": "/run/secrets/workspaces",
		"AGENTMUX_TOKEN":                   "a workspace's, not the hub's",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "0.0.0.0:9090" || cfg.Token != "hubtok" || cfg.PeersFile != peers || cfg.Every != 30*time.Second ||
		len(cfg.Peers) != 2 || cfg.Peers[0].URL != "http://a.example:8080" || cfg.Peers[1].URL != "https://b.example" ||
		len(cfg.Discover) != 1 || cfg.Discover[0] != (hub.Discovery{Name: "ws.team.svc", Port: 8080}) || cfg.DiscoverTokenFile != "/run/secrets/workspaces" {
		t.Errorf("config %+v", cfg)
	}
	if cfg, err := parseHubConfig([]string{"--peer", "http://a:1"}, noEnv, io.Discard); err != nil || cfg.Addr != defaultHubAddr || cfg.Every != hub.DefaultEvery {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no workspaces"},
		{[]string{"--peer", "a.example:8080"}, "want http:// or https://"},
		{[]string{"--discover", "a.example:8080"}, "dns:NAME:PORT"},
		{[]string{"--peer", "http://a:1", "--discover-token-file", "/x"}, "without --discover"},
		{[]string{"--peer", "http://a:1", "--discover-every", "100ms"}, "at least 1s"},
		{[]string{"--peers", filepath.Join(t.TempDir(), "none")}, "peers file"},
		{[]string{"--peers", writePeers(t, "http://a:1")}, "want URL TOKEN-FILE"},
		{[]string{"--peer", "http://a:1", "--addr", "nowhere"}, "--addr"},
		{[]string{"--peer", "http://a:1", "--allowed-origins", "evil.example"}, "allowed-origins"},
		{[]string{"--peer", "http://a:1", "extra"}, "unexpected arguments"},
	} {
		if _, err := parseHubConfig(tc.args, noEnv, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.want)
		}
	}
	var help strings.Builder
	if _, err := parseHubConfig([]string{"--help"}, noEnv, &help); err == nil || !strings.Contains(help.String(), "--discover (AGENTMUX_HUB_DISCOVER)") {
		t.Errorf("--help: %v\n%s", err, help.String())
	}
}

// TestEveryHubRouteIsGuarded: as agentmux's own, every route of the hub
// is behind the one gate: from another site, any read of the API, any
// state change and the WebSocket are refused before their handler runs.
func TestEveryHubRouteIsGuarded(t *testing.T) {
	h, err := hub.New(hub.Options{Peers: []hub.Peer{{URL: "http://127.0.0.1:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := newHubRouter(hubConfig{}, h, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range e.Routes() {
		path := strings.ReplaceAll(r.Path, "*", "x")
		if r.Method == http.MethodOptions || (r.Method == http.MethodGet || r.Method == http.MethodHead) && path != "/ws" && !strings.HasPrefix(path, "/api/") {
			continue
		}
		req := httptest.NewRequest(r.Method, "http://127.0.0.1:8090"+path, strings.NewReader(`{"workspace":"http://127.0.0.1:1","sessionId":"s","answer":"allow"}`))
		req.Header.Set("Origin", "http://evil.test")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s %s from another site: %d %s, want 403", r.Method, r.Path, rec.Code, rec.Body)
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d routes checked", checked)
	}
}

// TestAnswerAPI: what a workspace's answer route refuses, and says why,
// before it types anything; and a reply it takes.
func TestAnswerAPI(t *testing.T) {
	e := newAPI(t, "--question-quiet", "200ms")
	s := e.createCommand([]string{"sh", "-c", asks})
	testutil.Eventually(t, waitTimeout, "the session to wait", func() bool { return e.get(s.ID).Status == "waiting" })
	if v := e.get(s.ID); !strings.Contains(v.Reason, "Proceed with the migration?") || v.WaitingSince == nil {
		t.Errorf("a waiting session's JSON: reason %q, waitingSince %v", v.Reason, v.WaitingSince)
	}
	path := "/api/sessions/" + s.ID + "/answer"
	for _, tc := range []struct {
		body   string
		status int
		code   string
		says   string
	}{
		{`{}`, 400, wire.CodeInvalidMessage, `give "allow", "deny"`},
		{`{"answer":"maybe"}`, 400, wire.CodeInvalidMessage, `"maybe" is neither`},
		{`{"answer":42}`, 400, wire.CodeInvalidMessage, `give "allow", "deny"`},
		{`{"answer":{"text":""}}`, 400, wire.CodeInvalidMessage, "needs its text"},
		{`{"answer":{"text":"yes\nrm -rf ~"}}`, 400, wire.CodeInvalidMessage, "one line"},
		{`{"answer":{"text":"ok"},"by":"eve\u202e"}`, 400, wire.CodeInvalidMessage, "by:"},
		{`{"answer":"allow"}`, 400, wire.CodeInvalidMessage, "names the permission request"},
		{`{"answer":"allow","permission":{"tool":"Write","summary":"x"}}`, 409, wire.CodeNotWaiting, "does not wait at the permission request for Write"},
		{`{"answer":{"text":"ok"},"extra":1}`, 400, wire.CodeInvalidMessage, "extra"},
	} {
		resp, b := e.do(http.MethodPost, path, tc.body)
		var eb wire.ErrorBody
		_ = json.Unmarshal(b, &eb)
		if resp.StatusCode != tc.status || eb.Error.Code != tc.code || !strings.Contains(eb.Error.Message, tc.says) {
			t.Errorf("%s: %d %s, want %d %s saying %q", tc.body, resp.StatusCode, b, tc.status, tc.code, tc.says)
		}
	}
	if v := e.get(s.ID); v.Status != "waiting" {
		t.Fatalf("after the refusals the session is %s, want still waiting", v.Status)
	}
	if resp, b := e.do(http.MethodPost, "/api/sessions/nope/answer", `{"answer":"deny"}`); resp.StatusCode != 404 {
		t.Errorf("an unknown session: %d %s", resp.StatusCode, b)
	}
	if resp, b := e.do(http.MethodPost, path, `{"answer":{"text":"sure"}}`); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a reply: %d %s", resp.StatusCode, b)
	}
	testutil.Eventually(t, waitTimeout, "the reply typed and submitted", func() bool {
		b, _ := os.ReadFile(filepath.Join(s.Cwd, "answer.txt"))
		return string(b) == "got:sure"
	})
}

// TestHubSignIn: the hub's token signs a browser in with a cookie of the
// hub's own, so signing in to a hub beside a workspace on the same host
// does not sign the browser out of the workspace.
func TestHubSignIn(t *testing.T) {
	h := startHub(t, "--peer", "http://127.0.0.1:1", "--token", "hub-secret")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get("http://" + h.addr + "/?token=hub-secret")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(cookies) != 1 || cookies[0].Name != "agentmux_hub_token" {
		t.Fatalf("sign-in: %d, cookies %v; want a redirect setting agentmux_hub_token", resp.StatusCode, cookies)
	}
	for name, want := range map[string]int{"agentmux_hub_token": http.StatusOK, "agentmux_token": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+h.addr+"/api/inbox", nil)
		req.AddCookie(&http.Cookie{Name: name, Value: "hub-secret"})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("the inbox with the token in %s: %d, want %d", name, resp.StatusCode, want)
		}
	}
}

// TestHubShowsBranchAndChanges: a worktree session's branch and the lines
// its agent changed reach the inbox, from the session and its diffs.
func TestHubShowsBranchAndChanges(t *testing.T) {
	apitest.SkipWithoutGit(t)
	w := newWorkspace(t, "", "repo")
	apitest.InitRepo(t, w.dir)
	w.start(t, "127.0.0.1:0")
	id := w.createWith(t, map[string]any{
		"name":     "feature",
		"command":  []string{"sh", "-c", `printf 'one\ntwo\nthree\n' > notes.txt; sed -i 1d README.md; sleep 600`},
		"worktree": map[string]string{"branch": "feature/hub"},
	})
	h := startHub(t, "--peer", w.url())
	testutil.Eventually(t, waitTimeout, "the branch and the changes in the inbox", func() bool {
		in := h.inbox(t)
		return len(in.Sessions) == 1 && in.Sessions[0].ID == id && in.Sessions[0].Branch == "feature/hub" &&
			in.Sessions[0].Additions == 3 && in.Sessions[0].Deletions == 1
	})
}
