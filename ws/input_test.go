package ws_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/ws"
)

// TestBadInputGetsAnErrorAndNothingBreaks sends every kind of bad message on
// one connection. Each must get an error with the right code, and then the
// same connection, the session and another client must all still work.
func TestBadInputGetsAnErrorAndNothingBreaks(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty -echo; while read line; do echo "got $line"; done`)
	sid := s.ID()
	bystander := e.dial(nil)
	bystander.attach(sid, nil)
	c := e.dial(nil)
	c.attach(sid, nil)

	cases := []struct {
		name, frame, code, sessionID, mention string
	}{
		{"malformed JSON", `{"type":"terminal.input",`, wire.CodeInvalidMessage, "", "malformed JSON"},
		{"not an object", `[1,2,3]`, wire.CodeInvalidMessage, "", "malformed JSON"},
		{"no type", `{"sessionId":"` + sid + `"}`, wire.CodeInvalidMessage, sid, `"type"`},
		{"unknown type", `{"type":"terminal.explode","sessionId":"` + sid + `"}`, wire.CodeInvalidMessage, sid, "terminal.explode"},
		{"missing sessionId", `{"type":"terminal.input","data":"x"}`, wire.CodeInvalidMessage, "", "sessionId"},
		{"missing data", `{"type":"terminal.input","sessionId":"` + sid + `"}`, wire.CodeInvalidMessage, sid, "data"},
		{"missing rows", `{"type":"terminal.resize","sessionId":"` + sid + `","cols":80}`, wire.CodeInvalidMessage, sid, "rows"},
		{"sessionId a number", `{"type":"session.attach","sessionId":5}`, wire.CodeInvalidMessage, "", "sessionId"},
		{"data a number", `{"type":"terminal.input","sessionId":"` + sid + `","data":7}`, wire.CodeInvalidMessage, sid, "data"},
		{"cols a string", `{"type":"terminal.resize","sessionId":"` + sid + `","cols":"80","rows":24}`, wire.CodeInvalidMessage, sid, "cols"},
		{"cols a fraction", `{"type":"terminal.resize","sessionId":"` + sid + `","cols":80.5,"rows":24}`, wire.CodeInvalidMessage, sid, "cols"},
		{"since negative", `{"type":"session.attach","sessionId":"` + sid + `","since":-1}`, wire.CodeInvalidMessage, sid, "since"},
		{"timestamp a string", `{"type":"heartbeat","timestamp":"now"}`, wire.CodeInvalidMessage, "", "timestamp"},
		{"resize too small", `{"type":"terminal.resize","sessionId":"` + sid + `","cols":0,"rows":24}`, wire.CodeInvalidMessage, sid, "1..1000"},
		{"resize too large", `{"type":"terminal.resize","sessionId":"` + sid + `","cols":80,"rows":1001}`, wire.CodeInvalidMessage, sid, "1..1000"},
		{"unknown session input", `{"type":"terminal.input","sessionId":"no-such-session","data":"x"}`, wire.CodeSessionNotFound, "no-such-session", "not found"},
		{"unknown session attach", `{"type":"session.attach","sessionId":"no-such-session"}`, wire.CodeSessionNotFound, "no-such-session", "not found"},
		{"unknown session resume", `{"type":"session.resume","sessionId":"no-such-session"}`, wire.CodeSessionNotFound, "no-such-session", "not found"},
		{"resume a running session", `{"type":"session.resume","sessionId":"` + sid + `"}`, wire.CodeInvalidMessage, sid, "already running"},
	}
	for _, tc := range cases {
		c.sendRaw(tc.frame)
		m := c.expect(wire.TypeError, "")
		if m.Code != tc.code || m.SessionID != tc.sessionID || !strings.Contains(m.Message, tc.mention) {
			t.Errorf("%s: error = {code %s, sessionId %q, message %q}, want code %s, sessionId %q, message mentioning %q",
				tc.name, m.Code, m.SessionID, m.Message, tc.code, tc.sessionID, tc.mention)
		}
	}
	if info := s.Info(); info.Cols != 80 || info.Rows != 24 {
		t.Fatalf("a refused resize changed the size to %dx%d", info.Cols, info.Rows)
	}
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if m := c.expect(wire.TypeError, ""); m.Code != wire.CodeInvalidMessage || !strings.Contains(m.Message, "binary") {
		t.Fatalf("binary frame: %+v", m)
	}

	// Everything still works: this connection, the session, the other
	// client.
	c.send(input(sid, "still here\n"))
	var sc, sb stream
	c.readUntil(sid, &sc, contains("got still here"))
	bystander.readUntil(sid, &sb, contains("got still here"))
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty -echo; while read line; do echo "got $line"; done`)
	other := e.dial(nil)
	other.attach(s.ID(), nil)

	big := e.dial(nil)
	huge := `{"type":"terminal.input","sessionId":"` + s.ID() + `","data":"` + strings.Repeat("x", ws.ReadLimit) + `"}`
	big.sendRaw(huge)
	big.expectClose("after an oversized frame", websocket.CloseMessageTooBig)
	if got := s.StreamState().End; got != 0 {
		// Nothing of the oversized input reached the program.
		t.Fatalf("program produced %d bytes from a refused frame", got)
	}
	other.send(input(s.ID(), "after\n"))
	var st stream
	other.readUntil(s.ID(), &st, contains("got after"))
	// A frame just under the limit is fine.
	ok := e.dial(nil)
	frame := `{"type":"heartbeat","timestamp":7,"padding":"` + strings.Repeat("y", ws.ReadLimit-100) + `"}`
	ok.sendRaw(frame)
	if m := ok.expect(wire.TypeHeartbeat, ""); m.Echo == nil || *m.Echo != 7 {
		t.Fatalf("reply to a large frame = %+v", m)
	}
}

func TestHeartbeatReplyEchoesTheClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	before := time.Now().UnixMilli()
	c.send(map[string]any{"type": "heartbeat", "timestamp": 12345.5})
	m := c.expect(wire.TypeHeartbeat, "")
	if m.Echo == nil || *m.Echo != 12345.5 {
		t.Fatalf("heartbeat echo = %v, want 12345.5", m.Echo)
	}
	if m.millis() < before || m.millis() > time.Now().UnixMilli() {
		t.Fatalf("heartbeat timestamp %d is not the server's clock", m.millis())
	}
}

func TestServerHeartbeatsAndDropsADeadPeer(t *testing.T) {
	e := newEnv(t, envOptions{pingInterval: 100 * time.Millisecond})
	live := e.dial(nil)
	// The live client keeps reading, so gorilla answers the server's pings;
	// it counts the server's heartbeat messages.
	heartbeats := make(chan msg, 100)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			var m msg
			if err := live.conn.ReadJSON(&m); err != nil {
				return
			}
			if m.Type == wire.TypeHeartbeat {
				select {
				case heartbeats <- m:
				default:
				}
			}
		}
	}()
	// A peer that never reads never answers a ping: it is dropped after
	// two intervals without a sign of life, while the live one stays.
	e.dial(nil)
	testutil.Eventually(t, waitTimeout, "the dead peer to be dropped", func() bool { return e.hub.Connections() == 1 })
	select {
	case m := <-heartbeats:
		if m.Echo != nil || m.millis() == 0 {
			t.Fatalf("server heartbeat = %+v", m)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no heartbeat from the server")
	}
	select {
	case <-readerDone:
		t.Fatal("the live client was dropped")
	default:
	}
	live.conn.Close()
	<-readerDone
}

func TestOriginCheck(t *testing.T) {
	e := newEnv(t, envOptions{origins: []string{"https://allowed.example"}})
	host := strings.TrimPrefix(e.srv.URL, "http://")
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, // not a browser
		{"http://" + host, true},
		{"https://allowed.example", true},
		{"https://evil.example", false},
		{"null", false},
		{"http://" + host + ".evil.example", false},
		{"https://" + host, false},        // the scheme counts
		{"http://allowed.example", false}, // not the trusted scheme
		{"https://ALLOWED.example", true},
		{"HTTPS://allowed.example:443", true},
	} {
		h := http.Header{}
		if tc.origin != "" {
			h.Set("Origin", tc.origin)
		}
		_, err := e.tryDial(h, nil)
		var de *dialError
		switch {
		case tc.ok && err != nil:
			t.Errorf("origin %q refused: %v", tc.origin, err)
		case !tc.ok && (err == nil || !errors.As(err, &de) || de.status != http.StatusForbidden):
			t.Errorf("origin %q: err %v, want 403", tc.origin, err)
		}
	}
}

