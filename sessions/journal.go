package sessions

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// journal writes the store's changes in the order they are made, on a
// goroutine of its own. The manager queues a change while it holds the
// locks that order changes (a session's mu, emitMu), and queueing is only
// a copy: a commit, whose fsync a busy disk can stretch to seconds, never
// holds up a run's end, a status change or another session's save.
// Whatever queues up during one commit goes into the next, one fsync for
// all of it.
type journal struct {
	store *Store
	log   *slog.Logger

	mu sync.Mutex
	// cond is broadcast when changes are queued, when a batch has been
	// written and when the journal closes.
	cond    *sync.Cond
	pending []change
	// screens holds, for each session with a screen in pending, its
	// index there: a newer screen replaces it in place, so a disk slower
	// than the saves keeps one screen per session queued, not a backlog.
	screens map[string]int
	queued  uint64 // changes ever queued
	written uint64 // changes ever taken and committed (or failed)
	closed  bool
	done    chan struct{}
}

// change is one session's write: its record, its screen, both, or its
// removal.
type change struct {
	id     string
	record []byte // JSON; nil leaves the stored record alone
	screen []byte // encoded screen; nil leaves the stored one alone
	queue  []byte // JSON prompt queue; nil leaves the stored one alone
	remove bool
}

func newJournal(store *Store, log *slog.Logger) *journal {
	j := &journal{store: store, log: log, screens: make(map[string]int), done: make(chan struct{})}
	j.cond = sync.NewCond(&j.mu)
	go j.run()
	return j
}

// putRecord queues a session's metadata.
func (j *journal) putRecord(r record) {
	v, err := json.Marshal(r)
	if err != nil {
		j.log.Error("encode session", "session", r.ID, "err", err)
		return
	}
	j.add(change{id: r.ID, record: v})
}

// putSnapshot queues a session's metadata and last screen, encoded
// (screen.marshal).
func (j *journal) putSnapshot(r record, sc []byte) {
	v, err := json.Marshal(r)
	if err != nil {
		j.log.Error("encode session", "session", r.ID, "err", err)
		return
	}
	j.add(change{id: r.ID, record: v, screen: sc})
}

// putQueue queues a session's prompt queue.
func (j *journal) putQueue(id string, q Queue) {
	v, err := json.Marshal(q)
	if err != nil {
		j.log.Error("encode prompt queue", "session", id, "err", err)
		return
	}
	j.add(change{id: id, queue: v})
}

// remove queues forgetting a session.
func (j *journal) remove(id string) { j.add(change{id: id, remove: true}) }

func (j *journal) add(c change) {
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
		j.pending[i].screen, c.screen = c.screen, nil
		if c.record == nil {
			j.mu.Unlock()
			return
		}
	}
	if c.screen != nil {
		j.screens[c.id] = len(j.pending)
	}
	j.pending = append(j.pending, c)
	j.queued++
	j.cond.Broadcast()
	j.mu.Unlock()
}

// run writes batches until the journal is closed and drained.
func (j *journal) run() {
	defer close(j.done)
	j.mu.Lock()
	for {
		for len(j.pending) == 0 && !j.closed {
			j.cond.Wait()
		}
		if len(j.pending) == 0 {
			j.mu.Unlock()
			return
		}
		batch := j.pending
		j.pending = nil
		clear(j.screens)
		j.mu.Unlock()
		j.write(batch)
		j.mu.Lock()
		j.written += uint64(len(batch))
		j.cond.Broadcast()
	}
}

// write commits a batch in one transaction. A change the database refuses
// is logged and skipped; the others still go in.
func (j *journal) write(batch []change) {
	err := j.store.update(func(tx *bolt.Tx) error {
		records, screens, queues := tx.Bucket(bucketSessions), tx.Bucket(bucketScreens), tx.Bucket(bucketQueues)
		for _, c := range batch {
			if err := c.apply(records, screens, queues); err != nil {
				j.log.Error("save session", "session", c.id, "err", err)
			}
		}
		return nil
	})
	if err != nil {
		j.log.Error("save sessions", "changes", len(batch), "err", err)
	}
}

func (c change) apply(records, screens, queues *bolt.Bucket) error {
	key := []byte(c.id)
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
		if err := putScreen(screens, key, c.screen); err != nil {
			return fmt.Errorf("put screen: %w", err)
		}
	}
	return nil
}

// sync waits until every change queued before the call is committed (or
// has failed, which is logged).
func (j *journal) sync() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for target := j.queued; j.written < target; {
		j.cond.Wait()
	}
}

// close writes what is queued and stops the writer. Later changes are
// written synchronously.
func (j *journal) close() {
	j.mu.Lock()
	j.closed = true
	j.cond.Broadcast()
	j.mu.Unlock()
	<-j.done
}
