package store

import (
	"fmt"
	"log/slog"
	"sync"

	bolt "go.etcd.io/bbolt"
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
// is logged, never returned: nobody waits for a commit but through Sync.
type Journal struct {
	store *Store
	log   *slog.Logger

	// mu protects the fields below; it is a leaf, never held across a
	// commit.
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
	record []byte // nil leaves the stored record alone
	screen []byte // encoded screen; nil leaves the stored one alone
	queue  []byte // nil leaves the stored prompt queue alone
	remove bool
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

// PutSnapshot queues a session's record and last screen, encoded as
// ScreenHead says; a nil record leaves the stored one alone. A screen
// queued for the same session and not yet written is replaced, so a disk
// slower than the saves keeps one screen per session waiting, not a
// backlog.
func (j *Journal) PutSnapshot(id string, record, screen []byte) {
	j.add(change{id: id, record: record, screen: screen})
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
func (j *Journal) run() {
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
func (j *Journal) write(batch []change) {
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

// Sync waits until every change queued before the call is committed (or
// has failed, which is logged).
func (j *Journal) Sync() {
	j.mu.Lock()
	defer j.mu.Unlock()
	for target := j.queued; j.written < target; {
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
