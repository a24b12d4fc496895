package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// rssSessions is how many sessions the memory measurement fills: the
// server's default --max-sessions.
const rssSessions = 4

// settleTime is how long the memory measurement lets the server finish
// what it is doing (reading the last output from the terminals, writing
// the last replay frames) before reading its RSS.
const settleTime = 300 * time.Millisecond

// rssResult is the server's resident memory, in MiB (2^20 bytes), as its
// sessions fill and clients attach.
type rssResult struct {
	ServerPID int `json:"serverPid"`
	Sessions  int `json:"sessions"`
	Clients   int `json:"clients"`
	// FillBytes is what each session printed: twice the scrollback, so
	// every ring is full.
	FillBytes int64 `json:"fillBytes"`
	// IdleMiB before the sessions; FullSessionsMiB once their rings are
	// full; WithClientsMiB once every client has its replay; PeakMiB the
	// most seen while sampling every 10 ms from the first session on.
	IdleMiB         float64 `json:"idleMiB"`
	FullSessionsMiB float64 `json:"fullSessionsMiB"`
	WithClientsMiB  float64 `json:"withClientsMiB"`
	PeakMiB         float64 `json:"peakMiB"`
	// AgentsMiB is the agents' process trees, from GET /api/resources.
	AgentsMiB float64 `json:"agentsMiB"`
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// measureRSS fills four sessions' rings, attaches clients spread over
// them, and reads the server's RSS at each step.
func measureRSS(ctx context.Context, e *benchEnv, clients int) (_ *rssResult, err error) {
	if e.serverPID == 0 {
		return nil, errors.New("the server's process is unknown")
	}
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r := &rssResult{ServerPID: e.serverPID, Sessions: rssSessions, Clients: clients, FillBytes: 2 * e.scrollback}
	idle, err := processRSS(e.serverPID)
	if err != nil {
		return nil, err
	}
	r.IdleMiB = mib(idle)

	// The peak sampler belongs to this function, which stops it and
	// waits for it before returning.
	var (
		peakMu sync.Mutex
		peak   = idle
	)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-tick.C:
			}
			if v, err := processRSS(e.serverPID); err == nil {
				peakMu.Lock()
				peak = max(peak, v)
				peakMu.Unlock()
			}
		}
	})
	defer func() {
		stopSampling()
		sampler.Wait()
	}()

	dir, err := os.MkdirTemp(e.tmp, "rss")
	if err != nil {
		return nil, fmt.Errorf("make marker directory: %w", err)
	}
	ids := make([]string, rssSessions)
	markers := make([]string, rssSessions)
	for i := range ids {
		markers[i] = filepath.Join(dir, fmt.Sprintf("filled-%d", i))
		s, cleanup, err := e.newSession(ctx, fmt.Sprintf("bench rss %d", i+1), fillCommand(r.FillBytes, markers[i]))
		if err != nil {
			return nil, err
		}
		defer cleanup()
		ids[i] = s.ID
	}
	if err := waitFiles(ctx, markers); err != nil {
		return nil, fmt.Errorf("wait for the sessions to fill their rings: %w", err)
	}
	if err := sleepCtx(ctx, settleTime); err != nil {
		return nil, err
	}
	full, err := processRSS(e.serverPID)
	if err != nil {
		return nil, err
	}
	r.FullSessionsMiB = mib(full)

	conns := make([]*wsConn, clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range conns {
		if conns[i], err = e.dial(ctx); err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		if err := conns[i].attach(ids[i%rssSessions]); err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
	}
	// The clients read their replays at once, each in its own goroutine,
	// as browsers would; this function waits for them all.
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() { errs[i] = readReplay(c, ids[i%rssSessions]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read the replays: %w", err)
	}
	if err := sleepCtx(ctx, settleTime); err != nil {
		return nil, err
	}
	with, err := processRSS(e.serverPID)
	if err != nil {
		return nil, err
	}
	r.WithClientsMiB = mib(with)
	agents, err := e.api.agentsRSS(ctx)
	if err != nil {
		return nil, err
	}
	r.AgentsMiB = mib(agents)
	stopSampling()
	sampler.Wait()
	peakMu.Lock()
	r.PeakMiB = mib(max(peak, with))
	peakMu.Unlock()
	return r, nil
}

// readReplay reads a session's replay until fillMarker has come.
func readReplay(c *wsConn, sessionID string) error {
	c.keepData = true
	var tail []byte
	st := &streamCount{}
	return c.readUntil(sessionID, st, func(_ *streamCount, f *frame) bool {
		if f.Type != typeTerminalOutput || f.SessionID != sessionID {
			return false
		}
		// The marker may straddle two frames.
		tail = append(tail, f.Data...)
		found := bytes.Contains(tail, []byte(fillMarker))
		tail = tail[max(0, len(tail)-len(fillMarker)):]
		return found
	})
}

// waitFiles waits until every one of paths exists.
func waitFiles(ctx context.Context, paths []string) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		missing := 0
		for _, p := range paths {
			if _, err := os.Stat(p); err != nil {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d sessions not done: %w", missing, len(paths), context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// sleepCtx waits d, or less if ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
