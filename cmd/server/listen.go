package main

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// httpLimits are the timeouts of an HTTP listener. A client that opens
// connections and sends nothing, half a header, half a body, or nothing
// more after a response holds a file descriptor each; these end such
// connections. WebSockets clear them when they upgrade and keep their own
// (pings, pongs and a deadline on every write).
type httpLimits struct {
	readHeader time.Duration
	// read bounds reading a whole request, body included: bodies are at
	// most httpapi.MaxBodyBytes of JSON (maxHookBodyBytes on the hook listener).
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
	// maxWebSockets caps the WebSockets among them, so that whatever
	// WebSockets hold, plain HTTP (the health check, the API) has the
	// other half.
	maxWebSockets = maxConnections / 2
	// maxHookConnections caps the hook listener's: a hook call is one
	// short request from an agent.
	maxHookConnections = 32
)

// newHTTPServer returns an http.Server with these limits. A limitListener
// it serves learns from it which connections are between requests.
func newHTTPServer(h http.Handler, log *slog.Logger, limits httpLimits) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: limits.readHeader,
		ReadTimeout:       limits.read,
		WriteTimeout:      limits.write,
		IdleTimeout:       limits.idle,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ConnState:         trackState,
	}
}

// trackState tells a limitListener what its connection is doing.
func trackState(c net.Conn, state http.ConnState) {
	if lc, ok := c.(*limitConn); ok {
		lc.l.setState(lc, state)
	}
}

// limitListener caps the connections open at once. At the cap, Accept
// takes a newcomer and closes for it the oldest connection that is not
// in a request: one kept alive between requests (http.StateIdle), or one
// that has not sent a whole request for quietGrace since it came
// (http.StateNew: a slow or silent client). So idle sockets, whoever opens
// them, cannot keep anyone out. Requests in progress and hijacked
// connections (WebSockets, capped by their hub) are never closed; when
// every connection is one, Accept waits for one to close or go idle, as
// golang.org/x/net/netutil's LimitListener waits, and the newcomer waits
// with it. It says so in the log, once each time the cap is reached.
type limitListener struct {
	net.Listener
	name string
	log  *slog.Logger
	// slots holds a token per open connection.
	slots chan struct{}
	// idled has a token when a connection may have gone idle since Accept
	// last looked for one to close.
	idled     chan struct{}
	done      chan struct{}
	closeOnce sync.Once

	// mu protects the fields below.
	mu sync.Mutex
	// conns are the open connections, each with its state.
	conns map[*limitConn]struct{}
	// full reports whether the cap was reached and not yet left well
	// behind; it keeps the log to one line per episode. closed counts the
	// connections closed for newcomers during it.
	full   bool
	closed int
}

// quietGrace is how long a connection may take to send its first request
// and still not be closed for a newcomer. A client sends it within
// milliseconds of connecting; without this wait, each newcomer at the cap
// could be closed for the next one before its request is read.
const quietGrace = time.Second

// limitListen wraps ln so that at most max connections are open at once.
func limitListen(ln net.Listener, max int, name string, log *slog.Logger) *limitListener {
	return &limitListener{
		Listener: ln, name: name, log: log,
		slots: make(chan struct{}, max),
		idled: make(chan struct{}, 1),
		done:  make(chan struct{}),
		conns: make(map[*limitConn]struct{}),
	}
}

// Accept waits for a connection, then for a slot for it. Only then, not
// before, is an idle connection closed: for someone who came.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.reserve(); err != nil {
		_ = c.Close()
		return nil, err
	}
	lc := &limitConn{Conn: c, l: l, came: time.Now(), state: http.StateNew}
	l.mu.Lock()
	l.conns[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// reserve takes a slot, closing an idle connection to free one at the
// cap, or waiting when none is idle.
func (l *limitListener) reserve() error {
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		default:
		}
		idle, later := l.oldestIdle(time.Now())
		if idle != nil {
			// Its Close gives its slot back before it returns.
			_ = idle.Close()
			continue
		}
		if got, err := l.wait(later); got || err != nil {
			return err
		}
	}
}

// wait waits for a slot, and reports whether it took one; or for a
// connection to go idle, for later to pass when it is above 0 (a quiet
// connection's grace), or for Close.
func (l *limitListener) wait(later time.Duration) (bool, error) {
	var graceOver <-chan time.Time
	if later > 0 {
		t := time.NewTimer(later)
		defer t.Stop()
		graceOver = t.C
	}
	select {
	case l.slots <- struct{}{}:
		return true, nil
	case <-l.idled:
	case <-graceOver:
	case <-l.done:
		return false, net.ErrClosed
	}
	return false, nil
}

// oldestIdle returns the connection to close for a newcomer, or nil and,
// when one will be after its quietGrace, how long until then. Its first
// call in an episode starts the episode's log.
func (l *limitListener) oldestIdle(now time.Time) (_ *limitConn, later time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.full {
		l.full = true
		l.log.Warn("connection limit reached; closing the oldest idle connections for newcomers, who wait when every connection is busy",
			"listener", l.name, "limit", cap(l.slots))
	}
	var oldest *limitConn
	for c := range l.conns {
		switch c.state {
		case http.StateIdle:
		case http.StateNew:
			if wait := c.came.Add(quietGrace).Sub(now); wait > 0 {
				if later == 0 || wait < later {
					later = wait
				}
				continue
			}
		default:
			continue
		}
		if oldest == nil || c.came.Before(oldest.came) {
			oldest = c
		}
	}
	if oldest != nil {
		l.closed++
		l.log.Debug("closing an idle connection for a newcomer", "listener", l.name,
			"remote", oldest.RemoteAddr().String(), "state", oldest.state.String())
		return oldest, 0
	}
	return nil, later
}

// setState notes what a connection is doing, and wakes an Accept waiting
// for an idle one.
func (l *limitListener) setState(c *limitConn, state http.ConnState) {
	l.mu.Lock()
	c.state = state
	l.mu.Unlock()
	if state == http.StateIdle || state == http.StateNew {
		select {
		case l.idled <- struct{}{}:
		default:
		}
	}
}

// Close stops Accept, a waiting one included.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *limitListener) release(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.conns, c)
	<-l.slots
	// Leave the episode only well below the cap, so a count hovering at
	// it does not log a line per connection.
	if l.full && len(l.slots) < cap(l.slots)*3/4 {
		l.full = false
		l.log.Info("connections below the limit again", "listener", l.name, "open", len(l.slots), "closedIdle", l.closed)
		l.closed = 0
	}
}

// limitConn gives its slot back once, when it is closed; a hijacked
// connection (a WebSocket) is the same net.Conn, so it counts until the
// WebSocket closes.
type limitConn struct {
	net.Conn
	l *limitListener
	// came is when it was accepted.
	came time.Time
	once sync.Once
	// state is the http.Server's view of it (trackState); the listener's
	// mu protects it.
	state http.ConnState
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}
