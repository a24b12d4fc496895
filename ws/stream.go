package ws

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/output"
	"github.com/agentmux/agentmux/wire"
)

// stream is one session attached to one connection: the connection's
// writer pulls the session's output from its ring at the stream's own
// offset, and it is the only sender of this session's session.attached,
// terminal.output and terminal.exit on this connection, so they arrive in
// order. A stream has no goroutine: its ring wakes the writer through the
// stream's watch.
//
// Its parts have two owners: the reader attaches, detaches and paces it;
// the writer moves its cursor.
type stream struct {
	c     *conn
	s     *sessions.Session
	since *uint64
	// lines is how many lines the client keeps, for its replays; 0 means
	// replay the whole ring.
	lines int

	// watch wakes the connection's writer when what the stream waits for
	// comes; closed when the stream ends, by whichever of the two owners
	// gets there first (Close is idempotent).
	watch *output.Watch
	// ended reports that the stream is over: the reader detached it, or
	// the writer found its session closed (then the reader drops it at the
	// next attach) or failed to send it.
	ended atomic.Bool

	// Owned by the writer goroutine: started reports that session.attached
	// went out, and cur is where the stream is since.
	started bool
	cur     cursor

	// pacer is the client's hold on the program while it asks to pace it
	// (terminal.ack); stalled reports that it stopped making progress
	// once, after which this attachment never paces again. Owned by the
	// connection's reader goroutine.
	pacer   *output.Pacer
	stalled bool
}

func newStream(c *conn, s *sessions.Session, since *uint64, lines int) *stream {
	return &stream{c: c, s: s, since: since, lines: lines, watch: s.WatchOutput(c.wake)}
}

// stop ends the stream, and the client's hold on the program with it.
func (st *stream) stop() {
	st.end()
	st.unpace()
}

// leave ends the stream of a connection that is gone. Its hold on the
// program, if it paced it, lasts a little longer (see Pacer.Leave): a
// reloading page comes back to the output where it left it.
func (st *stream) leave() {
	st.end()
	if st.pacer != nil {
		st.pacer.Leave()
		st.pacer = nil
	}
}

// end ends the stream: the writer pulls it no more, and its ring lets go
// of its watch. Safe from either owner.
func (st *stream) end() {
	st.ended.Store(true)
	st.watch.Close()
}

// ack records that the client consumed the output up to seq; pace says
// whether it asks to pace the program (a visible terminal that keeps up),
// or stops doing so (a hidden one).
func (st *stream) ack(seq uint64, pace bool) {
	if st.pacer != nil && st.pacer.Stalled() {
		st.stalled = true
		st.unpace()
	}
	if !pace || st.stalled {
		st.unpace()
		return
	}
	if st.pacer == nil {
		st.pacer = st.s.Pace(seq)
	}
	st.pacer.Ack(seq)
}

func (st *stream) unpace() {
	if st.pacer != nil {
		st.pacer.Close()
		st.pacer = nil
	}
}

// isDone reports whether the stream has ended.
func (st *stream) isDone() bool { return st.ended.Load() }

// readBufs holds pull buffers, so only streams in the middle of building a
// frame hold one.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, maxFrameBytes)
	return &b
}}

// frames holds encoded frame buffers; the writer returns them after
// writing.
var frames = sync.Pool{New: func() any {
	b := make([]byte, 0, flushBytes)
	return &b
}}

func getFrame() []byte { return (*frames.Get().(*[]byte))[:0] }

func putFrame(b []byte) {
	if cap(b) > 4*maxFrameBytes {
		return // an outlier: let it go rather than pin it
	}
	frames.Put(&b)
}

