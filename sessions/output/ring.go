// Package output holds a session's terminal output stream: a ring of its
// most recent bytes, addressed by their offset in the whole stream; where
// a replay must start and the modes it must re-enter (a little terminal
// state tracking, vt.go); how the current run ended; and the pacing of
// the writer by readers that acknowledge what they consumed (pace.go).
//
// One goroutine writes; any number of readers pull from their own
// offsets and never make the writer wait (but pacers, by their own
// choice, while they keep up). A reader that falls more than the ring
// behind gets ErrOverrun and starts again from ReplayStart.
package output

import (
	"bytes"
	"errors"
	"slices"
	"sync"
)

// ErrOverrun reports that a reader asked for output the ring no longer
// holds: it fell more than the ring's size behind and must resync.
var ErrOverrun = errors.New("output no longer in scrollback")

// Ring keeps the last len(buf) bytes of a session's output stream. Bytes are
// addressed by their offset in the whole stream (seq), so byte o lives at
// buf[o%len(buf)] for as long as the ring holds it.
//
// One goroutine writes (the session's PTY reader); any number of readers
// copy out from their own offsets. Writers never wait for readers.
type Ring struct {
	// mu protects the fields below. It is held only for copies and waiter
	// bookkeeping, never across I/O.
	mu  sync.Mutex
	buf []byte
	end uint64 // offset just after the newest byte
	// base is the offset of the first byte this ring ever held: 0, or
	// where a restored screen began. Nothing below it is held. baseCut
	// reports that a replay may not begin there (see Restore).
	base    uint64
	baseCut bool
	// tail tracks the terminal state at the oldest byte still held, by
	// scanning bytes as they are evicted; a replay starts from it.
	tail vtState
	// tailAtLineStart reports whether the last evicted byte ended a line
	// outside any escape sequence, so the oldest held byte starts one.
	tailAtLineStart bool
	// waiters are readers blocked until end reaches their target;
	// watches are the armed Watches, the same for readers that share one
	// wake-up channel across rings.
	waiters []*waiter
	watches []*Watch
	// st holds the run and close flags, the epoch and the input count; its
	// Start and End are filled in only in copies handed out by state.
	st State
	// echoPending reports whether input arrived since the last write, so
	// the next write, likely its echo, wakes every reader whatever its
	// target: an echo must not wait for a batch to fill.
	echoPending bool
	// pacers are the clients that pace the writer (see pace.go); paced
	// (cap 1) wakes a writer waiting for room when one moves or leaves.
	pacers map[*Pacer]struct{}
	paced  chan struct{}
}

type waiter struct {
	target, epoch uint64
	ch            chan struct{}
}

// NewRing returns an empty ring that holds the last size bytes.
func NewRing(size int) *Ring {
	return &Ring{buf: make([]byte, size), paced: make(chan struct{}, 1)}
}

// start returns the offset of the oldest byte held. mu must be held.
func (r *Ring) start() uint64 {
	if size := uint64(len(r.buf)); r.end > r.base+size {
		return r.end - size
	}
	return r.base
}

// Write appends p, evicting the oldest bytes when the ring is full, and
// wakes the readers whose targets it reaches; after input, every reader,
// as p is then likely its echo, which must not wait for a batch to fill.
func (r *Ring) Write(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p) == 0 {
		return
	}
	size := uint64(len(r.buf))
	oldStart := r.start()
	newEnd := r.end + uint64(len(p))
	if newEnd > r.base+size {
		if newStart := newEnd - size; newStart > oldStart {
			r.evict(oldStart, newStart, p)
		}
	}
	// Only the last size bytes of p can survive.
	if uint64(len(p)) > size {
		p = p[uint64(len(p))-size:]
	}
	at := (newEnd - uint64(len(p))) % size
	n := copy(r.buf[at:], p)
	copy(r.buf, p[n:])
	r.end = newEnd

	echo := r.echoPending
	r.echoPending = false
	kept := r.waiters[:0]
	for _, w := range r.waiters {
		if !echo && w.target > r.end {
			kept = append(kept, w)
		} else {
			close(w.ch)
		}
	}
	clear(r.waiters[len(kept):])
	r.waiters = kept
	r.fireWatchesLocked(echo)
}

// evict feeds the bytes in [from, to) to the tail tracker before they are
// overwritten. The bytes below r.end are in buf; the rest are the start of
// p, the write in progress. mu must be held.
func (r *Ring) evict(from, to uint64, p []byte) {
	size := uint64(len(r.buf))
	for from < to && from < r.end {
		i := from % size
		j := min(size, i+(min(to, r.end)-from))
		r.tail.feed(r.buf[i:j])
		from += j - i
	}
	if from < to {
		r.tail.feed(p[from-r.end : to-r.end])
	}
	last := to - 1
	var c byte
	if last < r.end {
		c = r.buf[last%size]
	} else {
		c = p[last-r.end]
	}
	r.tailAtLineStart = c == '\n' && r.tail.isGround()
}

