package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	textclip "github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// conn is one client connection. serve runs the reader in the calling
// goroutine and owns the writer goroutine it starts, which also pulls the
// output of every session attached: it stops it before it returns.
type conn struct {
	hub *Hub
	ws  *websocket.Conn
	log *slog.Logger
	// opened is when the hub admitted its upgrade.
	opened time.Time

	// ctx ends when the connection starts closing, for any reason.
	ctx    context.Context
	cancel context.CancelFunc

	// control carries small messages (replies, events); sendControl never
	// blocks on it.
	control chan []byte
	// controlBytes is the size of the messages in control: the queue is
	// bounded in bytes as well as in messages.
	controlBytes atomic.Int64

	// stateMu protects stale: the states (who is in a session, a
	// session's prompt queue) this client is to be sent, each once,
	// rendered as they are when the writer gets to them. However often
	// others change a state, a connection holds one mark for it, never a
	// backlog that could get it dropped. staleReady wakes the writer.
	stateMu    sync.Mutex
	stale      []stateKey
	staleReady chan struct{}

	// closeMu protects closeCode and closeText: the close frame to send,
	// chosen by whoever closes first. 0 means send none.
	closeMu   sync.Mutex
	closeCode int
	closeText string
	closed    bool

	readerDone chan struct{}
	writerDone chan struct{}
	// farewell is closed once the writer has sent its close frame, or
	// found it cannot: the hub waits for it before dropping sockets.
	farewell chan struct{}

	// writeFailed reports that a write failed, after which nothing more
	// is written. Owned by the writer goroutine, the socket's only
	// writer (gorilla's rule); others hand it what to write.
	writeFailed bool

	// ports is the listing of the ports this client was last sent, when
	// portsSent. Owned by the writer goroutine (portsChange).
	ports     ports.Listing
	portsSent bool

	// who is the participant this connection is, in collab; set before
	// the hub registers it, and never changed.
	who *collab.Participant

	// pullMu protects pulls: the streams the writer pulls output from, in
	// the order they were attached. The reader adds and removes them; the
	// writer copies the list into pulling at each pass. A leaf.
	pullMu sync.Mutex
	pulls  []*stream
	// wake (cap 1) wakes the writer for the streams: a ring it watches
	// moved, or the reader changed pulls.
	wake chan struct{}
	// pulling is the writer's copy of pulls.
	pulling []*stream

	// view is the read-only link this connection came through; nil for
	// everyone else. Set before it is registered, never changed.
	view *share.Link

	// Owned by the reader goroutine.
	streams map[string]*stream
}

func newConn(h *Hub, ws *websocket.Conn, opened time.Time) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{
		hub:        h,
		ws:         ws,
		log:        h.log.With("remote", ws.RemoteAddr().String()),
		opened:     opened,
		ctx:        ctx,
		cancel:     cancel,
		control:    make(chan []byte, controlQueue),
		staleReady: make(chan struct{}, 1),
		wake:       make(chan struct{}, 1),
		readerDone: make(chan struct{}),
		writerDone: make(chan struct{}),
		farewell:   make(chan struct{}),
		streams:    make(map[string]*stream),
	}
}

// serve runs the connection until it ends and then stops everything it
// started.
func (c *conn) serve() {
	c.log.Debug("client connected")
	go c.writeLoop()
	c.readLoop()
	c.close(0, "")
	c.hub.opts.App.DropSizes(c.who)
	for id, st := range c.streams {
		st.leave()
		delete(c.streams, id)
	}
	close(c.readerDone)
	<-c.writerDone
	c.log.Debug("client disconnected")
}

// close starts closing the connection; code, when not 0, is the close frame
// the writer sends. The first call decides, and only it reports true. Safe
// from any goroutine.
func (c *conn) close(code int, text string) bool {
	c.closeMu.Lock()
	first := !c.closed
	if first {
		c.closed, c.closeCode, c.closeText = true, code, text
	}
	c.closeMu.Unlock()
	c.cancel()
	return first
}

// isClosing reports whether the connection has started closing.
func (c *conn) isClosing() bool { return c.ctx.Err() != nil }

// closeNow closes a connection that never started serving.
func (c *conn) closeNow(code int, text string) {
	msg := websocket.FormatCloseMessage(code, text)
	_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(c.hub.opts.WriteTimeout))
	_ = c.ws.Close()
	c.cancel()
}

