package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

func TestMain(m *testing.M) {
	// Agents started by servers under test run this binary as their hook
	// command, as they run agentmux itself in production.
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		os.Exit(hookMain(os.Args[2:], os.Stdin, os.Getenv, os.Stderr))
	}
	// A session's dev server, for the preview tests (previews_test.go).
	if len(os.Args) > 1 && os.Args[1] == "serve-app" {
		serveApp(os.Args[2:])
	}
	// Thousands of listeners, for the ports tests (ports_test.go).
	if len(os.Args) > 2 && os.Args[1] == "hold-ports" {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			os.Exit(2)
		}
		testutil.HoldListeners(n)
	}
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait in these tests; generous, for -race on a
// busy two-core machine.
const waitTimeout = 20 * time.Second

// linesWith returns the lines of s that contain every one of subs.
func linesWith(s string, subs ...string) []string {
	var out []string
	for line := range strings.Lines(s) {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(line, sub)
		}
		if ok {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}

func noEnv(string) string { return "" }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The sessions' commands and the wait for a process to end are apitest's,
// which httpapi's tests share.
var (
	processGone = apitest.ProcessGone
	waitGone    = apitest.WaitGone
	sleeper     = apitest.Sleeper
	pidSleeper  = apitest.PIDSleeper
)

// hupIgnorer ignores SIGHUP (its children inherit that), then writes its pid
// to path, so the pid file proves the trap is in place; only SIGKILL ends
// it.
func hupIgnorer(path string) []string {
	return []string{"sh", "-c", `trap "" HUP; echo $$ > "$0"; while :; do sleep 1; done`, path}
}

// newHTTPClient is apitest's: a client closed when the test ends, that
// does not follow redirects.
var newHTTPClient = apitest.NewHTTPClient

// dialWS opens a WebSocket; the connection is closed when the test ends.
// It returns the handshake's HTTP status, also on failure.
func dialWS(t testing.TB, url string, header http.Header) (*websocket.Conn, int, error) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: waitTimeout}
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

// wsMsg is any server message, with the fields these tests look at.
type wsMsg struct {
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

// readWS reads the next message within waitTimeout.
func readWS(conn *websocket.Conn) (wsMsg, []byte, error) {
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	_, b, err := conn.ReadMessage()
	if err != nil {
		return wsMsg{}, nil, err
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		return wsMsg{}, b, fmt.Errorf("decode %q: %w", b, err)
	}
	return m, b, nil
}

// expectWS reads until a message of type typ arrives, skipping others.
func expectWS(t testing.TB, conn *websocket.Conn, typ string) wsMsg {
	t.Helper()
	for {
		m, _, err := readWS(conn)
		if err != nil {
			t.Fatalf("waiting for %s: %v", typ, err)
		}
		if m.Type == typ {
			return m
		}
	}
}
