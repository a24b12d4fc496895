package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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
//
// The typed keys go in turn to the server, to a PTY of this process's
// own (the floor) and to ttyd (--ttyd), key by key: this machine's host
// slows it down for seconds at a time, and typed one after another, one
// of them would meet such a spell and the others not.
func measureEcho(ctx context.Context, e *benchEnv, keys, typedKeys int) (*echoResult, error) {
	// The typed keys' pauses come on top of a run's bound: each of up to
	// three typists waits at most typedPauseMax before each key.
	ctx, cancel := context.WithTimeout(ctx, runTimeout+time.Duration(3*typedKeys)*typedPauseMax)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench echo", echoCommand)
	if err != nil {
		return nil, err
	}
	defer r.close()
	r.c.keepData = true

	server := &typist{roundTrip: serverRoundTrip(r.c, r.ID)}
	tight, err := typeLoop(ctx, echoWarmup+keys, server.roundTrip)
	if err != nil {
		return nil, fmt.Errorf("keys back to back: %w", err)
	}
	res := &echoResult{
		Tight:           echoSummary(tight[echoWarmup:]),
		TypedPauseMinMs: ms(typedPauseMin), TypedPauseMaxMs: ms(typedPauseMax),
	}
	e.logf("echo, %d keys back to back: p50 %s, p99 %s", keys, micros(res.Tight.P50Micros), micros(res.Tight.P99Micros))

	bareTTY, endBare, err := startBare(ctx, echoCommand)
	if err != nil {
		return nil, fmt.Errorf("typed keys into a bare PTY: %w", err)
	}
	defer endBare()
	bare := &typist{roundTrip: bareRoundTrip(ctx, bareTTY)}
	typists := []*typist{server, bare}

	var ttyd *typist
	if e.ttyd != nil {
		c, end, err := e.ttyd.start(ctx, echoCommand)
		if err != nil {
			return nil, fmt.Errorf("echo through ttyd: %w", err)
		}
		defer end()
		ttyd = &typist{roundTrip: ttydRoundTrip(c)}
		tight, err := typeLoop(ctx, echoWarmup+keys, ttyd.roundTrip)
		if err != nil {
			return nil, fmt.Errorf("keys back to back through ttyd: %w", err)
		}
		t := echoSummary(tight[echoWarmup:])
		res.TTYDTight = &t
		typists = append(typists, ttyd)
	}

	e.logf("echo: now %d keys typed into each of %d, in turn", typedKeys, len(typists))
	if err := typeInTurn(ctx, typedKeys, typists); err != nil {
		return nil, fmt.Errorf("typed keys: %w", err)
	}
	res.Typed = echoSummary(server.rtts)
	res.BareTyped = echoSummary(bare.rtts)
	if ttyd != nil {
		t := echoSummary(ttyd.rtts)
		res.TTYDTyped = &t
	}
	return res, nil
}

// typist is one way of typing a key: roundTrip sends it and returns once
// its echo has come back. rtts are the typed keys' round trips.
type typist struct {
	roundTrip func(key byte) error
	rtts      []time.Duration
}

// typeInTurn types n keys into each typist, taking them in turn, each key
// after a pause drawn as typingPauses draws them. The first typist of
// each round moves on by one, so none always follows the same other.
func typeInTurn(ctx context.Context, n int, typists []*typist) error {
	pause := typingPauses()
	for i := range n {
		for j := range typists {
			t := typists[(i+j)%len(typists)]
			if err := sleepCtx(ctx, pause()); err != nil {
				return err
			}
			rtt, err := press(i, n, t.roundTrip)
			if err != nil {
				return err
			}
			t.rtts = append(t.rtts, rtt)
		}
	}
	return nil
}

// typingPauses returns the pauses before typed keys: a person's rhythm,
// the same sequence on every call.
func typingPauses() func() time.Duration {
	rng := rand.New(rand.NewPCG(typedSeed, typedSeed))
	return func() time.Duration {
		return typedPauseMin + time.Duration(rng.Int64N(int64(typedPauseMax-typedPauseMin)+1))
	}
}

// bareRoundTrip types a key into echoCommand in a PTY of this process's
// own (startBare) and waits for its echo: what the kernel and the
// machine's wake-ups cost before any server adds to them.
func bareRoundTrip(ctx context.Context, tty *os.File) func(key byte) error {
	buf := make([]byte, 4<<10)
	return func(key byte) error {
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
	}
}

// serverRoundTrip types a key into the server's echo session and waits
// for its echo.
func serverRoundTrip(c *wsConn, sessionID string) func(key byte) error {
	var f frame
	return func(key byte) error {
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
	}
}

// typeLoop types n keys back to back, alternately a and b, through
// roundTrip, and returns each key's round trip.
func typeLoop(ctx context.Context, n int, roundTrip func(key byte) error) ([]time.Duration, error) {
	rtts := make([]time.Duration, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		rtt, err := press(i, n, roundTrip)
		if err != nil {
			return nil, err
		}
		rtts = append(rtts, rtt)
	}
	return rtts, nil
}

// press types key i of n, a and b alternately, through roundTrip and
// returns its round trip. Every way of typing times its keys here, so
// their figures compare.
func press(i, n int, roundTrip func(key byte) error) (time.Duration, error) {
	start := time.Now()
	if err := roundTrip("ab"[i%2]); err != nil {
		return 0, fmt.Errorf("key %d of %d: %w", i+1, n, err)
	}
	return time.Since(start), nil
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