// ReadAt copies the bytes from off onwards into p. It returns ErrOverrun
// when off is older than the ring holds.
func (r *Ring) ReadAt(p []byte, off uint64) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.readAtLocked(p, off)
}

func (r *Ring) readAtLocked(p []byte, off uint64) (int, error) {
	if off < r.start() {
		return 0, ErrOverrun
	}
	if off >= r.end {
		return 0, nil
	}
	size := uint64(len(r.buf))
	want := min(uint64(len(p)), r.end-off)
	i := off % size
	n := copy(p[:want], r.buf[i:min(size, i+want)])
	n += copy(p[n:want], r.buf)
	return n, nil
}

// Since returns a copy of the output from off (or the oldest byte held),
// at most its last n bytes.
func (r *Ring) Since(off uint64, n int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	off = max(off, r.start(), r.end-min(r.end, uint64(n)))
	p := make([]byte, r.end-min(r.end, off))
	m, _ := r.readAtLocked(p, off)
	return p[:m]
}

// Last returns a copy of the last n bytes of output, or fewer when the
// ring holds fewer.
func (r *Ring) Last(n int) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	off := max(r.start(), r.end-min(r.end, uint64(n)))
	p := make([]byte, r.end-off)
	m, _ := r.readAtLocked(p, off) // off is within the ring
	return p[:m]
}

// ExitStatus tells how a run's process ended: the last thing in its stream.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when a signal killed it.
	Code int
	// Signal is the killing signal's number, or 0.
	Signal int
}

// State is a consistent view of a session's output stream.
type State struct {
	// Start is the oldest offset the ring still holds; End the offset just
	// after the newest byte.
	Start, End uint64
	// Epoch changes whenever a run starts or ends or the session closes, so
	// a reader can wait for "anything new" without spinning on a state it
	// has already handled.
	Epoch uint64
	// RunEnded reports whether the process that produced the output has
	// ended with every byte of it in the ring; Exit says how it ended.
	RunEnded bool
	Exit     ExitStatus
	// Closed reports whether the session is gone for good.
	Closed bool
	// Inputs counts writes to the terminal. Output that follows an input
	// is likely its echo, which a reader should send without waiting.
	Inputs uint64
	// RunStart is the offset where the latest run's output begins: what
	// comes before it came from an earlier run or an earlier server, and
	// no terminal query in it can be answered. For a session restored
	// after a restart, and not resumed yet, it is the end of its screen.
	RunStart uint64
	// Delivered is the furthest offset any reader has handed to a client:
	// output beyond it has reached nobody yet.
	Delivered uint64
}

// Live returns the offset from which output is new to every client:
// terminal queries before it were answered by whoever saw them, or cannot
// be answered (an earlier run's, or a run that ended). A client answers
// only the queries at or after it.
func (st State) Live() uint64 {
	if st.RunEnded || st.Closed {
		return st.End
	}
	return max(st.RunStart, min(st.Delivered, st.End))
}

// Wait returns a channel that is closed once the stream's end reaches
// target or the epoch moves past epoch, and a function that withdraws the
// wait. Calling the function after the channel closed is harmless.
func (r *Ring) Wait(target, epoch uint64) (<-chan struct{}, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &waiter{target: target, epoch: epoch, ch: make(chan struct{})}
	if r.end >= target || r.st.Epoch != epoch {
		close(w.ch)
		return w.ch, func() {}
	}
	r.waiters = append(r.waiters, w)
	return w.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, x := range r.waiters {
			if x == w {
				r.waiters = append(r.waiters[:i], r.waiters[i+1:]...)
				return
			}
		}
	}
}

// Watch is Wait for a reader that follows several rings: instead of a
// channel of its own per wait, it signals wake, which the reader shares
// between its watches on every ring it follows, and then looks at each
// ring to see which moved. A connection's writer pulls every session it
// is attached to this way, with no goroutine per session.
//
// A Watch fires once per Arm. Its methods are safe for concurrent use.
type Watch struct {
	r *Ring
	// wake gets a send that never blocks: give it room for one (cap 1),
	// and a signal that finds it full is one the reader has yet to take,
	// so none is lost that matters.
	wake chan<- struct{}
	// Guarded by r.mu. armed reports whether the watch is in r.watches,
	// waiting for target or a move past epoch.
	target, epoch uint64
	armed, closed bool
}

