package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// scaleClients is how many clients follow each session in the scale
// measurement: a session open in two browsers, or two tabs.
const scaleClients = 2

// scaleOverheadMiB is what the project allows a session to cost beyond
// its scrollback: the goal is under 2 MiB plus the scrollback a session.
const scaleOverheadMiB = 2

// scaleNeedMargin is how far above what its idle sessions need the
// server's RSS may be once their output stopped for a while (After):
// within 25 %.
const scaleNeedMargin = 1.25

// scaleAfter is how long after the sessions stop printing the scale
// measurement reads the RSS by default: the server is to be back within
// scaleNeedMargin of what its idle sessions need by then.
const scaleAfter = 30 * time.Second

// scaleOptions describe the scale measurement: for each count of
// Sessions, a server of its own runs that many staged printers (see
// stages) followed by scaleClients acknowledging clients each. Once
// every ring is full, the RSS is read when it has held still for Settle
// (what the sessions need); then the sessions trickle and the server's
// CPU and disk writes are counted over Window; then they print a build
// log and the same is counted over Window again; then they stop, the
// RSS is read After the stop, and the CPU is counted over Window once
// more.
type scaleOptions struct {
	Sessions []int
	Window   time.Duration
	Settle   time.Duration
	After    time.Duration
}

// scaleStep is one session count of the scale measurement. CPU figures
// are in percent of one core; per-session figures divide what the
// sessions add to the server by their count. Disk writes are write_bytes
// of /proc/<pid>/io: what the server sent to the disk, its saves of the
// sessions' output for the most part.
type scaleStep struct {
	// Sessions is the count; Clients all the clients following them.
	Sessions int `json:"sessions"`
	Clients  int `json:"clients"`
	// IdleMiB is the fresh server's RSS before its first session.
	IdleMiB float64 `json:"idleMiB"`
	// NeedMiB is the RSS once every session filled its ring and went
	// silent, every client attached, read once it held still
	// (NeedSettled false: it still moved when the wait gave up): what the
	// sessions need when they are idle.
	NeedMiB           float64 `json:"needMiB"`
	NeedSettled       bool    `json:"needSettled"`
	NeedSettleSeconds float64 `json:"needSettleSeconds"`
	// TrickleSeconds is the trickle window's length: the sessions print
	// an agent's status lines. TrickleCPUSeconds is the server's CPU time
	// in it, TricklePrintedBytes what the sessions printed in it, as
	// their first client read them, and TrickleDiskBytes what the server
	// wrote to disk.
	TrickleSeconds      float64 `json:"trickleSeconds"`
	TrickleCPUSeconds   float64 `json:"trickleCPUSeconds"`
	TricklePrintedBytes uint64  `json:"tricklePrintedBytes"`
	TrickleDiskBytes    uint64  `json:"trickleDiskBytes"`
	// BusyPeakMiB is the most RSS seen over the busy window, while every
	// session prints a build log with its ring full; PeakMiB the most
	// seen from the first session to the end of the quiet window. Both
	// are sampled every 10 ms.
	BusyPeakMiB float64 `json:"busyPeakMiB"`
	PeakMiB     float64 `json:"peakMiB"`
	// BusySeconds is the busy window's length; BusyCPUSeconds the
	// server's CPU time in it (utime and stime of /proc/<pid>/stat);
	// BusyDiskBytes what it wrote to disk in it.
	BusySeconds    float64 `json:"busySeconds"`
	BusyCPUSeconds float64 `json:"busyCPUSeconds"`
	BusyDiskBytes  uint64  `json:"busyDiskBytes"`
	// MachineBusyCores and MachineStealCores are how many of the
	// machine's cores were busy, with anything, and taken by the host
	// (steal) during the busy window: near NumCPU, the machine was the
	// limit.
	MachineBusyCores  float64 `json:"machineBusyCores"`
	MachineStealCores float64 `json:"machineStealCores"`
	// SessionMBpsMedian and SessionMBpsMin are how fast the sessions
	// printed during the busy window, as their first client read them;
	// PrintedBytes is what all of them printed in it.
	SessionMBpsMedian float64 `json:"sessionMBpsMedian"`
	SessionMBpsMin    float64 `json:"sessionMBpsMin"`
	PrintedBytes      uint64  `json:"printedBytes"`
	// Resyncs and LostBytes are what the clients were skipped, all of
	// them together: 0 for clients that acknowledge.
	Resyncs   int    `json:"resyncs"`
	LostBytes uint64 `json:"lostBytes"`
	// AfterStopMiB is the RSS AfterStopSeconds after the file that stops
	// the build logs was written, the clients still attached: the
	// server's memory once output stopped, against NeedMiB. It replaces
	// an RSS read once it held still: the goal is a time, and memory
	// that is given back later does not meet it.
	AfterStopMiB     float64 `json:"afterStopMiB"`
	AfterStopSeconds float64 `json:"afterStopSeconds"`
	// QuietWhere says what that RSS is, read right after it.
	QuietWhere memWhere `json:"quietWhere"`
	// QuietSeconds is the quiet window's length, which begins then, and
	// QuietCPUSeconds the server's CPU time in it.
	QuietSeconds    float64 `json:"quietSeconds"`
	QuietCPUSeconds float64 `json:"quietCPUSeconds"`
	// DatabaseBytes is the size of the server's data directory at the
	// end, its session database for the most part.
	DatabaseBytes int64 `json:"databaseBytes"`

	// Derived by deriveScale. MiBPerSession is what the sessions added
	// at the most, PeakMiB over IdleMiB, a session; BusyCPUMsPerMB is the
	// server's CPU time for each MB (10^6 bytes) the sessions printed,
	// which compares counts where the machine could not keep every
	// session at the build log's pace. AfterStopRatio is AfterStopMiB
	// over NeedMiB, AfterStopMet whether it is within scaleNeedMargin.
	// Rates are in MB (10^6 bytes) per second; DiskPerPrinted is what the
	// server wrote to disk for each byte the sessions printed.
	MiBPerSession                float64 `json:"MiBPerSession"`
	AfterStopRatio               float64 `json:"afterStopRatio"`
	AfterStopMet                 bool    `json:"afterStopMet"`
	TrickleCPUPercent            float64 `json:"trickleCPUPercent"`
	TrickleCPUPercentPerSession  float64 `json:"trickleCPUPercentPerSession"`
	TricklePrintedMBpsPerSession float64 `json:"tricklePrintedMBpsPerSession"`
	TrickleDiskMBps              float64 `json:"trickleDiskMBps"`
	TrickleDiskMBpsPerSession    float64 `json:"trickleDiskMBpsPerSession"`
	TrickleDiskPerPrinted        float64 `json:"trickleDiskPerPrinted"`
	BusyCPUPercent               float64 `json:"busyCPUPercent"`
	BusyCPUPercentPerSession     float64 `json:"busyCPUPercentPerSession"`
	BusyCPUMsPerMB               float64 `json:"busyCPUMsPerMB"`
	BusyPrintedMBpsPerSession    float64 `json:"busyPrintedMBpsPerSession"`
	BusyDiskMBps                 float64 `json:"busyDiskMBps"`
	BusyDiskMBpsPerSession       float64 `json:"busyDiskMBpsPerSession"`
	BusyDiskPerPrinted           float64 `json:"busyDiskPerPrinted"`
	QuietCPUPercent              float64 `json:"quietCPUPercent"`
	QuietCPUPercentPerSession    float64 `json:"quietCPUPercentPerSession"`
}

