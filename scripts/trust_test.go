package scripts_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/store"
)

var _ scripts.Approvals = (*store.Store)(nil)

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func writeFile(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, scripts.FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// With a real store: unapproved until approved, remembered across
// reopening the store, and asked again when the script changes.
func TestTrustByHash(t *testing.T) {
	dir, db := t.TempDir(), filepath.Join(t.TempDir(), "agentmux.db")
	writeFile(t, dir, `{"scripts": {"setup": "npm ci", "check": "npm test"}}`)
	st := openStore(t, db)
	trust, err := scripts.NewTrust(scripts.TrustOptions{Root: dir, Approvals: st, Overrides: scripts.Overrides{Run: "npm run dev"}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := trust.Load()
	if err != nil {
		t.Fatal(err)
	}
	setup, _ := set.Get(scripts.Setup)
	check, _ := set.Get(scripts.Check)
	run, _ := set.Get(scripts.Run)
	if trust.Approved(setup) || trust.Approved(check) || !trust.Approved(run) {
		t.Fatal("want the file's scripts unapproved and the flag's approved")
	}
	if _, err := trust.Approve(scripts.Hash("something else")); !errors.Is(err, scripts.ErrNotInForce) {
		t.Fatalf("approving a hash not in force: %v", err)
	}
	if got, err := trust.Approve(setup.Hash); err != nil || got.Name != scripts.Setup {
		t.Fatalf("approve setup: %+v %v", got, err)
	}
	if !trust.Approved(setup) || trust.Approved(check) {
		t.Fatal("approving setup approved the wrong scripts")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openStore(t, db)
	defer st.Close()
	trust, err = scripts.NewTrust(scripts.TrustOptions{Root: dir, Approvals: st})
	if err != nil {
		t.Fatal(err)
	}
	if !trust.Approved(setup) {
		t.Fatal("the approval was not remembered across reopening the store")
	}
	writeFile(t, dir, `{"scripts": {"setup": "npm ci && ./install-more.sh", "check": "npm test"}}`)
	set, _ = trust.Load()
	changed, _ := set.Get(scripts.Setup)
	if trust.Approved(changed) {
		t.Fatal("a changed script is still approved")
	}
	if _, err := trust.ApproveAll(); err != nil {
		t.Fatal(err)
	}
	for _, s := range set.Scripts {
		if !trust.Approved(s) {
			t.Errorf("%s not approved after ApproveAll", s.Name)
		}
	}
}

// --trust-scripts approves everything and says so in one log line.
func TestTrustAll(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, `{"scripts": {"setup": "npm ci"}}`)
	st := openStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	var logs bytes.Buffer
	trust, err := scripts.NewTrust(scripts.TrustOptions{Root: dir, Approvals: st, TrustAll: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := trust.Load()
	if !trust.TrustsAll() || !trust.Approved(set.Scripts[0]) {
		t.Fatal("not approved with TrustAll")
	}
	if st.Approved(set.Scripts[0].Hash) {
		t.Fatal("TrustAll wrote an approval to the store")
	}
	if n := strings.Count(logs.String(), "--trust-scripts"); n != 1 {
		t.Fatalf("%d log lines about --trust-scripts, want 1:\n%s", n, logs.String())
	}
}
