package output

import (
	"testing"
	"time"
)

// roomNow is how far the writer of r may write now, and whether anyone
// holds it.
func roomNow(r *Ring) (uint64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	limit, held, _ := r.roomLocked(time.Now())
	return limit, held
}

// TestPacersHoldTheWriterForTheFastest: the writer may run a ring ahead of
// the fastest pacer, whatever the slower ones do; closing the last pacer
// frees it.
func TestPacersHoldTheWriterForTheFastest(t *testing.T) {
	r := NewRing(100)
	if _, held := roomNow(r); held {
		t.Fatal("held with no pacer")
	}
	slow, fast := r.Pace(0, DefaultStallAfter), r.Pace(0, DefaultStallAfter)
	r.Write(make([]byte, 90))
	fast.Ack(60)
	slow.Ack(10)
	if limit, held := roomNow(r); !held || limit != 160 {
		t.Errorf("limit %d held %v, want 160 (the fastest ack plus the ring)", limit, held)
	}
	fast.Ack(500) // beyond the end: taken as the end
	if limit, _ := roomNow(r); limit != 190 {
		t.Errorf("limit %d after an ack past the end, want 190", limit)
	}
	fast.Close()
	if limit, _ := roomNow(r); limit != 110 {
		t.Errorf("limit %d with only the slow pacer, want 110", limit)
	}
	slow.Close()
	if _, held := roomNow(r); held {
		t.Error("still held once every pacer closed")
	}
}

// TestStalledPacerLetsGo: a pacer behind the writer that makes no progress
// for its StallAfter stops pacing for good; one that is caught up is not
// stalled by waiting for output.
func TestStalledPacerLetsGo(t *testing.T) {
	r := NewRing(100)
	p := r.Pace(0, DefaultStallAfter)
	r.Write(make([]byte, 50))
	r.mu.Lock()
	p.progress = time.Now().Add(-DefaultStallAfter - time.Millisecond)
	_, held, _ := r.roomLocked(time.Now())
	r.mu.Unlock()
	if held || !p.Stalled() {
		t.Fatalf("held %v stalled %v, want released by a stalled pacer", held, p.Stalled())
	}
	p.Ack(50)
	if _, held := roomNow(r); held {
		t.Error("a stalled pacer paces again after an ack")
	}

	q := r.Pace(50, DefaultStallAfter) // caught up
	r.mu.Lock()
	q.progress = time.Now().Add(-time.Hour)
	_, held, _ = r.roomLocked(time.Now())
	r.mu.Unlock()
	if !held || q.Stalled() {
		t.Error("a caught-up pacer counted as stalled")
	}
}

// TestWaitRoom: a writer held by a pacer a ring behind goes on when the
// pacer acknowledges, and at once when released.
func TestWaitRoom(t *testing.T) {
	r := NewRing(100)
	p := r.Pace(0, DefaultStallAfter)
	r.Write(make([]byte, 100))
	if limit, held := roomNow(r); !held || limit >= 110 {
		t.Fatalf("limit %d held %v: the writer would not wait", limit, held)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.WaitRoom(10, nil)
	}()
	p.Ack(20)
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("the writer did not go on after the ack")
	}

	release := make(chan struct{})
	r.Write(make([]byte, 20))
	done = make(chan struct{})
	go func() {
		defer close(done)
		r.WaitRoom(10, release)
	}()
	close(release)
	select {
	case <-done:
	case <-time.After(waitTimeout):
		t.Fatal("the writer did not go on when released")
	}
	p.Close()
}

// TestLeftPacerHoldsUntilStalledOrReplaced: a pacer whose client went away
// keeps its hold for as long as a stalled one would (from when it left,
// had it been caught up), or until another client paces.
func TestLeftPacerHoldsUntilStalledOrReplaced(t *testing.T) {
	r := NewRing(100)
	p := r.Pace(0, DefaultStallAfter)
	r.Write(make([]byte, 100))
	p.Leave()
	if limit, held := roomNow(r); !held || limit != 100 {
		t.Fatalf("limit %d held %v right after the client left, want 100 (its ack plus the ring)", limit, held)
	}
	p.Ack(100) // from nobody: it left
	p.Close()  // the same
	if limit, held := roomNow(r); !held || limit != 100 {
		t.Fatalf("limit %d held %v: a left pacer moved or let go", limit, held)
	}
	q := r.Pace(30, DefaultStallAfter)
	if limit, held := roomNow(r); !held || limit != 130 {
		t.Fatalf("limit %d held %v once another client paces, want 130 (the new one's)", limit, held)
	}
	q.Leave()
	r.mu.Lock()
	q.progress = time.Now().Add(-DefaultStallAfter - time.Millisecond)
	_, held, _ := r.roomLocked(time.Now())
	r.mu.Unlock()
	if held {
		t.Fatal("a client that left holds the writer past the stall bound")
	}

	// Caught up when it left: it may not stay caught up for ever, as a
	// pacer still there would.
	c := r.Pace(r.end, DefaultStallAfter)
	c.Leave()
	r.mu.Lock()
	c.progress = time.Now().Add(-DefaultStallAfter - time.Millisecond)
	_, held, _ = r.roomLocked(time.Now())
	r.mu.Unlock()
	if held {
		t.Error("a caught-up client that left holds the writer past the stall bound")
	}
}
