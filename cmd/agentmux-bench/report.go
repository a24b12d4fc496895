package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// report is everything measured, as --json writes it. Field names carry
// their units: Bytes, MBps (10^6 bytes a second), MiB (2^20 bytes), Ms,
// Micros, Seconds, PerSecond.
type report struct {
	Date      string `json:"date"`
	GOOS      string `json:"goos"`
	GOARCH    string `json:"goarch"`
	NumCPU    int    `json:"numCPU"`
	GoVersion string `json:"goVersion"`
	// LoadAverage1m* are /proc/loadavg's first field before and after: how
	// busy the machine was with other work.
	LoadAverage1mStart float64 `json:"loadAverage1mStart"`
	LoadAverage1mEnd   float64 `json:"loadAverage1mEnd"`
	Quick              bool    `json:"quick"`
	TotalSeconds       float64 `json:"totalSeconds"`

	Server serverReport `json:"server"`
	// TTYDVersion is the ttyd measured beside the server (--ttyd).
	TTYDVersion string `json:"ttydVersion,omitempty"`

	Throughput *throughputResult `json:"throughput,omitempty"`
	Echo       *echoResult       `json:"echo,omitempty"`
	Flood      []*floodResult    `json:"flood,omitempty"`
	Fanout     *fanoutResult     `json:"fanout,omitempty"`
	RSS        *rssResult        `json:"rss,omitempty"`
	Abuse      *abuseResult      `json:"abuse,omitempty"`
	Restart    *restartResult    `json:"restart,omitempty"`
	Scale      *scaleResult      `json:"scale,omitempty"`
	Hub        *hubResult        `json:"hub,omitempty"`

	// Skipped and Failed name measurements not made, with the reason.
	Skipped map[string]string `json:"skipped,omitempty"`
	Failed  map[string]string `json:"failed,omitempty"`
}

type serverReport struct {
	URL             string `json:"url"`
	Version         string `json:"version"`
	StartedByTool   bool   `json:"startedByTool"`
	PID             int    `json:"pid"`
	MaxSessions     int    `json:"maxSessions"`
	ScrollbackBytes int64  `json:"scrollbackBytes"`
}

func newReport(o options) *report {
	goos, goarch, cpus, gov := hostInfo()
	return &report{
		Date: time.Now().UTC().Format(time.RFC3339), GOOS: goos, GOARCH: goarch, NumCPU: cpus, GoVersion: gov,
		LoadAverage1mStart: loadAverage(), Quick: o.Quick,
	}
}

func (r *report) skip(m, why string) {
	if r.Skipped == nil {
		r.Skipped = map[string]string{}
	}
	r.Skipped[m] = why
}

func (r *report) fail(m string, err error) {
	if r.Failed == nil {
		r.Failed = map[string]string{}
	}
	r.Failed[m] = err.Error()
}

func (r *report) finish(began time.Time) {
	r.TotalSeconds = time.Since(began).Seconds()
	r.LoadAverage1mEnd = loadAverage()
}

// loadAverage returns the one-minute load average, 0 when unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	first, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(first, 64)
	return v
}

// writeJSON writes the report to path.
func (r *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	return nil
}

