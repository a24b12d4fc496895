package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	bolt "go.etcd.io/bbolt"
)

// piece encodes output appended at start, with the modes prefix.
func piece(start uint64, prefix, data string) []byte {
	return Screen{Start: start, Prefix: []byte(prefix), Data: []byte(data)}.marshal()
}

// loadOne loads the store and returns its one session's screen.
func loadOne(t *testing.T, st *Store) Screen {
	t.Helper()
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 1 {
		t.Fatalf("load = %d sessions, skipped %v, %v; want one", len(saved), skipped, err)
	}
	return saved[0].Screen
}

// storedParts counts what is stored of a session's screen.
func storedParts(t *testing.T, st *Store, id string) (parts, bytes int) {
	t.Helper()
	if err := st.db.View(func(tx *bolt.Tx) error {
		for _, e := range screenParts(tx.Bucket(bucketScreens), []byte(id)) {
			parts++
			bytes += len(e.value)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return parts, bytes
}

// Pieces appended after a whole screen load back as one screen, from the
// whole screen's start and with its modes, that a replay may begin.
func TestAppendedPiecesLoadAsOneScreen(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("s", []byte(`{"id":"s"}`), piece(100, "\x1b[?1049h", "first\r\n"), false)
	j.AppendScreen("s", nil, piece(107, "\x1b[?1049h\x1b[?2004h", "second\r\n"), 0)
	j.AppendScreen("s", []byte(`{"id":"s","name":"later"}`), piece(115, "", "third"), 0)
	j.Close()
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 1 {
		t.Fatalf("load = %d sessions, skipped %v, %v", len(saved), skipped, err)
	}
	sc := saved[0].Screen
	if sc.Start != 100 || string(sc.Prefix) != "\x1b[?1049h" || string(sc.Data) != "first\r\nsecond\r\nthird" || sc.Cut {
		t.Errorf("screen loaded as %+v, want the three parts from 100 in the first's modes, not cut", sc)
	}
	if string(saved[0].Record) != `{"id":"s","name":"later"}` {
		t.Errorf("record %s, want the last one queued", saved[0].Record)
	}
}

// Once what follows a part covers the ring (keep is the ring's start),
// the part is dropped: the stored screen stays about a ring, and loads
// from the oldest part kept, in its modes, cut (a replay must find a
// line boundary in it).
func TestPiecesCoveringTheRingDropWhatIsOlder(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	const ring = 64 << 10
	chunk := bytes.Repeat([]byte("0123456789abcde\n"), 1<<10) // 16 KiB
	j.PutSnapshot("s", nil, piece(0, "", string(chunk)), false)
	end := uint64(len(chunk))
	for i := range 40 {
		prefix := fmt.Sprintf("\x1b[%d;1H", i) // stands for the modes at the piece's start
		j.AppendScreen("s", nil, piece(end, prefix, string(chunk)), end+uint64(len(chunk))-min(end+uint64(len(chunk)), ring))
		end += uint64(len(chunk))
		j.Sync()
		if parts, n := storedParts(t, st, "s"); n > ring+2*len(chunk)+1024 {
			t.Fatalf("after %d pieces %d parts of %d KiB stored, want about a ring (%d KiB)", i+1, parts, n>>10, ring>>10)
		}
	}
	j.PutRecord("s", []byte(`{}`))
	j.Close()
	sc := loadOne(t, st)
	if !sc.Cut || sc.Start+uint64(len(sc.Data)) != end || len(sc.Data) <= ring || len(sc.Data) > ring+len(chunk) {
		t.Fatalf("screen loaded from %d, %d bytes, cut %v; want more than the %d of the ring, ending at %d, cut", sc.Start, len(sc.Data), sc.Cut, ring, end)
	}
	k := (sc.Start - uint64(len(chunk))) / uint64(len(chunk))
	if want := fmt.Sprintf("\x1b[%d;1H", k); string(sc.Prefix) != want {
		t.Errorf("prefix %q, want the oldest kept piece's %q", sc.Prefix, want)
	}
}

// Appending to a session an older file keeps as a plain value moves that
// screen into the session's bucket, as the whole screen the pieces follow.
func TestAppendingToAnOlderFilesScreen(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	if err := st.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketSessions).Put([]byte("s"), []byte(`{}`)); err != nil {
			return err
		}
		return tx.Bucket(bucketScreens).Put([]byte("s"), piece(7, "\x1b[?25l", "old\r\n"))
	}); err != nil {
		t.Fatal(err)
	}
	j := NewJournal(st, discard())
	j.AppendScreen("s", nil, piece(12, "", "new\r\n"), 0)
	j.Close()
	sc := loadOne(t, st)
	if sc.Start != 7 || string(sc.Prefix) != "\x1b[?25l" || string(sc.Data) != "old\r\nnew\r\n" || sc.Cut {
		t.Errorf("screen loaded as %+v, want the older screen followed by the piece", sc)
	}
}

