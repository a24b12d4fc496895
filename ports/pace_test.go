package ports

import (
	"testing"
	"time"
)

// TestLookBudget: over ten minutes of looks that each cost 55 ms (5,000
// listening sockets, some replaced before each look), a poller spends
// at most lookBurst and 1/lookShare of the time (and one look), and
// looks as often as that allows; the first look, dearer than the rest,
// does not hold the next back; cheap looks (4 ms, a few hundred sockets)
// go once a PollEvery, never held back.
func TestLookBudget(t *testing.T) {
	const span = 10 * time.Minute
	t0 := time.Now()
	var b Budget
	if w := b.Wait(t0); w != 0 {
		t.Fatalf("a fresh budget waits %v", w)
	}
	now := t0.Add(200 * time.Millisecond)
	b.Spend(now, 200*time.Millisecond)
	if w := b.Wait(now); w != 0 {
		t.Errorf("a first look of 200 ms holds the next back %v", w)
	}
	spent, looks := 200*time.Millisecond, 0
	for now.Before(t0.Add(span)) {
		now = now.Add(max(PollEvery, b.Wait(now)))
		now = now.Add(55 * time.Millisecond)
		b.Spend(now, 55*time.Millisecond)
		spent += 55 * time.Millisecond
		looks++
	}
	// A look begun within the budget may overrun it by what it takes.
	if most := lookBurst + now.Sub(t0)/lookShare + 55*time.Millisecond; spent > most {
		t.Errorf("looks took %v in %v, over %v", spent, now.Sub(t0), most)
	}
	if fewest := int((span/lookShare)/(55*time.Millisecond)) - 1; looks < fewest {
		t.Errorf("%d looks in %v, want at least %d: the budget held back more than it must", looks, span, fewest)
	}

	var rest Budget
	now = t0
	for range 600 {
		if w := rest.Wait(now); w != 0 {
			t.Fatalf("looks of 4 ms a second held back %v", w)
		}
		now = now.Add(PollEvery)
		rest.Spend(now.Add(4*time.Millisecond), 4*time.Millisecond)
	}
}

// TestLookCPUCountsCPU: a look is charged the CPU it used, not the time
// it waited: one that sleeps costs next to nothing, one that computes
// costs about its time.
func TestLookCPUCountsCPU(t *testing.T) {
	if slept := LookCPU(func() { time.Sleep(50 * time.Millisecond) }); slept > 10*time.Millisecond {
		t.Errorf("a look that slept 50 ms was charged %v", slept)
	}
	var wall time.Duration
	busy := LookCPU(func() {
		start := time.Now()
		for time.Since(start) < 30*time.Millisecond {
		}
		wall = time.Since(start)
	})
	if busy <= 0 || busy > wall+5*time.Millisecond {
		t.Errorf("a look that computed for %v was charged %v", wall, busy)
	}
}
