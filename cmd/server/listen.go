package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentmux/agentmux/internal/rawio"
)

// httpLimits are the timeouts of an HTTP listener. A client that opens
// connections and sends nothing, half a header, half a body, or nothing
// more after a response holds a file descriptor each; these end such
// connections. WebSockets clear them when they upgrade and keep their own
// (pings, pongs and a deadline on every write).
type httpLimits struct {
	readHeader time.Duration
	// read bounds reading a whole request, body included: bodies are at
	// most maxBodyBytes of JSON (maxHookBodyBytes on the hook listener).
	read time.Duration
	// write bounds a handler and its response; the longest handler
	// removes a worktree, which git may take a minute (gitTimeout) for.
	write time.Duration
	idle  time.Duration
}

// defaultLimits are the limits of both listeners.
var defaultLimits = httpLimits{
	readHeader: 10 * time.Second,
	read:       30 * time.Second,
	write:      2 * time.Minute,
	idle:       2 * time.Minute,
}

const (
	// maxConnections caps the main listener's connections, WebSockets
	// included: far above what four sessions and a few browsers need, far
	// below the usual limit of 1024 open files.
	maxConnections = 256
	// maxHookConnections caps the hook listener's: a hook call is one
	// short request from an agent.
	maxHookConnections = 32
)

// newHTTPServer returns an http.Server with these limits.
func newHTTPServer(h http.Handler, log *slog.Logger, limits httpLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.readHeader,
		ReadTimeout:       limits.read,
		WriteTimeout:      limits.write,
		IdleTimeout:       limits.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}

// limitListener caps the connections open at once. At the cap, Accept
// waits for one to close and the kernel's backlog holds the newcomers, as
// with golang.org/x/net/netutil's LimitListener; unlike it, this one says
// so in the log, once each time the cap is reached.
type limitListener struct {
	net.Listener
	name string
	log  *slog.Logger
	// slots holds a token per open connection.
	slots chan struct{}
	// full reports whether the cap was reached and not yet left well
	// behind; it keeps the log to one line per episode.
	full      atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
}

// limitListen wraps ln so that at most max connections are open at once.
func limitListen(ln net.Listener, max int, name string, log *slog.Logger) *limitListener {
	return &limitListener{Listener: ln, name: name, log: log, slots: make(chan struct{}, max), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	default:
		if !l.full.Swap(true) {
			l.log.Warn("connection limit reached; new connections wait until one closes",
				"listener", l.name, "limit", cap(l.slots))
		}
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	// rawio: a typed key's echo then skips a wake-up of the runtime's
	// monitor thread on each read and write of the socket.
	return &limitConn{Conn: rawio.NewConn(c), l: l}, nil
}

// Close stops Accept, a waiting one included.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *limitListener) release() {
	<-l.slots
	// Leave the episode only well below the cap, so a count hovering at
	// it does not log a line per connection.
	if len(l.slots) < cap(l.slots)*3/4 && l.full.Swap(false) {
		l.log.Info("connections below the limit again", "listener", l.name, "open", len(l.slots))
	}
}

// limitConn gives its slot back once, when it is closed; a hijacked
// connection (a WebSocket) is the same net.Conn, so it counts until the
// WebSocket closes.
type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

// NetConn returns the connection it counts, as tls.Conn does: the
// WebSocket code reads the socket's send queue through it.
func (c *limitConn) NetConn() net.Conn { return c.Conn }

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.l.release)
	return err
}
