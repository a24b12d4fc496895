package main

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/agentmux/agentmux/internal/rawio"
)

// TestLimitConnShowsItsSocket: the WebSocket code reads a connection's
// send queue (so a session's reader may write an echo to it) through the
// NetConn method; a counted connection must not hide its TCP socket. The
// socket is read and written through rawio.
func TestLimitConnShowsItsSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitListen(ln, 1, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer l.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, ok := c.(interface{ NetConn() net.Conn })
	if !ok {
		t.Fatalf("%T has no NetConn method", c)
	}
	raw, ok := w.NetConn().(*rawio.Conn)
	if !ok {
		t.Fatalf("NetConn() is %T, want *rawio.Conn", w.NetConn())
	}
	if _, ok := raw.NetConn().(*net.TCPConn); !ok {
		t.Errorf("NetConn().NetConn() is %T, want *net.TCPConn", raw.NetConn())
	}
}
