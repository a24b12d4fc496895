package ws_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// noGrace makes every connection attached to nothing idle at once.
const noGrace = time.Nanosecond

// expectClosed reads c until the server closes it, and checks the close
// code and reason.
func (c *client) expectClosed(code int, reason string) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code || ce.Text != reason {
			c.t.Fatalf("connection ended with %v, want close %d %q", err, code, reason)
		}
		return
	}
}

// dialRefused dials and expects the upgrade to be refused with 503 and
// the JSON error TOO_MANY_CONNECTIONS.
func (e *env) dialRefused() {
	e.t.Helper()
	conn, resp, err := websocket.DefaultDialer.Dial(e.url, nil)
	if err == nil {
		conn.Close()
		e.t.Fatal("upgrade accepted, want 503")
	}
	if resp == nil {
		e.t.Fatalf("dial: %v, want a 503 answer", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body wire.ErrorBody
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Content-Type") != "application/json" ||
		json.Unmarshal(b, &body) != nil || body.Error.Code != wire.CodeTooManyConnections || body.Error.Message == "" {
		e.t.Fatalf("refused with %d %s %q, want 503 application/json with code %s",
			resp.StatusCode, resp.Header.Get("Content-Type"), b, wire.CodeTooManyConnections)
	}
}

// TestIdleConnectionMakesRoom: at the cap, a newcomer takes the place of
// the oldest connection attached to no session, which is told why; the
// attached connection, though older, and the other idle one stay. The cap
// is logged once however many newcomers it turns away.
func TestIdleConnectionMakesRoom(t *testing.T) {
	var log testutil.SyncBuffer
	e := newEnv(t, envOptions{maxConnections: 3, idleGrace: noGrace, log: &log})
	s := e.session("cat")
	attached := e.dial(nil)
	attached.attach(s.ID(), nil)
	attached.sync() // the hub knows it is attached once its next request is answered
	// sync: a connection is idle, and may make room, once registered.
	oldIdle, newIdle := e.dial(nil), e.dial(nil)
	oldIdle.sync()
	newIdle.sync()

	newcomer := e.dial(nil)
	oldIdle.expectClosed(websocket.CloseTryAgainLater, "try again later: too many idle connections")
	newcomer.attach(s.ID(), nil)
	newcomer.send(input(s.ID(), "hello\n"))
	newcomer.readUntil(s.ID(), &stream{}, contains("hello"))
	attached.sync()
	newIdle.sync()

	// Two more newcomers: each takes an idle place (newIdle's, then the
	// first of them); the episode is logged once.
	e.dial(nil).sync()
	newIdle.expectClosed(websocket.CloseTryAgainLater, "try again later: too many idle connections")
	e.dial(nil).sync()
	attached.sync()
	newcomer.sync()
	if n := strings.Count(log.String(), "WebSocket limit reached"); n != 1 {
		t.Errorf("%d log lines about the cap, want 1:\n%s", n, &log)
	}
}

// TestAttachedConnectionsAreNeverClosed: when every connection is attached
// to a session, a newcomer is refused with a JSON 503, and no attached
// connection is closed for it.
func TestAttachedConnectionsAreNeverClosed(t *testing.T) {
	e := newEnv(t, envOptions{maxConnections: 2, idleGrace: noGrace})
	s := e.session("cat")
	a, b := e.dial(nil), e.dial(nil)
	for _, c := range []*client{a, b} {
		c.attach(s.ID(), nil)
		c.sync()
	}
	e.dialRefused()
	e.dialRefused()
	a.send(input(s.ID(), "still here\n"))
	a.readUntil(s.ID(), &stream{}, contains("still here"))
	b.sync()
	if n := e.hub.Connections(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}

	// Once one detaches it is idle, and makes room.
	b.send(map[string]any{"type": wire.TypeSessionDetach, "sessionId": s.ID()})
	b.sync()
	e.dial(nil).sync()
	b.expectClosed(websocket.CloseTryAgainLater, "try again later: too many idle connections")
	a.sync()
}

// TestNewConnectionIsNotIdleYet: a connection that has only just opened
// keeps its place for IdleGrace, though attached to nothing, so a page
// that connected and is about to attach is not closed under it.
func TestNewConnectionIsNotIdleYet(t *testing.T) {
	e := newEnv(t, envOptions{maxConnections: 1, idleGrace: time.Hour})
	first := e.dial(nil)
	first.sync()
	e.dialRefused()
	first.sync()
}

// TestRefusedUpgradeMakesNoRoom: a request the hub refuses anyway, from a
// foreign page or not an upgrade at all, does not close an idle
// connection first.
func TestRefusedUpgradeMakesNoRoom(t *testing.T) {
	e := newEnv(t, envOptions{maxConnections: 1, idleGrace: noGrace})
	idle := e.dial(nil)
	idle.sync()
	if _, err := e.tryDial(http.Header{"Origin": {"http://evil.example"}}, nil); !isStatus(err, http.StatusForbidden) {
		t.Errorf("foreign origin: %v, want 403", err)
	}
	client := e.srv.Client() // closed with the server
	resp, err := client.Get(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("not an upgrade: %d, want 400", resp.StatusCode)
	}
	idle.sync()
	if n := e.hub.Connections(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

func isStatus(err error, status int) bool {
	var de *dialError
	return errors.As(err, &de) && de.status == status
}
