package output

import (
	"time"
)

// Flow control. A reader that takes output no faster than it can use it
// (a browser parsing into xterm.js) falls a ring behind a fast program and
// is resynced, losing the middle. A client that acknowledges what it has
// consumed can ask instead to pace the program: while any such client is
// keeping up, the run's reader stops reading the terminal (so the program
// blocks on its writes, as under a slow real terminal) rather than
// overwrite output the fastest of them has not consumed. Only the fastest
// counts, so a slower pacer still falls behind and is resynced; and one
// that stops making progress for Timing.StallAfter while behind paces no
// more, for good, so a stuck client can never hold the program. A client
// that goes away (a page reloading) keeps its hold as long as a stalled
// one would, unless another client takes over sooner: the page that comes
// back finds the output where it left it.

// DefaultStallAfter is the stall bound sessions use unless told otherwise.
const DefaultStallAfter = 2 * time.Second

// Pacer is one client's hold on a session's program; see Session.Pace.
// Its methods are safe for concurrent use.
type Pacer struct {
	r *Ring
	// stallAfter is how long it may go without consuming anything while
	// output waits for it before it stops pacing.
	stallAfter time.Duration
	// Guarded by r.mu.
	ack      uint64    // the furthest offset it consumed
	progress time.Time // when ack last moved on, or when it was caught up
	stalled  bool      // it stopped making progress: it paces no more
	closed   bool
	left     bool // its client went away; see Leave
}

// Pace makes the caller, a client reading the output from offset at, pace
// the writer until Close or until it makes no progress for stallAfter
// while output waits for it.
func (r *Ring) Pace(at uint64, stallAfter time.Duration) *Pacer {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &Pacer{r: r, stallAfter: stallAfter, ack: min(max(at, r.start()), r.end), progress: time.Now()}
	if r.pacers == nil {
		r.pacers = make(map[*Pacer]struct{})
	}
	for q := range r.pacers {
		if q.left {
			delete(r.pacers, q) // this client takes over from one that went
		}
	}
	r.pacers[p] = struct{}{}
	return p
}

// Ack records that the client consumed the output up to seq.
func (p *Pacer) Ack(seq uint64) {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	seq = min(seq, r.end)
	if p.closed || p.stalled || seq <= p.ack {
		return
	}
	p.ack, p.progress = seq, time.Now()
	r.wakeWriterLocked()
}

// Stalled reports whether the pacer stopped making progress and so paces
// no more.
func (p *Pacer) Stalled() bool {
	p.r.mu.Lock()
	defer p.r.mu.Unlock()
	return p.stalled
}

// Leave ends the caller's use of the pacer when its client went away
// without saying it stopped consuming: the connection closed, most often
// because the page is reloading. The hold lasts until the pacer would
// have stalled (StallAfter without progress, counted from now if it was
// caught up), or until another client paces the program, whichever is
// first: a page back within that time finds the output where it left it
// instead of a ring further on, and a client that never comes back holds
// the program no longer than a stalled one.
func (p *Pacer) Leave() { p.end(true) }

// Close ends the pacer's hold.
func (p *Pacer) Close() { p.end(false) }

// end ends the caller's use of the pacer, and its hold unless the client
// left (see Leave).
func (p *Pacer) end(left bool) {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	if left {
		p.left = true
		if p.ack >= r.end {
			p.progress = time.Now() // caught up until now
		}
	} else {
		delete(r.pacers, p)
	}
	r.wakeWriterLocked()
}

func (r *Ring) wakeWriterLocked() {
	select {
	case r.paced <- struct{}{}:
	default:
	}
}

// roomLocked returns how far the writer may write, whether any pacer
// holds it at all, and when the next pacer would stall if nothing moves.
// Pacers that have stalled are dropped on the way. mu must be held.
func (r *Ring) roomLocked(now time.Time) (limit uint64, held bool, check time.Time) {
	for p := range r.pacers {
		if p.ack >= r.end && !p.left {
			p.progress = now // caught up: nothing waits for it
		}
		if now.Sub(p.progress) >= p.stallAfter {
			p.stalled = true
			delete(r.pacers, p)
			continue
		}
		limit, held = max(limit, p.ack+uint64(len(r.buf))), true
		if deadline := p.progress.Add(p.stallAfter); check.IsZero() || deadline.Before(check) {
			check = deadline
		}
	}
	return limit, held, check
}

// WaitRoom waits until n more bytes can be written without overwriting
// output the fastest pacer has not consumed, or until no pacer holds the
// writer, or release is closed. Only the writer calls it.
func (r *Ring) WaitRoom(n int, release <-chan struct{}) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		r.mu.Lock()
		limit, held, check := r.roomLocked(time.Now())
		end := r.end
		r.mu.Unlock()
		if !held || end+uint64(n) <= limit {
			return
		}
		wait := time.Until(check)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-r.paced:
		case <-timer.C:
		case <-release:
			return
		}
	}
}
