package apitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/sessions"
)

// DialWS opens a WebSocket; the connection is closed when the test ends.
// It returns the handshake's HTTP status, also on failure.
func DialWS(t testing.TB, url string, header http.Header) (*websocket.Conn, int, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: Timeout}
	conn, resp, err := d.Dial(url, header)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		if resp.Body != nil {
			resp.Body.Close()
		}
	}
	if err != nil {
		return nil, status, err
	}
	t.Cleanup(func() { conn.Close() })
	return conn, status, nil
}

// Msg is any server message, with the fields these tests look at.
type Msg struct {
	Type          string `json:"type"`
	SessionID     string `json:"sessionId"`
	Status        string `json:"status"`
	Reason        string `json:"reason"`
	Message       string `json:"message"`
	Code          string `json:"code"`
	GracePeriodMs *int64 `json:"gracePeriodMs"`
	// Permission is session.status's and session.needsInput's.
	Permission *sessions.Permission `json:"permission"`
	// Timestamp is a number in heartbeats and a string in file.changed.
	Timestamp json.RawMessage `json:"timestamp"`
}

// ReadWS reads the next message within Timeout.
func ReadWS(conn *websocket.Conn) (Msg, []byte, error) {
	_ = conn.SetReadDeadline(time.Now().Add(Timeout))
	_, b, err := conn.ReadMessage()
	if err != nil {
		return Msg{}, nil, err
	}
	var m Msg
	if err := json.Unmarshal(b, &m); err != nil {
		return Msg{}, b, fmt.Errorf("decode %q: %w", b, err)
	}
	return m, b, nil
}

// ExpectWS reads until a message of type typ arrives, skipping others.
func ExpectWS(t testing.TB, conn *websocket.Conn, typ string) Msg {
	t.Helper()
	for {
		m, _, err := ReadWS(conn)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m.Type == typ {
			return m
		}
	}
}

// Event is a server message with the fields of the workspace and
// resource messages; Raw is the whole frame.
type Event struct {
	Type      string `json:"type"`
	Path      string `json:"path"`
	Event     string `json:"event"`
	Timestamp string `json:"timestamp"`
	Mode      string `json:"mode"`
	Trigger   string `json:"trigger"`
	Level     string `json:"level"`
	Code      string `json:"code"`
	SessionID string `json:"sessionId"`
	Raw       []byte `json:"-"`
}

// String is the whole frame, for failure messages.
func (ev Event) String() string { return string(ev.Raw) }

// ReadEvent reads the next message other than a heartbeat (whose
// numeric timestamp does not fit Event), until deadline.
func ReadEvent(conn *websocket.Conn, deadline time.Time) (Event, error) {
	for {
		_ = conn.SetReadDeadline(deadline)
		_, b, err := conn.ReadMessage()
		if err != nil {
			return Event{}, err
		}
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return Event{}, fmt.Errorf("decode %q: %w", b, err)
		}
		if head.Type == "heartbeat" {
			continue
		}
		var ev Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return Event{}, fmt.Errorf("decode %q: %w", b, err)
		}
		ev.Raw = b
		return ev, nil
	}
}

// CollectUntil reads messages until one satisfies stop, within Timeout,
// and returns all it read, the stopping one last.
func CollectUntil(t testing.TB, conn *websocket.Conn, what string, stop func(Event) bool) []Event {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	var got []Event
	for {
		ev, err := ReadEvent(conn, deadline)
		if err != nil {
			t.Fatalf("waiting for %s: %v; read before:\n%s", what, err, EventLines(got))
		}
		got = append(got, ev)
		if stop(ev) {
			return got
		}
	}
}

// CollectWithin is CollectUntil with its own bound, for waits whose
// failure is expected to be a bug's hang rather than a slow machine.
func CollectWithin(t testing.TB, conn *websocket.Conn, within time.Duration, what string, stop func(Event) bool) ([]Event, bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got []Event
	for {
		ev, err := ReadEvent(conn, deadline)
		if err != nil {
			t.Errorf("waiting for %s: %v; read before:\n%s", what, err, EventLines(got))
			return got, false
		}
		got = append(got, ev)
		if stop(ev) {
			return got, true
		}
	}
}

// EventLines shows events one a line, for a failure's message.
func EventLines(evs []Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "  %s\n", ev.Raw)
	}
	return b.String()
}

// RoundTrip sends a heartbeat and waits for its reply, which proves the
// hub has the connection.
func RoundTrip(t testing.TB, conn *websocket.Conn) {
	t.Helper()
	if err := conn.WriteJSON(map[string]any{"type": "heartbeat", "timestamp": 42}); err != nil {
		t.Fatalf("send heartbeat: %v", err)
	}
	if m := ExpectWS(t, conn, "heartbeat"); len(m.Timestamp) == 0 || string(m.Timestamp) == "0" {
		t.Errorf("heartbeat reply without timestamp: %+v", m)
	}
}

// OpenWS waits for ready, the workspace watcher's initial scan (a file
// written before it would be taken as already there, not added), and
// opens a WebSocket on the server at base (http://...), registered with
// the hub once it returns.
func OpenWS(t testing.TB, base string, ready <-chan struct{}) *websocket.Conn {
	t.Helper()
	select {
	case <-ready:
	case <-time.After(Timeout):
		t.Fatalf("the workspace watcher was not ready within %v", Timeout)
	}
	conn, _, err := DialWS(t, "ws"+strings.TrimPrefix(base, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	RoundTrip(t, conn)
	return conn
}
