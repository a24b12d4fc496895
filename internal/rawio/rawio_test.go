package rawio_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/rawio"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tcpPair returns both ends of a loopback TCP connection, the first
// wrapped.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := <-accepted
	if c == nil {
		t.Fatal("accept failed")
	}
	wrapped := rawio.NewConn(c)
	if _, ok := wrapped.(*rawio.Conn); !ok {
		t.Fatalf("NewConn(%T) = %T, want *rawio.Conn", c, wrapped)
	}
	t.Cleanup(func() { wrapped.Close(); peer.Close() })
	return wrapped, peer
}

// A write far larger than the socket's buffers parks until the peer
// reads, and every byte arrives in order; what the peer sends is read.
func TestConnCarriesEveryByte(t *testing.T) {
	c, peer := tcpPair(t)
	want := make([]byte, 8<<20)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	n, err := c.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(want))
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer read %d bytes, not the %d written, in order", len(b), len(want))
	}

	if _, err := peer.Write([]byte("typed")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, err = io.ReadAtLeast(c, buf, 5)
	if err != nil || string(buf[:n]) != "typed" {
		t.Fatalf("Read = %q, %v; want \"typed\"", buf[:n], err)
	}
}

// Deadlines, the end of the stream and a close under a waiting read end
// reads as they end a net.Conn's.
func TestConnEndsAsNetConnDoes(t *testing.T) {
	t.Run("deadline", func(t *testing.T) {
		c, _ := tcpPair(t)
		if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := c.Read(make([]byte, 8))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("Read past the deadline = %v; want a timeout", err)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "read" || oe.Net != "tcp" {
			t.Fatalf("Read past the deadline = %#v; want a *net.OpError of op read on tcp", err)
		}
	})
	t.Run("eof", func(t *testing.T) {
		c, peer := tcpPair(t)
		peer.Close()
		if n, err := c.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("Read after the peer closed = %d, %v; want 0, EOF", n, err)
		}
	})
	t.Run("closed", func(t *testing.T) {
		c, _ := tcpPair(t)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 8))
			errc <- err
		}()
		time.AfterFunc(20*time.Millisecond, func() { c.Close() })
		select {
		case err := <-errc:
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Read under Close = %v; want net.ErrClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Read did not end when the connection closed")
		}
	})
	t.Run("write after close", func(t *testing.T) {
		c, _ := tcpPair(t)
		c.Close()
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Write after Close = %v; want net.ErrClosed", err)
		}
	})
}

// A connection with no descriptor is used as it is.
func TestNewConnKeepsConnectionsWithoutDescriptor(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := rawio.NewConn(a); got != a {
		t.Fatalf("NewConn(net.Pipe end) = %T, want the same connection", got)
	}
}

// pipe returns a non-blocking pipe on the poller, as os.Pipe makes it,
// and its ends' raw connections.
func pipe(t *testing.T) (r, w *os.File, rrc, wrc syscall.RawConn) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	if rrc, err = r.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	if wrc, err = w.SyscallConn(); err != nil {
		t.Fatal(err)
	}
	return r, w, rrc, wrc
}

// Read parks until there is something to read, and reports a closed
// writer as the end of the stream.
func TestReadWaitsForData(t *testing.T) {
	_, w, rrc, _ := pipe(t)
	time.AfterFunc(20*time.Millisecond, func() {
		w.Write([]byte("late"))
		w.Close()
	})
	buf := make([]byte, 16)
	n, err := rawio.Read(rrc, buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("Read = %q, %v; want \"late\"", buf[:n], err)
	}
	if n, err := rawio.Read(rrc, buf); n != 0 || err != io.EOF {
		t.Fatalf("Read after the writer closed = %d, %v; want 0, EOF", n, err)
	}
}
