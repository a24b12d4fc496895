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
	// The paced-flood sessions run this test binary as their writer, as
	// they run agentmux-bench itself outside tests.
	writerMain()
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
// its connection can then lose nothing, whatever the machine's load.
func TestQuickRun(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := runTool(t, "--server-bin", serverBin(t), "--quick", "--json", jsonPath,
		"--file-size", "512KiB", "--keys", "100", "--flood-duration", "300ms", "--flood-rate", "2",
		"--clients", "20", "--fanout-size", "900KiB", "--fanout-rate", "2")
	if code != 0 {
		t.Fatalf("exit code %d; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("table:\n%s", stdout)
	for _, want := range []string{"| what", "bare PTY read loop", "keystroke echo", "fan-out", "server RSS", "restart to 4 sessions listed"} {
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
	for _, k := range []string{"date", "goos", "goarch", "numCPU", "goVersion", "server", "throughput", "echo", "flood", "fanout", "rss", "restart"} {
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
	} else if tp.Ratio <= 0 || tp.BareMBpsMedian <= 0 || tp.ServerMBpsMedian <= 0 || tp.LostBytes != 0 || len(tp.Runs) != 1 ||
		tp.Runs[0].ReceivedBytes != tp.FileBytes {
		t.Errorf("throughput %+v", tp)
	}

	if e := r.Echo; e == nil {
		t.Error("no echo")
	} else if e.Keys != 100 || e.P50Micros <= 0 || e.P99Micros < e.P50Micros || e.MaxMicros < e.P99Micros {
		t.Errorf("echo %+v", e)
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
		for _, run := range []fanoutRun{f.Normal, f.WithStall} {
			if run.Clients != 20 || run.CompleteClients != 20 || run.LostBytes != 0 || run.DroppedClients != 0 ||
				run.ReceivedBytes != 20*f.FloodBytes || run.PerClientMBpsMin <= 0 || run.TotalMBps <= 0 {
				t.Errorf("fan-out run %+v", run)
			}
		}
		if f.Normal.Stalled != nil || f.WithStall.Stalled == nil {
			t.Errorf("stalled outcomes %+v and %+v, want none and one", f.Normal.Stalled, f.WithStall.Stalled)
		} else if o := f.WithStall.Stalled.Outcome; o != "complete" && o != "resynced" && o != "dropped" {
			t.Errorf("stalled client: %+v", f.WithStall.Stalled)
		}
		if f.MedianRatio <= 0 {
			t.Errorf("fan-out ratio %v", f.MedianRatio)
		}
	}

	if m := r.RSS; m == nil {
		t.Error("no RSS")
	} else if m.IdleMiB <= 0 || m.FullSessionsMiB <= 0 || m.WithClientsMiB <= 0 || m.PeakMiB < m.WithClientsMiB || m.Sessions != 4 || m.Clients != 10 {
		t.Errorf("RSS %+v", m)
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
	code, stdout, stderr := runTool(t, "--addr", srv.url, "--token", "s3cret", "--pid", pid, "--only", "echo,restart", "--keys", "20")
	if code != 0 || !strings.Contains(stdout, "keystroke echo round trip, 20 keys") || !strings.Contains(stdout, "skipped: needs --server-bin") {
		t.Errorf("right token: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestParseFlags gives --quick its defaults, except for flags given, and
// reads sizes and rates.
func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--quick", "--keys", "7", "--fanout-rate", "1.5", "--file-size", "3MiB"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	q := defaults(true)
	if o.Keys != 7 || o.FanoutRate != 1.5e6 || o.FileBytes != 3<<20 || o.Runs != q.Runs || o.FloodRate != q.FloodRate ||
		o.FanoutBytes != q.FanoutBytes || o.Addr != "127.0.0.1:8080" || !slices.Equal(o.Only, allMeasurements) {
		t.Errorf("options %+v", o)
	}
	o, err = parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if full := defaults(false); o.Keys != full.Keys || o.FileBytes != full.FileBytes || o.FloodRate != 64e6 {
		t.Errorf("defaults %+v", o)
	}
	for _, bad := range [][]string{
		{"--addr", "x:1", "--server-bin", "y"},
		{"--only", "echo,nope"},
		{"--file-size", "12 parsecs"},
		{"--keys", "0"},
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