// scaleIncrement is what each session added between two counts: the
// slope, where scaleStep's per-session figures are the average. Equal
// slopes mean cost that grows linearly.
type scaleIncrement struct {
	FromSessions int `json:"fromSessions"`
	ToSessions   int `json:"toSessions"`
	// The growth of PeakMiB, BusyCPUPercent and QuietCPUPercent from
	// one count to the other, over the sessions added.
	MiBPerSession             float64 `json:"MiBPerSession"`
	BusyCPUPercentPerSession  float64 `json:"busyCPUPercentPerSession"`
	QuietCPUPercentPerSession float64 `json:"quietCPUPercentPerSession"`
}

// scaleResult is how the server's cost grows with its sessions.
type scaleResult struct {
	// ClientsPerSession follow each session, acknowledging every frame.
	ClientsPerSession int `json:"clientsPerSession"`
	// ScrollbackBytes is every server's --scrollback: each session's ring.
	ScrollbackBytes int64 `json:"scrollbackBytes"`
	// FillBytes is what each session prints at once to fill its ring;
	// TrickleRate and BusyRate are the paces, in bytes per second, of its
	// trickle and its build log.
	FillBytes   int64 `json:"fillBytes"`
	TrickleRate int64 `json:"trickleRate"`
	BusyRate    int64 `json:"busyRate"`
	// GoalMiBPerSession is the goal for MiBPerSession and for each
	// increment: scaleOverheadMiB plus the scrollback.
	GoalMiBPerSession float64 `json:"goalMiBPerSession"`
	// WindowSeconds is how long each CPU window was meant to last;
	// SettleWindowSeconds how long the RSS of the idle sessions had to
	// hold still; AfterSeconds how long after the stop the RSS was to be
	// read.
	WindowSeconds       float64 `json:"windowSeconds"`
	SettleWindowSeconds float64 `json:"settleWindowSeconds"`
	AfterSeconds        float64 `json:"afterSeconds"`
	// Steps has one entry a session count measured, in rising order;
	// Increments one between each two of them.
	Steps      []scaleStep      `json:"steps"`
	Increments []scaleIncrement `json:"increments,omitempty"`
}

