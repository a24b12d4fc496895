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

// rssTargetMiB is the project's goal for the server's RSS with four full
// sessions and eleven clients after floods.
const rssTargetMiB = 32

// How the memory measurement decides that the server has finished what
// it was doing (reading the last output, writing the last frames, saving
// the changed screens, giving memory back) before it reads the RSS:
// sampled every settleSample, the RSS has moved by no more than
// settleTolerance over the last settle window (rssOptions.Settle). After
// settleMax, or three windows when that is longer, it takes the last
// sample and says it had not settled.
const (
	settleSample    = 50 * time.Millisecond
	settleTolerance = 256 << 10
	settleMax       = 30 * time.Second
)

// defaultSettle is the default settle window: longer than the server's
// default --save-interval (5 s), so that a window without change spans a
// save, and a screen save, which snapshots every changed ring into the
// database, counts: it is part of what the server holds after output.
const defaultSettle = 6 * time.Second

// rssOptions describe the memory measurement: Clients acknowledging
// clients over the four sessions, which print FloodBytes each while they
// are attached; each figure is read once the RSS held still for Settle.
type rssOptions struct {
	Clients    int
	FloodBytes int64
	Settle     time.Duration
}

// rssStep is the server's memory at one step of the measurement, once it
// settled, in MiB: all of it, the anonymous part (heap, stacks) and the
// part that maps files (the binary, the session database).
type rssStep struct {
	MiB     float64 `json:"MiB"`
	AnonMiB float64 `json:"anonMiB"`
	FileMiB float64 `json:"fileMiB"`
	// SettleSeconds is how long it took to hold still; Settled is false
	// when it still moved when the wait gave up, and the figures are
	// then the last sample's.
	SettleSeconds float64 `json:"settleSeconds"`
	Settled       bool    `json:"settled"`
	// Where says what the resident bytes are, read right after.
	Where memWhere `json:"where"`
}

// rssResult is the server's resident memory, in MiB (2^20 bytes), as its
// sessions fill, clients attach, and the sessions flood those clients.
type rssResult struct {
	ServerPID int `json:"serverPid"`
	Sessions  int `json:"sessions"`
	// Clients acknowledge every frame, as browsers showing the sessions
	// do, spread over the sessions.
	Clients int `json:"clients"`
	// FillBytes is what each session printed before the clients came:
	// twice the scrollback, so every ring is full. FloodBytes is what
	// each printed more once they were attached.
	FillBytes  int64 `json:"fillBytes"`
	FloodBytes int64 `json:"floodBytes"`
	// IdleMiB before the sessions; FullSessionsMiB once their rings are
	// full; WithClientsMiB once every client has its replay;
	// AfterFloodsMiB once every client has the floods, the clients still
	// attached; PeakMiB the most seen while sampling every 10 ms from the
	// first session on. All but the peak are read once the RSS settled.
	IdleMiB         float64 `json:"idleMiB"`
	FullSessionsMiB float64 `json:"fullSessionsMiB"`
	WithClientsMiB  float64 `json:"withClientsMiB"`
	AfterFloodsMiB  float64 `json:"afterFloodsMiB"`
	PeakMiB         float64 `json:"peakMiB"`
	TargetMiB       float64 `json:"targetMiB"`
	// SettleWindowSeconds is how long the RSS had to hold still; Steps
	// has each settled step by name (full, withClients, afterFloods)
	// with its breakdown and how long it took.
	SettleWindowSeconds float64            `json:"settleWindowSeconds"`
	Steps               map[string]rssStep `json:"steps"`
	// FloodSeconds runs from the input that starts the floods until every
	// client has them; FloodResyncs and FloodLostBytes are what the
	// clients were skipped during them (0 for clients that keep up).
	FloodSeconds   float64 `json:"floodSeconds"`
	FloodResyncs   int     `json:"floodResyncs"`
	FloodLostBytes uint64  `json:"floodLostBytes"`
	// AgentsMiB is the agents' process trees, from GET /api/resources.
	AgentsMiB float64 `json:"agentsMiB"`
}

