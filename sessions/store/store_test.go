package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openTestStore(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestOpenStoreHeldByAnother(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	held := openTestStore(t, path)
	defer held.Close()
	began := time.Now()
	_, err := Open(path, 300*time.Millisecond)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), path) {
		t.Fatalf("open of a held store = %v, want ErrLocked naming %s", err, path)
	}
	if waited := time.Since(began); waited > 5*time.Second {
		t.Fatalf("gave up after %v", waited)
	}
}

func TestOpenStoreDamaged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	st := openTestStore(t, good)
	j := NewJournal(st, discard())
	j.PutSnapshot("00000000-0000-4000-8000-000000000001", []byte(`{"id":"00000000-0000-4000-8000-000000000001"}`),
		Screen{Start: 1, Prefix: []byte("\x1b[?1049h"), Data: []byte("a screen\r\n")}.marshal(), false)
	j.PutQueue("00000000-0000-4000-8000-000000000001", []byte(`{"prompts":[],"rev":1}`))
	j.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	zeroedMeta := bytes.Clone(real)
	clear(zeroedMeta[:8192]) // both meta pages
	for name, content := range map[string][]byte{
		"garbage":     bytes.Repeat([]byte("not a database "), 4096),
		"zeroed meta": zeroedMeta,
		"truncated":   real[:5000],
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".db")
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, time.Second)
		if err == nil {
			_, _, err = s.Load()
			s.Close()
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want ErrCorrupt naming the file", name, err)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, content) {
			t.Errorf("%s: the damaged file was changed", name)
		}
	}
}

