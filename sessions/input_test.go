package sessions

import (
	"bytes"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestInputGoesDirectWhenNothingWaits: while nothing is queued, input is
// written straight to the terminal; what the terminal does not take, and
// everything after it, goes to the feeder in order.
func TestInputGoesDirectWhenNothingWaits(t *testing.T) {
	q := newInputQueue()
	var direct bytes.Buffer
	room := 5
	q.direct = func(b []byte) int {
		n := min(len(b), room)
		room -= n
		direct.Write(b[:n])
		return n
	}
	for _, s := range []string{"ab", "cdefg", "hi"} {
		if err := q.push([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if direct.String() != "abcde" {
		t.Errorf("written directly %q, want abcde (all the terminal took)", direct.String())
	}
	p, ok := q.take(nil)
	if !ok || string(p) != "fghi" {
		t.Fatalf("the feeder got %q, want fghi", p)
	}
	// The feeder holds input it has not written: nothing may pass it.
	room = 100
	if err := q.push([]byte("jk")); err != nil {
		t.Fatal(err)
	}
	if direct.String() != "abcde" {
		t.Errorf("input went around the feeder's: %q", direct.String())
	}
	if p, _ := q.take(p); string(p) != "jk" {
		t.Fatalf("the feeder got %q, want jk", p)
	}
	// Once the feeder is back waiting with nothing queued, input goes
	// direct again.
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.take(nil) // finds nothing, then waits until close
	}()
	testutil.Eventually(t, storeTimeout, "the feeder back, waiting", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.writing
	})
	if err := q.push([]byte("lm")); err != nil {
		t.Fatal(err)
	}
	if direct.String() != "abcdelm" {
		t.Errorf("written directly %q, want abcdelm", direct.String())
	}
	q.close()
	<-done
}
