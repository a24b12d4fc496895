package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// runner is run() going in its own goroutine, as main runs it, with a
// signal channel the test owns.
type runner struct {
	t    *testing.T
	sigs chan os.Signal
	addr string
	log  *testutil.SyncBuffer

	done  chan struct{} // closed when run returned
	code  int           // run's result, once done is closed
	ended time.Time     // when run returned, once done is closed
}

// startRun starts run with args and waits until it serves. When the test
// ends it stops run if the test did not.
func startRun(t *testing.T, getenv func(string) string, args ...string) *runner {
	t.Helper()
	if !slices.Contains(args, "--data-dir") && !filepath.IsAbs(getenv("XDG_STATE_HOME")) {
		// Never the developer's own ~/.local/state, and never shared;
		// a test that gives a state directory of its own tests the
		// default there.
		args = append([]string{"--data-dir", t.TempDir()}, args...)
	}
	r := &runner{t: t, sigs: make(chan os.Signal, 2), log: &testutil.SyncBuffer{}, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		defer close(r.done)
		r.code = run(r.sigs, args, getenv, r.log, func(addr string) { ready <- addr })
		r.ended = time.Now()
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT} {
				select {
				case r.sigs <- sig:
				default:
				}
			}
			select {
			case <-r.done:
			case <-time.After(waitTimeout):
				t.Errorf("run did not return within %v of two signals", waitTimeout)
			}
		}
		if t.Failed() {
			t.Logf("run's log:\n%s", r.log)
		}
	})
	timeout := time.NewTimer(waitTimeout)
	defer timeout.Stop()
	select {
	case r.addr = <-ready:
	case <-r.done:
		t.Fatalf("run returned %d before serving", r.code)
	case <-timeout.C:
		t.Fatalf("run did not serve within %v", waitTimeout)
	}
	return r
}

func (r *runner) signal(sig os.Signal) {
	r.t.Helper()
	select {
	case r.sigs <- sig:
	default:
		r.t.Fatal("signal channel is full")
	}
}

// wait waits for run to return and gives its exit code.
func (r *runner) wait() int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(waitTimeout):
		r.t.Fatalf("run did not return within %v", waitTimeout)
		return 0
	}
}

func (r *runner) url(path string) string { return "http://" + r.addr + path }

// postSession creates a session running argv through the API.
func postSession(t *testing.T, hc *http.Client, r *runner, argv []string) wire.Session {
	t.Helper()
	body, err := json.Marshal(map[string]any{"command": argv})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Post(r.url("/api/sessions"), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	if _, err := out.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "create session", resp, out.Bytes(), http.StatusCreated)
	return decodeSession(t, out.Bytes())
}

func TestRunShutdown(t *testing.T) {
	const grace = 500 * time.Millisecond
	dir := t.TempDir()
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", dir,
		"--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", grace.String())
	hc := newHTTPClient(t)

	hupFile, normalFile := filepath.Join(dir, "hup.pid"), filepath.Join(dir, "normal.pid")
	hup := postSession(t, hc, r, hupIgnorer(hupFile))
	normal := postSession(t, hc, r, pidSleeper(normalFile))
	conn := attachWS(t, r, hup.ID)
	// The pid files also prove the trap is set before the signal comes.
	hupPID, normalPID := testutil.ReadPID(t, waitTimeout, hupFile), testutil.ReadPID(t, waitTimeout, normalFile)

	sent := time.Now()
	r.signal(syscall.SIGTERM)

	// The client is told, sees both sessions stop, and is closed with 1001.
	var (
		shutdown *wsMsg
		stopped  = map[string]bool{}
		closeErr error
	)
	for {
		m, raw, err := readWS(conn)
		if err != nil {
			closeErr = err
			break
		}
		switch m.Type {
		case "server.shutdown":
			if shutdown != nil {
				t.Errorf("second server.shutdown: %s", raw)
			}
			shutdown = &m
			if m.GracePeriodMs == nil || *m.GracePeriodMs != grace.Milliseconds() || m.Message == "" {
				t.Errorf("server.shutdown %s: want gracePeriodMs %d and a message", raw, grace.Milliseconds())
			}
			// From now on no new connection is served: the hub is
			// closing, and the listener closes soon after.
			if c, _, err := dialWS(t, "ws://"+r.addr+"/ws", nil); err == nil {
				c.Close()
				t.Error("a WebSocket connected after server.shutdown")
			}
		case "session.status":
			if shutdown == nil {
				t.Errorf("session.status before server.shutdown: %s", raw)
			}
			if m.Status == "stopped" {
				stopped[m.SessionID] = true
			}
		}
	}
	if shutdown == nil {
		t.Error("no server.shutdown before the connection ended")
	}
	if !websocket.IsCloseError(closeErr, websocket.CloseGoingAway) {
		t.Errorf("connection ended with %v, want close 1001", closeErr)
	}
	if !stopped[hup.ID] || !stopped[normal.ID] {
		t.Errorf("stopped statuses seen for %v, want both %s and %s", stopped, hup.ID, normal.ID)
	}

	if code := r.wait(); code != 0 {
		t.Errorf("run returned %d, want 0", code)
	}
	took := r.ended.Sub(sent)
	t.Logf("shutdown took %v", took)
	if took > grace+time.Second {
		t.Errorf("shutdown took %v, more than grace %v + 1s", took, grace)
	}
	if took < grace {
		t.Errorf("shutdown took %v, less than grace %v: the HUP-ignoring agent was not given its grace", took, grace)
	}
	waitGone(t, hupPID)
	waitGone(t, normalPID)

	if c, err := net.DialTimeout("tcp", r.addr, waitTimeout); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after run returned", r.addr)
	}
	for _, want := range []string{"shutting down", "stopped"} {
		if len(linesWith(r.log.String(), "level=INFO", want)) == 0 {
			t.Errorf("log has no INFO line with %q", want)
		}
	}
	if errs := linesWith(r.log.String(), "level=ERROR"); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

