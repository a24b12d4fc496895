// Package rawio reads and writes non-blocking descriptors (sockets, a PTY
// master) the way the net and os packages do, waiting in the runtime's
// poller with its deadlines, but on Linux with raw system calls.
//
// Why: a system call made through syscall.Syscall enters the runtime's
// syscall state, and when the runtime's monitor thread (sysmon) has parked
// because every scheduler slot was idle, entering that state wakes it with
// a futex call first. A terminal server is idle between two keystrokes, so
// both hops of a key's echo (the WebSocket read, the PTY read) paid that
// wake-up of another thread on their critical path: about 2.5 futex calls
// a key, tens of microseconds each on a small VM. A read or write of a
// non-blocking descriptor returns at once, which is what raw system calls
// are for; waiting stays with the poller, through syscall.RawConn, so a
// read with nothing to read parks its goroutine as before.
package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Read reads into p from the descriptor behind rc, parking in the poller
// while there is nothing to read. A read of 0 bytes into a non-empty p is
// the end of the stream: io.EOF. Errors from rc (a deadline, the
// descriptor closed) are returned as rc gives them.
func Read(rc syscall.RawConn, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n     int
		errno syscall.Errno
	)
	err := rc.Read(func(fd uintptr) bool {
		for {
			n, errno = sysRead(fd, p)
			switch errno {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait in the poller
			}
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p to the descriptor behind rc, parking in the poller
// while it takes nothing more. It returns how much was written.
func Write(rc syscall.RawConn, p []byte) (int, error) { return write(rc, p, true) }

// TryWrite writes as much of p as the descriptor behind rc takes now,
// without waiting: 0, nil when it takes nothing.
func TryWrite(rc syscall.RawConn, p []byte) (int, error) { return write(rc, p, false) }

func write(rc syscall.RawConn, p []byte, park bool) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, e := sysWrite(fd, p[n:])
			switch e {
			case 0:
				n += m
			case syscall.EINTR:
			case syscall.EAGAIN:
				return !park
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, os.NewSyscallError("write", errno)
	}
	return n, nil
}

// IoctlInt returns the int that ioctl req reads from the descriptor
// behind rc (SIOCOUTQ, say).
func IoctlInt(rc syscall.RawConn, req uint) (int, error) {
	var (
		v     int
		errno syscall.Errno
	)
	if err := rc.Control(func(fd uintptr) { v, errno = sysIoctlInt(fd, req) }); err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, os.NewSyscallError("ioctl", errno)
	}
	return v, nil
}

// Conn is a network connection whose Read and Write go through this
// package; everything else is the wrapped connection's. It reports
// errors as net.Conn does, in a *net.OpError.
type Conn struct {
	net.Conn
	rc syscall.RawConn
}

// NewConn wraps c, or returns c itself when it has no descriptor to use
// (a connection in memory, say).
func NewConn(c net.Conn) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, rc: rc}
}

// Read reads from the connection.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := Read(c.rc, p)
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

// Write writes all of p to the connection.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := Write(c.rc, p)
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// SyscallConn returns the wrapped connection's raw connection.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.rc, nil }

// NetConn returns the wrapped connection.
func (c *Conn) NetConn() net.Conn { return c.Conn }

func (c *Conn) opError(op string, err error) error {
	// The raw connection names its own operation ("raw-read"); the
	// error is this connection's read or write.
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
