package store

import (
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// bucketSettings holds each workspace's settings set in the page: the
// workspace's absolute path -> its settings (JSON, as their writer made
// them). Keyed by workspace, as sessions are, for a data directory that
// several workspaces' servers share.
var bucketSettings = []byte("workspace-settings")

// PutSettings stores workspace's settings, on disk before it returns.
func (s *Store) PutSettings(workspace string, settings []byte) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	return s.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSettings).Put([]byte(workspace), settings); err != nil { // Open made the bucket
			return fmt.Errorf("store the settings of %s: %w", workspace, err)
		}
		return nil
	})
}

// Settings returns workspace's settings, nil when none were stored.
func (s *Store) Settings(workspace string) (settings []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true)) // see Open
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %s: %v", ErrCorrupt, s.path, r)
		}
	}()
	err = s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSettings); b != nil { // none in a file only read, made before settings were kept
			if v := b.Get([]byte(workspace)); v != nil {
				settings = append([]byte(nil), v...)
			}
		}
		return nil
	})
	return settings, err
}