// measureScale runs each session count on a server of its own, started
// with --max-sessions set to the count: each count starts from a fresh
// process, and the server's memory limit, which follows --max-sessions,
// is the one an operator running that many sessions would have. It
// returns the counts measured so far with the error that stopped it.
func measureScale(ctx context.Context, e *benchEnv, srv serverOptions, o scaleOptions) (*scaleResult, error) {
	r := &scaleResult{
		ClientsPerSession: scaleClients, ScrollbackBytes: e.scrollback,
		// A quarter more than the ring, so every ring is full.
		FillBytes: e.scrollback * 5 / 4, TrickleRate: defaultTrickleRate, BusyRate: defaultBusyRate,
		GoalMiBPerSession: scaleOverheadMiB + mib(uint64(e.scrollback)),
		WindowSeconds:     o.Window.Seconds(), SettleWindowSeconds: o.Settle.Seconds(), AfterSeconds: o.After.Seconds(),
	}
	for _, n := range o.Sessions {
		step, err := scaleOnce(ctx, e, srv, o, n, stages{fill: r.FillBytes, trickle: r.TrickleRate, busy: r.BusyRate})
		if err != nil {
			deriveScale(r)
			return r, fmt.Errorf("%d sessions: %w", n, err)
		}
		e.logf("scale, %d sessions: RSS %.1f MiB needed, %.1f at the peak, %.1f %.0f s after the stop (%.1f idle); server CPU %.2f s in %.1f s trickling, %.2f s in %.1f s printing, %.3f s in %.1f s quiet; disk writes %s trickling, %s printing",
			n, step.NeedMiB, step.BusyPeakMiB, step.AfterStopMiB, step.AfterStopSeconds, step.IdleMiB, step.TrickleCPUSeconds, step.TrickleSeconds,
			step.BusyCPUSeconds, step.BusySeconds, step.QuietCPUSeconds, step.QuietSeconds,
			formatBytes(int64(step.TrickleDiskBytes)), formatBytes(int64(step.BusyDiskBytes)))
		r.Steps = append(r.Steps, *step)
	}
	deriveScale(r)
	return r, nil
}

