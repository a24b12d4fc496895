package ws

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

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
	pacer   *sessions.Pacer
	stalled bool
}

func newStream(c *conn, s *sessions.Session, since *uint64, lines int) *stream {
	ctx, cancel := context.WithCancel(c.ctx)
	return &stream{c: c, s: s, since: since, lines: lines, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// stop ends the stream and waits for its goroutine.
func (st *stream) stop() {
	st.cancel()
	<-st.done
	st.unpace()
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

// loop is the batching pull loop. The rules (docs/protocol.md): a frame
// leaves at most one interval after its first byte; after a quiet interval
// the first byte leaves at once; 64 KiB of unsent output leaves at once;
// and output that follows input (an echo) leaves at once.
func (st *stream) loop() error {
	s, interval := st.s, st.c.hub.opts.BatchInterval
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	var (
		off      uint64
		prefix   []byte
		lastSent time.Time
		// exitSent is the epoch whose run end was reported, so each run's
		// terminal.exit goes out once.
		exitSent = ^uint64(0)
		// inputsSeen is the session's input count when the last frame
		// left; more input since means the output is probably its echo.
		inputsSeen uint64
		// live is where this client starts answering terminal queries;
		// a frame ends there rather than span it.
		live uint64
	)
	state := s.StreamState()
	live = state.Live()
	if st.since != nil && *st.since >= state.Start && *st.since <= state.End {
		off = *st.since
		if err := st.sendAttached(off, false, live, false); err != nil {
			return err
		}
	} else {
		var cut bool
		off, prefix, cut = s.ReplayStart(st.lines)
		if err := st.sendAttached(off, true, live, cut); err != nil {
			return err
		}
	}

	for {
		state = s.StreamState()
		if state.Closed {
			return nil
		}
		if off < state.Start {
			// Fell more than the ring behind: start over from the ring.
			st.c.log.Debug("client fell behind the scrollback; resyncing", "session", s.ID(), "behind", state.End-off)
			// What it skipped, it never saw: answering the queries in it
			// now would type stale replies into the program.
			var cut bool
			off, prefix, cut = s.ReplayStart(st.lines)
			live = state.End
			if err := st.sendAttached(off, true, live, cut); err != nil {
				return err
			}
			continue
		}
		avail := state.End - off
		if avail == 0 {
			if state.RunEnded && exitSent != state.Epoch {
				if err := st.sendExit(state.Exit); err != nil {
					return err
				}
				exitSent = state.Epoch
				continue
			}
			if err := st.wait(state.End+1, state.Epoch, nil); err != nil {
				return err
			}
			continue
		}
		echo := state.Inputs != inputsSeen
		if avail < flushBytes && !state.RunEnded && !echo {
			if early := interval - time.Since(lastSent); early > 0 {
				timer.Reset(early)
				if err := st.wait(off+flushBytes, state.Epoch, timer.C); err != nil {
					return err
				}
				continue
			}
		}

		sent, err := st.sendOutput(off, prefix, state, live)
		if errors.Is(err, sessions.ErrOverrun) {
			continue // the next pass resyncs
		}
		if err != nil {
			return err
		}
		if sent == 0 {
			// Only an unfinished character is waiting: wait for the rest.
			if err := st.wait(state.End+1, state.Epoch, nil); err != nil {
				return err
			}
			continue
		}
		off += uint64(sent)
		prefix = nil
		lastSent = time.Now()
		inputsSeen = state.Inputs
	}
}

// sendOutput pulls up to maxFrameBytes from off, but not past live when
// it starts before it, and hands them over as one frame, holding back an
// unfinished UTF-8 character unless the run has ended and it is the last
// thing the program wrote. It returns how many stream bytes the frame
// carried.
func (st *stream) sendOutput(off uint64, prefix []byte, state sessions.StreamState, live uint64) (int, error) {
	rb := readBufs.Get().(*[]byte)
	defer readBufs.Put(rb)
	buf := *rb
	if off < live && live-off < uint64(len(buf)) {
		buf = buf[:live-off]
	}
	n, err := st.s.ReadOutput(buf, off)
	if err != nil {
		return 0, err
	}
	chunk := buf[:n]
	if !state.RunEnded || off+uint64(n) < state.End {
		chunk = chunk[:completeUTF8(chunk)]
	}
	if len(chunk) == 0 {
		return 0, nil
	}
	end := off + uint64(len(chunk))
	b := appendOutput(getFrame(), st.s.ID(), prefix, chunk, end)
	if err := st.send(b); err != nil {
		return 0, err
	}
	st.s.NoteDelivered(end)
	return len(chunk), nil
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
	b, err := json.Marshal(msg)
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

func (st *stream) sendExit(e sessions.ExitStatus) error {
	return st.sendJSON(wire.ExitMessage{Type: wire.TypeTerminalExit, SessionID: st.s.ID(), ExitCode: e.Code, Signal: e.Signal})
}
