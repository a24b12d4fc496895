package share_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/sessions/store"
	"github.com/agentmux/agentmux/share"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ends collects the links that ended, as the WebSocket hub is told them.
type ends struct {
	mu   sync.Mutex
	got  []share.Ended
	more chan struct{}
}

func watch(l *share.Links) *ends {
	e := &ends{more: make(chan struct{}, 64)}
	l.Subscribe(func(x share.Ended) {
		e.mu.Lock()
		e.got = append(e.got, x)
		e.mu.Unlock()
		e.more <- struct{}{}
	})
	return e
}

// next waits for the next link to end.
func (e *ends) next(t *testing.T) share.Ended {
	t.Helper()
	select {
	case <-e.more:
	case <-time.After(10 * time.Second):
		t.Fatal("no link ended within 10s")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.got[0]
	e.got = e.got[1:]
	return x
}

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLinksOutliveARestart: links are kept in the real database, without
// their secrets, and come back after a restart as they were; those that
// expired meanwhile, or whose session is gone, do not, and are dropped.
func TestLinksOutliveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	st := openStore(t, path)
	l, err := share.New(share.Options{Store: st, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	day, daySecret, err := l.Create("s1", 0, true, "alice")
	if err != nil {
		t.Fatal(err)
	}
	_, hourSecret, err := l.Create("s1", time.Hour, false, "bob")
	if err != nil {
		t.Fatal(err)
	}
	_, goneSecret, err := l.Create("s2", 0, true, "carol")
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{daySecret, hourSecret, goneSecret} {
		if bytes.Contains(raw, []byte(s)) {
			t.Fatal("a link's secret is in the database file")
		}
	}

	clock.Advance(2 * time.Hour) // the hour's link expired while the server was down
	st = openStore(t, path)
	defer st.Close()
	l, err = share.New(share.Options{Store: st, Clock: clock, Exists: func(id string) bool { return id == "s1" }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got, err := l.Check(daySecret)
	if err != nil || got != day {
		t.Errorf("after a restart the day's link is %+v (%v), want %+v", got, err, day)
	}
	for name, s := range map[string]string{"expired": hourSecret, "of a deleted session": goneSecret, "made up": "x" + daySecret[1:], "empty": ""} {
		if _, err := l.Check(s); !errors.Is(err, share.ErrDenied) {
			t.Errorf("the link %s: Check says %v, want ErrDenied", name, err)
		}
	}
	kept, err := st.Shares()
	if err != nil || len(kept) != 1 || kept[day.ID] == nil {
		t.Errorf("the database keeps %d links (%v), want only %s", len(kept), err, day.ID)
	}
}

// TestLinksEnd: a link ends when it is revoked, when its time is up (at
// that moment, the earliest first, with no one asking), or when its
// session goes; each end is told once, with its reason, and the link
// opens nothing after.
func TestLinksEnd(t *testing.T) {
	clock := clockwork.NewFakeClock()
	l, err := share.New(share.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ended := watch(l)
	long, longSecret, _ := l.Create("s1", 2*time.Hour, true, "")
	short, shortSecret, _ := l.Create("s1", time.Hour, true, "")
	revoked, revokedSecret, _ := l.Create("s1", time.Hour, true, "")
	other, otherSecret, _ := l.Create("s2", 3*time.Hour, true, "")

	if err := l.Revoke("s2", revoked.ID); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("revoking through another session: %v, want ErrNotFound", err)
	}
	if err := l.Revoke("s1", revoked.ID); err != nil {
		t.Fatal(err)
	}
	if e := ended.next(t); e.Link.ID != revoked.ID || e.Reason != share.ReasonRevoked {
		t.Errorf("ended %+v, want %s revoked", e, revoked.ID)
	}
	if err := l.Revoke("s1", revoked.ID); !errors.Is(err, share.ErrNotFound) {
		t.Errorf("revoking twice: %v, want ErrNotFound", err)
	}

	clock.Advance(time.Hour - time.Second)
	if _, err := l.Check(shortSecret); err != nil {
		t.Errorf("a second before its end: %v", err)
	}
	clock.Advance(time.Second)
	if e := ended.next(t); e.Link.ID != short.ID || e.Reason != share.ReasonExpired {
		t.Errorf("ended %+v, want %s expired", e, short.ID)
	}
	if list := l.List("s1"); len(list) != 1 || list[0].ID != long.ID {
		t.Errorf("s1's links %+v, want only %s", list, long.ID)
	}
	l.ForgetSession("s2")
	if e := ended.next(t); e.Link.ID != other.ID || e.Reason != share.ReasonDeleted {
		t.Errorf("ended %+v, want %s with its session", e, other.ID)
	}
	clock.Advance(time.Hour)
	if e := ended.next(t); e.Link.ID != long.ID || e.Reason != share.ReasonExpired {
		t.Errorf("ended %+v, want %s expired", e, long.ID)
	}
	for _, s := range []string{longSecret, shortSecret, revokedSecret, otherSecret} {
		if _, err := l.Check(s); !errors.Is(err, share.ErrDenied) {
			t.Errorf("an ended link: %v, want ErrDenied", err)
		}
	}
	select {
	case <-ended.more:
		t.Errorf("a link ended twice: %+v", ended.got)
	default:
	}
}

// TestLinksAreBounded: a session has at most MaxPerSession live links and
// the workspace MaxLinks; a life out of bounds is refused; an ended link
// frees its place.
func TestLinksAreBounded(t *testing.T) {
	l, err := share.New(share.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, d := range []time.Duration{-time.Second, share.MinExpiry - time.Second, share.MaxExpiry + time.Second} {
		if _, _, err := l.Create("s", d, true, ""); !errors.Is(err, share.ErrInvalid) {
			t.Errorf("a life of %v: %v, want ErrInvalid", d, err)
		}
	}
	var first share.Link
	for i := range share.MaxPerSession {
		link, _, err := l.Create("s", 0, true, "")
		if err != nil {
			t.Fatalf("link %d: %v", i, err)
		}
		if i == 0 {
			first = link
		}
	}
	if _, _, err := l.Create("s", 0, true, ""); !errors.Is(err, share.ErrTooMany) {
		t.Errorf("one more than a session may: %v, want ErrTooMany", err)
	}
	if err := l.Revoke("s", first.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Create("s", 0, true, ""); err != nil {
		t.Errorf("after a revoke: %v", err)
	}
	for i := share.MaxPerSession; i < share.MaxLinks; i++ {
		if _, _, err := l.Create("s-"+string(rune('a'+i/share.MaxPerSession)), 0, true, ""); err != nil {
			t.Fatalf("link %d: %v", i, err)
		}
	}
	if _, _, err := l.Create("another", 0, true, ""); !errors.Is(err, share.ErrTooMany) {
		t.Errorf("one more than the workspace keeps: %v, want ErrTooMany", err)
	}
}