// mib returns b bytes in MiB.
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// measureRSS fills four sessions' rings, attaches acknowledging clients
// spread over them, has every session flood them, and reads the server's
// RSS once it settles at each step.
func measureRSS(ctx context.Context, e *benchEnv, o rssOptions) (_ *rssResult, err error) {
	if e.serverPID == 0 {
		return nil, errors.New("the server's process is unknown")
	}
	// Each of the three settled readings may wait three windows.
	ctx, cancel := context.WithTimeout(ctx, runTimeout+3*max(settleMax, 3*o.Settle))
	defer cancel()
	clients := o.Clients
	r := &rssResult{
		ServerPID: e.serverPID, Sessions: rssSessions, Clients: clients, FillBytes: 2 * e.scrollback, FloodBytes: o.FloodBytes,
		TargetMiB: rssTargetMiB, SettleWindowSeconds: o.Settle.Seconds(), Steps: map[string]rssStep{},
	}
	idle, err := processRSS(e.serverPID)
	if err != nil {
		return nil, err
	}
	r.IdleMiB = mib(idle)
	// settle reads the RSS once it stops changing, and notes how long
	// that took.
	settle := func(step string) (float64, error) {
		m, took, settled, err := settleRSS(ctx, e.serverPID, o.Settle)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", step, err)
		}
		where, err := processMemWhere(e.serverPID)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", step, err)
		}
		r.Steps[step] = rssStep{MiB: mib(m.RSS), AnonMiB: mib(m.Anon), FileMiB: mib(m.File), SettleSeconds: took.Seconds(), Settled: settled, Where: where}
		state := "held still"
		if !settled {
			state = "still moving"
		}
		e.logf("rss %s: %.1f MiB (anonymous %.1f, files %.1f), %s after %v", step, mib(m.RSS), mib(m.Anon), mib(m.File), state, took.Round(time.Millisecond))
		return mib(m.RSS), nil
	}

	peak := samplePeak(ctx, e.serverPID, idle)
	defer peak.stop()

	dir, err := os.MkdirTemp(e.tmp, "rss")
	if err != nil {
		return nil, fmt.Errorf("make marker directory: %w", err)
	}
	ids := make([]string, rssSessions)
	filled := make([]string, rssSessions)
	flooded := make([]string, rssSessions)
	for i := range ids {
		filled[i] = filepath.Join(dir, fmt.Sprintf("filled-%d", i))
		flooded[i] = filepath.Join(dir, fmt.Sprintf("flooded-%d", i))
		s, cleanup, err := e.newSession(ctx, fmt.Sprintf("bench rss %d", i+1), fillCommand(r.FillBytes, o.FloodBytes, filled[i], flooded[i]))
		if err != nil {
			return nil, err
		}
		defer cleanup()
		ids[i] = s.ID
	}
	if err := waitFiles(ctx, filled); err != nil {
		return nil, fmt.Errorf("wait for the sessions to fill their rings: %w", err)
	}
	if r.FullSessionsMiB, err = settle("full"); err != nil {
		return nil, err
	}

	// Each client is read by a goroutine of its own from its attachment
	// until this function closes it, as a browser reads, so it answers
	// the server's pings while the RSS settles; it reports as it passes
	// each marker.
	fl := &followers{}
	defer fl.close()
	for i := range clients {
		c, err := fl.dial(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		// Every client acknowledges from its attachment on, so the
		// floods are paced by the fastest client of each session.
		c.keepData, c.acking, c.idle = true, true, true
		id := ids[i%rssSessions]
		if err := c.attach(id); err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		fl.follow(c, id, &streamCount{}, sawMarker(id, fillMarker), sawMarker(id, floodMarker))
	}
	replayed, err := fl.wait(ctx, "replays")
	if err != nil {
		return nil, err
	}
	if r.WithClientsMiB, err = settle("withClients"); err != nil {
		return nil, err
	}

	floodStart := time.Now()
	if err := startWorkloads(ctx, e, ids); err != nil {
		return nil, fmt.Errorf("start the floods: %w", err)
	}
	flood, err := fl.wait(ctx, "floods")
	if err != nil {
		return nil, err
	}
	if err := waitFiles(ctx, flooded); err != nil {
		return nil, fmt.Errorf("wait for the sessions to end their floods: %w", err)
	}
	r.FloodSeconds = time.Since(floodStart).Seconds()
	// The resyncs of the replays, if any, are not the floods'.
	for i := range flood {
		r.FloodResyncs += flood[i].resyncs - replayed[i].resyncs
		r.FloodLostBytes += flood[i].lostBytes - replayed[i].lostBytes
	}
	if r.AfterFloodsMiB, err = settle("afterFloods"); err != nil {
		return nil, err
	}

	agents, err := e.api.agentsRSS(ctx)
	if err != nil {
		return nil, err
	}
	r.AgentsMiB = mib(agents)
	r.PeakMiB = max(mib(peak.stop()), r.FullSessionsMiB, r.WithClientsMiB, r.AfterFloodsMiB)
	return r, nil
}

// peakSampler reads a process's RSS every peakSample from samplePeak on
// and keeps the largest. Its one goroutine belongs to whoever called
// samplePeak, who must call stop.
type peakSampler struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu protects peak.
	mu   sync.Mutex
	peak uint64
}

// peakSample is how often a peakSampler reads the RSS.
const peakSample = 10 * time.Millisecond

// samplePeak starts sampling the RSS of process pid, from floor, until
// stop or the end of ctx.
func samplePeak(ctx context.Context, pid int, floor uint64) *peakSampler {
	ctx, cancel := context.WithCancel(ctx)
	p := &peakSampler{cancel: cancel, peak: floor}
	p.wg.Go(func() {
		tick := time.NewTicker(peakSample)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if v, err := processRSS(pid); err == nil {
				p.mu.Lock()
				p.peak = max(p.peak, v)
				p.mu.Unlock()
			}
		}
	})
	return p
}

