package sessions

import (
	"errors"
	"fmt"
	"io"
	"sync"
)

// ErrInputFull means the agent has not read the input already sent to it
// and the run's input queue is full; what was refused can be sent again
// once the agent reads.
var ErrInputFull = errors.New("the agent is not reading its input")

// maxQueuedInput bounds the input waiting for an agent that is slow to
// read: several large pastes.
const maxQueuedInput = 1 << 20

// inputQueue carries a run's input to its terminal. Writing to a terminal
// blocks while the program does not read and the terminal's input queue is
// full; callers (a connection's one reader, which must stay free to see
// its client leave) hand their input to the queue instead, and the run's
// one feeder goroutine does the blocking write. Input from different
// callers is never interleaved: each push is whole and in order.
type inputQueue struct {
	// mu protects pending and closed; ready is signalled, never waited
	// on, under it.
	mu      sync.Mutex
	pending []byte
	closed  bool
	ready   chan struct{} // cap 1: pending has bytes, or closed
	// direct, when set, writes to the terminal without waiting, returning
	// how much it took; writing reports whether the feeder holds input it
	// has not written yet. While nothing waits (the usual keystroke), push
	// writes through direct itself, saving the feeder's wake-up.
	direct  func([]byte) int
	writing bool
}

func newInputQueue() *inputQueue { return &inputQueue{ready: make(chan struct{}, 1)} }

// push queues p, or refuses all of it when the queue would exceed its
// bound or the run has ended.
func (q *inputQueue) push(p []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrNotRunning
	}
	if len(q.pending)+len(p) > maxQueuedInput {
		return fmt.Errorf("%w: %d bytes are waiting for it", ErrInputFull, len(q.pending))
	}
	if q.direct != nil && len(q.pending) == 0 && !q.writing {
		// Nothing ahead of p: it may go straight in, in order. What the
		// terminal does not take now goes to the feeder.
		p = p[q.direct(p):]
		if len(p) == 0 {
			return nil
		}
	}
	q.pending = append(q.pending, p...)
	q.signal()
	return nil
}

// busy reports whether input waits to be written to the terminal, or is
// being written.
func (q *inputQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending) > 0 || q.writing
}

// interrupt drops the input the terminal has not taken yet and queues p
// (Ctrl+C) alone, as a terminal flushes its input queue on an interrupt:
// typed-ahead text must not reach the program after it was interrupted.
func (q *inputQueue) interrupt(p []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrNotRunning
	}
	q.pending = append(q.pending[:0], p...)
	q.signal()
	return nil
}

func (q *inputQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// close ends the queue: the feeder returns once its current write ends.
func (q *inputQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.pending = nil
	q.signal()
}

// take waits for pending input and returns it, or false once closed. The
// queue keeps spare, the slice the last take returned, as its next buffer:
// the two swap, so nothing is copied.
func (q *inputQueue) take(spare []byte) ([]byte, bool) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return nil, false
		}
		if len(q.pending) > 0 {
			p := q.pending
			q.pending = spare[:0]
			q.writing = true
			q.mu.Unlock()
			return p, true
		}
		q.writing = false
		q.mu.Unlock()
		<-q.ready
	}
}

// feed writes queued input to the terminal until the queue closes or the
// terminal fails (it closed: the run ended). The run's reader starts it and
// waits for it after closing the queue and the terminal.
func (s *Session) feed(q *inputQueue, w io.Writer) {
	var buf []byte
	for {
		p, ok := q.take(buf)
		if !ok {
			return
		}
		if _, err := w.Write(p); err != nil {
			s.log.Debug("input not delivered; the terminal closed", "bytes", len(p), "err", err)
			return
		}
		buf = p
	}
}