// pull takes the steps nextStep decides on until the stream has sent one
// message or must wait for its ring: at most one frame per stream and
// pass of the writer, so streams take turns and control messages come
// between. It reports whether it wrote, and, when it holds a small batch
// back, when that is due (zero otherwise); the stream's watch signals
// the writer for anything sooner. Only the writer calls it.
func (st *stream) pull() (bool, time.Time) {
	if st.isDone() {
		return false, time.Time{}
	}
	if !st.started {
		st.started = true
		return st.wrote(st.attach()), time.Time{}
	}
	interval := st.c.hub.opts.BatchInterval
	for {
		state := st.s.StreamState()
		next, hold := nextStep(st.cur.pull(state, interval))
		switch next {
		case stepStop:
			st.end()
			return false, time.Time{}
		case stepResync:
			return st.wrote(st.resync(state)), time.Time{}
		case stepExit:
			st.cur.exitSent = state.Epoch
			return st.wrote(st.sendExit(state.Exit)), time.Time{}
		case stepWait:
			st.watch.Arm(state.End+1, state.Epoch)
			return false, time.Time{}
		case stepHold:
			st.watch.Arm(st.cur.off+flushBytes, state.Epoch)
			return false, time.Now().Add(hold)
		}
		sent, err := st.sendNext(state)
		if errors.Is(err, output.ErrOverrun) {
			continue // the ring moved past the offset meanwhile: resync
		}
		if err != nil || sent {
			return st.wrote(err), time.Time{}
		}
		// Only an unfinished character is waiting: wait for the rest.
		st.watch.Arm(state.End+1, state.Epoch)
		return false, time.Time{}
	}
}

// wrote reports whether a send went out; one that failed for a reason
// other than the socket (which closes the connection) ends the stream.
func (st *stream) wrote(err error) bool {
	if err != nil {
		st.c.log.Warn("stream ended", "session", st.s.ID(), "err", err)
		st.end()
		return false
	}
	return true
}

// cursor is where a stream is in its session's output. Only the
// connection's writer uses it.
type cursor struct {
	// off is the next stream offset to send.
	off uint64
	// prefix goes before the next frame's output (a replay's preamble).
	prefix []byte
	// lastSent is when the last frame left; zero before the first.
	lastSent time.Time
	// exitSent is the epoch whose run end was reported, so each run's
	// terminal.exit goes out once.
	exitSent uint64
	// inputsSeen is the session's input count when the last frame
	// left; more input since means the output is probably its echo.
	inputsSeen uint64
	// live is where this client starts answering terminal queries;
	// a frame ends there rather than span it.
	live uint64
}

// pull is what nextStep needs to know of the cursor and the stream.
func (cur *cursor) pull(state output.State, interval time.Duration) pull {
	return pull{
		off:         cur.off,
		start:       state.Start,
		end:         state.End,
		closed:      state.Closed,
		runEnded:    state.RunEnded,
		exitPending: state.RunEnded && cur.exitSent != state.Epoch,
		echo:        state.Inputs != cur.inputsSeen,
		sinceSent:   time.Since(cur.lastSent),
		interval:    interval,
	}
}

// attach sends session.attached: a resume from the client's offset when
// the ring still holds it, else a replay of the client's lines. It sets
// the cursor the stream starts from.
func (st *stream) attach() error {
	cur := &st.cur
	*cur = cursor{exitSent: ^uint64(0)}
	state := st.s.StreamState()
	cur.live = state.Live()
	if st.since != nil && *st.since >= state.Start && *st.since <= state.End {
		cur.off = *st.since
		return st.sendAttached(cur.off, false, cur.live, false)
	}
	var cut bool
	cur.off, cur.prefix, cut = st.s.ReplayStart(st.lines)
	return st.sendAttached(cur.off, true, cur.live, cut)
}

// resync starts a client that fell more than the ring behind over from
// the ring, with a replay.
func (st *stream) resync(state output.State) error {
	cur := &st.cur
	st.c.log.Debug("client fell behind the scrollback; resyncing", "session", st.s.ID(), "behind", state.End-cur.off)
	// What it skipped, it never saw: answering the queries in it now
	// would type stale replies into the program.
	var cut bool
	cur.off, cur.prefix, cut = st.s.ReplayStart(st.lines)
	cur.live = state.End
	return st.sendAttached(cur.off, true, cur.live, cut)
}

// sendNext sends the next frame from the cursor and moves it past. It
// reports false, and no error, when only an unfinished character waits.
func (st *stream) sendNext(state output.State) (bool, error) {
	cur := &st.cur
	b, end, err := st.frame(cur, state)
	if err != nil || b == nil {
		return false, err
	}
	// The batch interval counts from when a frame leaves for the socket,
	// not from when a slow socket has taken all of it.
	cur.lastSent = time.Now()
	st.send(b)
	putFrame(b)
	st.s.NoteDelivered(end)
	cur.off = end
	cur.prefix = nil
	cur.inputsSeen = state.Inputs
	return true, nil
}

// step is what the pull loop does next.
type step int