// sendControl queues a small message. A client that lets controlQueue
// messages or controlQueueBytes pile up is not keeping up, and is dropped
// rather than waited for, with one log line. A closing connection takes
// nothing more: what is queued is all it will be sent.
func (c *conn) sendControl(b []byte) {
	if c.isClosing() {
		return
	}
	if c.controlBytes.Load()+int64(len(b)) <= controlQueueBytes {
		select {
		case c.control <- b:
			c.controlBytes.Add(int64(len(b)))
			return
		default:
		}
	}
	if c.close(websocket.ClosePolicyViolation, "client too slow") {
		c.log.Warn("client too slow for control messages; dropping it",
			"queued", len(c.control), "queuedBytes", c.controlBytes.Load())
		// The writer is most likely blocked writing to this client. A
		// shorter deadline, which applies to a write in progress too,
		// frees it (and what it holds) within closeGrace rather than
		// WriteTimeout; only the writer still writes.
		_ = c.ws.NetConn().SetWriteDeadline(time.Now().Add(closeGrace))
	}
}

// stateKey names a state message of which only the newest matters.
type stateKey struct {
	// kind is wire.TypeSessionParticipants, wire.TypePromptList,
	// wire.TypeReviewDraft, or wire.TypePortsChanged (with no session).
	kind      string
	sessionID string
}

// sendState marks a state as changed for this client: the writer sends it
// as it is then, once, however many changes came meanwhile.
func (c *conn) sendState(kind, sessionID string) {
	k := stateKey{kind, sessionID}
	c.stateMu.Lock()
	if !slices.Contains(c.stale, k) {
		c.stale = append(c.stale, k)
	}
	c.stateMu.Unlock()
	select {
	case c.staleReady <- struct{}{}:
	default: // the writer is already woken
	}
}

// writeStates writes the states marked since it last ran.
func (c *conn) writeStates() {
	c.stateMu.Lock()
	keys := c.stale
	c.stale = nil
	c.stateMu.Unlock()
	for _, k := range keys {
		b, err := c.renderState(k)
		if err != nil {
			c.log.Debug("state not sent", "kind", k.kind, "session", k.sessionID, "err", err)
			continue
		}
		if b != nil && !c.write(websocket.TextMessage, b) {
			return
		}
	}
}

// sendInformational queues a message the client can do without, such as a
// file event, unless the queue is already three-quarters full, by count or
// by bytes: a burst of them (a checkout of thousands of files) must not get
// a client dropped.
func (c *conn) sendInformational(b []byte) {
	if len(c.control) >= controlQueue*3/4 || c.controlBytes.Load()+int64(len(b)) > controlQueueBytes*3/4 {
		return
	}
	c.sendControl(b)
}

// takeControl is the writer's receive from control: it gives the
// message's bytes back to the queue's budget.
func (c *conn) takeControl(b []byte) []byte {
	c.controlBytes.Add(-int64(len(b)))
	return b
}

func (c *conn) sendJSON(msg any) {
	b, err := wire.Marshal(msg)
	if err != nil {
		c.log.Error("encode message", "err", err)
		return
	}
	c.sendControl(b)
}

// sendError reports a failed request to this client. The message is
// bounded however it was made: a reply must not grow with the request.
func (c *conn) sendError(e *wire.ProtocolError) {
	c.sendJSON(wire.ErrorMessage{Type: wire.TypeError, Message: textclip.Message(e.Message), Code: e.Code, SessionID: e.SessionID})
}

func (c *conn) readLoop() {
	wait := 2 * c.hub.opts.PingInterval
	c.ws.SetReadLimit(ReadLimit)
	_ = c.ws.SetReadDeadline(time.Now().Add(wait))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(wait))
	})
	for {
		mt, b, err := c.ws.ReadMessage()
		if err != nil {
			switch {
			case errors.Is(err, websocket.ErrReadLimit):
				// gorilla has already sent close 1009. Any client can cause
				// this line, so it is rate-limited across connections.
				if ok, suppressed := c.hub.oversize.Allow(); ok {
					c.log.Info("client frame over the read limit; connection closed", "limit", ReadLimit, "closed since last line", suppressed)
				}
			case websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway, websocket.CloseNoStatusReceived):
				c.log.Debug("client closed the connection", "err", err)
			default:
				c.log.Debug("read ended", "err", err)
			}
			return
		}
		if c.isClosing() {
			// Whatever closes the connection (a client too slow, the
			// server going down) ends its requests too.
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(wait))
		if mt != websocket.TextMessage {
			c.sendError(wire.Invalid("", "binary frames are not supported; send JSON text frames"))
			continue
		}
		if !utf8.Valid(b) {
			// RFC 6455 5.6: text is UTF-8, and an endpoint that gets
			// anything else fails the connection with 1007.
			c.log.Debug("client sent a text frame that is not UTF-8; closing")
			c.close(websocket.CloseInvalidFramePayloadData, "text frame is not valid UTF-8")
			return
		}
		c.handle(b)
	}
}

