package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// echoWarmup keys are typed and not counted before the measured ones: the
// first round trips pay for cold caches and lazily started goroutines.
const echoWarmup = 20

// Typed keys come after a pause drawn uniformly from this range, as a
// person types: long enough for the server, the program and this client
// to go idle between keys, so each key pays for waking them up.
const (
	typedPauseMin = 10 * time.Millisecond
	typedPauseMax = 50 * time.Millisecond
)

// typedSeed seeds the typed pauses, so every run types to the same rhythm.
const typedSeed = 20261123

// echoStats is the round trip of single keystrokes.
type echoStats struct {
	Keys       int     `json:"keys"`
	P50Micros  float64 `json:"p50Micros"`
	P99Micros  float64 `json:"p99Micros"`
	MeanMicros float64 `json:"meanMicros"`
	MaxMicros  float64 `json:"maxMicros"`
}

// echoResult is the round trip of keys typed back to back (Tight: the
// next key leaves as soon as the echo of the last arrives) and of keys
// typed with pauses between them (Typed), and, for the floor this machine
// sets, the same typed keys straight into a PTY of this process's own
// running the same program (BareTyped).
type echoResult struct {
	Tight     echoStats `json:"tight"`
	Typed     echoStats `json:"typed"`
	BareTyped echoStats `json:"bareTyped"`
	// TTYDTight and TTYDTyped are the same keys through ttyd (--ttyd).
	TTYDTight *echoStats `json:"ttydTight,omitempty"`
	TTYDTyped *echoStats `json:"ttydTyped,omitempty"`
	// TypedPauseMinMs and TypedPauseMaxMs bound the uniform pause before
	// each typed key.
	TypedPauseMinMs float64 `json:"typedPauseMinMs"`
	TypedPauseMaxMs float64 `json:"typedPauseMaxMs"`
}

// measureEcho types keys one at a time into cat on a raw terminal and
// times each from sending terminal.input to reading its echo in
// terminal.output: the round trip through the server, the PTY and back.
// First keys back to back, after a warm-up, then typedKeys keys with a
// person's pauses between them, on the same session, so the tight loop
// is the typed keys' warm-up.
func measureEcho(ctx context.Context, e *benchEnv, keys, typedKeys int) (*echoResult, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench echo", echoCommand)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.c.keepData = true

	tight, err := typeKeys(ctx, r.c, r.ID, echoWarmup+keys, nil)
	if err != nil {
		return nil, fmt.Errorf("keys back to back: %w", err)
	}
	res := &echoResult{
		Tight:           echoSummary(tight[echoWarmup:]),
		TypedPauseMinMs: ms(typedPauseMin), TypedPauseMaxMs: ms(typedPauseMax),
	}
	e.logf("echo, %d keys back to back: p50 %s, p99 %s; now %d typed keys", keys, micros(res.Tight.P50Micros), micros(res.Tight.P99Micros), typedKeys)
	typed, err := typeKeys(ctx, r.c, r.ID, typedKeys, typingPauses())
	if err != nil {
		return nil, fmt.Errorf("typed keys: %w", err)
	}
	res.Typed = echoSummary(typed)
	bare, err := typeBare(ctx, typedKeys, typingPauses())
	if err != nil {
		return nil, fmt.Errorf("typed keys into a bare PTY: %w", err)
	}
	res.BareTyped = echoSummary(bare)
	if e.ttyd != nil {
		tight, typed, err := ttydEcho(ctx, e.ttyd, keys, typedKeys)
		if err != nil {
			return nil, fmt.Errorf("echo through ttyd: %w", err)
		}
		t, ty := echoSummary(tight), echoSummary(typed)
		res.TTYDTight, res.TTYDTyped = &t, &ty
	}
	return res, nil
}

// typingPauses returns the pauses before typed keys, the same sequence on
// every call: the bare PTY and the server are typed at to one rhythm.
func typingPauses() func() time.Duration {
	rng := rand.New(rand.NewPCG(typedSeed, typedSeed))
	return func() time.Duration {
		return typedPauseMin + time.Duration(rng.Int64N(int64(typedPauseMax-typedPauseMin)+1))
	}
}

// typeBare types n keys into echoCommand in a PTY of its own, each after
// a pause, and returns each key's round trip from the write to reading its
// echo: what the kernel and the machine's wake-ups cost before any server
// adds to them.
func typeBare(ctx context.Context, n int, pause func() time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	tty, end, err := startBare(ctx, echoCommand)
	if err != nil {
		return nil, err
	}
	defer end()
	buf := make([]byte, 4<<10)
	return typeLoop(ctx, n, pause, func(key byte) error {
		if _, err := tty.Write([]byte{key}); err != nil {
			return ptyErr(ctx, err)
		}
		for {
			k, err := tty.Read(buf)
			if err != nil {
				return ptyErr(ctx, err)
			}
			if k > 0 && buf[k-1] == key {
				return nil
			}
		}
	})
}

// typeKeys types n keys into the echo session, each once the echo of the
// one before has come and, when pause is set, after a pause it returns,
// and returns each key's round trip.
func typeKeys(ctx context.Context, c *wsConn, sessionID string, n int, pause func() time.Duration) ([]time.Duration, error) {
	var f frame
	return typeLoop(ctx, n, pause, func(key byte) error {
		if err := c.input(sessionID, string(key)); err != nil {
			return err
		}
		for {
			if err := c.next(&f, frameTimeout); err != nil {
				return err
			}
			if f.Type == typeTerminalOutput && f.SessionID == sessionID && len(f.Data) == 1 && f.Data[0] == key {
				return nil
			}
			if f.Type == typeTerminalExit && f.SessionID == sessionID {
				return errors.New("the echo program ended")
			}
		}
	})
}

// typeLoop types n keys, alternately a and b, each after a pause when
// pause is set, through roundTrip, which sends one key and returns once
// its echo has come back; it returns each key's round trip. Every way of
// typing (through the server, into a bare PTY, through ttyd) times its
// keys here, so their figures compare.
func typeLoop(ctx context.Context, n int, pause func() time.Duration, roundTrip func(key byte) error) ([]time.Duration, error) {
	rtts := make([]time.Duration, 0, n)
	for i := range n {
		if pause != nil {
			if err := sleepCtx(ctx, pause()); err != nil {
				return nil, err
			}
		}
		key := "ab"[i%2]
		start := time.Now()
		if err := roundTrip(key); err != nil {
			return nil, fmt.Errorf("key %d of %d: %w", i+1, n, err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return rtts, nil
}

// echoSummary summarizes round trips; rtts is sorted in place.
func echoSummary(rtts []time.Duration) echoStats {
	if len(rtts) == 0 {
		return echoStats{}
	}
	slices.Sort(rtts)
	var sum time.Duration
	for _, d := range rtts {
		sum += d
	}
	micros := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	return echoStats{
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
