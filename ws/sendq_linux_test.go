package ws

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// waitTimeoutInternal bounds this file's waits, as waitTimeout does the
// external tests'.
const waitTimeoutInternal = 20 * time.Second

// TestWriteIdleWaitsForNobody checks the guard that lets a session's
// reader write an echo to a client (conn.writeIdle): it writes while the
// socket's send queue is empty, and refuses at once, writing nothing,
// while bytes wait for a client that stopped reading.
func TestWriteIdleWaitsForNobody(t *testing.T) {
	mgr, err := sessions.NewManager(sessions.Options{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := mgr.Shutdown(context.Background(), time.Second); err != nil {
			t.Error(err)
		}
	}()
	hub, err := NewHub(Options{Sessions: mgr, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	upgraded := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := hub.upgrader.Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		upgraded <- ws
	}))
	defer srv.Close()
	dialer := websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		nc, err := net.Dial(network, addr)
		if err == nil {
			// A small window, so a client that stops reading fills it fast.
			err = nc.(*net.TCPConn).SetReadBuffer(4 << 10)
		}
		return nc, err
	}}
	client, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), http.Header{"Origin": {srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ws := <-upgraded
	defer ws.Close()
	c := newConn(hub, ws, time.Now())
	defer c.cancel()

	// The handshake's reply may wait for a delayed acknowledgement.
	first := []byte(`{"n":"first"}`)
	testutil.Eventually(t, waitTimeoutInternal, "writeIdle to write to a connection with nothing in flight",
		func() bool { return c.writeIdle(first) })

	// The client reads nothing: fill its window until bytes queue here.
	filler := bytes.Repeat([]byte("x"), 1<<10)
	sent := 0
	for {
		n, ok := sendQueued(ws.NetConn())
		if !ok {
			t.Fatal("cannot read the socket's send queue")
		}
		if n >= 8<<10 {
			break
		}
		if sent > 64<<20 {
			t.Fatalf("wrote %d bytes to a client that reads nothing and the send queue holds only %d", sent, n)
		}
		if !c.write(websocket.TextMessage, filler) {
			t.Fatal("write failed")
		}
		sent += len(filler)
	}
	refused := []byte(`{"n":"refused"}`)
	if c.writeIdle(refused) {
		t.Fatal("writeIdle wrote to a client whose socket holds unacknowledged bytes")
	}

	// Once the client reads, the queue empties and writeIdle writes again.
	got := make(chan []string, 1)
	_ = client.SetReadDeadline(time.Now().Add(waitTimeoutInternal))
	go func() {
		var msgs []string
		for {
			_, b, err := client.ReadMessage()
			if err != nil {
				got <- msgs
				return
			}
			if !bytes.Equal(b, filler) {
				msgs = append(msgs, string(b))
			}
			if string(b) == `{"n":"last"}` {
				got <- msgs
				return
			}
		}
	}()
	last := []byte(`{"n":"last"}`)
	testutil.Eventually(t, waitTimeoutInternal, "writeIdle to write again once the client read everything",
		func() bool { return c.writeIdle(last) })
	msgs := <-got
	if want := []string{`{"n":"first"}`, `{"n":"last"}`}; strings.Join(msgs, " ") != strings.Join(want, " ") {
		t.Errorf("client received %q besides the filler, want %q", msgs, want)
	}
}
