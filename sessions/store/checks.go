package store

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// bucketChecks holds the checks run at the end of sessions' turns: a
// session's id -> a bucket of its own, checkpoint id (8 bytes, big
// endian) -> the check's result (JSON, as its writer made it). A
// session's checks go with its record (Journal.Remove).
var bucketChecks = []byte("checks")

func checkKey(checkpoint int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(checkpoint)) }

// PutCheck stores the result of the check of session's checkpoint, in
// one transaction, on disk before it returns.
func (s *Store) PutCheck(session string, checkpoint int, result []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	if session == "" || checkpoint < 1 {
		return fmt.Errorf("store a check: session %q, checkpoint %d", session, checkpoint)
	}
	return s.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketChecks).CreateBucketIfNotExists([]byte(session)) // Open created the outer one
		if err != nil {
			return fmt.Errorf("store the check of session %s: %w", session, err)
		}
		if err := b.Put(checkKey(checkpoint), result); err != nil {
			return fmt.Errorf("store the check of session %s checkpoint %d: %w", session, checkpoint, err)
		}
		return nil
	})
}

// Checks returns the results stored for session's checkpoints, by
// checkpoint id; none is an empty map.
func (s *Store) Checks(session string) (checks map[int][]byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	checks = map[int][]byte{}
	err = s.db.View(func(tx *bolt.Tx) error {
		all := tx.Bucket(bucketChecks) // none in a file only read, made before checks were kept
		if all == nil {
			return nil
		}
		b := all.Bucket([]byte(session))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if len(k) == 8 {
				checks[int(binary.BigEndian.Uint64(k))] = append([]byte(nil), v...)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read the checks of session %s: %w", session, err)
	}
	return checks, nil
}

// deleteChecks removes session's checks, if it has any.
func deleteChecks(checks *bolt.Bucket, key []byte) error {
	if checks == nil || checks.Bucket(key) == nil {
		return nil
	}
	return checks.DeleteBucket(key)
}