// deriveScale fills in the per-session figures of every step and the
// increments between consecutive steps from what was measured.
func deriveScale(r *scaleResult) {
	percent := func(cpu, seconds float64) float64 {
		if seconds <= 0 {
			return 0
		}
		return 100 * cpu / seconds
	}
	// rate is in MB (10^6 bytes) per second.
	rate := func(b uint64, seconds float64) float64 {
		if seconds <= 0 {
			return 0
		}
		return float64(b) / 1e6 / seconds
	}
	ratio := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	r.Increments = nil
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Sessions < 1 {
			continue
		}
		n := float64(s.Sessions)
		s.MiBPerSession = (s.PeakMiB - s.IdleMiB) / n
		s.AfterStopRatio, s.AfterStopMet = 0, false
		if s.NeedMiB > 0 {
			s.AfterStopRatio = s.AfterStopMiB / s.NeedMiB
			s.AfterStopMet = s.AfterStopMiB <= scaleNeedMargin*s.NeedMiB
		}
		s.TrickleCPUPercent = percent(s.TrickleCPUSeconds, s.TrickleSeconds)
		s.TrickleCPUPercentPerSession = s.TrickleCPUPercent / n
		s.TricklePrintedMBpsPerSession = rate(s.TricklePrintedBytes, s.TrickleSeconds) / n
		s.TrickleDiskMBps = rate(s.TrickleDiskBytes, s.TrickleSeconds)
		s.TrickleDiskMBpsPerSession = s.TrickleDiskMBps / n
		s.TrickleDiskPerPrinted = ratio(s.TrickleDiskBytes, s.TricklePrintedBytes)
		s.BusyCPUPercent = percent(s.BusyCPUSeconds, s.BusySeconds)
		s.BusyCPUPercentPerSession = s.BusyCPUPercent / n
		s.BusyCPUMsPerMB = 0
		if s.PrintedBytes > 0 {
			s.BusyCPUMsPerMB = 1e3 * s.BusyCPUSeconds / (float64(s.PrintedBytes) / 1e6)
		}
		s.BusyPrintedMBpsPerSession = rate(s.PrintedBytes, s.BusySeconds) / n
		s.BusyDiskMBps = rate(s.BusyDiskBytes, s.BusySeconds)
		s.BusyDiskMBpsPerSession = s.BusyDiskMBps / n
		s.BusyDiskPerPrinted = ratio(s.BusyDiskBytes, s.PrintedBytes)
		s.QuietCPUPercent = percent(s.QuietCPUSeconds, s.QuietSeconds)
		s.QuietCPUPercentPerSession = s.QuietCPUPercent / n
		if i == 0 {
			continue
		}
		p := r.Steps[i-1]
		added := float64(s.Sessions - p.Sessions)
		if added <= 0 {
			continue
		}
		r.Increments = append(r.Increments, scaleIncrement{
			FromSessions: p.Sessions, ToSessions: s.Sessions,
			MiBPerSession:             (s.PeakMiB - p.PeakMiB) / added,
			BusyCPUPercentPerSession:  (s.BusyCPUPercent - p.BusyCPUPercent) / added,
			QuietCPUPercentPerSession: (s.QuietCPUPercent - p.QuietCPUPercent) / added,
		})
	}
}