// TestCloseAfterItsDeadlineStillSaysGoingAway: a shutdown whose earlier
// steps used up the connections' time still lets each writer send its
// 1001 before the sockets are dropped; a client should learn the server
// is going away, not see an abnormal closure.
func TestCloseAfterItsDeadlineStillSaysGoingAway(t *testing.T) {
	e := newEnv(t, envOptions{})
	clients := []*client{e.dial(nil), e.dial(nil), e.dial(nil)}
	for _, c := range clients {
		c.sync()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
		for {
			if _, _, err := c.conn.ReadMessage(); err != nil {
				if !isCloseCode(err, websocket.CloseGoingAway) {
					t.Errorf("client %d: close = %v, want 1001", i, err)
				}
				break
			}
		}
	}
}

func TestShutdownAnnouncesAndClosesWithGoingAway(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	c.sync()

	e.hub.Announce(1500 * time.Millisecond)
	m := c.expect(wire.TypeServerShutdown, "")
	if m.GracePeriodMs != 1500 || !strings.Contains(m.Message, "2 seconds") {
		t.Fatalf("server.shutdown = %+v", m)
	}
	if _, err := e.tryDial(nil, nil); err == nil {
		t.Fatal("a new connection was accepted after the announcement")
	}
	// The agents stop, then the connections close: the client must still
	// learn how its session ended before the close frame.
	s := e.session("sleep", "60")
	ctx, cancel := contextWithDeadline()
	defer cancel()
	if err := e.mgr.Shutdown(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.hub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var st stream
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		var m msg
		if err := c.conn.ReadJSON(&m); err != nil {
			if !isCloseCode(err, websocket.CloseGoingAway) {
				t.Fatalf("close = %v, want 1001", err)
			}
			break
		}
		st.apply(m, s.ID())
	}
	if !slices.Equal(st.statuses, []string{"stopped"}) {
		t.Fatalf("statuses before the close = %q, want [stopped]", st.statuses)
	}
}

func TestAFloodOfFileEventsDoesNotDropAClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	c.sync()
	// A checkout of thousands of files, faster than any client reads.
	for i := range 5000 {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/f%d", i), Rel: fmt.Sprintf("f%d", i), Op: watcher.FileAdded, Time: time.Now()})
	}
	// A lifecycle event still gets through, and the client is still there.
	s := e.session("sh", "-c", "exit 0")
	if m := c.expect(wire.TypeSessionCreated, ""); m.Session == nil || m.Session.ID != s.ID() {
		t.Fatalf("session.created = %+v", m)
	}
	if e.hub.Connections() != 1 {
		t.Fatal("the client was dropped")
	}
}

// TestFragmentedOversizedMessage: the 1 MiB limit is on the message, so
// splitting one into many small frames does not get around it.
func TestFragmentedOversizedMessage(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty -echo; while read line; do echo "got $line"; done`)
	c, err := e.tryDial(nil, &websocket.Dialer{WriteBufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.conn.NextWriter(websocket.TextMessage)
	if err != nil {
		t.Fatal(err)
	}
	// Written in 4 KiB frames: each one small, together over the limit.
	_, _ = io.WriteString(w, `{"type":"terminal.input","sessionId":"`+s.ID()+`","data":"`)
	chunk := strings.Repeat("x", 4000)
	for sent := 0; sent <= ws.ReadLimit; sent += len(chunk) {
		if _, err := io.WriteString(w, chunk); err != nil {
			break // the server closed on us: what we want
		}
	}
	_, _ = io.WriteString(w, `"}`)
	_ = w.Close()
	c.expectClose("after a fragmented oversized message", websocket.CloseMessageTooBig)
	if got := s.StreamState().End; got != 0 {
		t.Fatalf("program produced %d bytes from a refused message", got)
	}
}