func TestScreenEncoding(t *testing.T) {
	in := Screen{Start: 1 << 40, Prefix: []byte("\x1b[?1049h"), Data: []byte("héllo\r\n")}
	out, err := decodeScreen(in.marshal())
	if err != nil || out.Start != in.Start || !bytes.Equal(out.Prefix, in.Prefix) || !bytes.Equal(out.Data, in.Data) {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if _, err := decodeScreen([]byte{1, 2, 3}); err == nil {
		t.Error("a short record decoded")
	}
	bad := in.marshal()
	bad[11] = 0xff // prefix length beyond the record
	if _, err := decodeScreen(bad); err == nil {
		t.Error("a prefix overrunning the record decoded")
	}
}

// A screen that cannot be decoded, in either form, is reported and left
// out; its session's record and prompt queue still load.
func TestUnreadableScreenIsLeftOutNotItsSession(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("new", []byte(`{"id":"new"}`), Screen{Start: 3, Data: []byte("fine\r\n")}.marshal(), false)
	j.PutQueue("new", []byte(`{"rev":1}`))
	j.PutRecord("old", []byte(`{"id":"old"}`))
	j.Close()
	// A damaged part, and the damaged screen of a file written before
	// screens had buckets: a plain value.
	if err := st.db.Update(func(tx *bolt.Tx) error {
		part := tx.Bucket(bucketScreens).Bucket([]byte("new")).Bucket(partKey(3))
		if err := part.Put(partBase, []byte{1, 2}); err != nil {
			return err
		}
		return tx.Bucket(bucketScreens).Put([]byte("old"), []byte{1, 2})
	}); err != nil {
		t.Fatal(err)
	}
	saved, skipped, err := st.Load()
	if err != nil || len(saved) != 2 || len(skipped) != 2 {
		t.Fatalf("load = %d saved, skipped %v, %v; want both sessions and two reasons", len(saved), skipped, err)
	}
	for _, sv := range saved {
		if string(sv.Record) != `{"id":"`+sv.ID+`"}` || sv.Screen.Data != nil || sv.Screen.Start != 0 {
			t.Errorf("session %s loaded as %+v, want its record and no screen", sv.ID, sv)
		}
	}
	if string(saved[0].Queue) != `{"rev":1}` || saved[1].Queue != nil {
		t.Errorf("queues loaded as %q and %q, want the saved one and none", saved[0].Queue, saved[1].Queue)
	}
}

// Remove forgets all of a session, its screen in either form included,
// and nothing of another.
func TestRemoveForgetsEverythingOfTheSession(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	sc := Screen{Start: 3, Data: []byte("screen\r\n")}.marshal()
	j := NewJournal(st, discard())
	for _, id := range []string{"new", "old", "kept"} {
		j.PutSnapshot(id, []byte(`{}`), sc, false)
		j.PutQueue(id, []byte(`{}`))
	}
	j.Sync()
	if err := st.db.Update(func(tx *bolt.Tx) error {
		screens := tx.Bucket(bucketScreens)
		if err := screens.DeleteBucket([]byte("old")); err != nil {
			return err
		}
		return screens.Put([]byte("old"), sc) // as an older file keeps it
	}); err != nil {
		t.Fatal(err)
	}
	j.Remove("new")
	j.Remove("old")
	j.Close()
	if err := st.db.View(func(tx *bolt.Tx) error {
		for _, id := range []string{"new", "old"} {
			k := []byte(id)
			screens := tx.Bucket(bucketScreens)
			if tx.Bucket(bucketSessions).Get(k) != nil || len(screenParts(screens, k)) != 0 || screens.Bucket(k) != nil || tx.Bucket(bucketQueues).Get(k) != nil {
				return fmt.Errorf("something of the removed session %s is still stored", id)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 1 || saved[0].ID != "kept" || !bytes.Equal(saved[0].Screen.Data, []byte("screen\r\n")) {
		t.Fatalf("after the removals load = %+v, skipped %v, %v; want the kept session whole", saved, skipped, err)
	}
}

// A save writes the screen that changed, not every session's: bbolt
// rewrites a leaf page whole, so screens kept side by side in one leaf
// cost every save a copy of them all.
func TestSavingOneScreenWritesOnlyIt(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	const size = 256 << 10
	j := NewJournal(st, discard())
	for i := range 4 {
		id := fmt.Sprintf("s%d", i)
		j.PutSnapshot(id, []byte(`{"id":"`+id+`"}`), Screen{Data: bytes.Repeat([]byte{'a' + byte(i)}, size)}.marshal(), false)
	}
	j.Sync()
	before := st.db.Stats()
	j.PutSnapshot("s2", []byte(`{"id":"s2"}`), Screen{Start: 1, Data: bytes.Repeat([]byte{'z'}, size)}.marshal(), false)
	j.Close()
	after := st.db.Stats()
	if written := after.TxStats.GetPageAlloc() - before.TxStats.GetPageAlloc(); written > size+size/2 {
		t.Errorf("saving one %d KiB screen wrote %d KiB of pages; the other sessions' screens were rewritten", size>>10, written>>10)
	}
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 4 {
		t.Fatalf("load = %d saved, skipped %v, %v", len(saved), skipped, err)
	}
	for _, sv := range saved {
		want := byte('a' + sv.ID[1] - '0')
		if sv.ID == "s2" {
			want = 'z'
		}
		if len(sv.Screen.Data) != size || sv.Screen.Data[0] != want || sv.Screen.Data[size-1] != want {
			t.Errorf("session %s's screen came back as %d bytes of %q, want %d of %q", sv.ID, len(sv.Screen.Data), sv.Screen.Data[:1], size, want)
		}
	}
}

// A file written when screens were plain values (id -> snapshot) still
// restores them, and a save or a removal replaces them.
func TestScreensOfAnOlderFile(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	old := Screen{Start: 7, Prefix: []byte("\x1b[?1049h"), Data: []byte("old screen\r\n")}
	if err := st.db.Update(func(tx *bolt.Tx) error {
		for _, id := range []string{"kept", "gone"} {
			if err := tx.Bucket(bucketSessions).Put([]byte(id), []byte(`{"id":"`+id+`"}`)); err != nil {
				return err
			}
			if err := tx.Bucket(bucketScreens).Put([]byte(id), old.marshal()); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 2 {
		t.Fatalf("load = %d saved, skipped %v, %v", len(saved), skipped, err)
	}
	for _, sv := range saved {
		if sv.Screen.Start != old.Start || !bytes.Equal(sv.Screen.Prefix, old.Prefix) || !bytes.Equal(sv.Screen.Data, old.Data) {
			t.Errorf("session %s's older screen read as %+v", sv.ID, sv.Screen)
		}
	}

	j := NewJournal(st, discard())
	j.PutSnapshot("kept", []byte(`{"id":"kept"}`), Screen{Start: 9, Data: []byte("new screen\r\n")}.marshal(), false)
	j.Remove("gone")
	j.Close()
	if err := st.db.View(func(tx *bolt.Tx) error {
		screens := tx.Bucket(bucketScreens)
		if screens.Bucket([]byte("kept")) == nil {
			return errors.New("the saved screen did not move into a bucket of its own")
		}
		if len(screenParts(screens, []byte("gone"))) != 0 {
			return errors.New("the removed session's older screen is still stored")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	saved, skipped, err = st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 1 || string(saved[0].Screen.Data) != "new screen\r\n" || saved[0].Screen.Start != 9 {
		t.Fatalf("after a save and a removal, load = %+v, skipped %v, %v", saved, skipped, err)
	}
}

// v1.db was written by the build before this package existed (commit
// 9a2b027), through its journal: session A with a screen in a bucket of
// its own and a prompt queue, session B with a screen as a plain value,
// as files older still keep them. These are the bytes it holds.
const (
	goldenA       = "0f6b1a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
	goldenB       = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	goldenRecordA = `{"id":"0f6b1a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b","name":"claude 1","profile":{"Name":"claude","Start":["claude","--session-id","{id}"],"Resume":["claude","--resume","{id}"],"Hooks":true,"Conversation":"claude"},"command":["claude","--session-id","0f6b1a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b","--settings","/data/hooks.json"],"cwd":"/work/space/.worktrees/feat","createdAt":"2025-03-01T10:00:00Z","lastActivityAt":"2025-03-01T11:30:00.5Z","status":"waiting","reason":"the agent asks: go on?","cols":120,"rows":40,"worktree":{"path":"/work/space/.worktrees/feat","branch":"feat","base":"main"}}`
	goldenRecordB = `{"id":"1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d","name":"codex 1","profile":{"Name":"codex","Start":["codex","--no-daemon"],"Resume":["codex","resume","{conversation}","--no-daemon"],"Notify":true,"Conversation":"codex"},"command":["codex","--no-daemon"],"cwd":"/work/space","createdAt":"2025-03-02T09:00:00Z","lastActivityAt":"2025-03-02T09:05:00Z","status":"error","reason":"exited with code 3","cols":80,"rows":24,"exit":{"Code":3,"Signal":0},"conversation":"0191e0a2-7c4e-7000-8000-00000000abcd"}`
	goldenQueueA  = `{"prompts":[{"id":"5d1c6a0e-8f2b-4c3d-9e4f-a5b6c7d8e9f0","author":{"id":"ann-1","name":"Ann"},"text":"go on\nand on","queuedAt":"2025-03-01T11:00:00Z"}],"rev":3}`
	goldenScreenA = "\x00\x00\x00\x00\x00\x10\x00\x05\x00\x00\x00\x0e\x1b[?1049h\x1b[?25lhéllo\r\nready?\r\n"
	goldenScreenB = "\x00\x00\x00\x00\x00\x00\x00*\x00\x00\x00\x00bye\r\n"
)

// copyGolden returns the path of a copy of testdata/v1.db: opening a
// database for writing changes it.
func copyGolden(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentmux.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A database an earlier build wrote loads with every byte of it.
func TestLoadsTheFileOfAnEarlierBuild(t *testing.T) {
	st := openTestStore(t, copyGolden(t))
	defer st.Close()
	saved, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(saved) != 2 {
		t.Fatalf("load = %d saved, skipped %v, %v; want both sessions", len(saved), skipped, err)
	}
	a, b := saved[0], saved[1]
	if a.ID != goldenA || string(a.Record) != goldenRecordA || string(a.Queue) != goldenQueueA {
		t.Errorf("session A loaded as %s %q, queue %q", a.ID, a.Record, a.Queue)
	}
	if a.Screen.Start != 1<<20+5 || string(a.Screen.Prefix) != "\x1b[?1049h\x1b[?25l" || string(a.Screen.Data) != "héllo\r\nready?\r\n" {
		t.Errorf("session A's screen loaded as %+v", a.Screen)
	}
	if b.ID != goldenB || string(b.Record) != goldenRecordB || b.Queue != nil {
		t.Errorf("session B loaded as %s %q, queue %q", b.ID, b.Record, b.Queue)
	}
	if b.Screen.Start != 42 || len(b.Screen.Prefix) != 0 || string(b.Screen.Data) != "bye\r\n" {
		t.Errorf("session B's screen loaded as %+v", b.Screen)
	}
}

// What the journal writes now is, byte for byte, what an earlier build
// wrote (same buckets, keys and values) but for the screen, which is now
// in a part of its own under its start (see screen.go): the file's
// format changes only where it was meant to.
func TestWritesTheFormatOfAnEarlierBuild(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	j := NewJournal(st, discard())
	j.PutSnapshot(goldenA, []byte(goldenRecordA),
		Screen{Start: 1<<20 + 5, Prefix: []byte("\x1b[?1049h\x1b[?25l"), Data: []byte("héllo\r\nready?\r\n")}.marshal(), false)
	j.PutQueue(goldenA, []byte(goldenQueueA))
	j.PutRecord(goldenB, []byte(goldenRecordB))
	j.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got, want := dump(t, path), dump(t, filepath.Join("testdata", "v1.db"))
	// B's screen is the one thing the earlier build did not write through
	// its journal: it stands for a file older still.
	if w := want["screens/"+goldenB]; w != goldenScreenB {
		t.Fatalf("the golden file's screen of B is %q", w)
	}
	delete(want, "screens/"+goldenB)
	partA := "screens/" + goldenA + "/" + string(partKey(1<<20+5)) + "/base"
	want[partA] = want["screens/"+goldenA+"/screen"]
	delete(want, "screens/"+goldenA+"/screen")
	if len(got) != len(want) {
		t.Errorf("wrote %d values, the earlier build %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: wrote %q, the earlier build %q", k, g, w)
		}
	}
	if got[partA] != goldenScreenA {
		t.Errorf("A's screen written as %q, want %q", got[partA], goldenScreenA)
	}
}

// dump returns every value in the database at path by its path of
// buckets and keys, opening it read-only so a golden file is left as it is.
func dump(t *testing.T, path string) map[string]string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	var walk func(prefix string, b *bolt.Bucket) error
	walk = func(prefix string, b *bolt.Bucket) error {
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				return walk(prefix+string(k)+"/", b.Bucket(k))
			}
			out[prefix+string(k)] = string(v)
			return nil
		})
	}
	if err := db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error { return walk(string(name)+"/", b) })
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