// rows returns the table: what was measured, and the result.
func (r *report) rows() [][2]string {
	var rows [][2]string
	add := func(what, result string, args ...any) {
		rows = append(rows, [2]string{what, fmt.Sprintf(result, args...)})
	}
	if t := r.Throughput; t != nil {
		var bare, acking, notAcking, ttyd []float64
		for _, run := range t.Runs {
			bare = append(bare, run.BareMBps)
			acking, notAcking = append(acking, run.Acking.MBps), append(notAcking, run.NotAcking.MBps)
			ttyd = append(ttyd, run.TTYDMBps)
		}
		add(fmt.Sprintf("cat of %s ASCII: bare PTY read loop", formatBytes(t.FileBytes)), "%.0f MB/s%s", t.BareMBpsMedian, spread(bare))
		for _, v := range []struct {
			what   string
			s      serverSummary
			speeds []float64
			ack    bool
		}{
			{"the same through the server to one client acknowledging every frame", t.Acking, acking, true},
			{"the same, client not acknowledging", t.NotAcking, notAcking, false},
		} {
			wrong := ""
			if v.ack && (v.s.LostBytes > 0 || v.s.Resyncs > 0) {
				wrong = "; WRONG: a client that acknowledges must get every byte"
			}
			add(v.what, "%.0f MB/s%s; ratio %.2f; %s (%.2f %%, %d resyncs)%s",
				v.s.MBpsMedian, spread(v.speeds), v.s.Ratio, lostPerRun(v.s.LostBytesPerRun), v.s.LostPercent, v.s.Resyncs, wrong)
		}
		if t.TTYDMBpsMedian > 0 {
			add(fmt.Sprintf("the same through ttyd %s", r.TTYDVersion), "%.0f MB/s%s; ratio %.2f; the acknowledging client's throughput is %.2f times ttyd's",
				t.TTYDMBpsMedian, spread(ttyd), t.TTYDRatio, t.Acking.MBpsMedian/t.TTYDMBpsMedian)
		}
	}
	if e := r.Echo; e != nil {
		add(fmt.Sprintf("keystroke echo round trip, %d keys back to back", e.Tight.Keys), "%s", echoLine(e.Tight))
		add(fmt.Sprintf("the same, %d keys typed %g-%g ms apart", e.Typed.Keys, e.TypedPauseMinMs, e.TypedPauseMaxMs), "%s", echoLine(e.Typed))
		if b := e.BareTyped; b.Keys > 0 {
			add("the same typing straight into a PTY here (the floor)", "%s; the server's p50 is %.1f times it, p99 %.1f times",
				echoLine(b), e.Typed.P50Micros/b.P50Micros, e.Typed.P99Micros/b.P99Micros)
		}
		if e.TTYDTight != nil && e.TTYDTyped != nil {
			add(fmt.Sprintf("keys back to back through ttyd %s", r.TTYDVersion), "%s", echoLine(*e.TTYDTight))
			add(fmt.Sprintf("keys typed through ttyd %s", r.TTYDVersion), "%s; the server's p50 is %.2f times it, p99 %.2f times",
				echoLine(*e.TTYDTyped), e.Typed.P50Micros/e.TTYDTyped.P50Micros, e.Typed.P99Micros/e.TTYDTyped.P99Micros)
		}
	}
	for _, f := range r.Flood {
		add(fmt.Sprintf("flood %s (%s), %.3g s", f.Name, f.What, f.DurationSeconds), "%.0f frames/s of %s avg, %.1f MB/s delivered, %d resyncs, %s lost",
			f.FramesPerSecond, formatBytes(int64(f.AvgFrameBytes)), f.DeliveredMBps, f.Resyncs, formatBytes(int64(f.LostBytes)))
	}
	if f := r.Fanout; f != nil {
		rate := "unpaced"
		if f.RateMBps > 0 {
			rate = fmt.Sprintf("at %g MB/s", f.RateMBps)
		}
		for _, v := range []struct {
			readers, stalled string
			p                fanoutPair
		}{
			{"clients not acknowledging", "one client that stops reading", f.NotAcking},
			{"clients acknowledging every frame", "one client that acknowledges once and stops reading", f.Acking},
		} {
			n := v.p.Normal
			add(fmt.Sprintf("fan-out: %s %s to %d %s", formatBytes(f.FloodBytes), rate, f.Clients, v.readers),
				"per client min %.1f / median %.1f MB/s%s; total %.0f MB/s; %d/%d got everything; %s (%d resyncs)%s",
				n.PerClientMBpsMin, n.PerClientMBpsMedian, lag(n), n.TotalMBps, n.CompleteClients, n.Clients, lostPerClient(n), n.Resyncs, dropped(n))
			w := v.p.WithStall
			add("the same plus "+v.stalled,
				"per client min %.1f / median %.1f MB/s%s (ratio to without: min %.2f, median %.2f%s); %d/%d got everything; %s (%d resyncs)%s; %s",
				w.PerClientMBpsMin, w.PerClientMBpsMedian, lag(w), v.p.MinRatio, v.p.MedianRatio, ratioGoal(v.p),
				w.CompleteClients, w.Clients, lostPerClient(w), w.Resyncs, dropped(w), stalledLine(w.Stalled))
		}
	}
	if m := r.RSS; m != nil {
		add(fmt.Sprintf("server RSS: idle / %d full sessions (%s each) / + %d acknowledging clients", m.Sessions, formatBytes(m.FillBytes), m.Clients),
			"%.1f / %.1f / %.1f MiB; the agents: %.1f MiB", m.IdleMiB, m.FullSessionsMiB, m.WithClientsMiB, m.AgentsMiB)
		target := "met"
		if m.AfterFloodsMiB >= m.TargetMiB {
			target = "MISSED"
		}
		var unsettled []string
		for _, step := range []string{"full", "withClients", "afterFloods"} {
			if st, ok := m.Steps[step]; ok && !st.Settled {
				unsettled = append(unsettled, fmt.Sprintf("%s still moved after %.0f s", step, st.SettleSeconds))
			}
		}
		moving := ""
		if len(unsettled) > 0 {
			moving = ", but " + strings.Join(unsettled, ", ")
		}
		after := m.Steps["afterFloods"]
		w := after.Where
		add(fmt.Sprintf("the same after each session printed %s more to them", formatBytes(m.FloodBytes)),
			"%.1f MiB (target under %g MiB: %s): Go heap, stacks and runtime %.1f, the binary's code %.1f and data %.1f, the database's map %.1f, other files %.1f; peak %.1f MiB; floods took %.1f s, clients lost %s (%d resyncs); read once still for %g s, after %.1f / %.1f / %.1f s%s",
			m.AfterFloodsMiB, m.TargetMiB, target, mib(w.Anon), mib(w.Code), mib(w.Data), mib(w.Database), mib(w.Other), m.PeakMiB, m.FloodSeconds, formatBytes(int64(m.FloodLostBytes)), m.FloodResyncs,
			m.SettleWindowSeconds, m.Steps["full"].SettleSeconds, m.Steps["withClients"].SettleSeconds, after.SettleSeconds, moving)
	}
	if sc := r.Scale; sc != nil {
		rows = append(rows, scaleRows(sc, r.NumCPU)...)
	}
	if h := r.Hub; h != nil {
		rows = append(rows, hubRows(h, r.NumCPU)...)
	}
	if a := r.Abuse; a != nil {
		rows = append(rows, abuseRows(a)...)
	}
	if s := r.Restart; s != nil {
		told := "client not told"
		if s.ClientToldShutdown {
			told = "client told"
		}
		add(fmt.Sprintf("SIGTERM with %d flooding sessions to exit", s.Sessions), "%s, exit %d; %s, closed with %d", millis(s.ShutdownMs), s.ExitCode, told, s.ClientCloseCode)
		add(fmt.Sprintf("restart to %d sessions listed", s.Sessions), "%s (listening after %s)", millis(s.RestartListedMs), millis(s.RestartListeningMs))
	}
	for _, m := range allMeasurements {
		if why, ok := r.Skipped[m]; ok {
			add(m, "skipped: %s", why)
		}
		if why, ok := r.Failed[m]; ok {
			add(m, "FAILED: %s", why)
		}
	}
	return rows
}