// A gap between stored parts (a save that never made it) loads the newer
// side: what a replay needs is the latest output, whole.
func TestAGapLoadsTheNewerOutput(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("s", []byte(`{}`), piece(0, "", "old\r\n"), false)
	j.AppendScreen("s", nil, piece(50, "\x1b[1m", "after the gap\r\n"), 0)
	j.AppendScreen("s", nil, piece(65, "", "and on\r\n"), 0)
	j.Close()
	sc := loadOne(t, st)
	if sc.Start != 50 || string(sc.Prefix) != "\x1b[1m" || string(sc.Data) != "after the gap\r\nand on\r\n" || !sc.Cut {
		t.Errorf("screen loaded as %+v, want the run after the gap, cut", sc)
	}
}

// An append writes about its piece, not the screen before it.
func TestAnAppendWritesThePiece(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	const size = 1 << 20
	j.PutSnapshot("s", []byte(`{"id":"s"}`), piece(0, "", string(bytes.Repeat([]byte{'a'}, size))), false)
	j.Sync()
	before := st.db.Stats()
	j.AppendScreen("s", []byte(`{"id":"s"}`), piece(size, "", "a few new lines\r\n"), 0)
	j.Close()
	after := st.db.Stats()
	if written := after.TxStats.GetPageAlloc() - before.TxStats.GetPageAlloc(); written > 8*pageSize(st) {
		t.Errorf("appending 17 bytes after a %d KiB screen allocated %d KiB of pages", size>>10, written>>10)
	}
	if sc := loadOne(t, st); len(sc.Data) != size+17 {
		t.Errorf("screen loaded as %d bytes, want %d", len(sc.Data), size+17)
	}
}

func pageSize(st *Store) int64 { return int64(st.db.Info().PageSize) }

// Behind a stuck disk, a session's queued pieces stay about a ring: the
// pieces the ones after them cover are dropped before they are written,
// and what is stored once the disk moves is the latest output.
func TestJournalKeepsAboutARingQueuedBehindAStuckDisk(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("s", []byte(`{}`), piece(0, "", "start\r\n"), false)
	j.Sync()
	release, err := st.BlockWrites()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	const ring = 256 << 10
	chunk := bytes.Repeat([]byte("x"), 32<<10)
	end := uint64(len("start\r\n"))
	for range 100 {
		j.AppendScreen("s", nil, piece(end, "", string(chunk)), end+uint64(len(chunk))-min(end+uint64(len(chunk)), ring))
		end += uint64(len(chunk))
	}
	j.mu.Lock()
	queued := j.screenBytes
	j.mu.Unlock()
	if queued > ring+2*len(chunk) {
		t.Errorf("%d KiB of one session's output queued behind a stuck write, want about a ring (%d KiB)", queued>>10, ring>>10)
	}
	release()
	j.Close()
	sc := loadOne(t, st)
	if sc.Start+uint64(len(sc.Data)) != end || len(sc.Data) < ring || !sc.Cut {
		t.Errorf("screen loaded from %d, %d bytes, cut %v; want at least the ring's %d bytes, ending at %d", sc.Start, len(sc.Data), sc.Cut, ring, end)
	}
}

// Drain holds a saver back while more than its limit of screens waits
// for the disk, and lets it go once the journal has taken them.
func TestDrainWaitsForTheQueuedScreens(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	defer j.Close()
	j.Drain(0) // nothing queued: returns at once
	release, err := st.BlockWrites()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	// The writer takes the first and waits on the disk with it; the
	// others queue behind.
	screen := piece(0, "", string(bytes.Repeat([]byte{'x'}, 64<<10)))
	j.PutSnapshot("s0", nil, screen, false)
	testutil.Eventually(t, 10*time.Second, "the writer to take the first screen", func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return len(j.pending) == 0
	})
	for i := range 3 {
		j.PutSnapshot(fmt.Sprintf("s%d", i+1), nil, screen, false)
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		j.Drain(64 << 10)
	}()
	select {
	case <-drained:
		t.Fatal("Drain returned with three screens queued behind a stuck disk")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case <-drained:
	case <-time.After(10 * time.Second):
		t.Fatal("Drain still waits after the disk moved")
	}
}

// A build from before pieces, run on a file written since, puts its whole
// screen beside the parts it cannot see; the next load takes the newest
// output, which is that screen.
func TestAnEarlierBuildsScreenBesidePieces(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("s", []byte(`{}`), piece(0, "", "first\r\n"), false)
	j.AppendScreen("s", nil, piece(7, "", "second\r\n"), 0)
	j.Sync()
	if err := st.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketScreens).Bucket([]byte("s")).Put(screenKey, piece(900, "\x1b[?1049h", "later\r\n"))
	}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	sc := loadOne(t, st)
	if sc.Start != 900 || string(sc.Prefix) != "\x1b[?1049h" || string(sc.Data) != "later\r\n" || sc.Cut {
		t.Errorf("screen loaded as %+v, want the earlier build's newer screen", sc)
	}
}
