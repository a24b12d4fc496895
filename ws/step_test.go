package ws

import (
	"testing"
	"time"
)

// TestNextStep covers the pull loop's decisions: when output leaves at
// once, when it waits for company, and what comes before sending.
func TestNextStep(t *testing.T) {
	const interval = 5 * time.Millisecond
	never := time.Duration(1<<63 - 1) // time.Since of the zero time
	tests := []struct {
		name     string
		p        pull
		want     step
		wantHold time.Duration
	}{
		{"closed wins over output", pull{off: 0, end: 10, closed: true}, stepStop, 0},
		{"closed wins over a resync", pull{off: 0, start: 5, end: 10, closed: true}, stepStop, 0},
		{"behind the ring", pull{off: 4, start: 5, end: 10}, stepResync, 0},
		{"behind the ring, run ended", pull{off: 4, start: 5, end: 10, runEnded: true, exitPending: true}, stepResync, 0},
		{"nothing new", pull{off: 10, start: 0, end: 10, sinceSent: time.Second, interval: interval}, stepWait, 0},
		{"nothing new, run ended, exit reported", pull{off: 10, end: 10, runEnded: true}, stepWait, 0},
		{"nothing new, run ended, exit not reported", pull{off: 10, end: 10, runEnded: true, exitPending: true}, stepExit, 0},
		{"output before the exit", pull{off: 9, end: 10, runEnded: true, exitPending: true, sinceSent: 0, interval: interval}, stepSend, 0},
		{"first byte after a quiet interval", pull{off: 0, end: 1, sinceSent: interval, interval: interval}, stepSend, 0},
		{"first frame ever", pull{off: 0, end: 1, sinceSent: never, interval: interval}, stepSend, 0},
		{"small batch soon after a frame", pull{off: 0, end: 100, sinceSent: 2 * time.Millisecond, interval: interval}, stepHold, 3 * time.Millisecond},
		{"small batch right after a frame", pull{off: 0, end: 100, sinceSent: 0, interval: interval}, stepHold, interval},
		{"one byte short of a full frame", pull{off: 0, end: flushBytes - 1, sinceSent: 0, interval: interval}, stepHold, interval},
		{"a full frame", pull{off: 0, end: flushBytes, sinceSent: 0, interval: interval}, stepSend, 0},
		{"more than a full frame", pull{off: 7, end: 7 + 3*flushBytes, sinceSent: 0, interval: interval}, stepSend, 0},
		{"an echo", pull{off: 0, end: 1, echo: true, sinceSent: 0, interval: interval}, stepSend, 0},
		{"the run's last output", pull{off: 0, end: 1, runEnded: true, sinceSent: 0, interval: interval}, stepSend, 0},
		{"no batching", pull{off: 0, end: 1, sinceSent: 0, interval: 0}, stepSend, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, hold := nextStep(tc.p)
			if got != tc.want || hold != tc.wantHold {
				t.Errorf("nextStep(%+v) = %d, %s; want %d, %s", tc.p, got, hold, tc.want, tc.wantHold)
			}
		})
	}
}
