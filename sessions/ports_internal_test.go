package sessions

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// TestPortsSurviveARestart: a session's block is saved with it and held
// for it after a restart, so a session created before the resume does not
// take it; the resume keeps it while every port is free, and gives a new
// block when one is in use.
func TestPortsSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	workspace := t.TempDir()
	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	t.Cleanup(func() {
		stopManager(t, m)
		st.Close()
	})
	// restart stops the server and starts the next one on the same file.
	restart := func() {
		t.Helper()
		stopManager(t, m)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		st = openTestStore(t, path)
		m = newStoreManager(t, st, workspace, 4096)
	}
	s, err := m.Create(CreateOptions{Agent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	before := s.Info().Ports
	if before == nil {
		t.Fatal("a new session has no ports")
	}

	restart()
	r, err := m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Info().Ports; got == nil || *got != *before {
		t.Fatalf("restored session's ports = %+v, want %+v", got, *before)
	}
	other, err := m.Create(CreateOptions{Agent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	if p := other.Info().Ports; p == nil || p.overlaps(*before) {
		t.Errorf("a session created after the restart got %+v, which overlaps the restored one's %+v", p, *before)
	}
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatal(err)
	}
	if got := r.Info().Ports; got == nil || *got != *before {
		t.Errorf("resumed with its ports free, the session has %+v, want %+v", got, *before)
	}

	// Between this restart and the resume, a program took one of its ports.
	restart()
	l, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(before.First+2)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatal(err)
	}
	r, _ = m.Get(s.ID())
	if got := r.Info().Ports; got == nil || *got == *before || got.overlaps(Ports{First: before.First + 2, Count: 1}) {
		t.Errorf("resumed with port %d in use, the session has %+v; want a new block without it", before.First+2, got)
	}
}

// TestPortBlocksAreDisjointUnderConcurrency: sessions reserving at once
// never get overlapping blocks.
func TestPortBlocksAreDisjointUnderConcurrency(t *testing.T) {
	const n = 8
	b := newPortBlocks(24000)
	got := make([]Ports, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = b.reserve(fmt.Sprint("s", i), Ports{}) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("reserve %d: %v", i, errs[i])
		}
		for j := range i {
			if got[i].overlaps(got[j]) {
				t.Errorf("blocks %d and %d overlap: %+v, %+v", i, j, got[i], got[j])
			}
		}
	}
}
