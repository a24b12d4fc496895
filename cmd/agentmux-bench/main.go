// Command agentmux-bench measures a running agentmux over its real
// protocol, the HTTP API and the WebSocket at /ws, the way a browser uses
// it:
//
//  1. throughput: cat of a generated ASCII file through the server to one
//     client, which acknowledges what it reads (terminal.ack) or not,
//     against the same program read straight from a PTY here;
//  2. keystroke echo: the round trip of single keys typed into cat, back
//     to back and with a person's pauses between them;
//  3. floods: frames per second and frame size of endless output;
//  4. fan-out: one flood to many clients, then with one more client that
//     stops reading, the clients acknowledging or not;
//  5. the server's resident memory with four full sessions and
//     acknowledging clients, before and after the sessions flood them;
//  6. abuse: oversized request bodies and WebSocket frames on
//     connections that never read, and a stuffed prompt queue, with the
//     server's memory and a well-behaved client's keystroke echo meanwhile;
//  7. shutdown with busy sessions and restart until they are listed
//     (only with a server it started itself);
//  8. scale: the server's memory, CPU and disk writes with 4, 16 and 32
//     sessions followed by two clients each, their rings full, then
//     trickling, then printing a build log, then quiet (only with a
//     server it starts itself, one for each count);
//  9. hub: agentmux hub following 50 workspaces of 4 sessions each whose
//     statuses change every few seconds: how soon a session's wait shows
//     on the hub's page, and the hub's memory and CPU (only with
//     --server-bin, which it starts as the workspaces and as the hub).
//
// The workloads are programs that run as sessions and read files this
// tool writes, so the server must run on this machine. Usage:
//
//	go build -o /tmp/agentmux ./cmd/server
//	go run ./cmd/agentmux-bench --server-bin /tmp/agentmux --json bench.json
//	go run ./cmd/agentmux-bench --addr 127.0.0.1:8080 --token s3cret --quick
//
// It prints a table on stdout, progress on stderr, and with --json the raw
// figures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	// Sessions of the paced floods run this same program as their
	// writer, and those of the scale measurement as their staged printer.
	writerMain()
	stagesMain()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// The measurements, in the order of the report.
const (
	mThroughput = "throughput"
	mEcho       = "echo"
	mFlood      = "flood"
	mFanout     = "fanout"
	mRSS        = "rss"
	mAbuse      = "abuse"
	mRestart    = "restart"
	mScale      = "scale"
	mHub        = "hub"
)

var allMeasurements = []string{mThroughput, mEcho, mFlood, mFanout, mRSS, mAbuse, mRestart, mScale, mHub}

// options are the command line's. Sizes are in bytes, rates in bytes per
// second.
type options struct {
	Addr      string
	ServerBin string
	Token     string
	PID       int
	JSONPath  string
	TTYD      string
	Quick     bool
	Only      []string
	Timeout   time.Duration

	FileBytes     int64
	Runs          int
	Keys          int
	TypedKeys     int
	FloodDuration time.Duration
	FloodRate     int64
	Clients       int
	FanoutBytes   int64
	FanoutRate    int64
	RSSClients    int
	RSSFloodBytes int64
	RSSSettle     time.Duration
	Scrollback    int64
	AbuseRequests int
	AbuseWSConns  int
	AbuseWSFrames int
	AbuseKeys     int
	ScaleSessions []int
	ScaleWindow   time.Duration
	ScaleAfter    time.Duration
	HubWorkspaces int
	HubSessions   int
	HubWindow     time.Duration
}