// scaleOnce starts a server allowing n sessions and n staged printers
// (sp, in a directory of their own) on it, with scaleClients
// acknowledging clients each, and takes them through their stages: once
// every ring is full it reads what the idle sessions need; it counts the
// server's CPU and disk writes over a window while they trickle, and
// again while they print a build log; then it stops them, reads the RSS
// o.After later, and counts the CPU once more.
func scaleOnce(ctx context.Context, e *benchEnv, so serverOptions, o scaleOptions, n int, sp stages) (*scaleStep, error) {
	// The settled RSS's wait and three windows, and the wait after the
	// stop, on top of a run.
	ctx, cancel := context.WithTimeout(ctx, runTimeout+max(settleMax, 3*o.Settle)+3*o.Window+o.After)
	defer cancel()
	so.MaxSessions = n
	srv, so, err := startFreshServer(ctx, e.tmp, fmt.Sprintf("scale-%d-", n), so)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	se := *e
	se.api, se.serverPID = newAPIClient(srv.url, so.Token), srv.pid()
	defer se.api.close()
	info, err := se.api.check(ctx)
	if err != nil {
		return nil, err
	}
	if info.MaxSessions != n {
		return nil, fmt.Errorf("the server allows %d sessions, not the %d given with --max-sessions", info.MaxSessions, n)
	}
	pid := se.serverPID
	idle, err := processRSS(pid)
	if err != nil {
		return nil, err
	}
	step := &scaleStep{Sessions: n, Clients: n * scaleClients, IdleMiB: mib(idle)}
	peak := samplePeak(ctx, pid, idle)
	defer peak.stop()

	// The printers move on to their next stage when a file appears here.
	// The server's stop at the end ends them; there is no cleanup of
	// their own.
	if sp.dir, err = os.MkdirTemp(e.tmp, "scale"); err != nil {
		return nil, fmt.Errorf("make marker directory: %w", err)
	}
	next := func(file string) error {
		if err := os.WriteFile(filepath.Join(sp.dir, file), nil, 0o600); err != nil {
			return fmt.Errorf("tell the sessions to %s: %w", file, err)
		}
		return nil
	}
	ids := make([]string, n)
	for i := range ids {
		s, err := se.api.create(ctx, fmt.Sprintf("bench scale %d", i+1), stagesCommand(e.self, sp))
		if err != nil {
			return nil, err
		}
		ids[i] = s.ID
	}

	// Each client is read by a goroutine of its own from its ready line
	// on, which acknowledges every frame as a browser does and publishes
	// its position in pos; it reports as it passes each stage's marker.
	fl := &followers{}
	defer fl.close()
	pos := make([]atomic.Uint64, n*scaleClients)
	for i := range pos {
		id := ids[i/scaleClients]
		c, err := fl.dial(ctx, &se)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		c.keepData, c.idle = true, true
		st, err := c.attachReady(id)
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		if err := c.startPacing(id, st); err != nil {
			return nil, fmt.Errorf("client %d: %w", i+1, err)
		}
		track := func(cond func(*streamCount, *frame) bool) func(*streamCount, *frame) bool {
			return func(st *streamCount, f *frame) bool {
				pos[i].Store(st.seq)
				return cond(st, f)
			}
		}
		fl.follow(c, id, st, track(sawMarker(id, fillMarker)), track(sawMarker(id, trickleMarker)),
			track(sawMarker(id, busyMarker)), track(sawMarker(id, quietMarker)))
	}
	if err := startWorkloads(ctx, &se, ids); err != nil {
		return nil, fmt.Errorf("start the printers: %w", err)
	}
	if _, err := fl.wait(ctx, "fills of the rings"); err != nil {
		return nil, err
	}

	// Every ring full, the sessions silent, the clients attached: what
	// idle sessions need. Held still for the settle window, which spans a
	// save, it takes in the save of the full rings.
	m, took, settled, err := settleRSS(ctx, pid, o.Settle)
	if err != nil {
		return nil, fmt.Errorf("RSS of the idle sessions: %w", err)
	}
	step.NeedMiB, step.NeedSettled, step.NeedSettleSeconds = mib(m.RSS), settled, took.Seconds()

	// first returns each session's position, as its first client read it.
	first := func() []uint64 {
		at := make([]uint64, n)
		for s := range at {
			at[s] = pos[s*scaleClients].Load()
		}
		return at
	}
	// printed returns what each session printed from one position to
	// another.
	printed := func(from, to []uint64) []uint64 {
		d := make([]uint64, n)
		for s := range d {
			d[s] = to[s] - from[s]
		}
		return d
	}

	// The sessions trickle, as agents at work do.
	if err := next(trickleFile); err != nil {
		return nil, err
	}
	if _, err := fl.wait(ctx, "starts of the trickles"); err != nil {
		return nil, err
	}
	from := first()
	trickle, err := countWindow(ctx, pid, o.Window)
	to := first()
	if err != nil {
		return nil, fmt.Errorf("count while the sessions trickle: %w", err)
	}
	step.TrickleSeconds, step.TrickleCPUSeconds, step.TrickleDiskBytes = trickle.seconds, trickle.server.Seconds(), trickle.diskWritten
	for _, b := range printed(from, to) {
		step.TricklePrintedBytes += b
	}

	// The sessions print a build log.
	if err := next(busyFile); err != nil {
		return nil, err
	}
	if _, err := fl.wait(ctx, "starts of the build logs"); err != nil {
		return nil, err
	}
	busyPeak := samplePeak(ctx, pid, 0)
	from = first()
	busy, err := countWindow(ctx, pid, o.Window)
	to = first()
	step.BusyPeakMiB = mib(busyPeak.stop())
	if err != nil {
		return nil, fmt.Errorf("count while the sessions print: %w", err)
	}
	step.BusySeconds, step.BusyCPUSeconds, step.BusyDiskBytes = busy.seconds, busy.server.Seconds(), busy.diskWritten
	step.MachineBusyCores, step.MachineStealCores = busy.busyCores, busy.stealCores
	rates := make([]float64, n)
	for s, b := range printed(from, to) {
		step.PrintedBytes += b
		rates[s] = float64(b) / busy.seconds / 1e6
	}
	step.SessionMBpsMedian, step.SessionMBpsMin = median(rates), slices.Min(rates)

	// The sessions go quiet; the clients stay.
	stopped := time.Now()
	if err := next(quietFile); err != nil {
		return nil, err
	}
	ended, err := fl.wait(ctx, "ends of the build logs")
	if err != nil {
		return nil, err
	}
	for _, st := range ended {
		step.Resyncs += st.resyncs
		step.LostBytes += st.lostBytes
	}
	if err := sleepCtx(ctx, time.Until(stopped.Add(o.After))); err != nil {
		return nil, fmt.Errorf("wait after the stop: %w", err)
	}
	after, err := processRSS(pid)
	if err != nil {
		return nil, fmt.Errorf("RSS after the stop: %w", err)
	}
	step.AfterStopMiB, step.AfterStopSeconds = mib(after), time.Since(stopped).Seconds()
	if step.QuietWhere, err = processMemWhere(pid); err != nil {
		return nil, fmt.Errorf("RSS after the stop: %w", err)
	}
	quiet, err := countWindow(ctx, pid, o.Window)
	if err != nil {
		return nil, fmt.Errorf("count while the sessions are quiet: %w", err)
	}
	step.QuietSeconds, step.QuietCPUSeconds = quiet.seconds, quiet.server.Seconds()
	if step.DatabaseBytes, err = dirSize(so.DataDir); err != nil {
		return nil, err
	}
	step.PeakMiB = max(mib(peak.stop()), step.NeedMiB, step.BusyPeakMiB, step.AfterStopMiB)
	return step, nil
}

