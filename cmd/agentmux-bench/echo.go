package main

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// echoWarmup keys are typed and not counted before the measured ones: the
// first round trips pay for cold caches and lazily started goroutines.
const echoWarmup = 20

// echoResult is the round trip of single keystrokes.
type echoResult struct {
	Keys       int     `json:"keys"`
	P50Micros  float64 `json:"p50Micros"`
	P99Micros  float64 `json:"p99Micros"`
	MeanMicros float64 `json:"meanMicros"`
	MaxMicros  float64 `json:"maxMicros"`
}

// measureEcho types keys one at a time into cat on a raw terminal and
// times each from sending terminal.input to reading its echo in
// terminal.output: the round trip through the server, the PTY and back.
func measureEcho(ctx context.Context, e *benchEnv, keys int) (*echoResult, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench echo", echoCommand)
	if err != nil {
		return nil, err
	}
	defer r.close()
	s, c := r.session, r.c
	c.keepData = true

	rtts := make([]time.Duration, 0, keys)
	letters := []string{"a", "b"}
	var f frame
	for i := range echoWarmup + keys {
		key := letters[i%2]
		start := time.Now()
		if err := c.input(s.ID, key); err != nil {
			return nil, err
		}
		for {
			if err := c.next(&f, frameTimeout); err != nil {
				return nil, fmt.Errorf("wait for the echo of key %d: %w", i+1, err)
			}
			if f.Type == typeTerminalOutput && f.SessionID == s.ID && string(f.Data) == key {
				break
			}
			if f.Type == typeTerminalExit && f.SessionID == s.ID {
				return nil, fmt.Errorf("the echo program ended after %d keys", i)
			}
		}
		if i >= echoWarmup {
			rtts = append(rtts, time.Since(start))
		}
	}
	return echoStats(rtts), nil
}

// echoStats summarizes round trips; rtts is sorted in place.
func echoStats(rtts []time.Duration) *echoResult {
	if len(rtts) == 0 {
		return &echoResult{}
	}
	slices.Sort(rtts)
	var sum time.Duration
	for _, d := range rtts {
		sum += d
	}
	micros := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return &echoResult{
		Keys:       len(rtts),
		P50Micros:  micros(percentile(rtts, 0.50)),
		P99Micros:  micros(percentile(rtts, 0.99)),
		MeanMicros: micros(sum / time.Duration(len(rtts))),
		MaxMicros:  micros(rtts[len(rtts)-1]),
	}
}

// percentile returns the p-th quantile of sorted (nearest rank, as
// ws/bench_test.go reports it).
func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
