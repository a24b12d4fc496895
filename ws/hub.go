// Package ws serves agentmux's WebSocket protocol (docs/protocol.md).
//
// Each connection has exactly two goroutines, however many sessions it
// is attached to: one reader (the HTTP handler's) and one writer. The
// writer is the socket's only writer (gorilla's rule), every write has a
// deadline, and it pulls the output of each attached session itself, from
// that session's ring at the attachment's own offset (a stream, which has
// no goroutine): it batches it (a frame leaves at most one batch interval
// after its first byte, at once after a quiet interval, or as soon as 64
// KiB are waiting) and writes one frame per stream in turn, between the
// replies and events. With nothing to write it waits on one wake-up that
// the rings of its sessions signal when what a stream waits for arrives
// (output.Watch), beside the control queue and its timers. A writer held
// up by a slow client just pulls later, and the rings keep moving without
// it; a stream that falls behind its ring is resynced. So a slow client
// slows nobody but itself.
//
// A keystroke's echo is not batched and takes one hand-off: the session
// notes input before it reaches the program, and the output after it
// wakes the writer at once, which builds the frame and writes it.
//
// Each connection joins the application layer (package collab) as one of
// its clients: what collab announces (session events, participants,
// diffs, the memory level, the ports) reaches the connection's writer
// through a bounded queue, and a connection that lets it fill is dropped
// rather than waited for. The connection hands collab the requests about
// shared state (client.hello, review.*, the size rule, typing) and keeps
// the rest: its streams, their pacing, the prompt queue's requests.
//
// The hub caps its open connections (Options.MaxConnections), below the
// cap of the listener it is served from, so WebSockets never take every
// socket from plain HTTP. At the cap, a newcomer takes the place of the
// oldest idle connection, one attached to no session for IdleGrace; a
// connection attached to a session is never closed for a newcomer.
package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/internal/ratelog"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// Defaults for Options' zero values.
const (
	DefaultBatchInterval = 16 * time.Millisecond
	DefaultPingInterval  = 30 * time.Second
	DefaultWriteTimeout  = 10 * time.Second
	// DefaultMaxConnections is half the server's cap on sockets: far more
	// than a few people with a few tabs each need.
	DefaultMaxConnections = 128
	// DefaultIdleGrace lets a page that has just connected attach before
	// it may be closed as idle.
	DefaultIdleGrace = 5 * time.Second

	// ReadLimit is the largest client frame accepted; a larger one closes
	// the connection with 1009.
	ReadLimit = 1 << 20
	// flushBytes is the unsent output that makes a frame leave before its
	// interval is up.
	flushBytes = 64 << 10
	// maxFrameBytes caps the output bytes in one frame, which bounds the
	// memory a connection holds no matter how far behind it is.
	maxFrameBytes = 4 * flushBytes
	// controlQueue and controlQueueBytes bound the control messages that
	// may wait for a slow connection before it is dropped: by count, and
	// by bytes, since a message may echo what the client sent.
	controlQueue      = 256
	controlQueueBytes = 2 << 20
	// oversizeLogEvery is the least time between two log lines about
	// frames over ReadLimit.
	oversizeLogEvery = 10 * time.Second
	// closeGrace is how long a closing connection waits for the peer's
	// close frame before dropping the socket.
	closeGrace = time.Second
	// farewellWindow is how long Close, once out of time, still waits for
	// the writers to send their close frames before dropping the sockets.
	farewellWindow = 100 * time.Millisecond
)

