package checkpoint

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"
)

// TestAutoTakesEachRequestOnce: requests are taken one at a time, in
// order; a session asked for again before its turn is taken once; an
// unchanged tree makes no checkpoint and tells no one; Run ends with its
// context.
func TestAutoTakesEachRequestOnce(t *testing.T) {
	repo := newRepo(t, map[string]string{"a.txt": "a\n"})
	var mu sync.Mutex
	var taken []string
	done := make(chan struct{}, 8)
	a := NewAuto(Options{}, func(session, _ string, cp Checkpoint, _ time.Time) {
		mu.Lock()
		taken = append(taken, session)
		mu.Unlock()
		done <- struct{}{}
	}, slog.New(slog.NewTextHandler(io.Discard, nil)))

	if _, _, err := Take(testContext(t), repo, "old", Options{}); err != nil {
		t.Fatal(err)
	}
	a.Drop("old", repo)
	writeFile(t, repo, "a.txt", "changed\n")
	// Asked for before Run starts: all wait in the list; a session gone
	// before its turn has its checkpoints dropped instead.
	a.Request("s1", repo)
	a.Request("s2", repo)
	a.Request("s1", repo)
	a.Request("gone", repo)
	a.Drop("gone", repo)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		a.Run(ctx)
	}()
	for range 2 {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("the requested checkpoints were not taken")
		}
	}
	// Unchanged since s1's checkpoint: nothing new, nobody told. The
	// request after it, of a session with none yet, shows the first was
	// handled.
	a.Request("s1", repo)
	a.Request("s3", repo)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the last request was not taken")
	}
	cancel()
	<-stopped

	mu.Lock()
	defer mu.Unlock()
	if len(taken) != 3 || taken[0] != "s1" || taken[1] != "s2" || taken[2] != "s3" {
		t.Fatalf("checkpoints told: %v, want s1, s2, s3", taken)
	}
	for _, s := range []string{"s1", "s2", "s3", "gone", "old"} {
		cps, err := List(testContext(t), repo, s)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"s1": 1, "s2": 1, "s3": 1, "gone": 0, "old": 0}[s]
		if len(cps) != want {
			t.Errorf("%s has %d checkpoints, want %d", s, len(cps), want)
		}
	}
}
