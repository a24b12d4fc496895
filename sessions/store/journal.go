package store

import (
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmux/agentmux/internal/observe"
)

// Journal writes a store's changes in the order they are made, on a
// goroutine of its own. Its user queues a change while it holds whatever
// lock orders its changes, and queueing is only an append: a commit,
// whose fsync a busy disk can stretch to seconds, never holds up the
// caller. Whatever queues up during one commit goes into the next, one
// fsync for all of it.
//
// The journal keeps the slices it is given until they are written: the
// caller must not change them afterwards. A change the database refuses
// is logged at debug level, never returned: nobody waits for a commit but
// through Sync. Whoever must know that saving fails (and say so once, not
// at every commit) counts the failures (Failures) or subscribes to them
// (SubscribeFailures).
type Journal struct {
	store *Store
	log   *slog.Logger
	// failed is told of every commit the database refuses, on the
	// writer's goroutine, without mu.
	failed observe.List[error]

	// mu protects the fields below; it is a leaf, never held across a
	// commit.
	mu sync.Mutex
	// cond is broadcast when changes are queued, when a batch has been
	// written and when the journal closes.
	cond    *sync.Cond
	pending []change
	// screens holds, for each session with a screen write in pending,
	// its index there: a newer write joins it in place (a whole screen
	// replaces it, a piece is added and what the pieces' keep makes
	// useless is dropped), so a disk slower than the saves keeps at most
	// about a ring per session queued, not a backlog.
	screens map[string]int
	// screenBytes is what the screen writes in pending hold.
	screenBytes int
	queued      uint64 // changes ever queued
	written     uint64 // changes ever taken and committed (or failed)
	// retry holds the removals of a commit the database refused: they go
	// into the next commit, made when something else is queued (so a
	// full disk is not hammered in a loop). A session deleted while
	// saves failed must not come back after a restart; the other changes
	// a failed commit loses are its owner's to make again, as they are
	// whole states, not steps (a record, a queue, a screen).
	retry []change
	// failures counts the commits the database refused.
	failures uint64
	closed   bool
	done     chan struct{}
}

// change is one session's write: its record, its screen, both, or its
// removal.
type change struct {
	id     string
	record []byte       // nil leaves the stored record alone
	screen *screenWrite // nil leaves the stored screen alone
	queue  []byte       // nil leaves the stored prompt queue alone
	remove bool
}

// screenWrite is what a change does to a session's stored screen.
type screenWrite struct {
	// reset forgets the stored screen before anything is added.
	reset bool
	// base, when not nil, is a whole screen, encoded, that the pieces
	// follow.
	base []byte
	// pieces are encoded pieces of output in stream order, each starting
	// where the one before it (or base) ended.
	pieces [][]byte
	// keep is the oldest offset a restart needs: the stored parts whose
	// successor starts before it are dropped, queued or written.
	keep uint64
}

// join adds the later write w2 to w.
func (w *screenWrite) join(w2 *screenWrite) {
	if w2.reset {
		*w = *w2
		return
	}
	w.pieces = append(w.pieces, w2.pieces...)
	w.keep = max(w.keep, w2.keep)
	// What the stored screen would drop on writing need not be written.
	if w.base != nil && len(w.pieces) > 0 && screenStart(w.pieces[0]) < w.keep {
		w.base = nil
	}
	for len(w.pieces) > 1 && screenStart(w.pieces[1]) < w.keep {
		w.pieces[0] = nil
		w.pieces = w.pieces[1:]
	}
}

// bytes returns how much output w holds.
func (w *screenWrite) bytes() int {
	n := len(w.base)
	for _, p := range w.pieces {
		n += len(p)
	}
	return n
}