// defaults returns the options of a full run, or of a quick one. The
// fan-out is paced at 4 MB/s a client, 80 MB/s in all: a rate a busy
// two-core machine carries whole, so that what a stalled client costs the
// others shows rather than the machine's limit (--fanout-rate 0 floods
// unpaced, and loses most of the stream to resyncs).
func defaults(quick bool) options {
	if quick {
		return options{
			Timeout: 5 * time.Minute, FileBytes: 16 << 20, Runs: 1, Keys: 300, TypedKeys: 100, FloodDuration: time.Second,
			FloodRate: 64e6, Clients: 20, FanoutBytes: 8 << 20, FanoutRate: 4e6, RSSClients: 11, RSSFloodBytes: 4 << 20, RSSSettle: defaultSettle, Scrollback: 1 << 20,
			AbuseRequests: 100, AbuseWSConns: 10, AbuseWSFrames: 20, AbuseKeys: 50,
			ScaleSessions: []int{4, 16}, ScaleWindow: defaultSettle, ScaleAfter: scaleAfter,
			HubWorkspaces: 20, HubSessions: 4, HubWindow: 20 * time.Second,
		}
	}
	return options{
		Timeout: 20 * time.Minute, FileBytes: 64 << 20, Runs: 5, Keys: 2000, TypedKeys: 600, FloodDuration: 3 * time.Second,
		FloodRate: 64e6, Clients: 20, FanoutBytes: 32 << 20, FanoutRate: 4e6, RSSClients: 11, RSSFloodBytes: 8 << 20, RSSSettle: defaultSettle, Scrollback: 1 << 20,
		AbuseRequests: 250, AbuseWSConns: 20, AbuseWSFrames: 50, AbuseKeys: 50,
		ScaleSessions: []int{4, 16, 32}, ScaleWindow: 10 * time.Second, ScaleAfter: scaleAfter,
		HubWorkspaces: 50, HubSessions: 4, HubWindow: time.Minute,
	}
}

