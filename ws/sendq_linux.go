package ws

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/rawio"
)

// sendQueueEmpty reports whether everything written to conn has been sent
// and acknowledged by the peer, so a small write cannot block. It reports
// false when it cannot tell.
func sendQueueEmpty(conn net.Conn) bool {
	n, ok := sendQueued(conn)
	return ok && n == 0
}

// sendQueued returns how many bytes written to conn the peer has not
// acknowledged yet (SIOCOUTQ), and false when it cannot tell. A wrapper
// (the server's connection limit, TLS) is looked through by its NetConn
// method.
func sendQueued(conn net.Conn) (int, bool) {
	for {
		if sc, ok := conn.(syscall.Conn); ok {
			return ioctlOutq(sc)
		}
		w, ok := conn.(interface{ NetConn() net.Conn })
		if !ok {
			return 0, false
		}
		conn = w.NetConn()
	}
}

// ioctlOutq reads the send queue of the socket under sc. It is asked
// before an echo is sent, so it goes through rawio, as the socket's reads
// and writes do in the server.
func ioctlOutq(sc syscall.Conn) (int, bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	n, err := rawio.IoctlInt(rc, unix.SIOCOUTQ)
	if err != nil {
		return 0, false
	}
	return n, true
}