func TestRunSecondSignalCutsShutdownShort(t *testing.T) {
	const grace = 5 * time.Second
	dir := t.TempDir()
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", dir,
		"--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", grace.String())
	hc := newHTTPClient(t)
	hupFile := filepath.Join(dir, "hup.pid")
	hup := postSession(t, hc, r, hupIgnorer(hupFile))
	conn := attachWS(t, r, hup.ID)
	pid := testutil.ReadPID(t, waitTimeout, hupFile)

	sent := time.Now()
	r.signal(syscall.SIGTERM)
	r.signal(syscall.SIGINT)
	// Even cut short, the client is told and closed with 1001.
	var shutdown bool
	for {
		m, _, err := readWS(conn)
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Errorf("connection ended with %v, want close 1001", err)
			}
			break
		}
		shutdown = shutdown || m.Type == "server.shutdown"
	}
	if !shutdown {
		t.Error("no server.shutdown before the connection ended")
	}
	code := r.wait()
	took := r.ended.Sub(sent)
	t.Logf("shutdown with a second signal took %v and returned %d", took, code)
	if took > 2*time.Second {
		t.Errorf("shutdown took %v after a second signal; want well under the %v grace", took, grace)
	}
	if code != 0 {
		t.Errorf("run returned %d, want 0", code)
	}
	waitGone(t, pid)
	if len(linesWith(r.log.String(), "level=WARN", "second signal")) != 1 {
		t.Errorf("want one WARN line about the second signal")
	}
}

func TestRunBadArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--no-such-flag"}, nil, "no-such-flag"},
		{[]string{"--max-sessions", "0"}, nil, "--max-sessions 0"},
		{[]string{"stray"}, nil, "stray"},
		{nil, map[string]string{"AGENTMUX_SCROLLBACK": "lots"}, "AGENTMUX_SCROLLBACK"},
	} {
		var out testutil.SyncBuffer
		sigs := make(chan os.Signal, 1)
		if code := run(sigs, tc.args, envOf(tc.env), &out, nil); code != 2 {
			t.Errorf("%q %v: run returned %d, want 2", tc.args, tc.env, code)
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%q %v: output does not mention %q:\n%s", tc.args, tc.env, tc.want, out.String())
		}
	}
}

func TestRunHelp(t *testing.T) {
	var out testutil.SyncBuffer
	if code := run(make(chan os.Signal, 1), []string{"--help"}, noEnv, &out, nil); code != 0 {
		t.Errorf("--help: run returned %d, want 0", code)
	}
	if !strings.Contains(out.String(), "--addr (AGENTMUX_ADDR)") {
		t.Errorf("--help printed no usage:\n%s", out.String())
	}
}

func TestRunBusyAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var out testutil.SyncBuffer
	code := run(make(chan os.Signal, 1), []string{"--addr", addr, "--workspace", t.TempDir(), "--agent-cmd", "sh", "--data-dir", t.TempDir()}, noEnv, &out, nil)
	if code != 1 {
		t.Errorf("busy %s: run returned %d, want 1", addr, code)
	}
	if len(linesWith(out.String(), "level=ERROR", addr)) != 1 {
		t.Errorf("want one ERROR line naming %s; log:\n%s", addr, out.String())
	}
}

func TestRunBadWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	var out testutil.SyncBuffer
	code := run(make(chan os.Signal, 1), []string{"--addr", "127.0.0.1:0", "--workspace", missing, "--agent-cmd", "sh", "--data-dir", t.TempDir()}, noEnv, &out, nil)
	if code != 1 {
		t.Errorf("missing workspace: run returned %d, want 1", code)
	}
	if len(linesWith(out.String(), "level=ERROR", missing)) != 1 {
		t.Errorf("want one ERROR line naming %s; log:\n%s", missing, out.String())
	}
}

func TestRunUnknownAgent(t *testing.T) {
	var out testutil.SyncBuffer
	code := run(make(chan os.Signal, 1), []string{"--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent", "gpt", "--data-dir", t.TempDir()}, noEnv, &out, nil)
	if code != 2 {
		t.Errorf("unknown agent: run returned %d, want 2 (a configuration error)", code)
	}
	if !strings.Contains(out.String(), "gpt") || !strings.Contains(out.String(), "claude") {
		t.Errorf("log does not name the agent and the known ones:\n%s", out.String())
	}
}

// TestRunFallsBackToShell starts the server as a first run on a machine
// without claude: it says so once and serves shell sessions.
func TestRunFallsBackToShell(t *testing.T) {
	pathWithout(t, "sh", "sleep")
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--shutdown-grace", "1s")
	hc := newHTTPClient(t)

	resp, err := hc.Post(r.url("/api/sessions"), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	resp.Body.Close()
	wantStatus(t, "create default session", resp, out.Bytes(), http.StatusCreated)
	if s := decodeSession(t, out.Bytes()); s.Agent != "shell" {
		t.Errorf("default session runs agent %q, want shell", s.Agent)
	}

	r.signal(syscall.SIGTERM)
	if code := r.wait(); code != 0 {
		t.Errorf("run returned %d, want 0", code)
	}
	// Every warning but the one about a binary built without the UI (as in
	// a clean checkout) must be the fallback's single line.
	var warns []string
	for _, w := range linesWith(r.log.String(), "level=WARN") {
		if !strings.Contains(w, "no UI build") {
			warns = append(warns, w)
		}
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "not installed") || !strings.Contains(warns[0], "claude") {
		t.Errorf("want exactly one WARN line saying claude is not installed; log:\n%s", r.log)
	}
}

// TestRunShutdownNoGrace stops a server with --shutdown-grace 0 and nothing
// running: the client is still told, and closed with 1001, at once.
func TestRunShutdownNoGrace(t *testing.T) {
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(),
		"--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", "0")
	conn, _, err := dialWS(t, "ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	roundTrip(t, conn) // registered before the signal

	sent := time.Now()
	r.signal(syscall.SIGTERM)
	var shutdown *wsMsg
	for {
		m, raw, err := readWS(conn)
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Errorf("connection ended with %v, want close 1001", err)
			}
			break
		}
		if m.Type == "server.shutdown" {
			shutdown = &m
			if m.GracePeriodMs == nil || *m.GracePeriodMs != 0 {
				t.Errorf("server.shutdown %s: want gracePeriodMs 0", raw)
			}
		}
	}
	if shutdown == nil {
		t.Error("no server.shutdown before the close")
	}
	if code := r.wait(); code != 0 {
		t.Errorf("run returned %d, want 0", code)
	}
	if took := r.ended.Sub(sent); took > time.Second {
		t.Errorf("shutdown took %v, more than grace 0 + 1s", took)
	}
}

// attachWS connects to the running server's WebSocket and attaches to a
// session, returning once the server has confirmed it.
func attachWS(t *testing.T, r *runner, sessionID string) *websocket.Conn {
	t.Helper()
	conn, _, err := dialWS(t, "ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if err := conn.WriteJSON(map[string]any{"type": "session.attach", "sessionId": sessionID}); err != nil {
		t.Fatal(err)
	}
	expectWS(t, conn, "session.attached")
	return conn
}