const (
	// stepSend sends a frame of the output from the client's offset now.
	stepSend step = iota
	// stepStop ends the stream: the session closed.
	stepStop
	// stepResync starts the client over from the ring: it fell more than
	// the ring behind.
	stepResync
	// stepExit reports the end of the run, all of whose output was sent.
	stepExit
	// stepWait waits for output: all of it was sent.
	stepWait
	// stepHold waits, for at most the returned time, for a small batch to
	// grow to flushBytes before it is sent.
	stepHold
)

// pull is what the pull loop knows when it decides its next step.
type pull struct {
	// off is the client's offset in the session's stream; start and end
	// bound what the ring holds.
	off, start, end uint64
	// closed reports whether the session has closed.
	closed bool
	// runEnded reports whether the run has ended: its output then leaves
	// at once, as there will be no more to batch it with.
	runEnded bool
	// exitPending reports whether the run has ended and this client has
	// not been told.
	exitPending bool
	// echo reports whether input came since the last frame, so the
	// output is probably its echo, which leaves at once.
	echo bool
	// sinceSent is the time since the last frame left; since the start of
	// time before the first.
	sinceSent time.Duration
	// interval is the longest a frame's first byte waits for company.
	interval time.Duration
}

// nextStep decides what the pull loop does next, and for stepHold for how
// long. The rules (docs/protocol.md): a frame leaves at most one interval
// after its first byte; after a quiet interval the first byte leaves at
// once; flushBytes of unsent output leave at once; output that follows
// input (an echo) leaves at once; the run's end is reported after all its
// output.
func nextStep(p pull) (step, time.Duration) {
	switch {
	case p.closed:
		return stepStop, 0
	case p.off < p.start:
		return stepResync, 0
	}
	avail := p.end - p.off
	switch {
	case avail == 0 && p.exitPending:
		return stepExit, 0
	case avail == 0:
		return stepWait, 0
	case avail < flushBytes && !p.runEnded && !p.echo:
		if early := p.interval - p.sinceSent; early > 0 {
			return stepHold, early
		}
	}
	return stepSend, 0
}

// frame encodes the next frame from the cursor: up to maxFrameBytes of
// output, but not past live when it starts before it, holding back an
// unfinished UTF-8 character unless the run has ended and it is the last
// thing the program wrote. It returns the frame and the stream offset it
// ends at; a nil frame when only an unfinished character waits.
func (st *stream) frame(cur *cursor, state output.State) ([]byte, uint64, error) {
	rb := readBufs.Get().(*[]byte)
	defer readBufs.Put(rb)
	buf := *rb
	if cur.off < cur.live && cur.live-cur.off < uint64(len(buf)) {
		buf = buf[:cur.live-cur.off]
	}
	n, err := st.s.ReadOutput(buf, cur.off)
	if err != nil {
		return nil, 0, err
	}
	chunk := buf[:n]
	if !state.RunEnded || cur.off+uint64(n) < state.End {
		chunk = chunk[:wire.CompleteUTF8(chunk)]
	}
	if len(chunk) == 0 {
		return nil, 0, nil
	}
	end := cur.off + uint64(len(chunk))
	return wire.AppendOutput(getFrame(), st.s.ID(), cur.prefix, chunk, end), end, nil
}

// send writes a message to the socket. Only the writer calls it; a
// failed write closes the connection, which ends every stream with it.
func (st *stream) send(b []byte) { st.c.write(websocket.TextMessage, b) }

func (st *stream) sendJSON(msg any) error {
	b, err := wire.Marshal(msg)
	if err != nil {
		return err
	}
	st.send(b)
	return nil
}

func (st *stream) sendAttached(seq uint64, reset bool, live uint64, partial bool) error {
	info := st.s.Info()
	return st.sendJSON(wire.AttachedMessage{
		Type:      wire.TypeSessionAttached,
		SessionID: info.ID,
		Seq:       seq,
		Cols:      info.Cols,
		Rows:      info.Rows,
		Status:    string(info.Status),
		Reset:     reset,
		Live:      max(live, seq),
		Partial:   partial,
	})
}

func (st *stream) sendExit(e output.ExitStatus) error {
	return st.sendJSON(wire.ExitMessage{Type: wire.TypeTerminalExit, SessionID: st.s.ID(), ExitCode: e.Code, Signal: e.Signal})
}
