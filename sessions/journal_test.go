package sessions

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// blockStore holds the database's only write transaction, as a disk stuck
// in an fsync would, until the returned function is called.
func blockStore(t *testing.T, st *Store) (release func()) {
	t.Helper()
	tx, err := st.db.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if err := tx.Rollback(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// TestAStuckStoreHoldsUpNoSession: while the database cannot be written,
// a Create or Destroy waits for it (what the caller is told must survive
// a crash), but nothing else does: another session's run still ends and
// reports its status. Once the database frees, everything is written in
// the order it happened, and a Create returns only once its session is on
// disk.
func TestAStuckStoreHoldsUpNoSession(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	statuses := make(chan Info, 16)
	m, err := NewManager(Options{
		Workspace:    t.TempDir(),
		Store:        st,
		SaveInterval: 20 * time.Millisecond,
		StopGrace:    time.Second,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(func(ev Event) {
		if ev.Kind == EventStatus {
			statuses <- ev.Session
		}
	})
	short, err := m.Create(CreateOptions{Name: "short", Command: []string{"sh", "-c", "read x; echo done; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if saved, _, err := st.load(); err != nil || len(saved) != 1 || saved[0].record.ID != short.ID() {
		t.Fatalf("after Create returned the store holds %d sessions (%v), want the new one", len(saved), err)
	}
	gone, err := m.Create(CreateOptions{Name: "gone", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}

	release := blockStore(t, st)
	destroyed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		destroyed <- m.Destroy(ctx, gone.ID())
	}()
	if err := short.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case info := <-statuses:
			done = info.ID == short.ID() && info.Status == StatusError
		case <-time.After(storeTimeout):
			t.Fatal("a session's end was not reported while the database was stuck")
		}
	}

	release()
	select {
	case err := <-destroyed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(storeTimeout):
		t.Fatal("Destroy did not return once the database was free")
	}
	if saved, _, err := st.load(); err != nil || len(saved) != 1 || saved[0].record.ID != short.ID() {
		t.Fatalf("after Destroy returned the store holds %d sessions (%v), want only the short one", len(saved), err)
	}
	stopManager(t, m)
	saved, skipped, err := st.load()
	if err != nil || len(skipped) != 0 || len(saved) != 1 {
		t.Fatalf("store holds %d sessions (%v, %v), want only the short one", len(saved), skipped, err)
	}
	r := saved[0].record
	if r.ID != short.ID() || r.Status != StatusError || r.Exit == nil || r.Exit.Code != 3 {
		t.Errorf("stored record %+v, want the short session's end with code 3", r)
	}
	if !bytes.Contains(saved[0].screen.data, []byte("done")) {
		t.Errorf("stored screen %q, want its output", saved[0].screen.data)
	}
}

// TestJournalKeepsOneScreenPerSessionQueued: saves made faster than the
// disk writes replace the queued screen instead of piling up, and the
// newest record and screen are what ends up stored.
func TestJournalKeepsOneScreenPerSessionQueued(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := newJournal(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	release := blockStore(t, st)

	const id = "00000000-0000-4000-8000-000000000001"
	for i := range 100 {
		j.putSnapshot(record{ID: id, Name: fmt.Sprintf("save %d", i)}, screen{start: uint64(i), data: bytes.Repeat([]byte{'x'}, 64<<10)}.marshal())
	}
	j.putRecord(record{ID: "00000000-0000-4000-8000-000000000002", Name: "other"})
	j.remove("00000000-0000-4000-8000-000000000002")
	j.mu.Lock()
	screens := 0
	for _, c := range j.pending {
		if c.screen != nil {
			screens++
		}
	}
	j.mu.Unlock()
	if screens > 1 {
		t.Errorf("%d screens of one session queued behind a stuck write, want at most 1", screens)
	}

	release()
	j.close()
	saved, _, err := st.load()
	if err != nil || len(saved) != 1 {
		t.Fatalf("store holds %d sessions (%v), want one", len(saved), err)
	}
	if got := saved[0]; got.record.Name != "save 99" || got.screen.start != 99 {
		t.Errorf("stored %q with the screen of save %d, want the last save's", got.record.Name, got.screen.start)
	}
	// A change after close is written at once.
	j.putRecord(record{ID: "00000000-0000-4000-8000-000000000003", Name: "late"})
	if saved, _, err := st.load(); err != nil || len(saved) != 2 {
		t.Errorf("after a change made once closed the store holds %d sessions (%v), want 2", len(saved), err)
	}
}