// Options configure a Hub. Zero values are documented per field.
type Options struct {
	// Sessions finds and resumes sessions. Required.
	Sessions *sessions.Manager
	// App is the application layer every connection joins as a client:
	// what it announces goes to the connections, and the requests about
	// shared state go to it. Required.
	App *collab.App
	// BatchInterval is the output frame interval; 0 means 16 ms.
	BatchInterval time.Duration
	// PingInterval is how often the server pings and sends a heartbeat
	// message; a peer silent for twice as long is dropped. 0 means 30 s.
	PingInterval time.Duration
	// WriteTimeout bounds every write to a socket; 0 means 10 s.
	WriteTimeout time.Duration
	// Origins decides which pages may open the WebSocket, as it decides
	// for every request that changes state; nil means the server's own
	// page only.
	Origins *sameorigin.Policy
	// Logger receives the hub's logs; nil means slog.Default().
	Logger *slog.Logger
	// MaxConnections caps the connections open at once; 0 means
	// DefaultMaxConnections. At the cap an upgrade closes the oldest idle
	// connection (with 1013, try again later) to take its place, and is
	// refused with 503 when none is idle.
	MaxConnections int
	// IdleGrace is how long a connection attached to no session since it
	// opened is still not idle; 0 means DefaultIdleGrace.
	IdleGrace time.Duration
	// Shares are the read-only links: an upgrade with ?share=<secret>
	// opens a viewer of that link's session, which may only watch it
	// (viewer.go). Nil refuses every such upgrade.
	Shares *share.Links
	// MaxViewers caps the viewers open at once, within MaxConnections;
	// 0 means a quarter of MaxConnections. Viewers are never idle, so
	// without it links handed around could take every place from the
	// people at the workspace.
	MaxViewers int
}

// Hub serves WebSocket connections: it admits them within its cap, joins
// each to the application layer, and closes them all at shutdown.
type Hub struct {
	opts     Options
	log      *slog.Logger
	upgrader websocket.Upgrader
	wg       sync.WaitGroup
	// oversize limits the log lines about frames over ReadLimit.
	oversize ratelog.Limiter

	// mu protects the fields below. It is never held while calling
	// collab, nor taken by collab's calls into a connection.
	mu      sync.Mutex
	conns   map[*conn]struct{}
	closing bool
	// upgrading counts the upgrades admitted and not yet registered: they
	// count against MaxConnections.
	upgrading int
	// full reports whether the cap was reached and not yet left well
	// behind; it keeps the log to one line per episode, and evicted and
	// refused count what happened during it.
	full             bool
	evicted, refused int
	// viewing counts the viewers admitted and not yet gone.
	viewing int
	// unshare ends the subscription to the links' ends.
	unshare func()
}