// Watch returns an unarmed watch on the ring that signals wake.
func (r *Ring) Watch(wake chan<- struct{}) *Watch { return &Watch{r: r, wake: wake} }

// Arm makes the watch signal its channel once the stream's end reaches
// target, or the epoch moves past epoch, or output follows input (an echo,
// as for Wait); at once when the end or the epoch already has. It
// replaces what the watch waited for before. A closed watch stays quiet.
func (w *Watch) Arm(target, epoch uint64) {
	r := w.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.closed {
		return
	}
	if r.end >= target || r.st.Epoch != epoch {
		w.disarmLocked()
		w.signal()
		return
	}
	w.target, w.epoch = target, epoch
	if !w.armed {
		w.armed = true
		r.watches = append(r.watches, w)
	}
}

// Close disarms the watch for good: the ring lets go of it, and Arm does
// nothing after.
func (w *Watch) Close() {
	w.r.mu.Lock()
	defer w.r.mu.Unlock()
	w.closed = true
	w.disarmLocked()
}

func (w *Watch) signal() {
	select {
	case w.wake <- struct{}{}:
	default: // a signal is already waiting for the reader
	}
}

// disarmLocked takes the watch out of the ring's list. r.mu must be held.
func (w *Watch) disarmLocked() {
	if !w.armed {
		return
	}
	w.armed = false
	r := w.r
	if i := slices.Index(r.watches, w); i >= 0 {
		r.watches = slices.Delete(r.watches, i, i+1)
	}
}

// fireWatchesLocked signals and disarms the armed watches whose target
// the end reached, or all of them. r.mu must be held.
func (r *Ring) fireWatchesLocked(all bool) {
	kept := r.watches[:0]
	for _, w := range r.watches {
		if all || w.target <= r.end {
			w.armed = false
			w.signal()
		} else {
			kept = append(kept, w)
		}
	}
	clear(r.watches[len(kept):])
	r.watches = kept
}

// Update changes the run and close flags, moves the epoch on and wakes
// every reader.
func (r *Ring) Update(change func(*State)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change(&r.st)
	r.st.Epoch++
	for _, w := range r.waiters {
		close(w.ch)
	}
	clear(r.waiters)
	r.waiters = r.waiters[:0]
	r.fireWatchesLocked(true)
}

// StartRun marks where a new run's output begins. Unless it is the
// session's first, whose terminal is fresh, it first writes the sequences
// that take a terminal left by the last run back to the defaults (see
// vtState.runReset), so every client, live or replaying, starts the new
// run on a clean terminal; note, when not empty, follows the reset. The
// caller makes sure no run writes meanwhile.
func (r *Ring) StartRun(first bool, note []byte) {
	r.mu.Lock()
	var reset []byte
	if !first {
		st, last := r.headLocked()
		reset = st.runReset(last)
	}
	r.mu.Unlock()
	r.Write(append(reset, note...))
	r.Update(func(st *State) {
		st.RunEnded = false
		st.RunStart = r.end
	})
}

// headLocked returns the terminal state after the newest byte, and that
// byte (0 when the ring is empty). It scans the whole ring: for the rare
// questions about the present, not for every write. r.mu must be held.
func (r *Ring) headLocked() (vtState, byte) {
	st := r.tail // a copy: the modes where the ring begins
	size := uint64(len(r.buf))
	var last byte
	if r.end > r.start() {
		last = r.buf[(r.end-1)%size]
	}
	for off := r.start(); off < r.end; {
		i := off % size
		j := min(size, i+(r.end-off))
		st.feed(r.buf[i:j])
		off += j - i
	}
	return st, last
}

// BracketedPaste reports whether the program has asked for pastes to be
// marked (mode 2004) and not taken it back.
func (r *Ring) BracketedPaste() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, _ := r.headLocked()
	return st.modes.bracketedPaste
}

// NoteDelivered records that a reader handed output up to off to a
// client.
func (r *Ring) NoteDelivered(off uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Delivered = max(r.st.Delivered, off)
}

// NoteInput records that input was written to the terminal.
func (r *Ring) NoteInput() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.st.Inputs++
	r.echoPending = true
}

// State returns the stream's bounds and flags, read together.
func (r *Ring) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Start, st.End = r.start(), r.end
	return st
}