// handle acts on one client message. Errors go back to this client only;
// the connection and the session carry on.
func (c *conn) handle(b []byte) {
	m, perr := wire.DecodeClient(b)
	if perr != nil {
		c.sendError(perr)
		return
	}
	if c.view != nil {
		c.handleViewer(m)
		return
	}
	switch m.Type {
	case wire.TypeHeartbeat:
		c.handleHeartbeat(m)
		return
	case wire.TypeClientHello:
		if err := c.hello(m); err != nil {
			c.sendError(&wire.ProtocolError{Code: wire.ErrorCode(err), Message: err.Error()})
		}
		return
	}
	id := *m.SessionID
	if err := c.handleSession(m, id); err != nil {
		c.log.Debug("request failed", "type", m.Type, "session", id, "err", err)
		c.sendError(&wire.ProtocolError{Code: wire.ErrorCode(err), SessionID: id, Message: err.Error()})
	}
}

// handleHeartbeat answers a heartbeat with the server's time.
func (c *conn) handleHeartbeat(m *wire.ClientMessage) {
	c.sendJSON(wire.HeartbeatMessage{Type: wire.TypeHeartbeat, Timestamp: time.Now().UnixMilli(), Echo: m.Timestamp})
}

func (c *conn) handleSession(m *wire.ClientMessage, id string) error {
	if m.Type == wire.TypeSessionResume {
		_, err := c.hub.opts.Sessions.Resume(id)
		return err // success is announced to everyone by session.status
	}
	s, err := c.hub.opts.Sessions.Get(id)
	if err != nil {
		return err
	}
	switch m.Type {
	case wire.TypeTerminalInput:
		// Whoever types takes the session's size, as in tmux.
		if err := c.hub.opts.App.TypedSize(c.who, s, []byte(*m.Data)); err != nil {
			return err
		}
		// A session with no process is resumed, and gets these keys once
		// it runs.
		if err := c.hub.opts.Sessions.Type(s, []byte(*m.Data)); err != nil {
			return err
		}
		c.hub.opts.App.Typed(c.who, id)
	case wire.TypePromptQueue:
		p, pos, err := s.QueuePrompt(c.hub.opts.App.Author(c.who), *m.Text)
		if err != nil {
			return err
		}
		c.sendJSON(wire.PromptAckMessage{Type: wire.TypePromptQueuedAck, SessionID: id, PromptID: p.ID, Position: pos})
	case wire.TypePromptDequeue:
		return s.DequeuePrompt(c.hub.opts.App.Author(c.who), *m.PromptID, m.Force != nil && *m.Force)
	case wire.TypeTerminalInterrupt:
		return s.Interrupt()
	case wire.TypeReviewComment, wire.TypeReviewUncomment, wire.TypeReviewDiscard, wire.TypeReviewSend:
		return c.review(m, s)
	case wire.TypeTerminalResize:
		return c.hub.opts.App.Resize(c.who, s, *m.Cols, *m.Rows, m.Take != nil && *m.Take)
	case wire.TypeSessionAttach:
		lines := 0
		if m.Lines != nil {
			lines = *m.Lines
		}
		c.attach(s, m.Since, lines)
	case wire.TypeTerminalAck:
		st, ok := c.streams[id]
		if !ok {
			return fmt.Errorf("%w: this connection is not attached to session %s; attach before acknowledging output", sessions.ErrInvalid, id)
		}
		st.ack(*m.Seq, m.Pace == nil || *m.Pace)
	case wire.TypeSessionDetach:
		if st, ok := c.streams[id]; ok {
			c.detach(id, st)
			c.hub.opts.App.Present(c.who, id, false)
		}
	}
	return nil
}

// attach starts streaming a session to this client, replacing any earlier
// attachment to it: a re-attach asks for a fresh replay from since.
func (c *conn) attach(s *sessions.Session, since *uint64, lines int) {
	for id, st := range c.streams {
		if id == s.ID() || st.isDone() {
			c.detach(id, st)
		}
	}
	// The queue as it is when sent; the events that change it carry
	// higher revs. A viewer is shown neither.
	if c.view == nil {
		c.sendState(wire.TypePromptList, s.ID())
		c.sendState(wire.TypeReviewDraft, s.ID())
	}
	st := newStream(c, s, since, lines)
	c.streams[s.ID()] = st
	c.pullMu.Lock()
	c.pulls = append(c.pulls, st)
	c.pullMu.Unlock()
	c.wakeWriter()
	c.hub.opts.App.Present(c.who, s.ID(), true)
}