// NewHub returns a Hub with no connections.
func NewHub(opts Options) (*Hub, error) {
	if opts.Sessions == nil {
		return nil, errors.New("ws: Options.Sessions is required")
	}
	if opts.App == nil {
		return nil, errors.New("ws: Options.App is required")
	}
	if opts.BatchInterval <= 0 {
		opts.BatchInterval = DefaultBatchInterval
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = DefaultPingInterval
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.Origins == nil {
		opts.Origins = &sameorigin.Policy{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.IdleGrace <= 0 {
		opts.IdleGrace = DefaultIdleGrace
	}
	if opts.MaxViewers <= 0 {
		opts.MaxViewers = max(opts.MaxConnections/4, 1)
	}
	h := &Hub{opts: opts, log: opts.Logger, conns: make(map[*conn]struct{}),
		oversize: ratelog.Limiter{Every: oversizeLogEvery}}
	h.upgrader = websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   4096,
		// Output frames are large; a shared pool keeps idle connections
		// from each holding a big buffer.
		WriteBufferSize: 64 << 10,
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     h.checkOrigin,
	}
	if opts.Shares != nil {
		h.unshare = opts.Shares.Subscribe(h.endShare)
	}
	return h, nil
}

// checkOrigin allows what Options.Origins allows: no browser page at all,
// the server's own, or a trusted one. The wired server refuses the others
// before they reach the hub (and logs them); this is the hub's own guard.
func (h *Hub) checkOrigin(r *http.Request) bool {
	if err := h.opts.Origins.Check(r); err != nil {
		h.log.Debug("refused WebSocket", "err", err, "host", r.Host)
		return false
	}
	return true
}

// idleCloseText is the reason of the close frame (1013) that an idle
// connection gets when a newcomer takes its place.
const idleCloseText = "try again later: too many idle connections"

// Why admit refuses an upgrade.
var (
	errShuttingDown = errors.New("server is shutting down")
	errTooMany      = errors.New("too many WebSockets are open, each attached to a session or only just opened; try again later")
	// errTooManyViewers is as many viewers as MaxViewers.
	errTooManyViewers = errors.New("too many people are watching through read-only links; try again later")
)

// ServeHTTP upgrades the request and serves the connection until it ends.
func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !websocket.IsWebSocketUpgrade(r) || !h.checkOrigin(r) {
		// A request the upgrader refuses (400, 403; it checks the same)
		// must not close an idle connection to make room for itself.
		_, _ = h.upgrader.Upgrade(w, r, nil)
		return
	}
	secret, viewer := shareSecret(r)
	var link share.Link
	if viewer {
		var err error
		if link, err = h.checkShare(secret); err != nil {
			writeError(w, err, 0)
			return
		}
	}
	admitted, err := h.admit(viewer)
	switch {
	case errors.Is(err, errShuttingDown):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil:
		writeError(w, err, h.opts.IdleGrace)
		return
	}
	// The upgrader has written the HTTP error (403 for a foreign origin).
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		h.mu.Lock()
		h.upgrading--
		if viewer {
			h.viewing--
		}
		h.mu.Unlock()
		h.log.Debug("upgrade failed", "err", err, "remote", r.RemoteAddr)
		return
	}
	c := newConn(h, ws, admitted)
	// Before it is registered, so the hub never sees it without its
	// participant; Join sends it the current state.
	if viewer {
		c.view = &link
		c.log = c.log.With("share", link.ID, "session", link.SessionID)
		c.sendJSON(h.welcome(link))
		c.who = h.opts.App.JoinViewer(c, link)
	} else {
		c.who = h.opts.App.Join(c)
	}
	if !h.register(c) {
		h.opts.App.Leave(c.who)
		c.closeNow(websocket.CloseGoingAway, "server is shutting down")
		return
	}
	defer h.unregister(c)
	// A link revoked between its check and now ended before this viewer
	// could be found and closed (endShare): it is checked again.
	if viewer {
		if _, err := h.checkShare(secret); err != nil {
			c.close(CloseShareEnded, share.ReasonRevoked)
		}
	}
	c.serve()
}

// writeError answers an upgrade that is refused before it begins with the
// API's error body; retry, when not 0, is when to try again.
func writeError(w http.ResponseWriter, err error, retry time.Duration) {
	code, status := wire.ErrorStatus(err)
	if errors.Is(err, errTooMany) || errors.Is(err, errTooManyViewers) {
		code, status = wire.CodeTooManyConnections, http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((retry+time.Second-1)/time.Second)))
	}
	w.WriteHeader(status)
	if b, err := wire.Marshal(wire.NewErrorBody(code, err.Error())); err == nil {
		_, _ = w.Write(b)
	}
}

// admit makes room for one more connection, counts it as upgrading and
// returns when it did: the connection's age counts from then, in the
// order the requests came, however the upgrades that follow are
// scheduled. At the cap it closes the oldest idle connection for it; when
// none is idle, it refuses with errTooMany.
func (h *Hub) admit(viewer bool) (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return time.Time{}, errShuttingDown
	}
	if viewer && h.viewing >= h.opts.MaxViewers {
		return time.Time{}, errTooManyViewers
	}
	now := time.Now()
	if h.openLocked() >= h.opts.MaxConnections {
		if !h.full {
			h.full = true
			h.log.Warn("WebSocket limit reached; closing the oldest idle WebSockets for newcomers, refusing newcomers when none is idle",
				"limit", h.opts.MaxConnections, "idleGrace", h.opts.IdleGrace)
		}
		idle := h.oldestIdleLocked(now)
		if idle == nil {
			h.refused++
			return time.Time{}, errTooMany
		}
		idle.log.Debug("closing an idle WebSocket for a newcomer", "opened", idle.opened)
		idle.close(websocket.CloseTryAgainLater, idleCloseText)
		h.evicted++
	}
	h.upgrading++
	if viewer {
		h.viewing++
	}
	return now, nil
}

