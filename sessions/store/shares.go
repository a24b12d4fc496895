package store

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// bucketShares holds the read-only links to sessions: a link's id -> the
// link as its owner encodes it (package share; a hash of its secret, never
// the secret). Kept so that a link handed out outlives a restart, as the
// session it shows does.
var bucketShares = []byte("share-links")

// PutShare stores link id's record, on disk before it returns: a link is
// handed out only once it would survive a restart.
func (s *Store) PutShare(id string, record []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	return s.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketShares).Put([]byte(id), record); err != nil { // Open made the bucket
			return fmt.Errorf("store share link %s: %w", id, err)
		}
		return nil
	})
}

// DeleteShares removes the records of the links ids, in one transaction,
// on disk before it returns: a revoked link stays revoked after a restart.
// An id the store does not hold is no error.
func (s *Store) DeleteShares(ids ...string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketShares)
		for _, id := range ids {
			if err := b.Delete([]byte(id)); err != nil {
				return fmt.Errorf("delete share link %s: %w", id, err)
			}
		}
		return nil
	})
}

// Shares returns every stored link's record by id.
func (s *Store) Shares() (records map[string][]byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	records = make(map[string][]byte)
	err = s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketShares)
		if b == nil { // a file only read, made before links were kept
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			records[string(k)] = append([]byte(nil), v...)
			return nil
		})
	})
	return records, err
}
