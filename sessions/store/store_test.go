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
		Screen{Start: 1, Prefix: []byte("\x1b[?1049h"), Data: []byte("a screen\r\n")}.marshal())
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
	out, err := unmarshalScreen(in.marshal())
	if err != nil || out.Start != in.Start || !bytes.Equal(out.Prefix, in.Prefix) || !bytes.Equal(out.Data, in.Data) {
		t.Fatalf("round trip = %+v, %v", out, err)
	}
	if _, err := unmarshalScreen([]byte{1, 2, 3}); err == nil {
		t.Error("a short record decoded")
	}
	bad := in.marshal()
	bad[11] = 0xff // prefix length beyond the record
	if _, err := unmarshalScreen(bad); err == nil {
		t.Error("a prefix overrunning the record decoded")
	}
}

// A screen that cannot be decoded, in either form, is reported and left
// out; its session's record and prompt queue still load.
func TestUnreadableScreenIsLeftOutNotItsSession(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	j := NewJournal(st, discard())
	j.PutSnapshot("new", []byte(`{"id":"new"}`), []byte{1, 2})
	j.PutQueue("new", []byte(`{"rev":1}`))
	j.PutRecord("old", []byte(`{"id":"old"}`))
	j.Close()
	// The damaged screen of a file written before screens had buckets: a
	// plain value.
	if err := st.db.Update(func(tx *bolt.Tx) error {
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
		j.PutSnapshot(id, []byte(`{}`), sc)
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
			if tx.Bucket(bucketSessions).Get(k) != nil || getScreen(screens, k) != nil || screens.Bucket(k) != nil || tx.Bucket(bucketQueues).Get(k) != nil {
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
		j.PutSnapshot(id, []byte(`{"id":"`+id+`"}`), Screen{Data: bytes.Repeat([]byte{'a' + byte(i)}, size)}.marshal())
	}
	j.Sync()
	before := st.db.Stats()
	j.PutSnapshot("s2", []byte(`{"id":"s2"}`), Screen{Start: 1, Data: bytes.Repeat([]byte{'z'}, size)}.marshal())
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
	j.PutSnapshot("kept", []byte(`{"id":"kept"}`), Screen{Start: 9, Data: []byte("new screen\r\n")}.marshal())
	j.Remove("gone")
	j.Close()
	if err := st.db.View(func(tx *bolt.Tx) error {
		screens := tx.Bucket(bucketScreens)
		if screens.Bucket([]byte("kept")) == nil {
			return errors.New("the saved screen did not move into a bucket of its own")
		}
		if getScreen(screens, []byte("gone")) != nil {
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