// window is what a process and the machine used over one window.
type window struct {
	seconds float64
	// server is the process's CPU time, diskWritten the bytes it wrote
	// to disk.
	server      time.Duration
	diskWritten uint64
	// busyCores and stealCores are the machine's busy time and the time
	// its host took from it, in cores: busy seconds over the window's.
	busyCores, stealCores float64
}

// countWindow counts the CPU time and the disk writes of process pid,
// and the CPU time of the whole machine, over d.
func countWindow(ctx context.Context, pid int, d time.Duration) (window, error) {
	m0, err := machineCPU()
	if err != nil {
		return window{}, err
	}
	c0, err := processCPU(pid)
	if err != nil {
		return window{}, err
	}
	w0, err := processDiskWrites(pid)
	if err != nil {
		return window{}, err
	}
	start := time.Now()
	if err := sleepCtx(ctx, d); err != nil {
		return window{}, err
	}
	c1, err := processCPU(pid)
	if err != nil {
		return window{}, err
	}
	w1, err := processDiskWrites(pid)
	if err != nil {
		return window{}, err
	}
	elapsed := time.Since(start)
	m1, err := machineCPU()
	if err != nil {
		return window{}, err
	}
	ticks := elapsed.Seconds() * clockTicks
	return window{
		seconds:     elapsed.Seconds(),
		server:      c1 - c0,
		diskWritten: w1 - w0,
		busyCores:   float64(m1.busy-m0.busy) / ticks,
		stealCores:  float64(m1.steal-m0.steal) / ticks,
	}, nil
}