// detach ends session id's stream st and takes it off the writer's list
// and the reader's. Only the reader calls it.
func (c *conn) detach(id string, st *stream) {
	c.pullMu.Lock()
	if i := slices.Index(c.pulls, st); i >= 0 {
		c.pulls = slices.Delete(c.pulls, i, i+1)
	}
	c.pullMu.Unlock()
	st.stop()
	delete(c.streams, id)
}

func (c *conn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default: // the writer is already woken
	}
}

// pullStreams is the writer's pass over the attached streams: each sends
// at most one message. It reports whether any did, and the earliest time
// a held batch is due (zero when none is held).
func (c *conn) pullStreams() (wrote bool, due time.Time) {
	c.pullMu.Lock()
	c.pulling = append(c.pulling[:0], c.pulls...)
	c.pullMu.Unlock()
	for _, st := range c.pulling {
		if c.writeFailed {
			break
		}
		w, d := st.pull()
		wrote = wrote || w
		if !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	clear(c.pulling) // hold no stream the reader has dropped
	return wrote, due
}

// writeLoop is the socket's one writer. It writes control messages and
// states first (they are small, and a reply should not queue behind a
// flood of output), then pulls a frame from each attached stream that
// has output to send, and waits when there is nothing to write: for a
// control message, a state, a stream's ring (wake), a held batch coming
// due, or the next ping.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	ticker := time.NewTicker(c.hub.opts.PingInterval)
	defer ticker.Stop()
	hold := time.NewTimer(time.Hour)
	hold.Stop()
	defer hold.Stop()
	for {
		select {
		case b := <-c.control:
			c.write(websocket.TextMessage, c.takeControl(b))
			continue
		case <-c.staleReady:
			c.writeStates()
			continue
		case <-ticker.C:
			// A flood of output must not hold back the pings: a peer
			// that only reads answers nothing else.
			c.ping()
			continue
		default:
		}
		if c.isClosing() {
			c.finish()
			return
		}
		wrote, due := c.pullStreams()
		if wrote {
			continue
		}
		if !due.IsZero() {
			hold.Reset(time.Until(due))
		}
		select {
		case <-c.ctx.Done():
			c.finish()
			return
		case b := <-c.control:
			c.write(websocket.TextMessage, c.takeControl(b))
		case <-c.staleReady:
			c.writeStates()
		case <-c.wake:
		case <-hold.C:
		case <-ticker.C:
			c.ping()
		}
		hold.Stop()
	}
}

// ping pings the peer and sends a heartbeat message.
func (c *conn) ping() {
	deadline := time.Now().Add(c.hub.opts.WriteTimeout)
	if err := c.ws.WriteControl(websocket.PingMessage, nil, deadline); err != nil {
		c.log.Debug("ping failed", "err", err)
		c.close(0, "")
		return
	}
	c.sendJSON(wire.HeartbeatMessage{Type: wire.TypeHeartbeat, Timestamp: time.Now().UnixMilli()})
}

// write writes one message unless an earlier write failed, which means
// the socket is gone. A message taken from a queue while the connection
// is closing is still written: it may be the one telling the client why.
// It reports whether the socket still takes writes. Only the writer
// goroutine calls it.
func (c *conn) write(mt int, b []byte) bool {
	if c.writeFailed {
		return false
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
	if err := c.ws.WriteMessage(mt, b); err != nil {
		c.log.Debug("write failed", "err", err)
		c.writeFailed = true
		c.close(0, "")
	}
	return !c.writeFailed
}

// drainControl writes the control messages already queued.
func (c *conn) drainControl() {
	for {
		select {
		case b := <-c.control:
			if !c.write(websocket.TextMessage, c.takeControl(b)) {
				return
			}
		default:
			return
		}
	}
}

// finish sends the chosen close frame, gives the peer closeGrace to answer
// it (the reader sees its reply and ends), then drops the socket, which
// also ends a reader still waiting on a silent peer.
func (c *conn) finish() {
	c.closeMu.Lock()
	code, text := c.closeCode, c.closeText
	c.closeMu.Unlock()
	if code == websocket.CloseGoingAway || code == CloseShareEnded {
		// Deliver what was already queued (the last session.status events
		// of a shutdown, a viewer's session.destroyed) before saying
		// goodbye.
		c.drainControl()
	}
	if code != 0 && !c.writeFailed {
		msg := websocket.FormatCloseMessage(code, text)
		if err := c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(c.hub.opts.WriteTimeout)); err != nil {
			c.log.Debug("write close frame", "err", err)
		}
	}
	close(c.farewell)
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-c.readerDone:
	case <-t.C:
	}
	_ = c.ws.Close()
}