// TestFirstRunMessages: --version, a bad value and a busy port each get
// one line that says what to do, and nothing is opened first.
func TestFirstRunMessages(t *testing.T) {
	var out testutil.SyncBuffer
	if code := run(nil, []string{"--version"}, noEnv, &out, nil); code != 0 || strings.TrimSpace(out.String()) != "agentmux "+version {
		t.Errorf("--version: exit %d, %q", code, out.String())
	}
	// AGENTMUX_VERSION is the image's build argument, not --version.
	out = testutil.SyncBuffer{}
	cfg, err := parseConfig(nil, envOf(map[string]string{"AGENTMUX_VERSION": "1.2.3"}), &out)
	if err != nil || cfg.Version {
		t.Errorf("AGENTMUX_VERSION set: %+v, %v", cfg.Version, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scrollback", "-5"}, `agentmux: --scrollback "-5": size "-5": not a number of bytes (see --help)`},
		{[]string{"--nope"}, "agentmux: unknown flag --nope (see --help)"},
		{[]string{"--addr", "nonsense"}, `agentmux: --addr "nonsense": want host:port`},
		{[]string{"--max-sessions"}, "agentmux: --max-sessions needs a value"},
	} {
		var out testutil.SyncBuffer
		if code := run(nil, tc.args, noEnv, &out, nil); code != 2 {
			t.Errorf("%q: exit %d, want 2", tc.args, code)
		}
		if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], tc.want) {
			t.Errorf("%q: %q, want one line starting %q", tc.args, out.String(), tc.want)
		}
	}

	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dataDir := t.TempDir()
	out = testutil.SyncBuffer{}
	if code := run(nil, []string{"--addr", busy.Addr().String(), "--data-dir", dataDir, "--workspace", t.TempDir(), "--agent-cmd", "sh"}, noEnv, &out, nil); code != 1 {
		t.Errorf("busy port: exit %d", code)
	}
	if l := linesWith(out.String(), "level=ERROR", "address already in use", "--addr or AGENTMUX_ADDR"); len(l) != 1 || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("busy port: %q, want one line naming the flag", out.String())
	}
	if _, err := os.Stat(filepath.Join(dataDir, dbFile)); err == nil {
		t.Error("the database was opened before the port was found busy")
	}
}

// TestDataDirErrorsNamePathOnce: a data directory that cannot be made or
// holds something else where the database goes stops start-up with one
// line that names the path once, not once per layer of the error.
func TestDataDirErrorsNamePathOnce(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dbIsDir := filepath.Join(base, "db-is-dir")
	if err := os.MkdirAll(filepath.Join(dbIsDir, dbFile), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dataDir, path string }{
		{file, file}, // not a directory
		{dbIsDir, filepath.Join(dbIsDir, dbFile)}, // the database is a directory
	} {
		var out testutil.SyncBuffer
		code := run(nil, []string{"--addr", "127.0.0.1:0", "--data-dir", tc.dataDir, "--workspace", t.TempDir(), "--agent-cmd", "sh"}, noEnv, &out, nil)
		if code != 1 {
			t.Errorf("--data-dir %s: exit %d, want 1", tc.dataDir, code)
		}
		errs := linesWith(out.String(), "level=ERROR")
		if len(errs) != 1 || strings.Count(errs[0], tc.path) != 1 {
			t.Errorf("--data-dir %s: want one ERROR line naming %s once; got:\n%s", tc.dataDir, tc.path, out.String())
		}
	}
}

// TestVersionSubcommand: `agentmux version` prints what --version does,
// as `go version` and `docker version` do, and still refuses extras.
func TestVersionSubcommand(t *testing.T) {
	var flagOut, cmdOut testutil.SyncBuffer
	if code := run(nil, []string{"--version"}, noEnv, &flagOut, nil); code != 0 {
		t.Fatalf("--version: exit %d, %q", code, flagOut.String())
	}
	if code := run(nil, []string{"version"}, noEnv, &cmdOut, nil); code != 0 || cmdOut.String() != flagOut.String() {
		t.Errorf("version: exit %d, %q; want 0 and %q, as --version", code, cmdOut.String(), flagOut.String())
	}
	var out testutil.SyncBuffer
	if code := run(nil, []string{"version", "now"}, noEnv, &out, nil); code != 2 || !strings.Contains(out.String(), `unexpected arguments ["now"]`) {
		t.Errorf("version now: exit %d, %q; want 2 and the extra named", code, out.String())
	}
}

// TestHelpListsSubcommands: --help names the subcommands, and the log
// level's default as the flag takes it.
func TestHelpListsSubcommands(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, noEnv, &out); err == nil {
		t.Fatal("no ErrHelp")
	}
	for _, want := range []string{"agentmux health", "agentmux hook", "agentmux version", "--version", "(default info)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
}
