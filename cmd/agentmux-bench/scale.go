package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// scaleOptions describe the scale measurement: for each count of
// Sessions, a server of its own runs that many sessions printing a build
// log to scaleClients acknowledging clients each; the CPU is counted over
// Window while they print and again once they are quiet, and the quiet
// RSS is read once it held still for Settle.
type scaleOptions struct {
	Sessions []int
	Window   time.Duration
	Settle   time.Duration
}

// scaleStep is one session count of the scale measurement. CPU figures
// are in percent of one core; per-session figures divide what the
// sessions add to the server by their count.
type scaleStep struct {
	// Sessions is the count; Clients all the clients following them.
	Sessions int `json:"sessions"`
	Clients  int `json:"clients"`
	// IdleMiB is the fresh server's RSS before its first session.
	IdleMiB float64 `json:"idleMiB"`
	// BusyPeakMiB is the most RSS seen over the window while every
	// session prints with its ring full; PeakMiB the most seen from the
	// first session to the end of the quiet window, which takes in the
	// screens saved once the sessions went quiet. Both are sampled every
	// 10 ms.
	BusyPeakMiB float64 `json:"busyPeakMiB"`
	PeakMiB     float64 `json:"peakMiB"`
	// BusySeconds is that window's length; BusyCPUSeconds the server's
	// CPU time in it (utime and stime of /proc/<pid>/stat).
	BusySeconds    float64 `json:"busySeconds"`
	BusyCPUSeconds float64 `json:"busyCPUSeconds"`
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
	// QuietMiB is the RSS once every session stopped printing, the
	// clients still attached, read once it held still (QuietSettled false:
	// it still moved when the wait gave up).
	QuietMiB           float64 `json:"quietMiB"`
	QuietSettled       bool    `json:"quietSettled"`
	QuietSettleSeconds float64 `json:"quietSettleSeconds"`
	// QuietWhere says what the quiet RSS is, read right after it.
	QuietWhere memWhere `json:"quietWhere"`
	// QuietSeconds is the quiet window's length, QuietCPUSeconds the
	// server's CPU time in it.
	QuietSeconds    float64 `json:"quietSeconds"`
	QuietCPUSeconds float64 `json:"quietCPUSeconds"`

	// Derived by deriveScale. MiBPerSession is what the sessions added
	// at the most, PeakMiB over IdleMiB, a session; BusyCPUMsPerMB is the
	// server's CPU time for each MB (10^6 bytes) the sessions printed,
	// which compares counts where the machine could not keep every
	// session at the build log's pace.
	MiBPerSession             float64 `json:"MiBPerSession"`
	BusyCPUPercent            float64 `json:"busyCPUPercent"`
	BusyCPUPercentPerSession  float64 `json:"busyCPUPercentPerSession"`
	BusyCPUMsPerMB            float64 `json:"busyCPUMsPerMB"`
	QuietCPUPercent           float64 `json:"quietCPUPercent"`
	QuietCPUPercentPerSession float64 `json:"quietCPUPercentPerSession"`
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
	// GoalMiBPerSession is the goal for MiBPerSession and for each
	// increment: scaleOverheadMiB plus the scrollback.
	GoalMiBPerSession float64 `json:"goalMiBPerSession"`
	// WindowSeconds is how long each CPU window was meant to last;
	// SettleWindowSeconds how long the quiet RSS had to hold still.
	WindowSeconds       float64 `json:"windowSeconds"`
	SettleWindowSeconds float64 `json:"settleWindowSeconds"`
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
		GoalMiBPerSession: scaleOverheadMiB + mib(uint64(e.scrollback)),
		WindowSeconds:     o.Window.Seconds(), SettleWindowSeconds: o.Settle.Seconds(),
	}
	for _, n := range o.Sessions {
		step, err := scaleOnce(ctx, e, srv, o, n)
		if err != nil {
			deriveScale(r)
			return r, fmt.Errorf("%d sessions: %w", n, err)
		}
		e.logf("scale, %d sessions: RSS %.1f MiB at the peak (%.1f idle), server CPU %.2f s in %.1f s printing, %.3f s in %.1f s quiet",
			n, step.BusyPeakMiB, step.IdleMiB, step.BusyCPUSeconds, step.BusySeconds, step.QuietCPUSeconds, step.QuietSeconds)
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
	r.Increments = nil
	for i := range r.Steps {
		s := &r.Steps[i]
		if s.Sessions < 1 {
			continue
		}
		n := float64(s.Sessions)
		s.MiBPerSession = (s.PeakMiB - s.IdleMiB) / n
		s.BusyCPUPercent = percent(s.BusyCPUSeconds, s.BusySeconds)
		s.BusyCPUPercentPerSession = s.BusyCPUPercent / n
		if s.PrintedBytes > 0 {
			s.BusyCPUMsPerMB = 1e3 * s.BusyCPUSeconds / (float64(s.PrintedBytes) / 1e6)
		}
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

// scaleOnce starts a server allowing n sessions, starts n build logs on
// it with scaleClients acknowledging clients each, and once every ring is
// full counts the server's CPU over a window; then it makes the sessions
// quiet and counts again.
func scaleOnce(ctx context.Context, e *benchEnv, so serverOptions, o scaleOptions, n int) (*scaleStep, error) {
	// Each of the two windows, and the quiet RSS's wait, on top of a run.
	ctx, cancel := context.WithTimeout(ctx, runTimeout+2*o.Window+max(settleMax, 3*o.Settle))
	defer cancel()
	so.MaxSessions = n
	srv, _, err := startFreshServer(ctx, e.tmp, fmt.Sprintf("scale-%d-", n), so)
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

	dir, err := os.MkdirTemp(e.tmp, "scale")
	if err != nil {
		return nil, fmt.Errorf("make marker directory: %w", err)
	}
	// The sessions stop printing once this file exists. The server's
	// stop at the end ends them; there is no cleanup of their own.
	stop := filepath.Join(dir, "quiet")
	ids := make([]string, n)
	for i := range ids {
		s, err := se.api.create(ctx, fmt.Sprintf("bench scale %d", i+1), quietBuildLogCommand(stop))
		if err != nil {
			return nil, err
		}
		ids[i] = s.ID
	}

	// Each client is read by a goroutine of its own from its ready line
	// on, which acknowledges every frame as a browser does and publishes
	// its position in pos; it reports when the session's stream is past a
	// ring and when the build log has ended.
	fl := &followers{}
	defer fl.close()
	pos := make([]atomic.Uint64, n*scaleClients)
	full := uint64(e.scrollback)
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
		fl.follow(c, id, st, track(func(st *streamCount, _ *frame) bool { return st.seq > full }), track(sawMarker(id, quietMarker)))
	}
	if err := startWorkloads(ctx, &se, ids); err != nil {
		return nil, fmt.Errorf("start the build logs: %w", err)
	}
	if _, err := fl.wait(ctx, "build logs until the rings are full"); err != nil {
		return nil, err
	}

	// The sessions print, their rings full.
	first := func() []uint64 {
		at := make([]uint64, n)
		for s := range at {
			at[s] = pos[s*scaleClients].Load()
		}
		return at
	}
	busyPeak := samplePeak(ctx, pid, 0)
	from := first()
	busy, err := countCPU(ctx, pid, o.Window)
	to := first()
	step.BusyPeakMiB = mib(busyPeak.stop())
	if err != nil {
		return nil, fmt.Errorf("count the CPU while the sessions print: %w", err)
	}
	step.BusySeconds, step.BusyCPUSeconds = busy.seconds, busy.server.Seconds()
	step.MachineBusyCores, step.MachineStealCores = busy.busyCores, busy.stealCores
	rates := make([]float64, n)
	for s := range rates {
		step.PrintedBytes += to[s] - from[s]
		rates[s] = float64(to[s]-from[s]) / busy.seconds / 1e6
	}
	step.SessionMBpsMedian, step.SessionMBpsMin = median(rates), slices.Min(rates)

	// The sessions go quiet; the clients stay.
	if err := os.WriteFile(stop, nil, 0o600); err != nil {
		return nil, fmt.Errorf("tell the sessions to stop: %w", err)
	}
	ended, err := fl.wait(ctx, "ends of the build logs")
	if err != nil {
		return nil, err
	}
	for _, st := range ended {
		step.Resyncs += st.resyncs
		step.LostBytes += st.lostBytes
	}
	// Held still for the settle window, which spans a save, the server
	// has also saved the last screens before the quiet window begins.
	m, took, settled, err := settleRSS(ctx, pid, o.Settle)
	if err != nil {
		return nil, fmt.Errorf("quiet RSS: %w", err)
	}
	step.QuietMiB, step.QuietSettled, step.QuietSettleSeconds = mib(m.RSS), settled, took.Seconds()
	if step.QuietWhere, err = processMemWhere(pid); err != nil {
		return nil, fmt.Errorf("quiet RSS: %w", err)
	}
	quiet, err := countCPU(ctx, pid, o.Window)
	if err != nil {
		return nil, fmt.Errorf("count the CPU while the sessions are quiet: %w", err)
	}
	step.QuietSeconds, step.QuietCPUSeconds = quiet.seconds, quiet.server.Seconds()
	step.PeakMiB = max(mib(peak.stop()), step.BusyPeakMiB, step.QuietMiB)
	return step, nil
}

// cpuWindow is the CPU a process and the machine used over one window.
type cpuWindow struct {
	seconds float64
	server  time.Duration
	// busyCores and stealCores are the machine's busy time and the time
	// its host took from it, in cores: busy seconds over the window's.
	busyCores, stealCores float64
}

// countCPU counts the CPU time process pid and the whole machine use
// over d.
func countCPU(ctx context.Context, pid int, d time.Duration) (cpuWindow, error) {
	m0, err := machineCPU()
	if err != nil {
		return cpuWindow{}, err
	}
	c0, err := processCPU(pid)
	if err != nil {
		return cpuWindow{}, err
	}
	start := time.Now()
	if err := sleepCtx(ctx, d); err != nil {
		return cpuWindow{}, err
	}
	c1, err := processCPU(pid)
	if err != nil {
		return cpuWindow{}, err
	}
	elapsed := time.Since(start)
	m1, err := machineCPU()
	if err != nil {
		return cpuWindow{}, err
	}
	ticks := elapsed.Seconds() * clockTicks
	return cpuWindow{
		seconds:    elapsed.Seconds(),
		server:     c1 - c0,
		busyCores:  float64(m1.busy-m0.busy) / ticks,
		stealCores: float64(m1.steal-m0.steal) / ticks,
	}, nil
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
	for _, s := range r.Steps {
		steal := ""
		if s.MachineStealCores >= 0.05 {
			steal = fmt.Sprintf(", %.1f taken by the host", s.MachineStealCores)
		}
		moving := ""
		if !s.QuietSettled {
			moving = fmt.Sprintf(" (still moving after %.0f s)", s.QuietSettleSeconds)
		}
		wrong := ""
		if s.Resyncs > 0 || s.LostBytes > 0 {
			wrong = fmt.Sprintf("; WRONG: acknowledging clients lost %s in %d resyncs", formatBytes(int64(s.LostBytes)), s.Resyncs)
		}
		add(fmt.Sprintf("scale: %d sessions printing a build log, %d acknowledging clients each", s.Sessions, r.ClientsPerSession),
			"RSS %.1f MiB before the sessions, %.1f printing (peak), %.1f quiet (the database's map %.1f)%s, %.1f at the most: %.2f MiB a session, of which %s is its scrollback (goal under %g MiB: %s); "+
				"server CPU printing %.1f %% of a core, %.2f %% a session, %.0f ms a MB printed; the sessions printed %.2f MB/s each (median; min %.2f), the machine busy %.1f of %d cores%s; "+
				"quiet, the clients attached: server CPU %s%s",
			s.IdleMiB, s.BusyPeakMiB, s.QuietMiB, mib(s.QuietWhere.Database), moving, s.PeakMiB, s.MiBPerSession, formatBytes(r.ScrollbackBytes), r.GoalMiBPerSession, goal(s.MiBPerSession),
			s.BusyCPUPercent, s.BusyCPUPercentPerSession, s.BusyCPUMsPerMB, s.SessionMBpsMedian, s.SessionMBpsMin, s.MachineBusyCores, cpus, steal,
			quietCPU(s), wrong)
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
