package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/ws"
)

// viewerMsg is any message a viewer is sent, with the fields these tests
// look at.
type viewerMsg struct {
	Type         string             `json:"type"`
	SessionID    string             `json:"sessionId"`
	Code         string             `json:"code"`
	Data         string             `json:"data"`
	Participants []wire.Participant `json:"participants"`
	raw          []byte
}

// readUntil reads conn's messages until stop says so, within the test
// timeout, and returns all it read, the stopping one last.
func readUntil(t *testing.T, conn *websocket.Conn, what string, stop func(viewerMsg) bool) []viewerMsg {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	var got []viewerMsg
	for {
		_, b, err := conn.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for %s: %v (read: %s)", what, err, types(got))
		}
		var m viewerMsg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("decode %s: %v", b, err)
		}
		m.raw = b
		got = append(got, m)
		if stop(m) {
			return got
		}
	}
}

func types(ms []viewerMsg) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.Type)
	}
	return strings.Join(s, ",")
}

// outputOf is the terminal output among ms.
func outputOf(ms []viewerMsg) string {
	var b strings.Builder
	for _, m := range ms {
		if m.Type == wire.TypeTerminalOutput {
			b.WriteString(m.Data)
		}
	}
	return b.String()
}

// TestShareLinkGrantsWatchingOnly: with --token on, a read-only link's
// secret, and nothing else, lets a viewer watch its one session: the
// output with its scrollback, its status and its size. Everything else is
// refused server-side, whatever the viewer sends: every client message
// type (a table, which a type added later must join), another session,
// every API route, a preview. The people at the workspace see the viewer
// as such, and revoking the link or deleting the session closes it at
// once.
func TestShareLinkGrantsWatchingOnly(t *testing.T) {
	const token = "owner-s3cret"
	e := newAPI(t, "--token", token)
	e.token = token
	marker := filepath.Join(t.TempDir(), "typed")
	watched := e.createCommand([]string{"sh", "-c", fmt.Sprintf("echo before-the-link; stty -echo; exec cat > %s", marker)})
	other := e.createCommand([]string{"sh", "-c", "echo other-session-secret; exec sleep 60"})
	e.waitScreen(watched.ID, "before-the-link")
	size := e.get(watched.ID)

	link, secret := e.api().Share(watched.ID, `{"by":"alice"}`)
	if strings.Contains(secret, token) || len(secret) < 43 {
		t.Fatalf("secret %q: want 256 random bits, not the token", secret)
	}

	// The people at the workspace, with the token, watching the session.
	owner, _, err := apitest.DialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", http.Header{"Authorization": {"Bearer " + token}})
	if err != nil {
		t.Fatalf("the owner's WebSocket: %v", err)
	}
	if err := owner.WriteJSON(map[string]any{"type": "session.attach", "sessionId": watched.ID}); err != nil {
		t.Fatal(err)
	}

	viewer, welcome := apitest.DialViewer(t, e.ts.URL, secret)
	want := wire.ViewedSession{ID: watched.ID, Name: watched.Name, Agent: watched.Agent, Status: "active", Running: true, Cols: size.Cols, Rows: size.Rows}
	if welcome.Session != want || welcome.ShareID != link.ID || !welcome.Scrollback {
		t.Errorf("welcome %+v, want link %s with scrollback, session %+v", welcome, link.ID, want)
	}
	if err := viewer.WriteJSON(map[string]any{"type": "session.attach", "sessionId": watched.ID}); err != nil {
		t.Fatal(err)
	}
	got := readUntil(t, viewer, "the replay", func(m viewerMsg) bool {
		return m.Type == wire.TypeTerminalOutput && strings.Contains(m.Data, "before-the-link")
	})
	if got[0].Type != wire.TypeSessionAttached {
		t.Errorf("the viewer's attach was answered with %s first, want session.attached", got[0].raw)
	}
	readUntil(t, owner, "the viewer among the participants", func(m viewerMsg) bool {
		return m.Type == wire.TypeSessionParticipants && slices.ContainsFunc(m.Participants, func(p wire.Participant) bool {
			return p.Viewer && p.Name == "viewer"
		})
	})
	testutil.Eventually(t, waitTimeout, "the link to count its viewer", func() bool {
		l := e.api().Shares(watched.ID)
		return len(l) == 1 && l[0].Viewers == 1
	})

	// Every client message type a viewer could send: those a link grants,
	// and the rest, each refused.
	sid := watched.ID
	granted := []string{wire.TypeHeartbeat, wire.TypeSessionAttach, wire.TypeSessionDetach}
	refused := map[string]map[string]any{
		wire.TypeTerminalInput:     {"sessionId": sid, "data": "typed-by-the-viewer\r"},
		wire.TypeTerminalInterrupt: {"sessionId": sid},
		wire.TypeTerminalResize:    {"sessionId": sid, "cols": 40, "rows": 10, "take": true},
		wire.TypeTerminalAck:       {"sessionId": sid, "seq": 1, "pace": true},
		wire.TypeSessionResume:     {"sessionId": sid},
		wire.TypeClientHello:       {"name": "mallory", "viewing": sid},
		wire.TypePromptQueue:       {"sessionId": sid, "text": "queued-by-the-viewer"},
		wire.TypePromptDequeue:     {"sessionId": sid, "promptId": "p-1", "force": true},
		wire.TypeReviewComment:     {"sessionId": sid, "path": "a.txt", "line": 1, "text": "by the viewer"},
		wire.TypeReviewUncomment:   {"sessionId": sid, "commentId": "c-1"},
		wire.TypeReviewDiscard:     {"sessionId": sid},
		wire.TypeReviewSend:        {"sessionId": sid},
	}
	for typ := range wire.ClientFields {
		if _, ok := refused[typ]; !ok && !slices.Contains(granted, typ) {
			t.Errorf("client message %s is in neither table: say whether a read-only link grants it", typ)
		}
	}
	refuse := func(what string, msg map[string]any) {
		t.Helper()
		if err := viewer.WriteJSON(msg); err != nil {
			t.Fatal(err)
		}
		got := readUntil(t, viewer, what+"'s refusal", func(m viewerMsg) bool { return m.Type == wire.TypeError })
		if last := got[len(got)-1]; last.Code != wire.CodeReadOnly {
			t.Errorf("%s: answered %s, want READ_ONLY", what, last.raw)
		}
	}
	for typ, fields := range refused {
		fields["type"] = typ
		refuse(typ, fields)
	}
	refuse("attaching to another session", map[string]any{"type": "session.attach", "sessionId": other.ID})
	refuse("detaching from another session", map[string]any{"type": "session.detach", "sessionId": other.ID})

	// Nothing changed: no keys reached the program, the size is the
	// owner's, the session runs, the viewer's name stayed a viewer's.
	if b, err := os.ReadFile(marker); err != nil || len(b) != 0 {
		t.Errorf("the program read %q (%v) from the viewer, want nothing", b, err)
	}
	if s := e.get(watched.ID); s.Cols != size.Cols || s.Rows != size.Rows || !s.Running || s.Status != "active" {
		t.Errorf("after the viewer's requests the session is %dx%d, %s, running %v; want %dx%d, active, running",
			s.Cols, s.Rows, s.Status, s.Running, size.Cols, size.Rows)
	}

	// A session made now, and its output, are not the viewer's to see: a
	// heartbeat's answer comes after anything sent before it.
	third := e.createCommand([]string{"sh", "-c", "echo third-session-secret; exec sleep 60"})
	e.waitScreen(third.ID, "third-session-secret")
	if err := viewer.WriteJSON(map[string]any{"type": "heartbeat"}); err != nil {
		t.Fatal(err)
	}
	shown := []string{wire.TypeSessionAttached, wire.TypeTerminalOutput, wire.TypeTerminalExit, wire.TypeSessionStatus,
		wire.TypeSessionResized, wire.TypeSessionDestroyed, wire.TypeHeartbeat, wire.TypeError}
	for _, m := range readUntil(t, viewer, "the heartbeat's answer", func(m viewerMsg) bool { return m.Type == wire.TypeHeartbeat }) {
		if !slices.Contains(shown, m.Type) || m.SessionID != "" && m.SessionID != watched.ID || strings.Contains(string(m.raw), "secret") {
			t.Errorf("the viewer was sent %s", m.raw)
		}
	}

	// The secret opens no API route, however it is sent, and no preview.
	routes := 0
	for _, r := range e.srv.newRouter().Routes() {
		if !strings.HasPrefix(r.Path, "/api/") || r.Path == "/api/health" || r.Method == http.MethodOptions {
			continue
		}
		path := strings.NewReplacer(":id", watched.ID, ":share", link.ID, ":port", "1", ":cp", "1", "*", "x").Replace(r.Path)
		for _, how := range [][]string{
			{"Authorization", "Bearer " + secret},
			{"Cookie", "agentmux_token=" + secret},
			{"X-Share", "?share=" + secret},
		} {
			p := path
			if how[0] == "X-Share" {
				p += how[1]
			}
			req, err := http.NewRequest(r.Method, e.ts.URL+p, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if how[0] != "X-Share" {
				req.Header.Set(how[0], how[1])
			}
			resp, b := (&apitest.Client{T: t, URL: e.ts.URL, HTTP: e.client}).Send(req)
			if r.Method == http.MethodHead {
				wantStatus(t, r.Method+" "+r.Path, resp, b, http.StatusUnauthorized)
				continue
			}
			wantError(t, r.Method+" "+r.Path+" with the secret as "+how[0], resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
		}
		routes++
	}
	if routes < 20 {
		t.Fatalf("only %d API routes tried", routes)
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the-dev-server")) }))
	defer backend.Close()
	port := backend.Listener.Addr().(*net.TCPAddr).Port
	for _, header := range [][]string{{"Cookie", "agentmux_token=" + secret}, {"Authorization", "Bearer " + secret}} {
		req, _ := http.NewRequest(http.MethodGet, e.ts.URL+"/?share="+secret, nil)
		req.Host = fmt.Sprintf("%d.localhost", port)
		req.Header.Set(header[0], header[1])
		if resp, b := (&apitest.Client{T: t, URL: e.ts.URL, HTTP: e.client}).Send(req); strings.Contains(string(b), "the-dev-server") {
			t.Errorf("the secret as %s opened the preview of port %d: %d %s", header[0], port, resp.StatusCode, b)
		}
	}
	if e.srv.hub.Connections() != 2 {
		t.Errorf("%d WebSockets, want the owner's and the viewer's", e.srv.hub.Connections())
	}

	// Revoking closes the viewer at once; the secret opens nothing more.
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+watched.ID+"/shares/"+link.ID, "")
	wantStatus(t, "revoke", resp, b, http.StatusNoContent)
	expectCloseCode(t, viewer, "a revoked link's viewer", ws.CloseShareEnded, share.ReasonRevoked)
	if _, status, err := apitest.DialWS(t, apitest.ViewerURL(e.ts.URL, secret), nil); err == nil || status != http.StatusUnauthorized {
		t.Errorf("a revoked link: %v, HTTP %d, want 401", err, status)
	}
	readUntil(t, owner, "the viewer to leave the participants", func(m viewerMsg) bool {
		return m.Type == wire.TypeSessionParticipants && !slices.ContainsFunc(m.Participants, func(p wire.Participant) bool { return p.Viewer })
	})

	// Deleting the session tells its viewer, then closes it.
	_, secret = e.api().Share(other.ID, "")
	viewer, _ = apitest.DialViewer(t, e.ts.URL, secret)
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+other.ID, "")
	wantStatus(t, "delete the session", resp, b, http.StatusNoContent)
	readUntil(t, viewer, "session.destroyed", func(m viewerMsg) bool { return m.Type == wire.TypeSessionDestroyed && m.SessionID == other.ID })
	expectCloseCode(t, viewer, "a deleted session's viewer", ws.CloseShareEnded, share.ReasonDeleted)
}

// TestShareLinkWithoutScrollback: a link made without scrollback shows
// its viewer the session's screen and not what scrolled off it, whatever
// the viewer asks; one with scrollback shows it all.
func TestShareLinkWithoutScrollback(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand([]string{"sh", "-c", "i=1; while [ $i -le 300 ]; do printf 'line-%03d\\n' $i; i=$((i+1)); done; exec sleep 60"})
	e.waitScreen(s.ID, "line-300")
	for _, c := range []struct {
		scrollback bool
		body       string
	}{{false, `{"scrollback":false}`}, {true, `{"scrollback":true}`}} {
		_, secret := e.api().Share(s.ID, c.body)
		viewer, welcome := apitest.DialViewer(t, e.ts.URL, secret)
		if welcome.Scrollback != c.scrollback {
			t.Errorf("welcome says scrollback %v, want %v", welcome.Scrollback, c.scrollback)
		}
		since := 0
		if err := viewer.WriteJSON(map[string]any{"type": "session.attach", "sessionId": s.ID, "since": since, "lines": 10000}); err != nil {
			t.Fatal(err)
		}
		out := outputOf(readUntil(t, viewer, "line-300", func(m viewerMsg) bool {
			return m.Type == wire.TypeTerminalOutput && strings.Contains(m.Data, "line-300")
		}))
		if got := strings.Contains(out, "line-001"); got != c.scrollback {
			t.Errorf("scrollback %v: the replay holds line-001: %v, want %v", c.scrollback, got, c.scrollback)
		}
		viewer.Close()
	}
}

// TestViewersAreBounded: links handed around cannot take every WebSocket
// from the people at the workspace: at a quarter of the cap, a viewer
// more is refused with 503 while the owner still connects.
func TestViewersAreBounded(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand(sleeper())
	_, secret := e.api().Share(s.ID, "")
	for range maxWebSockets / 4 {
		apitest.DialViewer(t, e.ts.URL, secret)
	}
	_, status, err := apitest.DialWS(t, apitest.ViewerURL(e.ts.URL, secret), nil)
	if err == nil || status != http.StatusServiceUnavailable {
		t.Errorf("one viewer too many: %v, HTTP %d, want 503", err, status)
	}
	if _, _, err := apitest.DialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", nil); err != nil {
		t.Errorf("the owner, with every viewer's place taken: %v", err)
	}
	if l := e.api().Shares(s.ID); len(l) != 1 || l[0].Viewers != maxWebSockets/4 {
		t.Errorf("links %+v, want one with %d viewers", l, maxWebSockets/4)
	}
}
