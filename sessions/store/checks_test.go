package store

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"
)

// A session's checks are kept by checkpoint across reopening the file,
// apart from another session's, and go when the session's record does.
func TestChecksAreKeptPerSessionAndGoWithIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	if got, err := st.Checks("a"); err != nil || len(got) != 0 {
		t.Fatalf("checks of a session with none: %v, %v", got, err)
	}
	for _, c := range []struct {
		session string
		id      int
		result  string
	}{{"a", 1, `{"status":"failed"}`}, {"a", 2, `{"status":"passed"}`}, {"a", 1, `{"status":"superseded"}`}, {"b", 7, `{"status":"timeout"}`}} {
		if err := st.PutCheck(c.session, c.id, []byte(c.result)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutCheck("a", 0, []byte(`{}`)); err == nil {
		t.Fatal("stored a check of checkpoint 0")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openTestStore(t, path)
	got, err := st.Checks("a")
	if err != nil || len(got) != 2 || string(got[1]) != `{"status":"superseded"}` || string(got[2]) != `{"status":"passed"}` {
		t.Fatalf("checks of a after reopening: %v, %v", got, err)
	}
	j := NewJournal(st, slog.New(slog.DiscardHandler))
	j.Remove("a")
	j.Sync()
	j.Close()
	if got, err := st.Checks("a"); err != nil || len(got) != 0 {
		t.Fatalf("checks of a removed session: %v, %v", got, err)
	}
	if got, err := st.Checks("b"); err != nil || string(got[7]) != `{"status":"timeout"}` {
		t.Fatalf("another session's checks: %v, %v", got, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// A file of a build from before checks were kept has none, read only or
// not, and the store opened on it keeps them.
func TestChecksInAFileOfAnEarlierBuild(t *testing.T) {
	path := copyGolden(t)
	ro, err := OpenReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ro.Checks("a"); err != nil || len(got) != 0 {
		t.Fatalf("checks read from an earlier file: %v, %v", got, err)
	}
	ro.Close()
	st := openTestStore(t, path)
	defer st.Close()
	if err := st.PutCheck("a", 1, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
}

// A workspace's settings are kept across reopening the file, apart from
// another workspace's.
func TestSettingsAreKeptPerWorkspace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	if got, err := st.Settings("/a"); err != nil || got != nil {
		t.Fatalf("settings of a workspace with none: %q, %v", got, err)
	}
	if err := st.PutSettings("/a", []byte(`{"check":"npm test"}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.PutSettings("/b", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, path)
	defer st.Close()
	if got, err := st.Settings("/a"); err != nil || string(got) != `{"check":"npm test"}` {
		t.Fatalf("settings of /a after reopening: %q, %v", got, err)
	}
}