// NewJournal starts a journal writing to st, which must stay open until
// the journal is closed. Errors of the database go to log.
func NewJournal(st *Store, log *slog.Logger) *Journal {
	j := &Journal{store: st, log: log, screens: make(map[string]int), done: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	go j.run()
	return j
}

// PutRecord queues a session's record.
func (j *Journal) PutRecord(id string, record []byte) { j.add(change{id: id, record: record}) }

// PutSnapshot queues a session's record and whole screen, encoded as
// ScreenHead says, in place of what is stored or queued of its screen;
// a nil record leaves the stored one alone. cut reports that a replay may
// not begin at the screen's start (see Screen.Cut).
func (j *Journal) PutSnapshot(id string, record, screen []byte, cut bool) {
	w := &screenWrite{reset: true, base: screen}
	if cut {
		w.base, w.pieces = nil, [][]byte{screen}
	}
	j.add(change{id: id, record: record, screen: w})
}

// AppendScreen queues a session's record and the output that followed
// its stored screen, a piece encoded as ScreenHead says, which must start
// where the last piece (or the screen) ended. keep is the oldest offset
// a restart needs, the oldest the session's ring holds: the stored and
// queued parts whose successor starts before it are dropped, so what is
// kept stays about a ring (and what waits for a slow disk too).
func (j *Journal) AppendScreen(id string, record, piece []byte, keep uint64) {
	j.add(change{id: id, record: record, screen: &screenWrite{pieces: [][]byte{piece}, keep: keep}})
}

// PutQueue queues a session's prompt queue.
func (j *Journal) PutQueue(id string, queue []byte) { j.add(change{id: id, queue: queue}) }

// Remove queues forgetting a session: its record, screen and prompt queue.
func (j *Journal) Remove(id string) { j.add(change{id: id, remove: true}) }

func (j *Journal) add(c change) {
	j.mu.Lock()
	if j.closed {
		// Nothing should change after Close; if something does, it is
		// written at once rather than lost.
		j.mu.Unlock()
		j.write([]change{c})
		return
	}
	if c.remove {
		delete(j.screens, c.id)
	} else if i, ok := j.screens[c.id]; ok && c.screen != nil {
		// The queued record stays where it is: records queued after it
		// are newer. This one's record goes to the end.
		w := j.pending[i].screen
		j.screenBytes -= w.bytes()
		w.join(c.screen)
		j.screenBytes += w.bytes()
		c.screen = nil
		if c.record == nil {
			j.mu.Unlock()
			return
		}
	}
	if c.screen != nil {
		j.screens[c.id] = len(j.pending)
		j.screenBytes += c.screen.bytes()
	}
	j.pending = append(j.pending, c)
	j.queued++
	j.cond.Broadcast()
	j.mu.Unlock()
}

// run writes batches until the journal is closed and drained.
func (j *Journal) run() {
	defer close(j.done)
	j.mu.Lock()
	for {
		for len(j.pending) == 0 && !j.closed {
			j.cond.Wait()
		}
		// Closed: the removals kept from a refused commit get one more
		// try with the last batch, even alone.
		if len(j.pending) == 0 && len(j.retry) == 0 {
			j.mu.Unlock()
			return
		}
		taken := len(j.pending)
		batch := append(j.retry, j.pending...)
		j.retry = nil
		j.pending = nil
		clear(j.screens)
		j.screenBytes = 0
		j.mu.Unlock()
		j.write(batch)
		j.mu.Lock()
		j.written += uint64(taken)
		j.cond.Broadcast()
	}
}

// write commits a batch in one transaction. A change the database refuses
// is logged and skipped; the others still go in. A commit the database
// refuses (a full disk, a read-only file system) is counted and told to
// the subscribers, and its removals are kept for the next commit.
func (j *Journal) write(batch []change) {
	err := j.store.update(func(tx *bolt.Tx) error {
		b := buckets{tx.Bucket(bucketSessions), tx.Bucket(bucketScreens), tx.Bucket(bucketQueues), tx.Bucket(bucketChecks)}
		for _, c := range batch {
			if err := c.apply(b); err != nil {
				j.log.Error("save session", "session", c.id, "err", err)
			}
		}
		return nil
	})
	if err == nil {
		return
	}
	// Debug: a disk that stays full refuses a commit every few seconds,
	// and the subscribers say so once.
	j.log.Debug("save sessions", "changes", len(batch), "err", err)
	j.mu.Lock()
	j.failures++
	if !j.closed {
		for _, c := range batch {
			if c.remove {
				j.retry = append(j.retry, change{id: c.id, remove: true})
			}
		}
	}
	j.mu.Unlock()
	j.failed.Notify(err)
}

// Failures returns how many commits the database has refused so far.
func (j *Journal) Failures() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.failures
}

// SubscribeFailures has fn called with the error of every commit the
// database refuses from now on, until cancel is called. fn runs on the
// journal's goroutine (or a caller's, after Close), so it must be quick
// and must not call the journal's methods that wait (Sync, Drain, Close).
func (j *Journal) SubscribeFailures(fn func(error)) (cancel func()) {
	return j.failed.Subscribe(fn)
}

// buckets are the buckets a change is applied to, in one transaction.
type buckets struct {
	records, screens, queues, checks *bolt.Bucket
}

func (c change) apply(b buckets) error {
	records, screens, queues, key := b.records, b.screens, b.queues, []byte(c.id)
	if c.remove {
		if err := records.Delete(key); err != nil {
			return fmt.Errorf("delete record: %w", err)
		}
		if err := deleteScreen(screens, key); err != nil {
			return fmt.Errorf("delete screen: %w", err)
		}
		if err := queues.Delete(key); err != nil {
			return fmt.Errorf("delete prompt queue: %w", err)
		}
		if err := deleteChecks(b.checks, key); err != nil {
			return fmt.Errorf("delete checks: %w", err)
		}
		return nil
	}
	if c.queue != nil {
		if err := queues.Put(key, c.queue); err != nil {
			return fmt.Errorf("put prompt queue: %w", err)
		}
	}
	if c.record != nil {
		if err := records.Put(key, c.record); err != nil {
			return fmt.Errorf("put record: %w", err)
		}
	}
	if c.screen != nil {
		if err := writeScreen(screens, key, c.screen); err != nil {
			return fmt.Errorf("save screen: %w", err)
		}
	}
	return nil
}

// Sync waits until every change queued before the call is committed (or
// has failed, which is logged).
func (j *Journal) Sync() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for target := j.queued; j.written < target; {
		j.cond.Wait()
	}
}

// Drain waits, holding no lock, while the screens queued hold more than
// limit bytes. A saver that calls it after each session's save hands the
// journal about limit bytes at a time: its copies of the output, and
// bbolt's of them in a commit, stay that size however many sessions
// printed, instead of one copy of every busy ring at once.
func (j *Journal) Drain(limit int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for j.screenBytes > limit && !j.closed {
		j.cond.Wait()
	}
}

// Close writes what is queued and stops the writer. Later changes are
// written synchronously.
func (j *Journal) Close() {
	j.mu.Lock()
	j.closed = true
	j.cond.Broadcast()
	j.mu.Unlock()
	<-j.done
}
