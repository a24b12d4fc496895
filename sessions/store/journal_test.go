package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestJournalKeepsOneScreenPerSessionQueued: saves made faster than the
// disk writes replace the queued screen instead of piling up, and the
// newest record and screen are what ends up stored.
func TestJournalKeepsOneScreenPerSessionQueued(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	release, err := st.BlockWrites()
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	const id = "00000000-0000-4000-8000-000000000001"
	for i := range 100 {
		j.PutSnapshot(id, fmt.Appendf(nil, `{"name":"save %d"}`, i), Screen{Start: uint64(i), Data: bytes.Repeat([]byte{'x'}, 64<<10)}.marshal(), false)
	}
	j.PutRecord("00000000-0000-4000-8000-000000000002", []byte(`{"name":"other"}`))
	j.Remove("00000000-0000-4000-8000-000000000002")
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
	j.Close()
	saved, _, err := st.Load()
	if err != nil || len(saved) != 1 {
		t.Fatalf("store holds %d sessions (%v), want one", len(saved), err)
	}
	if got := saved[0]; string(got.Record) != `{"name":"save 99"}` || got.Screen.Start != 99 {
		t.Errorf("stored %s with the screen of save %d, want the last save's", got.Record, got.Screen.Start)
	}
	// A change after close is written at once.
	j.PutRecord("00000000-0000-4000-8000-000000000003", []byte(`{"name":"late"}`))
	if saved, _, err := st.Load(); err != nil || len(saved) != 2 {
		t.Errorf("after a change made once closed the store holds %d sessions (%v), want 2", len(saved), err)
	}
}