// parseFlags reads the command line; flags not given take the defaults
// of a full or, with --quick, a quick run.
func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	full := defaults(false)
	fs := flag.NewFlagSet("agentmux-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.Addr, "addr", "", "address of a running agentmux, host:port or http://host:port (default 127.0.0.1:8080 unless --server-bin)")
	fs.StringVar(&o.ServerBin, "server-bin", "", "agentmux binary to start on temporary directories for every measurement; enables the shutdown and restart measurement")
	fs.StringVar(&o.Token, "token", "", "the server's --token, sent as Authorization: Bearer (also given to a server started with --server-bin)")
	fs.IntVar(&o.PID, "pid", 0, "the server's process id, for its memory (default: the process listening on --addr's port)")
	fs.StringVar(&o.JSONPath, "json", "", "also write the raw figures to this file as JSON")
	fs.StringVar(&o.TTYD, "ttyd", "", "a ttyd binary (github.com/tsl0922/ttyd) to measure beside the server in the throughput and echo measurements, on the same workloads in the same run")
	fs.BoolVar(&o.Quick, "quick", false, "small sizes and counts: about 50 s on two cores instead of about two minutes")
	only := fs.String("only", "", "comma-separated measurements to run: "+strings.Join(allMeasurements, ", ")+" (default all)")
	fs.DurationVar(&o.Timeout, "timeout", full.Timeout, "give up after this long")
	sizeVar(fs, &o.FileBytes, "file-size", full.FileBytes, "size of the file cat sends in the throughput measurement")
	fs.IntVar(&o.Runs, "runs", full.Runs, "throughput runs, each bare, then through the server to a client that acknowledges, then to one that does not")
	fs.IntVar(&o.Keys, "keys", full.Keys, "keys typed back to back in the echo measurement")
	fs.IntVar(&o.TypedKeys, "typed-keys", full.TypedKeys, fmt.Sprintf("keys typed in the echo measurement with a pause of %v to %v between them, as a person types", typedPauseMin, typedPauseMax))
	fs.DurationVar(&o.FloodDuration, "flood-duration", full.FloodDuration, "how long each flood is watched")
	rateVar(fs, &o.FloodRate, "flood-rate", full.FloodRate, "rate of the paced flood, MB/s")
	fs.IntVar(&o.Clients, "clients", full.Clients, "clients in the fan-out")
	sizeVar(fs, &o.FanoutBytes, "fanout-size", full.FanoutBytes, "what the fan-out's session writes")
	rateVar(fs, &o.FanoutRate, "fanout-rate", full.FanoutRate, "rate of the fan-out's session, MB/s; 0 writes as fast as the terminal takes it")
	fs.IntVar(&o.RSSClients, "rss-clients", full.RSSClients, "acknowledging clients attached, spread over the four full sessions, in the memory measurement")
	sizeVar(fs, &o.RSSFloodBytes, "rss-flood-size", full.RSSFloodBytes, "what each of the memory measurement's sessions prints while the clients are attached")
	fs.DurationVar(&o.RSSSettle, "rss-settle", full.RSSSettle, "how long the server's RSS must hold still before the memory measurement reads it; keep it above the server's --save-interval, so a screen save counts")
	sizeVar(fs, &o.Scrollback, "scrollback", full.Scrollback, "the server's --scrollback (passed to a server started with --server-bin)")
	fs.IntVar(&o.AbuseRequests, "abuse-requests", full.AbuseRequests, fmt.Sprintf("abusive POST /api/sessions of each kind in the abuse measurement: a %s command, and a %s value", formatBytes(abuseBigBody), formatBytes(abuseValueBytes)))
	fs.IntVar(&o.AbuseWSConns, "abuse-ws", full.AbuseWSConns, "WebSockets that send oversized frames and never read, in the abuse measurement")
	fs.IntVar(&o.AbuseWSFrames, "abuse-frames", full.AbuseWSFrames, fmt.Sprintf("frames of %s each abusive WebSocket sends", formatBytes(abuseFrameBytes)))
	fs.IntVar(&o.AbuseKeys, "abuse-keys", full.AbuseKeys, fmt.Sprintf("keys at least that a well-behaved client types %v apart during the abuse (it types on until the abuse is sent)", abuseKeyPause))
	intsVar(fs, &o.ScaleSessions, "scale-sessions", full.ScaleSessions, fmt.Sprintf("session counts of the scale measurement, rising, each on a server of its own started with --max-sessions set to it, each session with %d clients", scaleClients))
	fs.DurationVar(&o.ScaleWindow, "scale-window", full.ScaleWindow, "how long the scale measurement counts the server's CPU and disk writes, while the sessions trickle, while they print and once they are quiet; keep it above the server's --save-interval, so a save counts")
	fs.DurationVar(&o.ScaleAfter, "scale-after", full.ScaleAfter, "how long after the sessions stop printing the scale measurement reads the server's RSS, against what the idle sessions need")
	fs.IntVar(&o.HubWorkspaces, "hub-workspaces", full.HubWorkspaces, "workspace servers the hub measurement starts and the hub follows")
	fs.IntVar(&o.HubSessions, "hub-sessions", full.HubSessions, fmt.Sprintf("sessions of each of the hub measurement's workspaces, each asking a question that is answered %v to %v later, then working %v to %v", hubHoldMin, hubHoldMax, hubWorkMin, hubWorkMax))
	fs.DurationVar(&o.HubWindow, "hub-window", full.HubWindow, "how long the hub measurement times the waits and counts the hub's CPU")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "agentmux-bench measures a running agentmux over HTTP and its WebSocket.\n\n")
		fmt.Fprintf(stderr, "Usage:\n  agentmux-bench --server-bin /tmp/agentmux [flags]\n  agentmux-bench --addr 127.0.0.1:8080 [--token T] [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return options{}, err
	}
	if fs.NArg() > 0 {
		return options{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.Quick {
		given := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		q := defaults(true)
		for name, apply := range map[string]func(){
			"timeout":        func() { o.Timeout = q.Timeout },
			"file-size":      func() { o.FileBytes = q.FileBytes },
			"runs":           func() { o.Runs = q.Runs },
			"keys":           func() { o.Keys = q.Keys },
			"typed-keys":     func() { o.TypedKeys = q.TypedKeys },
			"flood-duration": func() { o.FloodDuration = q.FloodDuration },
			"flood-rate":     func() { o.FloodRate = q.FloodRate },
			"clients":        func() { o.Clients = q.Clients },
			"fanout-size":    func() { o.FanoutBytes = q.FanoutBytes },
			"fanout-rate":    func() { o.FanoutRate = q.FanoutRate },
			"rss-clients":    func() { o.RSSClients = q.RSSClients },
			"rss-flood-size": func() { o.RSSFloodBytes = q.RSSFloodBytes },
			"abuse-requests": func() { o.AbuseRequests = q.AbuseRequests },
			"abuse-ws":       func() { o.AbuseWSConns = q.AbuseWSConns },
			"abuse-frames":   func() { o.AbuseWSFrames = q.AbuseWSFrames },
			"abuse-keys":     func() { o.AbuseKeys = q.AbuseKeys },
			"scale-sessions": func() { o.ScaleSessions = q.ScaleSessions },
			"scale-window":   func() { o.ScaleWindow = q.ScaleWindow },
			"hub-workspaces": func() { o.HubWorkspaces = q.HubWorkspaces },
			"hub-window":     func() { o.HubWindow = q.HubWindow },
		} {
			if !given[name] {
				apply()
			}
		}
	}
	if *only == "" {
		o.Only = allMeasurements
	} else {
		for m := range strings.SplitSeq(*only, ",") {
			m = strings.TrimSpace(m)
			if !slices.Contains(allMeasurements, m) {
				return options{}, fmt.Errorf("--only: unknown measurement %q (known: %s)", m, strings.Join(allMeasurements, ", "))
			}
			o.Only = append(o.Only, m)
		}
	}
	switch {
	case o.Addr != "" && o.ServerBin != "":
		return options{}, errors.New("give --addr for a running server or --server-bin to start one, not both")
	case o.Runs < 1 || o.Keys < 1 || o.TypedKeys < 1 || o.Clients < 1 || o.RSSClients < 1:
		return options{}, errors.New("--runs, --keys, --typed-keys, --clients and --rss-clients must be at least 1")
	case o.AbuseRequests < 1 || o.AbuseWSConns < 1 || o.AbuseWSFrames < 1 || o.AbuseKeys < 1:
		return options{}, errors.New("--abuse-requests, --abuse-ws, --abuse-frames and --abuse-keys must be at least 1")
	case o.FileBytes < 1<<10 || o.FanoutBytes < 1<<10 || o.RSSFloodBytes < 1<<10:
		return options{}, errors.New("--file-size, --fanout-size and --rss-flood-size must be at least 1KiB")
	case o.FloodDuration <= 0 || o.Timeout <= 0 || o.RSSSettle <= 0 || o.ScaleWindow <= 0 || o.ScaleAfter <= 0:
		return options{}, errors.New("--flood-duration, --timeout, --rss-settle, --scale-window and --scale-after must be above 0")
	case len(o.ScaleSessions) == 0 || o.ScaleSessions[0] < 1 || !slices.IsSorted(o.ScaleSessions) || len(slices.Compact(slices.Clone(o.ScaleSessions))) != len(o.ScaleSessions):
		return options{}, errors.New("--scale-sessions must be counts of at least 1, rising")
	case o.FloodRate <= 0 || o.FanoutRate < 0:
		return options{}, errors.New("--flood-rate must be above 0 and --fanout-rate not below 0")
	case o.Scrollback < 1<<10:
		return options{}, errors.New("--scrollback must be at least 1KiB")
	case o.HubWorkspaces < 1 || o.HubSessions < 1 || o.HubWindow <= 0:
		return options{}, errors.New("--hub-workspaces and --hub-sessions must be at least 1, and --hub-window above 0")
	}
	if o.Addr == "" && o.ServerBin == "" {
		o.Addr = "127.0.0.1:8080"
	}
	return o, nil
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux-bench:", err)
		return 2
	}
	rep, err := bench(ctx, o, stderr)
	if rep != nil {
		if werr := rep.writeTable(stdout); werr != nil && err == nil {
			err = fmt.Errorf("print the table: %w", werr)
		}
		if o.JSONPath != "" {
			if werr := rep.writeJSON(o.JSONPath); werr != nil && err == nil {
				err = werr
			}
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux-bench:", err)
		return 1
	}
	if len(rep.Failed) > 0 {
		return 1
	}
	return 0
}

// bench runs the measurements o asks for. A measurement that fails is
// recorded in the report and the others still run; the error is for what
// stops them all (no server, a wrong token, the time is up).
func bench(ctx context.Context, o options, stderr io.Writer) (*report, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("--timeout %v reached", o.Timeout))
	defer cancel()
	began := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "agentmux-bench %5.1fs: %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
	}
	tmp, err := os.MkdirTemp("", "agentmux-bench-")
	if err != nil {
		return nil, fmt.Errorf("make a temporary directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program, which the paced floods run: %w", err)
	}

	rep := newReport(o)
	defer rep.finish(began)
	e := &benchEnv{token: o.Token, tmp: tmp, self: self, scrollback: o.Scrollback, logf: logf}
	if o.TTYD != "" {
		if e.ttyd, err = newTTYDPeer(ctx, o.TTYD); err != nil {
			return nil, err
		}
		rep.TTYDVersion = e.ttyd.version
		logf("measuring ttyd %s beside the server", e.ttyd.version)
	}
	srvOpts := serverOptions{Bin: o.ServerBin, Token: o.Token, Scrollback: o.Scrollback}
	pidNote := ""
	if o.ServerBin != "" {
		srv, _, err := startFreshServer(ctx, tmp, "server", srvOpts)
		if err != nil {
			return nil, err
		}
		defer srv.close()
		e.api, e.serverPID = newAPIClient(srv.url, o.Token), srv.pid()
		logf("started %s (pid %d) at %s", o.ServerBin, srv.pid(), srv.url)
	} else {
		base := o.Addr
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		e.api = newAPIClient(base, o.Token)
		e.serverPID = o.PID
	}
	defer e.api.close()
	info, err := e.api.check(ctx)
	if err != nil {
		return nil, err
	}
	if e.serverPID == 0 {
		if e.serverPID, err = listenerPID(ctx, e.api.base); err != nil {
			pidNote = err.Error()
		}
	}
	rep.Server = serverReport{
		URL: e.api.base, Version: info.Version, StartedByTool: o.ServerBin != "", PID: e.serverPID,
		MaxSessions: info.MaxSessions, ScrollbackBytes: o.Scrollback,
	}
	if free := info.MaxSessions - info.Running; free < rssSessions {
		logf("the server runs %d of at most %d sessions; measurements that need %d may fail", info.Running, info.MaxSessions, rssSessions)
	}

	// The memory measurement goes first, while the server has not yet
	// grown for the other workloads; the abuse last on the shared server,
	// since it may leave it grown or slowed (the restart and scale
	// measurements have servers of their own). Scale and the hub go last
	// of all: their many sessions load the machine, and the load they
	// leave would weigh on whatever came after.
	order := []string{mRSS, mThroughput, mEcho, mFlood, mFanout, mAbuse, mRestart, mScale, mHub}
	for _, m := range order {
		if !slices.Contains(o.Only, m) {
			continue
		}
		if ctx.Err() != nil {
			return rep, context.Cause(ctx)
		}
		logf("%s...", m)
		err := func() error {
			switch m {
			case mThroughput:
				r, err := measureThroughput(ctx, e, o.FileBytes, o.Runs)
				rep.Throughput = r
				return err
			case mEcho:
				r, err := measureEcho(ctx, e, o.Keys, o.TypedKeys)
				rep.Echo = r
				return err
			case mFlood:
				for _, w := range floodWorkloads(e.self, o.FloodRate) {
					r, err := measureFlood(ctx, e, w, o.FloodDuration)
					if err != nil {
						return fmt.Errorf("%s flood: %w", w.Name, err)
					}
					e.logf("flood %s: %.0f frames/s of %.0f bytes", w.Name, r.FramesPerSecond, r.AvgFrameBytes)
					rep.Flood = append(rep.Flood, r)
				}
				return nil
			case mFanout:
				r, err := measureFanout(ctx, e, fanoutOptions{Clients: o.Clients, Bytes: o.FanoutBytes, Rate: o.FanoutRate})
				rep.Fanout = r
				return err
			case mRSS:
				if e.serverPID == 0 {
					rep.skip(m, "the server's process is unknown: "+pidNote)
					return nil
				}
				r, err := measureRSS(ctx, e, rssOptions{Clients: o.RSSClients, FloodBytes: o.RSSFloodBytes, Settle: o.RSSSettle})
				rep.RSS = r
				return err
			case mAbuse:
				if e.serverPID == 0 {
					rep.skip(m, "the server's process is unknown: "+pidNote)
					return nil
				}
				r, err := measureAbuse(ctx, e, abuseOptions{
					Requests: o.AbuseRequests, WSConns: o.AbuseWSConns, WSFrames: o.AbuseWSFrames, Keys: o.AbuseKeys, Settle: o.RSSSettle,
				})
				rep.Abuse = r
				return err
			case mRestart:
				if o.ServerBin == "" {
					rep.skip(m, "needs --server-bin: the tool only stops and restarts a server it started")
					return nil
				}
				r, err := measureRestart(ctx, e, srvOpts)
				rep.Restart = r
				return err
			case mScale:
				if o.ServerBin == "" {
					rep.skip(m, "needs --server-bin: the tool starts a server of its own for each session count, with --max-sessions set to it")
					return nil
				}
				r, err := measureScale(ctx, e, srvOpts, scaleOptions{Sessions: o.ScaleSessions, Window: o.ScaleWindow, Settle: o.RSSSettle, After: o.ScaleAfter})
				rep.Scale = r
				return err
			case mHub:
				if o.ServerBin == "" {
					rep.skip(m, "needs --server-bin: the tool starts the workspaces and the hub from it")
					return nil
				}
				r, err := measureHub(ctx, e, o.ServerBin, hubOptions{Workspaces: o.HubWorkspaces, Sessions: o.HubSessions, Window: o.HubWindow, Settle: o.RSSSettle})
				rep.Hub = r
				return err
			}
			return nil
		}()
		if err != nil {
			if ctx.Err() != nil {
				return rep, fmt.Errorf("%s: %w", m, context.Cause(ctx))
			}
			if errors.Is(err, errUnreachable) || errors.Is(err, errToken) {
				return rep, fmt.Errorf("%s: %w", m, err)
			}
			logf("%s failed: %v", m, err)
			rep.fail(m, err)
		}
	}
	return rep, nil
}

