package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// fanoutOptions describe the fan-out workload: one session writing Bytes,
// at Rate bytes per second (0: as fast as the terminal takes them), to
// Clients connections, each attached to it.
type fanoutOptions struct {
	Clients int
	Bytes   int64
	Rate    int64
}

// fanoutRun is one run of the fan-out, as the reading clients saw it.
type fanoutRun struct {
	Clients int `json:"clients"`
	// Acking reports whether the readers acknowledged every frame, and
	// so paced the writer.
	Acking bool `json:"acking"`
	// DurationSeconds runs from the start of the flood to the last
	// client's terminal.exit.
	DurationSeconds float64 `json:"durationSeconds"`
	// Per-client throughput: the flood's bytes over the time from its
	// start to that client's terminal.exit.
	PerClientMBpsMin    float64 `json:"perClientMBpsMin"`
	PerClientMBpsMedian float64 `json:"perClientMBpsMedian"`
	PerClientMBpsMax    float64 `json:"perClientMBpsMax"`
	// LagMsMedian and LagMsMax, for a paced flood, are how long after the
	// writer's nominal end (size over rate from the start) the clients
	// had terminal.exit: the delivery delay, which grows when clients
	// fall behind even while their MB/s still matches the pace.
	LagMsMedian float64 `json:"lagMsMedian,omitempty"`
	LagMsMax    float64 `json:"lagMsMax,omitempty"`
	// TotalMBps is every byte the clients received over DurationSeconds.
	TotalMBps     float64 `json:"totalMBps"`
	ReceivedBytes int64   `json:"receivedBytes"`
	Resyncs       int     `json:"resyncs"`
	LostBytes     uint64  `json:"lostBytes"`
	// LostBytesPerClient is what each reader lost to resyncs, in the
	// order they attached (a dropped one: up to its drop); Min, Median
	// and Max sum it up.
	LostBytesPerClient []uint64 `json:"lostBytesPerClient"`
	LostBytesMin       uint64   `json:"lostBytesMin"`
	LostBytesMedian    float64  `json:"lostBytesMedian"`
	LostBytesMax       uint64   `json:"lostBytesMax"`
	// CompleteClients received every byte, with no resync.
	CompleteClients int `json:"completeClients"`
	// DroppedClients lost their connection before terminal.exit;
	// DropError is the first such error.
	DroppedClients int    `json:"droppedClients"`
	DropError      string `json:"dropError,omitempty"`
	// Stalled is what became of the client that never read, in a run
	// that had one.
	Stalled *stalledOutcome `json:"stalled,omitempty"`
}

// stalledOutcome is what a client that stopped reading got once it
// read again, after the others had finished.
type stalledOutcome struct {
	// Acked reports whether it acknowledged its position once before it
	// stopped, so that it paced the writer until it counted as stalled.
	Acked bool `json:"acked"`
	// Outcome is "resynced", "dropped", or "complete": the flood fit in
	// the ring and the socket buffers, so nothing was lost.
	Outcome       string `json:"outcome"`
	Resyncs       int    `json:"resyncs"`
	LostBytes     uint64 `json:"lostBytes"`
	ReceivedBytes int64  `json:"receivedBytes"`
	Error         string `json:"error,omitempty"`
}

// fanoutPair is the fan-out without and with a stalled client, the
// readers acknowledging or not.
type fanoutPair struct {
	Normal    fanoutRun `json:"normal"`
	WithStall fanoutRun `json:"withStall"`
	// MedianRatio and MinRatio compare the reading clients' throughput
	// with the stalled client to without: 1 means it cost them nothing.
	MedianRatio float64 `json:"medianRatio"`
	MinRatio    float64 `json:"minRatio"`
}

// fanoutResult is the fan-out without and with a stalled client, first
// with readers that never acknowledge (the server skips them ahead when
// they fall a ring behind), then with readers that acknowledge every
// frame and so pace the writer, and a stalled client that acknowledged
// once.
type fanoutResult struct {
	Clients    int        `json:"clients"`
	FloodBytes int64      `json:"floodBytes"`
	RateMBps   float64    `json:"rateMBps"` // 0: unpaced
	NotAcking  fanoutPair `json:"notAcking"`
	Acking     fanoutPair `json:"acking"`
}

// measureFanout runs the fan-out, then again with one more client that
// attaches and stops reading; first with readers that do not acknowledge,
// then with readers that do.
func measureFanout(ctx context.Context, e *benchEnv, o fanoutOptions) (*fanoutResult, error) {
	r := &fanoutResult{Clients: o.Clients, FloodBytes: o.Bytes, RateMBps: float64(o.Rate) / 1e6}
	for _, ack := range []bool{false, true} {
		p := &r.NotAcking
		if ack {
			p = &r.Acking
		}
		for _, stall := range []bool{false, true} {
			run, err := fanoutOnce(ctx, e, o, stall, ack)
			if err != nil {
				return nil, fmt.Errorf("fan-out to %d clients (acknowledging: %v, stalled client: %v): %w", o.Clients, ack, stall, err)
			}
			e.logf("fan-out to %d clients, acknowledging %v, stalled client %v: per client min %.1f / median %.1f MB/s, %d complete, %d resyncs",
				o.Clients, ack, stall, run.PerClientMBpsMin, run.PerClientMBpsMedian, run.CompleteClients, run.Resyncs)
			if stall {
				p.WithStall = *run
			} else {
				p.Normal = *run
			}
		}
		if p.Normal.PerClientMBpsMedian > 0 {
			p.MedianRatio = p.WithStall.PerClientMBpsMedian / p.Normal.PerClientMBpsMedian
		}
		if p.Normal.PerClientMBpsMin > 0 {
			p.MinRatio = p.WithStall.PerClientMBpsMin / p.Normal.PerClientMBpsMin
		}
	}
	return r, nil
}

