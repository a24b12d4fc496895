package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/store"
)

// importSuffix names the database being filled with a workspace's
// sessions from the shared one, until it is complete and renamed.
const importSuffix = ".import"

// adoptSharedSessions gives the workspace ws, on the first start with
// dataDir (its default data directory) not holding a database yet, its
// sessions from the database versions before issue 40 shared between
// every workspace (agentmux.db in stateDir): a person upgrading keeps
// the sessions of the workspace they had.
//
// The sessions are copied, not moved: the shared file is opened
// read-only and left as it was, so every other workspace finds its own
// there at its first start, and an older version still finds them all.
// The new database is filled under another name and renamed when
// complete, so a start that stops half way leaves nothing that would
// pass for done; once it exists, nothing is copied again (a session
// deleted since does not come back).
//
// A shared database that another agentmux (an older version) holds open
// stops the start: going on would make an empty database that stood for
// this workspace's sessions for good. One that cannot be read is only
// logged: there is nothing to take from it.
func adoptSharedSessions(getenv func(string) string, ws, dataDir string, log *slog.Logger) error {
	target := filepath.Join(dataDir, dbFile)
	if _, err := os.Stat(target); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil // this workspace's database is there (or say so at open)
	}
	dir, err := stateDir(getenv)
	if err != nil {
		return err
	}
	shared := filepath.Join(dir, dbFile)
	if _, err := os.Stat(shared); err != nil {
		return nil // no earlier version wrote one: nothing to take
	}
	src, err := store.OpenReadOnly(shared, storeTimeout)
	switch {
	case errors.Is(err, store.ErrLocked):
		return fmt.Errorf("%w; it holds the sessions of earlier versions, this workspace's among them, which this first start in %s takes from it: stop that agentmux first, or give --data-dir to start without them", err, dataDir)
	case err != nil:
		log.Warn("the database earlier versions shared cannot be read; this workspace starts without sessions from it", "database", shared, "err", err)
		return nil
	}
	defer src.Close()
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	tmp := target + importSuffix
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove an unfinished import: %w", err)
	}
	dst, err := store.Open(tmp, storeTimeout)
	if err != nil {
		return err
	}
	n, err := sessions.CopyWorkspace(dst, src, ws)
	if errClose := dst.Close(); err == nil {
		err = errClose
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("take this workspace's sessions from %s: %w", shared, err)
	}
	log.Info("this workspace has a data directory of its own now; its sessions were copied there from the database earlier versions shared, which is left as it was",
		"sessions", n, "from", shared, "to", target)
	return nil
}
