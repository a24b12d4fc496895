package sessions

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"time"

	"github.com/agentmux/agentmux/sessions/output"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bucket names.
var (
	bucketSessions = []byte("sessions") // id -> JSON record
	// id -> a bucket holding the binary screen snapshot under screenKey.
	// A bucket each, because bbolt rewrites a leaf page whole: screens as
	// values side by side in one leaf made every save copy (and read back
	// through the memory map) every session's megabyte, not just the one
	// that changed. Files written before keep id -> snapshot values, read
	// as ever and replaced by a bucket at the session's next save.
	bucketScreens = []byte("screens")
	bucketQueues  = []byte("prompts") // id -> JSON prompt queue

	screenKey = []byte("screen")
)

// Errors opening a store, each naming the file in its message.
var (
	ErrStoreLocked  = errors.New("database is in use by another process")
	ErrStoreCorrupt = errors.New("database file is damaged")
)

// Store keeps session metadata and last screens in a bbolt file, so
// sessions outlive the server. Every write is one transaction (the
// manager's journal makes one of whatever queued up meanwhile): a crash
// leaves the previous state or the new one, never a mix.
type Store struct {
	db   *bolt.DB
	path string
}

// OpenStore opens or creates the database at path. It gives up after
// timeout when another process holds the file (bbolt's default would wait
// forever) and reports a damaged file, which can make bbolt panic, as
// ErrStoreCorrupt rather than crashing or starting afresh.
func OpenStore(path string, timeout time.Duration) (s *Store, err error) {
	// A truncated file makes bbolt read past its end through the memory
	// mapping: SIGBUS or SIGSEGV, which kill the process unless turned
	// into a panic for this goroutine, for the recover below.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrStoreCorrupt, path, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (another agentmux is using this data directory)", ErrStoreLocked, path)
	case err != nil:
		// The operating system's refusals (permissions, a missing
		// directory) come as path errors; anything else bbolt rejects in
		// the file (a bad magic number, checksum or size) is damage.
		// A path error names the file itself.
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
			return nil, fmt.Errorf("open database: %w", err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrStoreCorrupt, path, err)
	}
	s = &Store{db: db, path: path}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketSessions, bucketScreens, bucketQueues} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s: create buckets: %v", ErrStoreCorrupt, path, err)
	}
	return s, nil
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

// record is a session's metadata as stored.
type record struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	Profile        Profile            `json:"profile"`
	Command        []string           `json:"command"`
	Cwd            string             `json:"cwd"`
	CreatedAt      time.Time          `json:"createdAt"`
	LastActivityAt time.Time          `json:"lastActivityAt"`
	Status         Status             `json:"status"`
	Reason         string             `json:"reason,omitempty"`
	Cols           int                `json:"cols"`
	Rows           int                `json:"rows"`
	Exit           *output.ExitStatus `json:"exit,omitempty"`
	Worktree       *Worktree          `json:"worktree,omitempty"`
	Conversation   string             `json:"conversation,omitempty"`
}

// screen is a session's last screen as stored: the output from a replay
// start, with the modes in force there.
type screen struct {
	start  uint64 // stream offset of data[0]
	prefix []byte // sequences that re-enter the terminal modes at start
	data   []byte
}

// Screen encoding: start (8 bytes), prefix length (4), prefix, data.
func (sc screen) marshal() []byte {
	return append(screenHead(sc.start, sc.prefix, len(sc.data)), sc.data...)
}

// screenHeadBytes is the fixed part of an encoded screen: its start, then
// the length of its prefix.
const screenHeadBytes = 8 + 4

// screenHead returns the encoding of a screen up to its data, with room
// for n bytes of data after it.
func screenHead(start uint64, prefix []byte, n int) []byte {
	b := make([]byte, 0, screenHeadBytes+len(prefix)+n)
	b = binary.BigEndian.AppendUint64(b, start)
	b = binary.BigEndian.AppendUint32(b, uint32(len(prefix)))
	return append(b, prefix...)
}

func unmarshalScreen(b []byte) (screen, error) {
	if len(b) < screenHeadBytes {
		return screen{}, fmt.Errorf("screen record of %d bytes is too short", len(b))
	}
	n := binary.BigEndian.Uint32(b[8:])
	if uint64(n) > uint64(len(b)-screenHeadBytes) {
		return screen{}, fmt.Errorf("screen record's prefix of %d bytes overruns it", n)
	}
	// Copies: bbolt's memory is only valid inside the transaction.
	return screen{
		start:  binary.BigEndian.Uint64(b),
		prefix: append([]byte(nil), b[screenHeadBytes:screenHeadBytes+n]...),
		data:   append([]byte(nil), b[screenHeadBytes+n:]...),
	}, nil
}

// getScreen returns a session's stored screen, or nil.
func getScreen(screens *bolt.Bucket, id []byte) []byte {
	if b := screens.Bucket(id); b != nil {
		return b.Get(screenKey)
	}
	return screens.Get(id) // an older file's
}

// putScreen stores a session's screen in its bucket, replacing what an
// older file kept in its place.
func putScreen(screens *bolt.Bucket, id, sc []byte) error {
	b := screens.Bucket(id)
	if b == nil {
		if err := screens.Delete(id); err != nil {
			return err
		}
		var err error
		if b, err = screens.CreateBucket(id); err != nil {
			return err
		}
	}
	return b.Put(screenKey, sc)
}

// deleteScreen forgets a session's stored screen, in either form.
func deleteScreen(screens *bolt.Bucket, id []byte) error {
	if screens.Bucket(id) != nil {
		return screens.DeleteBucket(id)
	}
	return screens.Delete(id)
}

func (s *Store) update(fn func(*bolt.Tx) error) error {
	if err := s.db.Update(fn); err != nil {
		return fmt.Errorf("write database %s: %w", s.path, err)
	}
	return nil
}

// saved is a session read back from the store.
type saved struct {
	record record
	screen screen
	queue  Queue
}

// load reads every saved session. A record that cannot be decoded is
// reported in skipped and left out; a damaged file is ErrStoreCorrupt.
func (s *Store) load() (out []saved, skipped []error, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see OpenStore
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrStoreCorrupt, s.path, r)
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		screens, queues := tx.Bucket(bucketScreens), tx.Bucket(bucketQueues)
		return tx.Bucket(bucketSessions).ForEach(func(k, v []byte) error {
			var r record
			if err := json.Unmarshal(v, &r); err != nil {
				skipped = append(skipped, fmt.Errorf("session %q: %w", k, err))
				return nil
			}
			sv := saved{record: r}
			if b := getScreen(screens, k); b != nil {
				sc, err := unmarshalScreen(b)
				if err != nil {
					skipped = append(skipped, fmt.Errorf("session %q screen: %w", k, err))
				} else {
					sv.screen = sc
				}
			}
			if b := queues.Get(k); b != nil {
				// A queue that cannot be read is lost, not the session.
				if err := json.Unmarshal(b, &sv.queue); err != nil {
					skipped = append(skipped, fmt.Errorf("session %q prompt queue: %w", k, err))
					sv.queue = Queue{}
				}
			}
			out = append(out, sv)
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrStoreCorrupt, s.path, err)
	}
	return out, skipped, nil
}