// ReplayStart returns where a replay of the ring should begin and the
// escape sequences that restore the terminal modes in force there. The start
// is the first line boundary outside any escape sequence, so a replay never
// opens mid-character or mid-sequence; when the ring has never evicted a
// byte, it is simply the stream's start.
//
// lines, when above 0, is how many lines the client keeps (its scrollback
// and screen): a replay then starts no earlier than the line boundary that
// leaves that many complete lines, since a terminal that keeps only the
// Last lines would parse the older ones just to drop them. A ring of short
// lines (a build log, seq) would otherwise cost a reload a second of
// parsing for nothing.
//
// cut reports whether lines left output out that a whole replay has.
func (r *Ring) ReplayStart(lines int) (off uint64, prefix []byte, cut bool) {
	r.mu.Lock()
	start, st, _ := r.replayStartLocked()
	if lines <= 0 || r.end-start <= uint64(lines) {
		r.mu.Unlock()
		return start, st.modePrefix(), false
	}
	data := make([]byte, r.end-start)
	n, _ := r.readAtLocked(data, start) // start is held
	r.mu.Unlock()
	data = data[:n]

	// Only the last lines+1 newlines matter, so the byte-by-byte scan
	// starts near them, from the parser's state there, which feed reaches
	// at memchr speed through text: scanning all of a ring of short lines
	// byte by byte took 7 ms of every reload's attach. Newlines inside
	// escape sequences (rare) may leave too few found; then the scan
	// starts over from the ring's start.
	from := len(data)
	for k := 0; k < lines+1+replaySlack && from > 0; k++ {
		from = bytes.LastIndexByte(data[:from], '\n')
		if from < 0 {
			from = 0
		}
	}
	at, atSt, ok := lastLines(data, from, st, lines)
	if !ok && from > 0 {
		at, atSt, ok = lastLines(data, 0, st, lines)
	}
	if !ok {
		return start, st.modePrefix(), false
	}
	return start + uint64(at), atSt.modePrefix(), true
}

// replaySlack is how many newlines more than asked replayStart goes back
// before scanning, for newlines that turn out to sit inside escape
// sequences.
const replaySlack = 16

// lastLines returns the offset in data just after the newline, outside
// escape sequences, that leaves lines complete lines after it, and the
// parser's state there, given its state st at data[0]; it scans byte by
// byte from data[from] on. It reports false when fewer than lines+1 such
// newlines follow from.
func lastLines(data []byte, from int, st vtState, lines int) (int, vtState, bool) {
	st.feed(data[:from])
	// The offsets just after the last lines+1 newlines outside escape
	// sequences, in a circular buffer.
	after := make([]int, lines+1)
	count := 0
	scan := st
	for i := from; i < len(data); i++ {
		ground := scan.isGround()
		scan.feed(data[i : i+1])
		if data[i] == '\n' && ground {
			after[count%len(after)] = i + 1
			count++
		}
	}
	if count <= lines {
		return 0, st, false
	}
	at := after[(count-lines-1)%len(after)]
	st.feed(data[from:at]) // from the state at from: the text before it is parsed once
	return at, st, true
}

// replayStartLocked returns where a replay begins and the terminal state
// there; atLine reports that it begins a line (or the stream), not at the
// fallback of a ring without a line boundary.
func (r *Ring) replayStartLocked() (start uint64, st vtState, atLine bool) {
	start = r.start()
	if (start == r.base && !r.baseCut) || r.tailAtLineStart {
		// Nothing evicted, or eviction ended a line: the oldest byte held
		// starts one, in the tail's modes.
		return start, r.tail, true
	}
	st = r.tail // a copy: scanning ahead must not move the real tail
	size := uint64(len(r.buf))
	// Prefer a line boundary; fall back to the first character boundary
	// outside an escape sequence when no line ends in the ring.
	var (
		fallback     uint64
		fallbackSt   vtState
		haveFallback bool
	)
	for off := start; off < r.end; off++ {
		c := r.buf[off%size]
		ground := st.isGround()
		if ground && !haveFallback && isRuneStart(c) {
			fallback, fallbackSt, haveFallback = off, st, true
		}
		st.feed([]byte{c})
		if c == '\n' && ground {
			return off + 1, st, true
		}
	}
	if haveFallback {
		return fallback, fallbackSt, false
	}
	return r.end, st, false
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }

// Restore makes an empty ring hold a saved screen: the stream continues at
// the saved offsets, and a replay re-enters the saved modes first. cut
// reports that data begins where a save began, not where a replay may:
// a replay then begins at its first line boundary. Data longer than the
// ring leaves its oldest bytes evicted, as output would.
func (r *Ring) Restore(start uint64, prefix, data []byte, cut bool) {
	r.mu.Lock()
	r.base, r.end = start, start
	r.baseCut = cut
	r.tail = vtState{}
	r.tail.feed(prefix)
	r.mu.Unlock()
	r.Write(data)
	r.mu.Lock()
	r.st.RunStart = r.end // no run yet: nothing in the screen is live
	r.mu.Unlock()
}