// openLocked counts the connections that hold a place: those upgrading,
// and those registered and not closing. A closing connection is gone
// within closeGrace, or WriteTimeout for a peer that stopped reading. mu
// must be held.
func (h *Hub) openLocked() int {
	n := h.upgrading
	for c := range h.conns {
		if !c.isClosing() {
			n++
		}
	}
	return n
}

// oldestIdleLocked returns the oldest connection attached to no session
// and open for at least IdleGrace, or nil. mu must be held.
func (h *Hub) oldestIdleLocked(now time.Time) *conn {
	var oldest *conn
	for c := range h.conns {
		if c.who.IsAttached() || c.isClosing() || now.Sub(c.opened) < h.opts.IdleGrace {
			continue
		}
		if oldest == nil || c.opened.Before(oldest.opened) {
			oldest = c
		}
	}
	return oldest
}

func (h *Hub) register(c *conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.upgrading--
	if h.closing {
		return false
	}
	h.conns[c] = struct{}{}
	h.wg.Add(1)
	return true
}

func (h *Hub) unregister(c *conn) {
	h.opts.App.Leave(c.who)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.conns, c)
	if c.view != nil {
		h.viewing--
	}
	// Leave the episode only well below the cap, so a count hovering at
	// it does not log a line per connection.
	if h.full && h.openLocked() < h.opts.MaxConnections*3/4 {
		h.full = false
		h.log.Info("WebSockets below the limit again", "open", len(h.conns),
			"closedIdle", h.evicted, "refused", h.refused)
		h.evicted, h.refused = 0, 0
	}
	h.wg.Done()
}

// Announce tells every client the server is going down in grace, and stops
// accepting connections.
func (h *Hub) Announce(grace time.Duration) {
	secs := int((grace + time.Second - 1) / time.Second)
	unit := "seconds"
	if secs == 1 {
		unit = "second"
	}
	b, err := wire.Marshal(wire.ShutdownMessage{
		Type:          wire.TypeServerShutdown,
		Message:       fmt.Sprintf("Server shutting down in %d %s.", secs, unit),
		GracePeriodMs: grace.Milliseconds(),
	})
	if err != nil {
		h.log.Error("encode shutdown", "err", err)
		return
	}
	h.mu.Lock()
	h.closing = true
	for c := range h.conns {
		c.sendControl(b)
	}
	h.mu.Unlock()
}

// Close closes every connection with 1001 (going away) and waits for the
// clients to answer until ctx ends; then it drops the sockets of those that
// have not. It returns an error only if connections are still open after
// that. The HTTP server's own Shutdown does not do this: it does not track
// hijacked connections.
func (h *Hub) Close(ctx context.Context) error {
	if h.unshare != nil {
		h.unshare()
	}
	h.mu.Lock()
	h.closing = true
	conns := slices.Collect(maps.Keys(h.conns))
	h.mu.Unlock()
	for _, c := range conns {
		c.close(websocket.CloseGoingAway, "server shutting down")
	}
	done := make(chan struct{})
	go func() {
		h.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	select {
	case <-done: // finished as the deadline came: not late
		return nil
	default:
	}
	// A writer sends its close frame within a millisecond or so of being
	// told, so even when earlier shutdown steps used up the time (the
	// deadline may have passed before Close began), each gets a short
	// moment to, or clients would see an abnormal closure rather than
	// 1001. Only a writer stuck on a client that stopped reading uses it up.
	farewells := time.NewTimer(farewellWindow)
	defer farewells.Stop()
wait:
	for _, c := range conns {
		select {
		case <-c.farewell:
		case <-farewells.C:
			break wait
		}
	}
	// A client that never answers the close frame, or a writer stuck on
	// one that stopped reading, holds its goroutines; dropping the socket
	// ends them now.
	for _, c := range conns {
		_ = c.ws.Close()
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-done:
		h.log.Warn("dropped clients that did not answer the close in time")
		return nil
	case <-t.C:
		return fmt.Errorf("close connections: %w", context.Cause(ctx))
	}
}

// Connections returns the number of open connections.
func (h *Hub) Connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}