// processDiskWrites returns the bytes process pid has had written to
// storage, all its threads' together: write_bytes of /proc/<pid>/io. The
// kernel counts them as the process dirties pages of files, so they are
// what its writes cost the disk, not what it passed to write(2) (wchar,
// which counts sockets too); a file on tmpfs counts nothing.
func processDiskWrites(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, fmt.Errorf("read disk writes of process %d: %w", pid, err)
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(line, "write_bytes:")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read disk writes of process %d: bad write_bytes %q", pid, strings.TrimSpace(v))
		}
		return n, nil
	}
	return 0, fmt.Errorf("read disk writes of process %d: no write_bytes in /proc/%d/io", pid, pid)
}

// dirSize returns the size of the files in dir and below it.
func dirSize(dir string) (int64, error) {
	var size int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dir, err)
	}
	return size, nil
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc: the kernel
// reports them in it whatever its own tick, and it is 100 on Linux.
const clockTicks = 100

// processCPU returns the CPU time process pid has used, user and system,
// all its threads' together: utime plus stime of /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time of process %d: %w", pid, err)
	}
	// The command's name, in parentheses, may hold spaces and
	// parentheses: the fields are counted from its end. After it come
	// state (field 3 of proc(5)) and, as fields 14 and 15, utime and
	// stime.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("read CPU time of process %d: no command name in %q", pid, b)
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("read CPU time of process %d: %d fields after the name, want 13 or more", pid, len(fields))
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read CPU time of process %d: bad field %q", pid, f)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// cpuTimes is the machine's CPU time in clock ticks, all cores together:
// busy (user, nice, system, irq, softirq) and stolen by the host.
type cpuTimes struct {
	busy, steal uint64
}

// machineCPU reads the machine's CPU time from the first line of
// /proc/stat: cpu user nice system idle iowait irq softirq steal ...
func machineCPU() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read the machine's CPU time: %w", err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuTimes{}, errors.New("read the machine's CPU time: /proc/stat does not start with a cpu line of 8 fields")
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(fields[i+1], 10, 64); err != nil {
			return cpuTimes{}, fmt.Errorf("read the machine's CPU time: bad field %q", fields[i+1])
		}
	}
	return cpuTimes{busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7]}, nil
}

