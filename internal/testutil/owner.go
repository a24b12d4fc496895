package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// ForeignUID is the owner GiveAway gives files to: nobody, which is no
// test's user.
const ForeignUID = 65534

// GiveAway makes dir and everything under it belong to ForeignUID, so a
// git the test runs finds a repository there of another user's, as in a
// workspace bind-mounted from a host where it belongs to another uid. It
// skips the test when that cannot be done: only root may give files away,
// and root still reads and writes them.
func GiveAway(t testing.TB, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user (chown) needs root")
	}
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, ForeignUID, ForeignUID)
	})
	if err != nil {
		t.Skipf("cannot give %s to uid %d: %v", dir, ForeignUID, err)
	}
	// t.TempDir removes it as root, whoever owns it.
}
