package ws

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/agentmux/agentmux/sessions/output"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// stream sends one session's output to one connection. Its goroutine pulls
// from the session's ring at its own offset; it is the only sender of this
// session's session.attached, terminal.output and terminal.exit on this
// connection, so they arrive in order.
type stream struct {
	c     *conn
	s     *sessions.Session
	since *uint64
	// lines is how many lines the client keeps, for its replays; 0 means
	// replay the whole ring.
	lines int

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// pacer is the client's hold on the program while it asks to pace it
	// (terminal.ack); stalled reports that it stopped making progress
	// once, after which this attachment never paces again. Owned by the
	// connection's reader goroutine, like the stream itself.
	pacer   *output.Pacer
	stalled bool
}

func newStream(c *conn, s *sessions.Session, since *uint64, lines int) *stream {
	ctx, cancel := context.WithCancel(c.ctx)
	return &stream{c: c, s: s, since: since, lines: lines, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// stop ends the stream and waits for its goroutine.
func (st *stream) stop() {
	st.halt()
	st.unpace()
}

// leave ends the stream of a connection that is gone. Its hold on the
// program, if it paced it, lasts a little longer (see Pacer.Leave): a
// reloading page comes back to the output where it left it.
func (st *stream) leave() {
	st.halt()
	if st.pacer != nil {
		st.pacer.Leave()
		st.pacer = nil
	}
}

// halt stops the stream's goroutine and waits for it.
func (st *stream) halt() {
	st.cancel()
	<-st.done
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

// isDone reports whether the stream has ended by itself (its session
// closed).
func (st *stream) isDone() bool {
	select {
	case <-st.done:
		return true
	default:
		return false
	}
}

func (st *stream) run() {
	defer close(st.done)
	defer st.cancel()
	if err := st.loop(); err != nil && !errors.Is(err, context.Canceled) {
		st.c.log.Warn("stream ended", "session", st.s.ID(), "err", err)
	}
}

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

// loop is the batching pull loop: it attaches the client, then takes the
// steps nextStep decides on until the session closes or the stream stops.
func (st *stream) loop() error {
	interval := st.c.hub.opts.BatchInterval
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	cur, err := st.attach()
	if err != nil {
		return err
	}
	for {
		state := st.s.StreamState()
		next, hold := nextStep(cur.pull(state, interval))
		if next == stepStop {
			return nil
		}
		if err := st.take(next, hold, &cur, state, timer); err != nil {
			return err
		}
	}
}

// cursor is where the pull loop is in the session's stream. Only the
// loop's goroutine uses it.
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
// the ring still holds it, else a replay of the client's lines. It returns
// the cursor the loop starts from.
func (st *stream) attach() (cursor, error) {
	cur := cursor{exitSent: ^uint64(0)}
	state := st.s.StreamState()
	cur.live = state.Live()
	if st.since != nil && *st.since >= state.Start && *st.since <= state.End {
		cur.off = *st.since
		return cur, st.sendAttached(cur.off, false, cur.live, false)
	}
	var cut bool
	cur.off, cur.prefix, cut = st.s.ReplayStart(st.lines)
	return cur, st.sendAttached(cur.off, true, cur.live, cut)
}

// take carries out one step of the pull loop other than stepStop; hold is
// how long a stepHold waits at most, timed by timer.
func (st *stream) take(next step, hold time.Duration, cur *cursor, state output.State, timer *time.Timer) error {
	switch next {
	case stepResync:
		return st.resync(cur, state)
	case stepExit:
		if err := st.sendExit(state.Exit); err != nil {
			return err
		}
		cur.exitSent = state.Epoch
		return nil
	case stepWait:
		return st.wait(state.End+1, state.Epoch, nil)
	case stepHold:
		timer.Reset(hold)
		return st.wait(cur.off+flushBytes, state.Epoch, timer.C)
	}
	return st.sendNext(cur, state)
}

// resync starts a client that fell more than the ring behind over from
// the ring, with a replay.
func (st *stream) resync(cur *cursor, state output.State) error {
	st.c.log.Debug("client fell behind the scrollback; resyncing", "session", st.s.ID(), "behind", state.End-cur.off)
	// What it skipped, it never saw: answering the queries in it now
	// would type stale replies into the program.
	var cut bool
	cur.off, cur.prefix, cut = st.s.ReplayStart(st.lines)
	cur.live = state.End
	return st.sendAttached(cur.off, true, cur.live, cut)
}

// sendNext sends the next frame from the cursor and moves it past.
func (st *stream) sendNext(cur *cursor, state output.State) error {
	b, end, err := st.frame(cur, state)
	if errors.Is(err, output.ErrOverrun) {
		return nil // the next pass resyncs
	}
	if err != nil {
		return err
	}
	if b == nil {
		// Only an unfinished character is waiting: wait for the rest.
		return st.wait(state.End+1, state.Epoch, nil)
	}
	if err := st.send(b); err != nil {
		return err
	}
	st.s.NoteDelivered(end)
	cur.off = end
	cur.prefix = nil
	cur.lastSent = time.Now()
	cur.inputsSeen = state.Inputs
	return nil
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

// wait blocks until the stream reaches target, the epoch moves on, timeout
// fires (when not nil) or the stream is stopped.
func (st *stream) wait(target, epoch uint64, timeout <-chan time.Time) error {
	ready, cancel := st.s.WaitOutput(target, epoch)
	defer cancel()
	select {
	case <-ready:
	case <-timeout:
	case <-st.ctx.Done():
		return st.ctx.Err()
	}
	return nil
}

// send hands a frame to the connection's writer, waiting as long as it
// takes: meanwhile the ring moves on without us.
func (st *stream) send(b []byte) error {
	select {
	case st.c.output <- b:
		return nil
	case <-st.ctx.Done():
		putFrame(b)
		return st.ctx.Err()
	}
}

func (st *stream) sendJSON(msg any) error {
	b, err := wire.Marshal(msg)
	if err != nil {
		return err
	}
	return st.send(b)
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