// writeTable prints the report as a table with a header.
func (r *report) writeTable(w io.Writer) error {
	rows := append([][2]string{{"what", "result"}}, r.rows()...)
	width := 0
	for _, row := range rows {
		width = max(width, utf8.RuneCountInString(row[0]))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "agentmux-bench %s, %s/%s, %d CPUs, %s, server %s %s (load average %.1f before, %.1f after)\n\n",
		r.Date, r.GOOS, r.GOARCH, r.NumCPU, r.GoVersion, r.Server.Version, r.Server.URL, r.LoadAverage1mStart, r.LoadAverage1mEnd)
	for i, row := range rows {
		fmt.Fprintf(&b, "| %s%s | %s |\n", row[0], strings.Repeat(" ", width-utf8.RuneCountInString(row[0])), row[1])
		if i == 0 {
			fmt.Fprintf(&b, "| %s | --- |\n", strings.Repeat("-", width))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// spread returns " (a-b)" for the range of several values, or nothing.
func spread(vs []float64) string {
	if len(vs) < 2 {
		return ""
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = min(lo, v), max(hi, v)
	}
	return fmt.Sprintf(" (median of %d; %.0f-%.0f)", len(vs), lo, hi)
}

// lag returns a paced fan-out's delivery lag, or nothing.
func lag(r fanoutRun) string {
	if r.LagMsMax == 0 {
		return ""
	}
	return fmt.Sprintf(", lag median %s / max %s", millis(r.LagMsMedian), millis(r.LagMsMax))
}

// lostPerRun says what each throughput run lost: one figure when every
// run lost the same.
func lostPerRun(lost []uint64) string {
	if len(lost) == 0 {
		return "nothing lost"
	}
	if slices.Min(lost) == slices.Max(lost) {
		if len(lost) == 1 {
			return fmt.Sprintf("%s lost", formatBytes(int64(lost[0])))
		}
		return fmt.Sprintf("%s lost in each of %d runs", formatBytes(int64(lost[0])), len(lost))
	}
	var runs []string
	for _, n := range lost {
		runs = append(runs, formatBytes(int64(n)))
	}
	return "lost per run " + strings.Join(runs, ", ")
}

// lostPerClient says what the readers of a fan-out lost: min, median and
// max over the clients, or one figure when they all lost the same.
func lostPerClient(r fanoutRun) string {
	if r.LostBytesMin == r.LostBytesMax {
		return fmt.Sprintf("each lost %s", formatBytes(int64(r.LostBytesMin)))
	}
	return fmt.Sprintf("lost per client min %s / median %s / max %s",
		formatBytes(int64(r.LostBytesMin)), formatBytes(int64(r.LostBytesMedian)), formatBytes(int64(r.LostBytesMax)))
}

// ratioGoal says, for acknowledging readers, whether the stalled client
// cost them less than 10 % of their throughput, the project's goal.
func ratioGoal(p fanoutPair) string {
	if !p.Normal.Acking {
		return ""
	}
	if p.MinRatio >= 0.9 && p.MedianRatio >= 0.9 && p.MinRatio <= 1.1 && p.MedianRatio <= 1.1 {
		return "; within 10 %: met"
	}
	return "; within 10 %: MISSED"
}

// stalledLine says what became of a fan-out's stalled client.
func stalledLine(s *stalledOutcome) string {
	if s == nil {
		return "no stalled client"
	}
	line := fmt.Sprintf("stalled client %s", s.Outcome)
	switch {
	case s.Resyncs > 0 || s.LostBytes > 0:
		line += fmt.Sprintf(" (%d resyncs, %s lost)", s.Resyncs, formatBytes(int64(s.LostBytes)))
	case s.Outcome == "complete":
		line += " (the flood fit in the ring and socket buffers: make it bigger)"
	}
	return line
}

// echoLine writes one echo measurement's percentiles.
func echoLine(e echoStats) string {
	return fmt.Sprintf("p50 %s, p99 %s (mean %s, max %s)", micros(e.P50Micros), micros(e.P99Micros), micros(e.MeanMicros), micros(e.MaxMicros))
}

// dropped says how many fan-out readers lost their connection, if any.
func dropped(r fanoutRun) string {
	if r.DroppedClients == 0 {
		return ""
	}
	return fmt.Sprintf("; %d dropped (%s)", r.DroppedClients, r.DropError)
}

// formatBytes writes n in the largest binary unit that keeps it above 1.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func micros(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.2f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}

func millis(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
