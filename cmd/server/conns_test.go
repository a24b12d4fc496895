package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/wire"
)

// answerTimeout bounds how long a request may wait while others hold
// connections: well under the 10 s header timeout (defaultLimits), which
// frees the slots of silent clients on its own, and far over what taking
// a slot from an idle connection costs.
const answerTimeout = 5 * time.Second

// idleCloseText is the reason a WebSocket closed for a newcomer is given.
const idleCloseText = "try again later: too many idle connections"

// shortenIdleGrace makes WebSockets attached to nothing idle as soon as
// they open, for the rest of the test. Call it before startRun, so the run
// has ended when it is undone.
func shortenIdleGrace(t *testing.T) {
	old := wsIdleGrace
	wsIdleGrace = time.Nanosecond
	t.Cleanup(func() { wsIdleGrace = old })
}

// openIdleWebSockets opens n WebSockets that attach to nothing and read
// nothing.
func openIdleWebSockets(t *testing.T, r *runner, n int, header http.Header) []*websocket.Conn {
	t.Helper()
	conns := make([]*websocket.Conn, 0, n)
	for i := range n {
		c, status, err := dialWS(t, "ws://"+r.addr+"/ws", header)
		if err != nil {
			t.Fatalf("idle WebSocket %d of %d: status %d, %v", i+1, n, status, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// openSilent opens n TCP connections to r that send nothing.
func openSilent(t *testing.T, r *runner, n int) {
	t.Helper()
	for i := range n {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatalf("silent connection %d of %d: %v", i+1, n, err)
		}
		t.Cleanup(func() { c.Close() })
	}
}

// expectCloseCode reads conn until it ends, and fails the test unless the
// server closed it with code and reason.
func expectCloseCode(t *testing.T, conn *websocket.Conn, what string, code int, reason string) {
	t.Helper()
	if got, text := apitest.ExpectClose(t, conn); got != code || text != reason {
		t.Fatalf("%s ended with close %d %q, want %d %q", what, got, text, code, reason)
	}
}

// expectHealthy asks for /api/health with a fresh connection and fails the
// test unless it answers 200 within answerTimeout.
func expectHealthy(t *testing.T, r *runner) {
	t.Helper()
	hc := newHTTPClient(t)
	hc.Timeout = answerTimeout
	resp, err := hc.Get(r.url("/api/health"))
	if err != nil {
		t.Fatalf("health while others hold connections: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %d, want 200", resp.StatusCode)
	}
}

// heartbeat makes a heartbeat round trip on conn.
func heartbeat(t *testing.T, conn *websocket.Conn, what string) {
	t.Helper()
	if err := conn.WriteJSON(map[string]any{"type": wire.TypeHeartbeat, "timestamp": 1}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for {
		_, b, err := readWS(conn)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var m struct {
			Type string   `json:"type"`
			Echo *float64 `json:"echo"`
		}
		if json.Unmarshal(b, &m) == nil && m.Type == wire.TypeHeartbeat && m.Echo != nil {
			return
		}
	}
}

// TestIdleWebSocketsDoNotLockOutOthers: the finding. One client opening
// as many idle WebSockets as the listener takes locked everyone out,
// /api/health included. Now WebSockets have a cap of their own, below the
// listener's, and at it a newcomer takes the place of the oldest idle one,
// which is closed with 1013: health answers, and a new client attaches.
func TestIdleWebSocketsDoNotLockOutOthers(t *testing.T) {
	shortenIdleGrace(t)
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	hc := newHTTPClient(t)
	sess := postSession(t, hc, r, sleeper())
	hc.CloseIdleConnections() // the idle WebSockets get the whole listener

	idle := openIdleWebSockets(t, r, maxConnections, nil)
	expectHealthy(t, r)
	expectCloseCode(t, idle[0], "the oldest idle WebSocket", websocket.CloseTryAgainLater, idleCloseText)
	conn := attachWS(t, r, sess.ID)
	heartbeat(t, conn, "the attached newcomer")
	if n := len(linesWith(r.log.String(), "level=WARN", "WebSocket limit reached")); n != 1 {
		t.Errorf("%d lines about the WebSocket cap, want 1", n)
	}
}

// TestSilentConnectionsDoNotLockOutHealth: connections that send nothing
// (http.StateNew) up to the listener's cap held every slot until the
// header timeout; now a newcomer takes the place of the oldest.
func TestSilentConnectionsDoNotLockOutHealth(t *testing.T) {
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	openSilent(t, r, maxConnections)
	expectHealthy(t, r)
}

// TestUnauthenticatedConnectionsDoNotLockOutTokenHolder: with --token,
// connections without it, silent ones and ones kept alive after a 401,
// filling the listener do not keep out a client that has the token, over
// HTTP or WebSocket.
func TestUnauthenticatedConnectionsDoNotLockOutTokenHolder(t *testing.T) {
	const token = "conns-test-token-0123456789"
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh", "--token", token)
	auth := http.Header{"Authorization": {"Bearer " + token}}
	hc := newHTTPClient(t)
	hc.Timeout = answerTimeout
	authed := func(method, path string, body []byte) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, r.url(path), bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = auth.Clone()
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s with the token while others hold connections: %v", method, path, err)
		}
		return resp
	}
	resp := authed(http.MethodPost, "/api/sessions", []byte(`{"command":["sh","-c","exec sleep 60"]}`))
	var created struct {
		Session wire.Session `json:"session"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create session: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	hc.CloseIdleConnections()

	// Half the listener: silent. The other half: a request without the
	// token each, answered 401 and kept alive.
	openSilent(t, r, maxConnections/2)
	for i := range maxConnections / 2 {
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if status, err := getOn(c, "/api/sessions"); err != nil || status != http.StatusUnauthorized {
			t.Fatalf("request %d without the token: %d %v, want 401", i+1, status, err)
		}
	}

	resp = authed(http.MethodGet, "/api/sessions", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("list sessions with the token: %d", resp.StatusCode)
	}
	d := websocket.Dialer{HandshakeTimeout: answerTimeout}
	conn, _, err := d.Dial("ws://"+r.addr+"/ws", auth)
	if err != nil {
		t.Fatalf("WebSocket with the token: %v", err)
	}
	defer conn.Close()
	if err := conn.WriteJSON(map[string]any{"type": wire.TypeSessionAttach, "sessionId": created.Session.ID}); err != nil {
		t.Fatal(err)
	}
	expectWS(t, conn, wire.TypeSessionAttached)
}

// TestAttachedWebSocketIsNotEvicted: newcomers take the places of idle
// WebSockets, never of one attached to a session, however old.
func TestAttachedWebSocketIsNotEvicted(t *testing.T) {
	shortenIdleGrace(t)
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	hc := newHTTPClient(t)
	sess := postSession(t, hc, r, sleeper())
	hc.CloseIdleConnections()

	attached := attachWS(t, r, sess.ID)
	heartbeat(t, attached, "the attached WebSocket") // the hub has noted the attach
	idle := openIdleWebSockets(t, r, maxWebSockets-1, nil)
	// As many newcomers again: every older idle one makes room.
	openIdleWebSockets(t, r, maxWebSockets, nil)
	for _, c := range idle {
		expectCloseCode(t, c, "an older idle WebSocket", websocket.CloseTryAgainLater, idleCloseText)
	}
	heartbeat(t, attached, "the attached WebSocket, after newcomers")
}
