package store

import (
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketScriptApprovals holds the workspace scripts a person approved:
// the SHA-256 of a script's text (hex) -> when it was approved (RFC 3339,
// UTC), kept for whoever reads the file. An approval names a text, not a
// script's name, so a changed script is not approved until approved
// again; approvals are never removed, so going back to an approved text
// needs no new approval.
var bucketScriptApprovals = []byte("script-approvals")

// Approve records that a person approved the scripts whose texts hash to
// hashes, in one transaction, on disk before it returns: a script may
// run as soon as it has.
func (s *Store) Approve(hashes ...string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	now := []byte(time.Now().UTC().Format(time.RFC3339))
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketScriptApprovals) // Open created it
		for _, h := range hashes {
			if h == "" {
				return fmt.Errorf("approve scripts: an empty hash")
			}
			if err := b.Put([]byte(h), now); err != nil {
				return fmt.Errorf("approve script %s: %w", h, err)
			}
		}
		return nil
	})
}

// Approved reports whether the script whose text hashes to hash was
// approved. A store it cannot read answers false: a script that cannot
// be shown approved does not run.
func (s *Store) Approved(hash string) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if hash == "" {
		return false
	}
	_ = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketScriptApprovals); b != nil {
			ok = b.Get([]byte(hash)) != nil
		}
		return nil
	})
	return ok
}