// sizeVar defines a flag of a byte count that takes 1048576, 64MiB, 512KiB
// and the like.
func sizeVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Func(name, fmt.Sprintf("%s (default %s)", usage, formatBytes(value)), func(s string) error {
		n, err := parseSize(s)
		if err != nil {
			return err
		}
		*p = n
		return nil
	})
}

// intsVar defines a flag of comma-separated counts, such as 4,16,32.
func intsVar(fs *flag.FlagSet, p *[]int, name string, value []int, usage string) {
	*p = value
	fs.Func(name, fmt.Sprintf("%s (default %s)", usage, joinInts(value)), func(s string) error {
		var vs []int
		for f := range strings.SplitSeq(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("want counts separated by commas, such as %s", joinInts(value))
			}
			vs = append(vs, v)
		}
		*p = vs
		return nil
	})
}

// joinInts writes counts as intsVar reads them.
func joinInts(vs []int) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(v))
	}
	return b.String()
}

// rateVar defines a flag of a rate given in MB/s (10^6 bytes) and kept in
// bytes per second.
func rateVar(fs *flag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fs.Func(name, fmt.Sprintf("%s (default %g)", usage, float64(value)/1e6), func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("want MB/s, a number not below 0")
		}
		*p = int64(v * 1e6)
		return nil
	})
}

// parseSize reads a byte count: a number with an optional unit, KiB, MiB,
// GiB (or K, M, G, also binary) or KB, MB, GB (decimal).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("bad size %q: want bytes, or a number with KiB, MiB, GiB, KB, MB or GB", s)
	}
	return int64(v * float64(mult)), nil
}

// hostInfo describes the machine, for the report.
func hostInfo() (goos, goarch string, cpus int, goVersion string) {
	return runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version()
}