// scaleRows are the scale measurement's rows: one for each session count,
// then what each session added between counts.
func scaleRows(r *scaleResult, cpus int) [][2]string {
	var rows [][2]string
	add := func(what, result string, args ...any) {
		rows = append(rows, [2]string{what, fmt.Sprintf(result, args...)})
	}
	goal := func(vs ...float64) string {
		if slices.Max(vs) < r.GoalMiBPerSession {
			return "met"
		}
		return "MISSED"
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	for _, s := range r.Steps {
		steal := ""
		if s.MachineStealCores >= 0.05 {
			steal = fmt.Sprintf(", %.1f taken by the host", s.MachineStealCores)
		}
		moving := ""
		if !s.NeedSettled {
			moving = fmt.Sprintf(" (still moving after %.0f s)", s.NeedSettleSeconds)
		}
		wrong := ""
		if s.Resyncs > 0 || s.LostBytes > 0 {
			wrong = fmt.Sprintf("; WRONG: acknowledging clients lost %s in %d resyncs", formatBytes(int64(s.LostBytes)), s.Resyncs)
		}
		add(fmt.Sprintf("scale: %d sessions with full rings, %d acknowledging clients each", s.Sessions, r.ClientsPerSession),
			"RSS %.1f MiB before the sessions, %.1f with the rings full, idle (what they need)%s, %.1f printing (peak), %.1f %.0f s after the stop (%.2f times the need, goal within %.0f %%: %s; the database's map %.1f), %.1f at the most: %.2f MiB a session, of which %s is its scrollback (goal under %g MiB: %s); "+
				"trickling %.1f kB/s a session: server CPU %.1f %% of a core, %.2f %% a session, disk writes %.1f kB/s, %.1f a session, %.1f times what was printed; "+
				"printing: server CPU %.1f %% of a core, %.2f %% a session, %.0f ms a MB printed; the sessions printed %.3f MB/s each (mean; median %.3f, min %.3f), the machine busy %.1f of %d cores%s; disk writes %.2f MB/s, %.3f a session, %.2f times what was printed; "+
				"quiet, the clients attached: server CPU %s; the data directory %s at the end%s",
			s.IdleMiB, s.NeedMiB, moving, s.BusyPeakMiB, s.AfterStopMiB, s.AfterStopSeconds, s.AfterStopRatio, 100*(scaleNeedMargin-1), met(s.AfterStopMet), mib(s.QuietWhere.Database),
			s.PeakMiB, s.MiBPerSession, formatBytes(r.ScrollbackBytes), r.GoalMiBPerSession, goal(s.MiBPerSession),
			1e3*s.TricklePrintedMBpsPerSession, s.TrickleCPUPercent, s.TrickleCPUPercentPerSession, 1e3*s.TrickleDiskMBps, 1e3*s.TrickleDiskMBpsPerSession, s.TrickleDiskPerPrinted,
			s.BusyCPUPercent, s.BusyCPUPercentPerSession, s.BusyCPUMsPerMB, s.BusyPrintedMBpsPerSession, s.SessionMBpsMedian, s.SessionMBpsMin, s.MachineBusyCores, cpus, steal,
			s.BusyDiskMBps, s.BusyDiskMBpsPerSession, s.BusyDiskPerPrinted,
			quietCPU(s), formatBytes(s.DatabaseBytes), wrong)
	}
	if len(r.Increments) == 0 {
		return rows
	}
	var spans, mem, busy, quiet []string
	var added []float64
	for _, in := range r.Increments {
		spans = append(spans, fmt.Sprintf("%d to %d", in.FromSessions, in.ToSessions))
		mem = append(mem, fmt.Sprintf("%.2f", in.MiBPerSession))
		busy = append(busy, fmt.Sprintf("%.2f", in.BusyCPUPercentPerSession))
		quiet = append(quiet, fmt.Sprintf("%.3f", in.QuietCPUPercentPerSession))
		added = append(added, in.MiBPerSession)
	}
	add("scale: what each session added, from "+strings.Join(spans, " / ")+" sessions",
		"RSS %s MiB (goal under %g MiB: %s); server CPU printing %s %% of a core, quiet %s %%",
		strings.Join(mem, " / "), r.GoalMiBPerSession, goal(added...), strings.Join(busy, " / "), strings.Join(quiet, " / "))
	return rows
}

// quietCPU writes the server's CPU while its sessions are quiet, which
// may be below what /proc's clock ticks can count over the window.
func quietCPU(s scaleStep) string {
	if s.QuietCPUSeconds == 0 {
		return fmt.Sprintf("under %.2f %% of a core (one clock tick in %.0f s)", 100/clockTicks/s.QuietSeconds, s.QuietSeconds)
	}
	return fmt.Sprintf("%.2f %% of a core, %.3f %% a session", s.QuietCPUPercent, s.QuietCPUPercentPerSession)
}
