package hub

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestReadPeers(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		name := filepath.Join(dir, "peers")
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return name
	}
	peers, err := ReadPeers(write(`# the team
http://10.0.0.5:8080/ /run/secrets/alice https://alice.example.com/

  https://bob.example.com/proxy/8080 -
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Peer{
		{URL: "http://10.0.0.5:8080", TokenFile: "/run/secrets/alice", OpenURL: "https://alice.example.com/"},
		{URL: "https://bob.example.com/proxy/8080"},
	}
	if len(peers) != len(want) || peers[0] != want[0] || peers[1] != want[1] {
		t.Errorf("peers %+v\nwant %+v", peers, want)
	}
	if got := peers[1].openURL("bob"); got != "https://bob.example.com/proxy/8080/" {
		t.Errorf("bob's UI at %q", got)
	}
	for text, wantErr := range map[string]string{
		"http://a:1\n":                       "peers:1: want URL TOKEN-FILE [OPEN-URL], got 1 fields",
		"ftp://a:1 -\n":                      "want http:// or https://",
		"http://a:1 - x y\n":                 "got 4 fields",
		"http://a:1 -\n# two\nhttp://a:1/ -": "peers:3: http://a:1 is on line 1 already",
		"http://a:1?x=1 -\n":                 "scheme, host, port and path only",
		"http://a:1 - mailto:me\n":           "the UI's workspace address",
	} {
		if _, err := ReadPeers(write(text)); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want one saying %q", text, err, wantErr)
		}
	}
	if _, err := ReadPeers(filepath.Join(dir, "none")); err == nil {
		t.Error("a missing file: no error")
	}
}

func TestParseDiscovery(t *testing.T) {
	for in, want := range map[string]Discovery{
		"dns:agentmux-workspaces:8080":                      {Name: "agentmux-workspaces", Port: 8080},
		"dns:_http._tcp.agentmux-workspaces.team.svc":       {Name: "_http._tcp.agentmux-workspaces.team.svc"},
		"dns:agentmux-workspaces.team.svc.cluster.local:80": {Name: "agentmux-workspaces.team.svc.cluster.local", Port: 80},
	} {
		got, err := ParseDiscovery(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", in, got, err, want)
		}
		if got.String() != in {
			t.Errorf("%s reads back as %s", in, got)
		}
	}
	for _, in := range []string{"agentmux:8080", "dns:agentmux", "dns:agentmux:0", "dns:agentmux:http", "dns::8080", "dns:_http._tcp.x:80"} {
		if _, err := ParseDiscovery(in); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestSessionURL(t *testing.T) {
	for open, want := range map[string]string{
		"http://10.0.0.5:8080/":            "http://10.0.0.5:8080/?session=a%2Fb",
		"https://proxy.example/ws?x=1&y=2": "https://proxy.example/ws?x=1&y=2&session=a%2Fb",
	} {
		if got := sessionURL(open, "a/b"); got != want {
			t.Errorf("sessionURL(%s) = %s, want %s", open, got, want)
		}
	}
}

func TestSortSessions(t *testing.T) {
	at := func(min int) time.Time { return time.Date(2026, 11, 30, 2, min, 0, 0, time.UTC) }
	since := func(min int) *time.Time { t := at(min); return &t }
	list := []SessionView{
		{ID: "busy-old", LastActivityAt: at(1)},
		{ID: "waits-newer", NeedsInput: true, WaitingSince: since(20), LastActivityAt: at(20)},
		{ID: "busy-new", LastActivityAt: at(30)},
		{ID: "waits-longest", NeedsInput: true, WaitingSince: since(5), LastActivityAt: at(25)},
		{ID: "waits-unsaid", NeedsInput: true, LastActivityAt: at(10)},
	}
	sortSessions(list)
	var got []string
	for _, s := range list {
		got = append(got, s.ID)
	}
	want := "waits-longest waits-unsaid waits-newer busy-new busy-old"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

// TestPages: a page gets the inbox at once and again at each change, a
// page of another origin is refused, and every page is closed as the hub
// stops, before Run returns.
func TestPages(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		h.Run(ctx)
	}()
	srv := httptest.NewServer(h.Pages(&sameorigin.Policy{}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")

	if _, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {"http://evil.example"}}); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign page: %v %v, want 403", err, resp)
	}
	conn, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() (msg struct {
		Type string `json:"type"`
		Inbox
	}) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if err := conn.ReadJSON(&msg); err != nil {
			t.Fatal(err)
		}
		return msg
	}
	if m := read(); m.Type != "inbox" || len(m.Workspaces) != 0 || m.Sessions == nil {
		t.Errorf("first message %+v", m)
	}
	// A browser takes the inbox compressed.
	deflate := websocket.Dialer{EnableCompression: true}
	zconn, resp, err := deflate.Dial(url, http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	var zm struct {
		Type string `json:"type"`
	}
	if err := zconn.ReadJSON(&zm); err != nil || zm.Type != "inbox" || !strings.Contains(resp.Header.Get("Sec-Websocket-Extensions"), "permessage-deflate") {
		t.Errorf("compressed: %+v, %v, extensions %q", zm, err, resp.Header.Get("Sec-Websocket-Extensions"))
	}
	zconn.Close()

	// A workspace reached with a waiting session: the page is told.
	w := &workspace{peer: Peer{URL: "http://10.0.0.5:8080"}, sessions: map[string]*remote{}}
	h.mu.Lock()
	h.workspaces[w.peer.URL] = w
	h.mu.Unlock()
	h.reached(w, "alice", []wire.Session{{ID: "s1", Name: "plan", Status: "waiting", Reason: "the agent asks: Go on?"}})
	m := read()
	if len(m.Workspaces) != 1 || m.Workspaces[0].Name != "alice" || !m.Workspaces[0].Reachable ||
		len(m.Sessions) != 1 || !m.Sessions[0].NeedsInput || m.Sessions[0].OpenURL != "http://10.0.0.5:8080/?session=s1" {
		t.Errorf("after the workspace was reached: %+v", m)
	}
	// Its events move the session, and the page sees them: in one
	// message unless the machine held the second event back past the
	// coalescing, so the test reads until both show, within a bound.
	h.apply(w, []byte(`{"type":"session.status","sessionId":"s1","status":"active","running":true}`))
	h.apply(w, []byte(`{"type":"session.diff","sessionId":"s1","additions":12,"deletions":3}`))
	for i := 0; ; i++ {
		m := read()
		if len(m.Sessions) == 1 && !m.Sessions[0].NeedsInput && m.Sessions[0].Additions == 12 && m.Sessions[0].Deletions == 3 {
			break
		}
		if i == 1 {
			t.Fatalf("after a status and a diff: %+v", m.Sessions)
		}
	}
	// A listing brings a later last activity, which events do not carry;
	// an earlier one changes nothing.
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	h.active(w, []wire.Session{{ID: "s1", LastActivityAt: later}, {ID: "unknown", LastActivityAt: later}})
	if m := read(); len(m.Sessions) != 1 || !m.Sessions[0].LastActivityAt.Equal(later) {
		t.Errorf("after a listing: %+v", m.Sessions)
	}
	h.active(w, []wire.Session{{ID: "s1", LastActivityAt: later.Add(-time.Minute)}})
	if in := h.Inbox(); !in.Sessions[0].LastActivityAt.Equal(later) {
		t.Errorf("an older listing moved the last activity back to %v", in.Sessions[0].LastActivityAt)
	}
	h.mu.Lock()
	delete(h.workspaces, w.peer.URL) // not Run's: it has no goroutine to stop
	h.mu.Unlock()

	cancel()
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return with a page open")
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Errorf("the page's end: %v, want a close saying the hub stops", err)
			}
			break
		}
	}
}

// TestAnswerRefusals: what the answer API refuses before asking any
// workspace.
func TestAnswerRefusals(t *testing.T) {
	h, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := newEcho(h)
	for body, want := range map[string]int{
		`not json`: http.StatusBadRequest,
		`{"workspace":"http://x:1","sessionId":"s","answer":"allow","extra":1}`:       http.StatusBadRequest,
		`{"workspace":"http://x:1","sessionId":"s","answer":"allow"}`:                 http.StatusNotFound,
		`{"workspace":"http://x:1","sessionId":"s","answer":"allow","by":"a\u202eb"}`: http.StatusBadRequest,
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/api/inbox/answer", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		e.ServeHTTP(rec, req)
		var eb wire.ErrorBody
		if rec.Code != want || json.Unmarshal(rec.Body.Bytes(), &eb) != nil || eb.Error.Message == "" {
			t.Errorf("%s: %d %s, want %d with a message", body, rec.Code, rec.Body, want)
		}
	}
}

func newEcho(h *Hub) *echo.Echo {
	e := echo.New()
	h.Register(e.Group("/api"))
	return e
}