// clientCount is one reading client's result.
type clientCount struct {
	st    *streamCount
	took  time.Duration
	err   error
	ended bool // reached terminal.exit
}

// fanoutOnce runs the flood once to o.Clients readers, plus the stalled
// client when stall is set. With ack the readers acknowledge their
// position before the flood and every frame they read, and the stalled
// client acknowledges once before it stops reading.
func fanoutOnce(ctx context.Context, e *benchEnv, o fanoutOptions, stall, ack bool) (*fanoutRun, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	s, cleanup, err := e.newSession(ctx, "bench fan-out", writerCommand(e.self, o.Rate, o.Bytes))
	if err != nil {
		return nil, err
	}
	defer cleanup()

	// Every client attaches and has the ready line before the flood
	// starts, so every one of them is owed the whole flood.
	conns := make([]*wsConn, o.Clients)
	counts := make([]clientCount, o.Clients)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range conns {
		c, err := e.dial(ctx)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		conns[i] = c
		if counts[i].st, err = c.attachReady(s.ID); err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		if ack {
			if err := c.startPacing(s.ID, counts[i].st); err != nil {
				return nil, fmt.Errorf("client %d: %w", i+1, err)
			}
		}
	}
	var stalled *wsConn
	var stalledSt *streamCount
	if stall {
		if stalled, err = e.dial(ctx); err != nil {
			return nil, fmt.Errorf("stalled client: %w", err)
		}
		defer stalled.close()
		// It reads its attachment and the ready line, acknowledges them
		// when the readers acknowledge, then reads nothing more until the
		// others are done; its reads then acknowledge nothing.
		if stalledSt, err = stalled.attachReady(s.ID); err != nil {
			return nil, fmt.Errorf("stalled client: %w", err)
		}
		if ack {
			if err := stalled.ack(s.ID, stalledSt.seq); err != nil {
				return nil, fmt.Errorf("stalled client: %w", err)
			}
		}
	}

	// Each reader goroutine owns its connection's reads, and its writes
	// (acknowledgements); this function owns them all and waits for
	// them. The newline that starts the flood is written on the first
	// connection before its reader starts.
	start := time.Now()
	if err := conns[0].input(s.ID, "\n"); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			cc := &counts[i]
			cc.err = c.readUntil(s.ID, cc.st, exited)
			cc.took = time.Since(start)
			cc.ended = cc.err == nil
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}

	run := &fanoutRun{Clients: o.Clients, Acking: ack}
	var per, lags, lost []float64
	var nominal time.Duration
	if o.Rate > 0 {
		nominal = time.Duration(float64(o.Bytes) / float64(o.Rate) * float64(time.Second))
	}
	var last time.Duration
	for i, cc := range counts {
		run.ReceivedBytes += cc.st.dataBytes
		run.Resyncs += cc.st.resyncs
		run.LostBytes += cc.st.lostBytes
		run.LostBytesPerClient = append(run.LostBytesPerClient, cc.st.lostBytes)
		lost = append(lost, float64(cc.st.lostBytes))
		if !cc.ended {
			run.DroppedClients++
			if run.DropError == "" {
				run.DropError = fmt.Sprintf("client %d: %v", i+1, cc.err)
			}
			continue
		}
		if cc.st.exitCode != 0 {
			return nil, fmt.Errorf("the writer exited with %d", cc.st.exitCode)
		}
		if cc.st.resyncs == 0 && cc.st.dataBytes == o.Bytes {
			run.CompleteClients++
		}
		per = append(per, mbps(o.Bytes, cc.took))
		lags = append(lags, ms(cc.took-nominal))
		last = max(last, cc.took)
	}
	if len(per) == 0 {
		return nil, fmt.Errorf("every client was dropped; the first: %s", run.DropError)
	}
	slices.Sort(per)
	run.PerClientMBpsMin, run.PerClientMBpsMedian, run.PerClientMBpsMax = per[0], median(per), per[len(per)-1]
	if o.Rate > 0 {
		run.LagMsMedian, run.LagMsMax = median(lags), slices.Max(lags)
	}
	run.LostBytesMin, run.LostBytesMax = slices.Min(run.LostBytesPerClient), slices.Max(run.LostBytesPerClient)
	run.LostBytesMedian = median(lost)
	run.DurationSeconds = last.Seconds()
	run.TotalMBps = mbps(run.ReceivedBytes, last)

	if stall {
		run.Stalled = drainStalled(stalled, s.ID, stalledSt, o.Bytes)
		run.Stalled.Acked = ack
	}
	return run, nil
}

// drainStalled reads the stalled client to the end of the flood or of its
// connection and says what became of it.
func drainStalled(c *wsConn, sessionID string, st *streamCount, want int64) *stalledOutcome {
	err := c.readUntil(sessionID, st, exited)
	out := &stalledOutcome{Resyncs: st.resyncs, LostBytes: st.lostBytes, ReceivedBytes: st.dataBytes}
	switch {
	case err != nil:
		out.Outcome, out.Error = "dropped", err.Error()
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			out.Outcome = "unknown"
		}
	case st.resyncs > 0:
		out.Outcome = "resynced"
	case st.dataBytes == want:
		out.Outcome = "complete"
	default:
		out.Outcome = fmt.Sprintf("incomplete (%d of %d bytes, no resync)", st.dataBytes, want)
	}
	return out
}