// stop ends the sampling, waits for it, and returns the peak; it may be
// called more than once.
func (p *peakSampler) stop() uint64 {
	p.cancel()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

// settleRSS waits until the RSS of process pid has held still for window
// (see settleSample) and returns its memory then, how long that took, and
// whether it settled or the wait (settleMax, or three windows) ran out
// first.
func settleRSS(ctx context.Context, pid int, window time.Duration) (m memInfo, took time.Duration, settled bool, err error) {
	start := time.Now()
	keep := int(window/settleSample) + 1
	var samples []uint64
	tick := time.NewTicker(settleSample)
	defer tick.Stop()
	for {
		if m, err = processMem(pid); err != nil {
			return memInfo{}, 0, false, err
		}
		samples = append(samples, m.RSS)
		if len(samples) > keep {
			samples = samples[1:]
		}
		if len(samples) == keep && spreadOf(samples) <= settleTolerance {
			return m, time.Since(start), true, nil
		}
		if time.Since(start) >= max(settleMax, 3*window) {
			return m, time.Since(start), false, nil
		}
		select {
		case <-ctx.Done():
			return memInfo{}, 0, false, context.Cause(ctx)
		case <-tick.C:
		}
	}
}

// spreadOf returns the difference between the largest and the smallest
// of vs.
func spreadOf(vs []uint64) uint64 {
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return hi - lo
}

// stepPassed is what a client's reader reports as it passes a step: its
// count then, or the error that stopped it.
type stepPassed struct {
	st  streamCount
	err error
}

// sawMarker returns a readUntil condition that holds once marker has come
// in the session's output, which needs c.keepData. Each condition keeps
// the end of the output it saw, so each reader needs its own.
func sawMarker(sessionID, marker string) func(*streamCount, *frame) bool {
	var tail []byte
	return func(_ *streamCount, f *frame) bool {
		if f.Type != typeTerminalOutput || f.SessionID != sessionID {
			return false
		}
		// The marker may straddle two frames.
		tail = append(tail, f.Data...)
		found := bytes.Contains(tail, []byte(marker))
		tail = tail[max(0, len(tail)-len(marker)):]
		return found
	}
}

// followers are clients each read by a goroutine of its own, as a
// browser reads, through a series of steps, each a readUntil condition;
// each reports as it passes a step, then reads on until it is closed.
// The function that makes them owns the goroutines: it must call close,
// which closes the connections and waits for them.
type followers struct {
	conns  []*wsConn
	passed []chan stepPassed
	wg     sync.WaitGroup
}

// dial opens a client that close will close.
func (fl *followers) dial(ctx context.Context, e *benchEnv) (*wsConn, error) {
	c, err := e.dial(ctx)
	if err != nil {
		return nil, err
	}
	fl.conns = append(fl.conns, c)
	return c, nil
}

// follow reads the session's stream on c into st, from now on in a
// goroutine of its own, which then owns c's reads and writes. Clients
// are numbered for wait in the order they follow.
func (fl *followers) follow(c *wsConn, sessionID string, st *streamCount, steps ...func(*streamCount, *frame) bool) {
	passed := make(chan stepPassed, len(steps))
	fl.passed = append(fl.passed, passed)
	fl.wg.Go(func() {
		for _, step := range steps {
			err := c.readUntil(sessionID, st, step)
			passed <- stepPassed{st: *st, err: err}
			if err != nil {
				return
			}
		}
		// Nothing more is expected: this only answers pings, until the
		// connection is closed.
		_ = c.readUntil(sessionID, st, func(*streamCount, *frame) bool { return false })
	})
}

// wait waits for every client to pass its next step, and returns their
// counts then; what names the step for errors.
func (fl *followers) wait(ctx context.Context, what string) ([]streamCount, error) {
	counts := make([]streamCount, len(fl.passed))
	for i, ch := range fl.passed {
		select {
		case p := <-ch:
			if p.err != nil {
				return nil, fmt.Errorf("read the %s: client %d: %w", what, i+1, p.err)
			}
			counts[i] = p.st
		case <-ctx.Done():
			return nil, fmt.Errorf("read the %s: %w", what, context.Cause(ctx))
		}
	}
	return counts, nil
}

// close closes every client and waits for their goroutines.
func (fl *followers) close() {
	for _, c := range fl.conns {
		c.close()
	}
	fl.wg.Wait()
}

// startWorkloads types the line that starts each session's workload, on a
// connection of its own: the clients' goroutines write theirs, and input
// needs no attachment.
func startWorkloads(ctx context.Context, e *benchEnv, ids []string) error {
	in, err := e.dial(ctx)
	if err != nil {
		return err
	}
	defer in.close()
	for i, id := range ids {
		if err := in.input(id, "\n"); err != nil {
			return fmt.Errorf("session %d: %w", i+1, err)
		}
	}
	return nil
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
