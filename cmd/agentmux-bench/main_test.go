package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// testTimeout bounds each end-to-end run; generous, for -race on a busy
// two-core machine.
const testTimeout = 2 * time.Minute

// binDir holds the server binary the tests build once.
var binDir string

func TestMain(m *testing.M) {
	// The paced-flood sessions run this test binary as their writer, and
	// the scale measurement's as their staged printer, as they run
	// agentmux-bench itself outside tests.
	writerMain()
	stagesMain()
	// Under -race a program sleeps a second at exit (atexit_sleep_ms):
	// the writer sessions, this binary, would end a second late.
	if err := os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")); err != nil {
		panic(err)
	}
	var err error
	if binDir, err = os.MkdirTemp("", "agentmux-bench-test-"); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(binDir) }))
}

var (
	buildOnce sync.Once
	buildErr  error
)

// serverBin builds the server, without -race so the figures are the real
// server's, once for all tests.
func serverBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "agentmux")
	buildOnce.Do(func() {
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./cmd/server")
		cmd.Dir = filepath.Join("..", "..")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = &buildError{err: err, out: out.String()}
		}
	})
	if buildErr != nil {
		t.Fatalf("build the server: %v", buildErr)
	}
	return bin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// runTool runs the tool as main does, with its output captured.
func runTool(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	code = run(ctx, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestQuickRun runs every measurement in --quick mode with small sizes
// against a server the tool starts, and checks the figures make sense and
// the JSON has them. The sizes keep every stream within the server's
// 1 MiB ring where the test says nothing may be lost: a client that keeps
// its connection can then lose nothing, whatever the machine's load (and
// one that acknowledges loses nothing whatever the size). The memory
// measurement's settle window is short: the test checks the figures'
// shape, not the server's.
func TestQuickRun(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := runTool(t, "--server-bin", serverBin(t), "--quick", "--json", jsonPath,
		"--file-size", "512KiB", "--keys", "100", "--typed-keys", "20", "--flood-duration", "300ms", "--flood-rate", "2",
		"--clients", "20", "--fanout-size", "900KiB", "--fanout-rate", "2", "--rss-flood-size", "512KiB", "--rss-settle", "300ms",
		"--abuse-requests", "10", "--abuse-ws", "2", "--abuse-frames", "3", "--abuse-keys", "10",
		"--scale-sessions", "1", "--scale-window", "300ms", "--scale-after", "1s",
		"--hub-workspaces", "2", "--hub-sessions", "2", "--hub-window", "6s")
	if code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("table:\n%s", stdout)
	for _, want := range []string{
		"| what", "bare PTY read loop", "one client acknowledging every frame", "client not acknowledging",
		"keystroke echo round trip, 100 keys back to back", "20 keys typed 10-50 ms apart",
		"to 20 clients not acknowledging", "to 20 clients acknowledging every frame", "acknowledges once and stops reading",
		"server RSS", "+ 11 acknowledging clients", "after each session printed 512 KiB more", "restart to 4 sessions listed",
		"abuse: 10 POST /api/sessions of 1 MiB", "a client's keystroke echo", "a fresh client attaching after 7 prompts of 64 KiB",
		"scale: 1 sessions with full rings, 2 acknowledging clients each",
		"hub: 2 workspaces of 2 sessions, a wait from the workspace to the hub's page", "hub: its RSS and CPU meanwhile",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}

	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, b)
	}
	for _, k := range []string{"date", "goos", "goarch", "numCPU", "goVersion", "server", "throughput", "echo", "flood", "fanout", "rss", "abuse", "restart", "scale", "hub"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	for _, k := range []string{"failed", "skipped"} {
		if v, ok := keys[k]; ok {
			t.Errorf("JSON has %s: %s", k, v)
		}
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.NumCPU < 1 || r.GoVersion == "" || r.GOOS == "" || !r.Server.StartedByTool || r.Server.PID == 0 {
		t.Errorf("header %+v, server %+v", r, r.Server)
	}

	if tp := r.Throughput; tp == nil {
		t.Error("no throughput")
	} else if len(tp.Runs) != 1 || tp.BareMBpsMedian <= 0 {
		t.Errorf("throughput %+v", tp)
	} else {
		for _, v := range []struct {
			name string
			s    serverSummary
			run  serverRun
			acks int
		}{
			// The acknowledging client acknowledges its position once
			// before cat starts, then every frame.
			{"acknowledging", tp.Acking, tp.Runs[0].Acking, tp.Runs[0].Acking.Frames + 1},
			{"not acknowledging", tp.NotAcking, tp.Runs[0].NotAcking, 0},
		} {
			if v.s.Ratio <= 0 || v.s.MBpsMedian <= 0 || v.s.LostBytes != 0 || !slices.Equal(v.s.LostBytesPerRun, []uint64{0}) ||
				v.run.ReceivedBytes != tp.FileBytes || v.run.Frames == 0 || v.run.Acks != v.acks {
				t.Errorf("throughput, client %s: %+v, run %+v; want %d acks", v.name, v.s, v.run, v.acks)
			}
		}
	}

	if e := r.Echo; e == nil {
		t.Error("no echo")
	} else {
		for _, v := range []struct {
			name string
			s    echoStats
			keys int
		}{{"back to back", e.Tight, 100}, {"typed", e.Typed, 20}, {"typed into a bare PTY", e.BareTyped, 20}} {
			if v.s.Keys != v.keys || v.s.P50Micros <= 0 || v.s.P99Micros < v.s.P50Micros || v.s.MaxMicros < v.s.P99Micros {
				t.Errorf("echo %s %+v, want %d keys", v.name, v.s, v.keys)
			}
		}
		if e.TypedPauseMinMs != 10 || e.TypedPauseMaxMs != 50 {
			t.Errorf("typed pauses %v-%v ms, want 10-50", e.TypedPauseMinMs, e.TypedPauseMaxMs)
		}
	}

	var names []string
	for _, f := range r.Flood {
		names = append(names, f.Name)
		if f.Frames == 0 || f.FramesPerSecond <= 0 || f.AvgFrameBytes <= 0 || f.DeliveredMBps <= 0 {
			t.Errorf("flood %+v", f)
		}
		if f.Name != "saturating" && (f.LostBytes != 0 || f.Resyncs != 0) {
			t.Errorf("flood %s, within the ring, lost %d bytes in %d resyncs", f.Name, f.LostBytes, f.Resyncs)
		}
	}
	if want := []string{"saturating", "paced", "build-log"}; !slices.Equal(names, want) {
		t.Errorf("floods %q, want %q", names, want)
	}

	if f := r.Fanout; f == nil {
		t.Error("no fan-out")
	} else {
		for _, p := range []struct {
			ack bool
			fanoutPair
		}{{false, f.NotAcking}, {true, f.Acking}} {
			for _, run := range []fanoutRun{p.Normal, p.WithStall} {
				if run.Clients != 20 || run.Acking != p.ack || run.CompleteClients != 20 || run.LostBytes != 0 || run.DroppedClients != 0 ||
					run.ReceivedBytes != 20*f.FloodBytes || run.PerClientMBpsMin <= 0 || run.TotalMBps <= 0 ||
					len(run.LostBytesPerClient) != 20 || run.LostBytesMax != 0 || run.LostBytesMedian != 0 {
					t.Errorf("fan-out run, acknowledging %v: %+v", p.ack, run)
				}
			}
			if p.Normal.Stalled != nil || p.WithStall.Stalled == nil {
				t.Errorf("acknowledging %v: stalled outcomes %+v and %+v, want none and one", p.ack, p.Normal.Stalled, p.WithStall.Stalled)
			} else if s := p.WithStall.Stalled; s.Acked != p.ack || (s.Outcome != "complete" && s.Outcome != "resynced" && s.Outcome != "dropped") {
				t.Errorf("acknowledging %v: stalled client %+v", p.ack, s)
			}
			if p.MedianRatio <= 0 || p.MinRatio <= 0 {
				t.Errorf("acknowledging %v: fan-out ratios %v, %v", p.ack, p.MedianRatio, p.MinRatio)
			}
		}
	}

	if m := r.RSS; m == nil {
		t.Error("no RSS")
	} else {
		if m.IdleMiB <= 0 || m.FullSessionsMiB <= 0 || m.WithClientsMiB <= 0 || m.AfterFloodsMiB <= 0 ||
			m.PeakMiB < max(m.FullSessionsMiB, m.WithClientsMiB, m.AfterFloodsMiB) || m.Sessions != 4 || m.Clients != 11 ||
			m.FloodBytes != 512<<10 || m.FloodSeconds <= 0 || m.FloodLostBytes != 0 || m.TargetMiB != 32 || m.SettleWindowSeconds != 0.3 {
			t.Errorf("RSS %+v", m)
		}
		for _, step := range []string{"full", "withClients", "afterFloods"} {
			if st, ok := m.Steps[step]; !ok || st.MiB <= 0 || st.AnonMiB <= 0 || st.FileMiB <= 0 || st.SettleSeconds < 0.3 ||
				st.Where.Anon == 0 || st.Where.Code == 0 || st.Where.Data == 0 {
				t.Errorf("RSS step %s: %+v", step, st)
			}
		}
	}

	// The abuse is small here: its figures' shape is checked, and that
	// the server refused every abusive request and let a fresh client in.
	if a := r.Abuse; a == nil {
		t.Error("no abuse")
	} else if a.BigRequests != 10 || a.SmallRequests != 10 || a.RequestsWritten > 20 || a.WSConns != 2 || a.WSFramesPerConn != 3 ||
		a.WSFramesWritten > 6 || a.StuffAccepted+a.StuffRefused != stuffPrompts || a.StuffAccepted == 0 || a.StuffError != "" ||
		!a.Attached || !a.AttachedAfter || a.SessionsCreated != 0 || a.Echo.Keys < 10 || a.EchoError != "" || a.CutShort ||
		a.BeforeMiB <= 0 || a.AfterMiB <= 0 || a.PeakMiB < max(a.BeforeMiB, a.AfterMiB) || a.HealthProbes == 0 ||
		a.GrowthGoalMiB != 64 || a.EchoGoalMs != 100 {
		t.Errorf("abuse %+v", a)
	}

	// One count, on the 1 MiB ring. The kernel counts CPU in 10 ms ticks,
	// and one session printing for 300 ms takes a few ms of the server's:
	// its count may well be 0. A window of 300 ms may hold no save: disk
	// writes may be 0 too.
	if sc := r.Scale; sc == nil {
		t.Error("no scale")
	} else if len(sc.Steps) != 1 || len(sc.Increments) != 0 || sc.ClientsPerSession != 2 || sc.GoalMiBPerSession != 3 || sc.WindowSeconds != 0.3 ||
		sc.AfterSeconds != 1 || sc.FillBytes != 5<<18 || sc.TrickleRate != defaultTrickleRate || sc.BusyRate != defaultBusyRate {
		t.Errorf("scale %+v", sc)
	} else if s := sc.Steps[0]; s.Sessions != 1 || s.Clients != 2 || s.IdleMiB <= 0 || s.NeedMiB <= s.IdleMiB || s.BusyPeakMiB <= s.IdleMiB ||
		s.PeakMiB < max(s.NeedMiB, s.BusyPeakMiB, s.AfterStopMiB) || s.MiBPerSession <= 0 || s.AfterStopMiB <= 0 || s.AfterStopSeconds < 1 ||
		s.AfterStopRatio <= 0 || s.TrickleSeconds < 0.3 || s.BusySeconds < 0.3 || s.QuietSeconds < 0.3 ||
		s.TricklePrintedBytes == 0 || s.PrintedBytes <= s.TricklePrintedBytes || s.SessionMBpsMin <= 0 || s.MachineBusyCores <= 0 ||
		s.Resyncs != 0 || s.LostBytes != 0 || s.QuietWhere.Anon == 0 || s.DatabaseBytes <= 0 {
		t.Errorf("scale, 1 session: %+v", s)
	}

	// Two workspaces, one with a token, of two sessions each: a session
	// asks again 2.2 to 7.2 s after it asked, so some questions fall in
	// the 6 s window; the hub shows every one (a wait lasts a second at
	// least).
	if h := r.Hub; h == nil {
		t.Error("no hub")
	} else if h.Workspaces != 2 || h.SessionsPerWorkspace != 2 || h.TokenWorkspaces != 1 || h.HubPID == 0 || h.WindowSeconds < 6 ||
		h.Waits == 0 || h.Shown != h.Waits || h.Missed != 0 || h.MissedShort != 0 || h.LatencyP50Ms <= 0 || h.LatencyP99Ms < h.LatencyP50Ms ||
		h.LatencyMaxMs < h.LatencyP99Ms || h.StatusChanges < h.Waits || h.InboxMessages == 0 || h.InboxMeanBytes <= 0 ||
		h.FollowingMiB <= 0 || h.LoadPeakMiB < h.LoadMedianMiB || h.PeakMiB < max(h.LoadPeakMiB, h.SettledMiB, h.FollowingMiB) ||
		h.SettledMiB <= 0 || h.RSSGoalMiB != 64 || h.LatencyGoalMs != 1000 || h.MachineBusyCores <= 0 || h.HubExitCode != 0 || h.HubStopMs <= 0 {
		t.Errorf("hub %+v", h)
	}

	if s := r.Restart; s == nil {
		t.Error("no restart")
	} else if s.ExitCode != 0 || s.ShutdownMs <= 0 || s.RestartListeningMs <= 0 || s.RestartListedMs < s.RestartListeningMs ||
		!s.ClientToldShutdown || s.ClientCloseCode != 1001 {
		t.Errorf("restart %+v", s)
	}
}

// TestUnreachable names the address when nothing listens there.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, _, stderr := runTool(t, "--addr", addr, "--only", "echo")
	if code != 1 || !strings.Contains(stderr, "agentmux is not reachable at http://"+addr) || !strings.Contains(stderr, "--server-bin") {
		t.Errorf("exit code %d, stderr %q; want 1 and a message naming the address", code, stderr)
	}
}

// TestTTYD measures ttyd beside the server, when this machine has one
// (AGENTMUX_BENCH_TTYD names it, or ttyd is on PATH): the same workloads
// through both, in one run. A --ttyd that does not run is refused up
// front, whatever the machine has.
func TestTTYD(t *testing.T) {
	code, _, stderr := runTool(t, "--server-bin", serverBin(t), "--only", "echo", "--ttyd", filepath.Join(t.TempDir(), "no-ttyd"))
	if code != 1 || !strings.Contains(stderr, "--ttyd") || !strings.Contains(stderr, "no-ttyd") {
		t.Errorf("missing ttyd: exit code %d, stderr %q; want 1 and a message naming the flag and the path", code, stderr)
	}

	bin := os.Getenv("AGENTMUX_BENCH_TTYD")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("ttyd"); err != nil {
			t.Skip("no ttyd here: set AGENTMUX_BENCH_TTYD to a ttyd binary to measure beside it")
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := runTool(t, "--server-bin", serverBin(t), "--only", "throughput,echo", "--ttyd", bin, "--json", jsonPath,
		"--runs", "1", "--file-size", "2MiB", "--keys", "50", "--typed-keys", "10")
	if code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("table:\n%s", stdout)
	for _, want := range []string{"the same through ttyd ", "keys back to back through ttyd ", "keys typed through ttyd "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	var rep report
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.TTYDVersion == "" || rep.Throughput == nil || rep.Throughput.TTYDMBpsMedian <= 0 || rep.Echo == nil ||
		rep.Echo.TTYDTight == nil || rep.Echo.TTYDTight.Keys != 50 || rep.Echo.TTYDTyped == nil || rep.Echo.TTYDTyped.Keys != 10 {
		t.Errorf("ttyd figures missing from the JSON: %s", b)
	}
}

// TestToken says when --token is missing or wrong, and with the right one
// works over both HTTP and the WebSocket.
func TestToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	srv, err := startServer(ctx, serverOptions{Bin: serverBin(t), Workspace: dir, DataDir: filepath.Join(dir, "data"), Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.close()
	pid := strconv.Itoa(srv.pid())

	for _, tc := range []struct {
		token string
		want  string
	}{
		{"", "the server needs a token; pass --token"},
		{"wrong", "the server refused the token given with --token"},
	} {
		code, _, stderr := runTool(t, "--addr", srv.url, "--token", tc.token, "--pid", pid, "--only", "echo")
		if code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("token %q: exit code %d, stderr %q; want 1 and %q", tc.token, code, stderr, tc.want)
		}
	}
	code, stdout, stderr := runTool(t, "--addr", srv.url, "--token", "s3cret", "--pid", pid, "--only", "echo,restart", "--keys", "20", "--typed-keys", "3")
	if code != 0 || !strings.Contains(stdout, "keystroke echo round trip, 20 keys back to back") || !strings.Contains(stdout, "the same, 3 keys typed") ||
		!strings.Contains(stdout, "skipped: needs --server-bin") {
		t.Errorf("right token: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestParseFlags gives --quick its defaults, except for flags given, and
// reads sizes and rates.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--quick", "--keys", "7", "--fanout-rate", "1.5", "--file-size", "3MiB", "--rss-flood-size", "2MiB", "--rss-settle", "2s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	q := defaults(true)
	if o.Keys != 7 || o.FanoutRate != 1.5e6 || o.FileBytes != 3<<20 || o.RSSFloodBytes != 2<<20 || o.RSSSettle != 2*time.Second ||
		o.Runs != q.Runs || o.FloodRate != q.FloodRate || o.TypedKeys != 100 || o.RSSClients != 11 ||
		o.FanoutBytes != q.FanoutBytes || o.Addr != "127.0.0.1:8080" || !slices.Equal(o.Only, allMeasurements) {
		t.Errorf("options %+v", o)
	}
	o, err = parseFlags([]string{"--quick", "--typed-keys", "9"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.TypedKeys != 9 || o.Keys != q.Keys || o.RSSFloodBytes != q.RSSFloodBytes || o.AbuseRequests != 100 || o.AbuseWSConns != 10 || o.AbuseWSFrames != 20 {
		t.Errorf("--quick --typed-keys 9: %+v", o)
	}
	o, err = parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if full := defaults(false); o.Keys != full.Keys || o.TypedKeys != 600 || o.Keys != 2000 || o.FileBytes != full.FileBytes || o.FloodRate != 64e6 ||
		o.RSSClients != 11 || o.RSSFloodBytes != 8<<20 || o.RSSSettle != defaultSettle ||
		o.AbuseRequests != 250 || o.AbuseWSConns != 20 || o.AbuseWSFrames != 50 || o.AbuseKeys != 50 {
		t.Errorf("defaults %+v", o)
	}
	o, err = parseFlags([]string{"--quick", "--scale-sessions", "2, 8,40"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.ScaleSessions, []int{2, 8, 40}) || o.ScaleWindow != q.ScaleWindow || !slices.Equal(q.ScaleSessions, []int{4, 16}) || o.ScaleAfter != 30*time.Second {
		t.Errorf("--quick --scale-sessions 2,8,40: %v, window %v", o.ScaleSessions, o.ScaleWindow)
	}
	if o, err = parseFlags(nil, &bytes.Buffer{}); err != nil || !slices.Equal(o.ScaleSessions, []int{4, 16, 32}) || o.ScaleWindow != 10*time.Second {
		t.Errorf("scale defaults %v, window %v (%v); want 4,16,32 and 10s", o.ScaleSessions, o.ScaleWindow, err)
	}
	if o, err = parseFlags(nil, &bytes.Buffer{}); err != nil || o.HubWorkspaces != 50 || o.HubSessions != 4 || o.HubWindow != time.Minute {
		t.Errorf("hub defaults %d workspaces of %d sessions, window %v (%v); want 50 of 4 and 1m", o.HubWorkspaces, o.HubSessions, o.HubWindow, err)
	}
	if o, err = parseFlags([]string{"--quick", "--hub-window", "5s"}, &bytes.Buffer{}); err != nil || o.HubWorkspaces != 20 || o.HubSessions != 4 || o.HubWindow != 5*time.Second {
		t.Errorf("--quick --hub-window 5s: %d workspaces of %d sessions, window %v (%v); want 20 of 4 and 5s", o.HubWorkspaces, o.HubSessions, o.HubWindow, err)
	}
	for _, bad := range [][]string{
		{"--addr", "x:1", "--server-bin", "y"},
		{"--scale-sessions", "16,4"},
		{"--scale-sessions", "4,4"},
		{"--scale-sessions", "0,4"},
		{"--scale-sessions", "four"},
		{"--scale-window", "0s"},
		{"--scale-after", "0s"},
		{"--only", "echo,nope"},
		{"--file-size", "12 parsecs"},
		{"--keys", "0"},
		{"--typed-keys", "0"},
		{"--rss-settle", "0s"},
		{"--rss-flood-size", "12"},
		{"--abuse-requests", "0"},
		{"--abuse-ws", "0"},
		{"--hub-workspaces", "0"},
		{"--hub-sessions", "0"},
		{"--hub-window", "0s"},
		{"extra"},
	} {
		if _, err := parseFlags(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1048576": 1 << 20, "64MiB": 64 << 20, "512KiB": 512 << 10, "2MB": 2e6, "1G": 1 << 30, "1.5MiB": 3 << 19, "900 KiB": 900 << 10,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1 TB"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}
