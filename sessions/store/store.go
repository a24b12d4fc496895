// Package store keeps sessions across restarts in one bbolt file: for each
// session its record and its prompt queue, documents the store keeps as it
// is given them, and its last screen, whose encoding and layout are the
// store's (screen.go): a whole screen and the pieces of output appended
// after it, so a save writes what is new. It also keeps which workspace
// scripts a person approved, by the hash of their text (approvals.go),
// written at once rather than through the journal. A Journal writes the changes in
// the order they are made, on a goroutine of its own, so whoever changes
// a session never waits for the disk.
//
// The file's format (bucket names, keys, the screen's encoding) is what a
// restart reads back: what earlier builds wrote still loads (testdata/v1.db
// is one). Screens are laid out as screen.go says since pieces came in; a
// build from before then finds no screen in a file written since (the
// sessions and their queues load).
package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket names.
var (
	bucketSessions = []byte("sessions") // id -> record
	// id -> a bucket holding the session's screen, laid out as screen.go
	// says.
	bucketScreens = []byte("screens")
	bucketQueues  = []byte("prompts") // id -> prompt queue
)

// Errors opening a store, each naming the file in its message.
var (
	// ErrLocked means another process holds the database open.
	ErrLocked = errors.New("database is in use by another process")
	// ErrCorrupt means the file is not a database that can be read.
	ErrCorrupt = errors.New("database file is damaged")
)

// Store is the bbolt file that keeps sessions. Every write is one
// transaction (the journal makes one of whatever queued up meanwhile): a
// crash leaves the previous state or the new one, never a mix.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens or creates the database at path. It gives up after timeout
// when another process holds the file (bbolt's default would wait
// forever), with ErrLocked, and reports a damaged file, which can make
// bbolt panic, as ErrCorrupt rather than crashing or starting afresh.
func Open(path string, timeout time.Duration) (s *Store, err error) {
	// A truncated file makes bbolt read past its end through the memory
	// mapping: SIGBUS or SIGSEGV, which kill the process unless turned
	// into a panic for this goroutine, for the recover below.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (another agentmux is using this data directory)", ErrLocked, path)
	case err != nil:
		// The operating system's refusals (permissions, a missing
		// directory) come as path errors; anything else bbolt rejects in
		// the file (a bad magic number, checksum or size) is damage.
		// A path error names the file itself.
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("open database: %w", err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	s = &Store{db: db, path: path}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSessions, bucketScreens, bucketQueues, bucketScriptApprovals, bucketChecks, bucketSettings, bucketShares} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s: create buckets: %v", ErrCorrupt, path, err)
	}
	return s, nil
}

// OpenReadOnly opens the database at path to read it, as Open does, but
// neither creates nor changes it: it only takes a shared lock, which a
// server that holds the file (with its exclusive lock) refuses with
// ErrLocked after timeout.
func OpenReadOnly(path string, timeout time.Duration) (s *Store, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout, ReadOnly: true})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (another agentmux is using it)", ErrLocked, path)
	case err != nil:
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("open database: %w", err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, path, err)
	}
	return &Store{db: db, path: path}, nil
}

// CopySessions copies the sessions ids of src (record, screen, prompt
// queue) into dst, byte for byte, in one transaction of dst's: all of
// them or none. A session src does not hold is no error. src is only
// read.
func CopySessions(dst, src *Store, ids []string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, src.path, r)
		}
	}()
	return src.db.View(func(from *bolt.Tx) error {
		return dst.update(func(to *bolt.Tx) error {
			for _, id := range ids {
				key := []byte(id)
				for _, name := range [][]byte{bucketSessions, bucketScreens, bucketQueues} {
					fb := from.Bucket(name)
					if fb == nil {
						continue // a file of a version without it
					}
					if err := copyKey(to.Bucket(name), fb, key); err != nil {
						return fmt.Errorf("copy session %q from %s: %w", id, src.path, err)
					}
				}
			}
			return nil
		})
	})
}

// copyKey copies key's value, or the bucket under it with all it holds,
// from the bucket from to the bucket to. bbolt's memory is only valid in
// its transaction, and Put keeps what it is given until the commit:
// values are copied.
func copyKey(to, from *bolt.Bucket, key []byte) error {
	if fb := from.Bucket(key); fb != nil {
		tb, err := to.CreateBucketIfNotExists(key)
		if err != nil {
			return err
		}
		return fb.ForEach(func(k, _ []byte) error { return copyKey(tb, fb, k) })
	}
	if v := from.Get(key); v != nil {
		return to.Put(bytes.Clone(key), bytes.Clone(v))
	}
	return nil
}

// Path returns the database file's path.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close database %s: %w", s.path, err)
	}
	return nil
}

// BlockWrites holds the database's one write transaction until release
// is called, as a disk stuck in an fsync would: writes wait meanwhile,
// reads do not. It exists for tests, of this package and of its users,
// that check what waits for the disk and what must not. release may be
// called more than once.
func (s *Store) BlockWrites() (release func(), err error) {
	tx, err := s.db.Begin(true)
	if err != nil {
		return nil, fmt.Errorf("block writes to %s: %w", s.path, err)
	}
	var once sync.Once
	// Rolling back a write transaction fails only when it has ended
	// already, which once rules out.
	return func() { once.Do(func() { _ = tx.Rollback() }) }, nil
}

func (s *Store) update(fn func(*bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil {
		return fmt.Errorf("write database %s: %w", s.path, err)
	}
	return nil
}

// Saved is one session read back from the store.
type Saved struct {
	// ID is the session's id, under which everything of it is kept.
	ID string
	// Record is the session's record, as the journal was given it.
	Record []byte
	// Screen is the session's last screen; zero when none was saved or
	// it could not be read.
	Screen Screen
	// Queue is the session's prompt queue, as the journal was given it;
	// nil when none was saved.
	Queue []byte
}

// Load reads every saved session, in the order of their ids. A screen
// that cannot be decoded is reported in skipped and left out, not its
// session; a damaged file is ErrCorrupt.
func (s *Store) Load() (out []Saved, skipped []error, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		records, screens, queues := tx.Bucket(bucketSessions), tx.Bucket(bucketScreens), tx.Bucket(bucketQueues)
		if records == nil {
			return nil // a file opened read-only that no agentmux wrote to
		}
		return records.ForEach(func(k, v []byte) error {
			// Copies: bbolt's memory is only valid inside the transaction.
			sv := Saved{ID: string(k), Record: bytes.Clone(v)}
			if queues != nil { // one opened read-only may be of a version without queues
				sv.Queue = bytes.Clone(queues.Get(k))
			}
			if screens == nil {
				out = append(out, sv)
				return nil
			}
			sc, err := loadScreen(screens, k)
			if err != nil {
				skipped = append(skipped, fmt.Errorf("session %q screen: %w", k, err))
			} else {
				sv.Screen = sc
			}
			out = append(out, sv)
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, err)
	}
	return out, skipped, nil
}
