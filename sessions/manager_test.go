package sessions_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/output"
)

// testTimeout bounds every wait for a process or its output.
const testTimeout = 10 * time.Second

// recorder collects a manager's events.
type recorder struct {
	mu     sync.Mutex
	events []sessions.Event
}

func (r *recorder) add(ev sessions.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) snapshot() []sessions.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// waitFor waits until at least n events have been emitted and returns them.
func (r *recorder) waitFor(t *testing.T, n int) []sessions.Event {
	t.Helper()
	testutil.Eventually(t, testTimeout, fmt.Sprintf("%d events", n), func() bool { return len(r.snapshot()) >= n })
	return r.snapshot()
}

// newManager returns a manager over a fresh workspace whose events go to the
// returned recorder; it shuts the manager down when the test ends.
func newManager(t *testing.T, opts sessions.Options) (*sessions.Manager, *recorder) {
	t.Helper()
	rec := &recorder{}
	if opts.Workspace == "" {
		opts.Workspace = t.TempDir()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := sessions.NewManager(opts)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	m.Subscribe(rec.add)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := m.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return m, rec
}

func create(t *testing.T, m *sessions.Manager, opts sessions.CreateOptions) *sessions.Session {
	t.Helper()
	s, err := m.Create(opts)
	if err != nil {
		t.Fatalf("Create(%+v): %v", opts, err)
	}
	return s
}

func shell(script string) []string { return []string{"sh", "-c", script} }

// reader follows one session's stream from an offset, as a client does.
type reader struct {
	s   *sessions.Session
	off uint64
	buf bytes.Buffer
}

func follow(s *sessions.Session) *reader { return &reader{s: s} }

// read copies out everything new and waits for more until done reports
// true, failing the test at testTimeout.
func (o *reader) read(t *testing.T, what string, done func(output.State) bool) output.State {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	p := make([]byte, 4096)
	for {
		st := o.s.StreamState()
		for o.off < st.End {
			n, err := o.s.ReadOutput(p, o.off)
			if err != nil {
				t.Fatalf("ReadOutput(%d): %v", o.off, err)
			}
			o.buf.Write(p[:n])
			o.off += uint64(n)
		}
		if done(st) {
			return st
		}
		ch, cancel := o.s.WaitOutput(o.off+1, st.Epoch)
		select {
		case <-ch:
			cancel()
		case <-deadline.C:
			cancel()
			t.Fatalf("timed out after %v waiting for %s; output so far %q", testTimeout, what, o.buf.String())
		}
	}
}

// expect reads until the output so far contains want.
func (o *reader) expect(t *testing.T, want string) {
	t.Helper()
	o.read(t, fmt.Sprintf("output %q", want), func(st output.State) bool {
		if strings.Contains(o.buf.String(), want) {
			return true
		}
		if st.RunEnded && o.off >= st.End {
			t.Fatalf("run ended (%+v) before the output contained %q; output %q", st.Exit, want, o.buf.String())
		}
		return false
	})
}

// untilEnd reads until the run has ended and every byte of it is read.
func (o *reader) untilEnd(t *testing.T) output.State {
	t.Helper()
	return o.read(t, "the end of the run", func(st output.State) bool {
		return st.RunEnded && o.off >= st.End
	})
}

// waitRunEnded waits for the run to end without reading any output.
func waitRunEnded(t *testing.T, s *sessions.Session) output.State {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	for {
		st := s.StreamState()
		if st.RunEnded {
			return st
		}
		ch, cancel := s.WaitOutput(math.MaxUint64, st.Epoch)
		select {
		case <-ch:
			cancel()
		case <-deadline.C:
			cancel()
			t.Fatalf("run did not end within %v", testTimeout)
		}
	}
}

// kinds lists the kinds of events, with each one's session status.
func kinds(evs []sessions.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s:%s", ev.Kind, ev.Session.Status))
	}
	return out
}

func ids(list []*sessions.Session) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.ID())
	}
	return out
}

func exitOf(info sessions.Info) string {
	if info.Exit == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *info.Exit)
}

func TestCreateRunsCommandToExit(t *testing.T) {
	ws := t.TempDir()
	m, rec := newManager(t, sessions.Options{Workspace: ws})
	argv := shell("printf hi; exit 0")
	s := create(t, m, sessions.CreateOptions{Command: argv})

	out := follow(s)
	st := out.untilEnd(t)
	if got := out.buf.String(); got != "hi" {
		t.Errorf("output = %q, want %q", got, "hi")
	}
	if st.Start != 0 || st.End != 2 || st.Exit != (output.ExitStatus{}) || st.Closed {
		t.Errorf("stream state = %+v, want [0, 2) with exit code 0, not closed", st)
	}

	evs := rec.waitFor(t, 2)
	if got, want := kinds(evs), []string{"created:active", "status:stopped"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	created, ended := evs[0].Session, evs[1].Session
	if created.ID != s.ID() || created.Reason != "started" || created.Agent != sessions.ProfileCustom ||
		!slices.Equal(created.Command, argv) || created.Cwd != ws || created.Name != "custom 1" ||
		created.Cols != 80 || created.Rows != 24 || created.Exit != nil {
		t.Errorf("created event = %+v, want session %s, started, agent custom, command %q, cwd %s, name \"custom 1\", 80x24, no exit",
			created, s.ID(), argv, ws)
	}
	if ended.ID != s.ID() || ended.Reason != "exited with code 0" || exitOf(ended) != "{Code:0 Signal:0}" {
		t.Errorf("status event = %+v (exit %s), want reason \"exited with code 0\", exit {0 0}", ended, exitOf(ended))
	}
	if info := s.Info(); info.Status != sessions.StatusStopped || exitOf(info) != "{Code:0 Signal:0}" {
		t.Errorf("Info() = %s, exit %s; want stopped, exit {0 0}", info.Status, exitOf(info))
	}
	if len(rec.snapshot()) != 2 {
		t.Errorf("events = %v, want exactly 2", kinds(rec.snapshot()))
	}
}

func TestProcessEndings(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script string
		output string
		exit   output.ExitStatus
		status sessions.Status
		reason string
	}{
		{
			name: "exit code", script: "echo bye; exit 3", output: "bye\r\n",
			exit: output.ExitStatus{Code: 3}, status: sessions.StatusError, reason: "exited with code 3",
		},
		{
			name: "killed by signal", script: "echo bye; kill -KILL $$", output: "bye\r\n",
			exit:   output.ExitStatus{Code: 128 + 9, Signal: 9},
			status: sessions.StatusError, reason: fmt.Sprintf("killed by signal 9 (%s)", syscall.SIGKILL),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, rec := newManager(t, sessions.Options{})
			s := create(t, m, sessions.CreateOptions{Command: shell(tc.script)})
			out := follow(s)
			st := out.untilEnd(t)
			if out.buf.String() != tc.output || st.Exit != tc.exit {
				t.Errorf("output %q, exit %+v; want %q, %+v", out.buf.String(), st.Exit, tc.output, tc.exit)
			}
			evs := rec.waitFor(t, 2)
			if got, want := kinds(evs), []string{"created:active", "status:" + string(tc.status)}; !slices.Equal(got, want) {
				t.Fatalf("events = %v, want %v", got, want)
			}
			info := evs[1].Session
			if info.Reason != tc.reason || info.Exit == nil || *info.Exit != tc.exit {
				t.Errorf("status event: reason %q, exit %s; want %q, %+v", info.Reason, exitOf(info), tc.reason, tc.exit)
			}
		})
	}
}

func TestCreateAtLimit(t *testing.T) {
	m, rec := newManager(t, sessions.Options{MaxSessions: 2})
	if m.MaxSessions() != 2 {
		t.Fatalf("MaxSessions() = %d, want 2", m.MaxSessions())
	}
	a := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	b := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})

	s, err := m.Create(sessions.CreateOptions{Command: []string{"sleep", "60"}})
	if !errors.Is(err, sessions.ErrLimitReached) || s != nil {
		t.Fatalf("third Create = %v, %v; want nil, ErrLimitReached", s, err)
	}
	if got, want := ids(m.List()), []string{a.ID(), b.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
	if got, want := kinds(rec.snapshot()), []string{"created:active", "created:active"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}

	// Destroying one frees its slot.
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Destroy(ctx, a.ID()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	c := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	if got, want := ids(m.List()), []string{b.ID(), c.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
}

func TestLimitCountsOnlyRunningSessions(t *testing.T) {
	m, _ := newManager(t, sessions.Options{MaxSessions: 1})
	done := create(t, m, sessions.CreateOptions{Command: shell("exit 0")})
	waitRunEnded(t, done)

	running := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	if _, err := m.Create(sessions.CreateOptions{Command: []string{"sleep", "60"}}); !errors.Is(err, sessions.ErrLimitReached) {
		t.Errorf("Create with one running = %v, want ErrLimitReached", err)
	}
	if got, want := ids(m.List()), []string{done.ID(), running.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
}

func TestCreateSpawnFailure(t *testing.T) {
	m, rec := newManager(t, sessions.Options{
		MaxSessions: 1,
		Profiles: map[string]sessions.Profile{
			"ghost": {Name: "ghost", Start: []string{"agentmux-test-no-such-program"}},
		},
	})
	for _, opts := range []sessions.CreateOptions{
		{Command: []string{"agentmux-test-no-such-program"}},
		{Command: []string{filepath.Join(t.TempDir(), "missing")}},
		{Agent: "ghost"},
	} {
		s, err := m.Create(opts)
		if !errors.Is(err, sessions.ErrSpawn) || s != nil {
			t.Errorf("Create(%+v) = %v, %v; want nil, ErrSpawn", opts, s, err)
		}
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("List() has %d sessions after failed creates, want 0", n)
	}
	if evs := rec.snapshot(); len(evs) != 0 {
		t.Errorf("events after failed creates = %v, want none", kinds(evs))
	}

	// The failures consumed neither the one slot nor a name number.
	s := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	if name := s.Info().Name; name != "custom 1" {
		t.Errorf("name of the first session created = %q, want %q", name, "custom 1")
	}
}

func TestCreateInvalidOptions(t *testing.T) {
	ws := t.TempDir()
	file := filepath.Join(ws, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, rec := newManager(t, sessions.Options{Workspace: ws})
	cmd := []string{"sleep", "60"}
	for _, tc := range []struct {
		name string
		opts sessions.CreateOptions
	}{
		{"missing cwd", sessions.CreateOptions{Command: cmd, Cwd: filepath.Join(ws, "nope")}},
		{"missing relative cwd", sessions.CreateOptions{Command: cmd, Cwd: "nope"}},
		{"cwd is a file", sessions.CreateOptions{Command: cmd, Cwd: file}},
		{"negative cols", sessions.CreateOptions{Command: cmd, Cols: -1}},
		{"negative rows", sessions.CreateOptions{Command: cmd, Rows: -1}},
		{"too many cols", sessions.CreateOptions{Command: cmd, Cols: 1001}},
		{"too many rows", sessions.CreateOptions{Command: cmd, Rows: 1001}},
		{"unknown agent", sessions.CreateOptions{Agent: "no-such-agent"}},
		{"empty program", sessions.CreateOptions{Command: []string{"", "x"}}},
		{"long name", sessions.CreateOptions{Command: cmd, Name: strings.Repeat("n", 129)}},
		{"control character in name", sessions.CreateOptions{Command: cmd, Name: "a\x1b[2Jb"}},
	} {
		s, err := m.Create(tc.opts)
		if !errors.Is(err, sessions.ErrInvalid) || s != nil {
			t.Errorf("%s: Create = %v, %v; want nil, ErrInvalid", tc.name, s, err)
		}
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("List() has %d sessions after invalid creates, want 0", n)
	}
	if evs := rec.snapshot(); len(evs) != 0 {
		t.Errorf("events after invalid creates = %v, want none", kinds(evs))
	}

	// The bounds themselves are valid.
	s := create(t, m, sessions.CreateOptions{Command: shell("stty size"), Cols: 1000, Rows: 1, Name: strings.Repeat("n", 128)})
	out := follow(s)
	out.untilEnd(t)
	if got := out.buf.String(); got != "1 1000\r\n" {
		t.Errorf("stty size at 1000x1 = %q, want %q", got, "1 1000\r\n")
	}
}

func TestCreateRelativeCwd(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "sub", "dir")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newManager(t, sessions.Options{Workspace: ws})
	s := create(t, m, sessions.CreateOptions{Command: shell("pwd -P"), Cwd: "sub/dir"})
	out := follow(s)
	out.untilEnd(t)
	if got, want := out.buf.String(), real+"\r\n"; got != want {
		t.Errorf("pwd printed %q, want %q", got, want)
	}
	if got := s.Info().Cwd; got != dir {
		t.Errorf("Info().Cwd = %q, want %q", got, dir)
	}
}

func TestWriteDeliversInput(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: []string{"cat"}})
	out := follow(s)
	if err := s.Write([]byte("hello\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	// The terminal echoes the line, then cat writes it back.
	out.expect(t, "hello\r\nhello\r\n")
	if err := s.Write([]byte{0x04}); err != nil { // Ctrl+D: end of input
		t.Fatalf("Write: %v", err)
	}
	st := out.untilEnd(t)
	if got, want := out.buf.String(), "hello\r\nhello\r\n"; got != want || st.Exit != (output.ExitStatus{}) {
		t.Errorf("output %q, exit %+v; want %q, exit 0", got, st.Exit, want)
	}
	if err := s.Write([]byte("late\n")); !errors.Is(err, sessions.ErrNotRunning) {
		t.Errorf("Write after the run ended = %v, want ErrNotRunning", err)
	}
	if err := s.Interrupt(); !errors.Is(err, sessions.ErrNotRunning) {
		t.Errorf("Interrupt after the run ended = %v, want ErrNotRunning", err)
	}
}

func TestInterrupt(t *testing.T) {
	m, rec := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{
		Command: shell(`trap "echo INT; exit 7" INT; echo ready; while :; do sleep 0.1; done`),
	})
	out := follow(s)
	out.expect(t, "ready\r\n")
	if err := s.Interrupt(); err != nil {
		t.Fatalf("Interrupt: %v", err)
	}
	st := out.untilEnd(t)
	if got, want := out.buf.String(), "ready\r\n^CINT\r\n"; got != want || st.Exit != (output.ExitStatus{Code: 7}) {
		t.Errorf("output %q, exit %+v; want %q, exit 7", got, st.Exit, want)
	}
	evs := rec.waitFor(t, 2)
	if got, want := kinds(evs), []string{"created:active", "status:error"}; !slices.Equal(got, want) || evs[1].Session.Reason != "exited with code 7" {
		t.Errorf("events = %v, reason %q; want %v, \"exited with code 7\"", got, evs[1].Session.Reason, want)
	}
}

func TestResize(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: shell("stty size; read x; stty size"), Cols: 90, Rows: 20})
	out := follow(s)
	out.expect(t, "20 90\r\n")

	for _, size := range [][2]int{{0, 30}, {100, 0}, {1001, 30}, {100, 1001}, {-1, -1}} {
		if err := s.Resize(size[0], size[1]); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("Resize(%d, %d) = %v, want ErrInvalid", size[0], size[1], err)
		}
	}
	if info := s.Info(); info.Cols != 90 || info.Rows != 20 {
		t.Errorf("after invalid resizes the size is %dx%d, want 90x20", info.Cols, info.Rows)
	}

	if err := s.Resize(100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if err := s.Write([]byte("\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	out.untilEnd(t)
	if got, want := out.buf.String(), "20 90\r\n\r\n30 100\r\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if info := s.Info(); info.Cols != 100 || info.Rows != 30 {
		t.Errorf("Info() size = %dx%d, want 100x30", info.Cols, info.Rows)
	}
}

func TestDestroyStopsRunningSession(t *testing.T) {
	m, rec := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Destroy(ctx, s.ID()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}

	if got, err := m.Get(s.ID()); !errors.Is(err, sessions.ErrNotFound) || got != nil {
		t.Errorf("Get after Destroy = %v, %v; want nil, ErrNotFound", got, err)
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("List() has %d sessions after Destroy, want 0", n)
	}
	hup := output.ExitStatus{Code: 128 + 1, Signal: 1}
	if st := s.StreamState(); !st.Closed || !st.RunEnded || st.Exit != hup {
		t.Errorf("stream state after Destroy = %+v, want closed, run ended by SIGHUP", st)
	}
	evs := rec.snapshot()
	if got, want := kinds(evs), []string{"created:active", "status:stopped", "destroyed:stopped"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if r := evs[1].Session.Reason; r != "stopped" || exitOf(evs[1].Session) != fmt.Sprintf("%+v", hup) {
		t.Errorf("status event: reason %q, exit %s; want \"stopped\", %+v", r, exitOf(evs[1].Session), hup)
	}
	if d := evs[2].Session; d.ID != s.ID() || d.Reason != "destroyed" {
		t.Errorf("destroyed event = %+v, want session %s, reason \"destroyed\"", d, s.ID())
	}

	if err := m.Destroy(ctx, s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("second Destroy = %v, want ErrNotFound", err)
	}
	if _, err := m.Resume(s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Resume after Destroy = %v, want ErrNotFound", err)
	}
	if err := s.Write([]byte("x")); !errors.Is(err, sessions.ErrNotRunning) {
		t.Errorf("Write after Destroy = %v, want ErrNotRunning", err)
	}
}

// TestDestroyRightAfterExitOrdersEvents destroys sessions the moment their
// process is seen to have exited. The run's status event must still come
// before the destroyed event: an observer that saves sessions on every event
// would otherwise bring a destroyed session back.
func TestDestroyRightAfterExitOrdersEvents(t *testing.T) {
	// A real log handler, as in production: it widens the gap between the
	// run's end and its status event.
	m, rec := newManager(t, sessions.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	// Each iteration has its own deadline: 200 of them under the race
	// detector on a loaded machine can take longer than one.
	iteration := func(i int) {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		s := create(t, m, sessions.CreateOptions{Command: shell("exit 0")})
		// Spin rather than poll on a ticker, to act the moment the run is
		// recorded as ended.
		for s.Info().Exit == nil {
			if ctx.Err() != nil {
				t.Fatalf("iteration %d: run did not end within %v", i, testTimeout)
			}
			runtime.Gosched()
		}
		if err := m.Destroy(ctx, s.ID()); err != nil {
			t.Fatalf("iteration %d: Destroy: %v", i, err)
		}
		evs := rec.waitFor(t, 3*(i+1))[3*i:]
		if got, want := kinds(evs), []string{"created:active", "status:stopped", "destroyed:stopped"}; !slices.Equal(got, want) {
			t.Fatalf("iteration %d: events = %v, want %v", i, got, want)
		}
	}
	for i := range 200 {
		iteration(i)
	}
}

func TestDestroyKillsProgramIgnoringHangup(t *testing.T) {
	const grace = 200 * time.Millisecond
	m, rec := newManager(t, sessions.Options{StopGrace: grace})
	s := create(t, m, sessions.CreateOptions{
		Command: shell(`trap "" HUP; echo ready; while :; do sleep 0.1; done`),
	})
	follow(s).expect(t, "ready\r\n")

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	began := time.Now()
	if err := m.Destroy(ctx, s.ID()); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if took := time.Since(began); took < grace {
		t.Errorf("Destroy returned after %v, before the %v grace", took, grace)
	}
	kill := output.ExitStatus{Code: 128 + 9, Signal: 9}
	if st := s.StreamState(); !st.Closed || st.Exit != kill {
		t.Errorf("stream state after Destroy = %+v, want closed, killed by SIGKILL", st)
	}
	if _, err := m.Get(s.ID()); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Get after Destroy = %v, want ErrNotFound", err)
	}
	evs := rec.snapshot()
	if got, want := kinds(evs), []string{"created:active", "status:stopped", "destroyed:stopped"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
}

func TestDestroyWithEndedContextKillsAtOnce(t *testing.T) {
	// A grace far longer than the test's deadline: only the context can
	// cut it short.
	m, _ := newManager(t, sessions.Options{StopGrace: time.Hour})
	s := create(t, m, sessions.CreateOptions{
		Command: shell(`trap "" HUP; echo ready; while :; do sleep 0.1; done`),
	})
	follow(s).expect(t, "ready\r\n")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errc := make(chan error, 1)
	go func() { errc <- m.Destroy(ctx, s.ID()) }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("Destroy: %v", err)
		}
	case <-time.After(testTimeout):
		t.Fatalf("Destroy with an ended context did not return within %v", testTimeout)
	}
	if st := s.StreamState(); !st.Closed || st.Exit.Signal != 9 {
		t.Errorf("stream state = %+v, want closed, killed by SIGKILL", st)
	}
}

func TestResume(t *testing.T) {
	ws := t.TempDir()
	m, rec := newManager(t, sessions.Options{Workspace: ws})
	s := create(t, m, sessions.CreateOptions{
		Command: shell("if [ -e marker ]; then echo second; else : > marker; echo first; fi"),
	})
	out := follow(s)
	first := out.untilEnd(t)
	if got := out.buf.String(); got != "first\r\n" || first.End != 7 {
		t.Fatalf("first run: output %q ending at %d, want %q ending at 7", got, first.End, "first\r\n")
	}
	// Wait for the run's status event too, so the events' order is fixed.
	rec.waitFor(t, 2)

	if err := s.Resize(100, 30); err != nil { // kept for the next run
		t.Fatalf("Resize between runs: %v", err)
	}
	got, err := m.Resume(s.ID())
	if err != nil || got != s {
		t.Fatalf("Resume = %p, %v; want %p, nil", got, err, s)
	}
	second := out.untilEnd(t)
	// The second run begins with the reset that leaves whatever the first
	// left on; the first left nothing on, so only the base is needed.
	both := "first\r\n" + output.RunResetBase + "second\r\n"
	if got := out.buf.String(); got != both {
		t.Errorf("output of both runs = %q, want %q", got, both)
	}
	runStart := uint64(len("first\r\n" + output.RunResetBase))
	if second.Start != 0 || second.End != uint64(len(both)) || second.RunStart != runStart || second.Epoch <= first.Epoch || second.Exit != (output.ExitStatus{}) {
		t.Errorf("after the second run: %+v; want [0, %d), run start %d, epoch past %d, exit 0", second, len(both), runStart, first.Epoch)
	}
	// A new reader from 0 sees both runs as one stream.
	fresh := follow(s)
	fresh.untilEnd(t)
	if got, want := fresh.buf.String(), both; got != want {
		t.Errorf("a new reader from 0 got %q, want %q", got, want)
	}

	evs := rec.waitFor(t, 4)
	if got, want := kinds(evs), []string{"created:active", "status:stopped", "status:active", "status:stopped"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	// The resumed run may already have ended by now, so its start is
	// checked as the event saw it, not through Info.
	if info := evs[2].Session; info.Status != sessions.StatusActive || info.Reason != "resumed" || info.Exit != nil {
		t.Errorf("resume event: %s, %q, exit %s; want active, \"resumed\", no exit", info.Status, info.Reason, exitOf(info))
	}
	if r := evs[2].Session.Reason; r != "resumed" {
		t.Errorf("resume event reason = %q, want \"resumed\"", r)
	}
	if ev := evs[2].Session; ev.Cols != 100 || ev.Rows != 30 {
		t.Errorf("resume event size = %dx%d, want 100x30", ev.Cols, ev.Rows)
	}

	if _, err := m.Resume("no-such-id"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Resume of an unknown id = %v, want ErrNotFound", err)
	}
}

func TestResumeKeepsSize(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: shell("stty size"), Cols: 90, Rows: 20})
	out := follow(s)
	out.untilEnd(t)
	if err := s.Resize(100, 30); err != nil {
		t.Fatalf("Resize: %v", err)
	}
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	out.untilEnd(t)
	if got, want := out.buf.String(), "20 90\r\n"+output.RunResetBase+"30 100\r\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestResumeRunningSession(t *testing.T) {
	m, rec := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	if got, err := m.Resume(s.ID()); !errors.Is(err, sessions.ErrRunning) || got != nil {
		t.Errorf("Resume of a running session = %v, %v; want nil, ErrRunning", got, err)
	}
	if got, want := kinds(rec.snapshot()), []string{"created:active"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestResumeAtLimit(t *testing.T) {
	m, rec := newManager(t, sessions.Options{MaxSessions: 1})
	ended := create(t, m, sessions.CreateOptions{Command: shell("exit 0")})
	waitRunEnded(t, ended)
	rec.waitFor(t, 2)
	create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})

	if _, err := m.Resume(ended.ID()); !errors.Is(err, sessions.ErrLimitReached) {
		t.Errorf("Resume at the limit = %v, want ErrLimitReached", err)
	}
	if info := ended.Info(); info.Status != sessions.StatusStopped || info.Reason != "exited with code 0" {
		t.Errorf("after a refused Resume: %s, %q; want stopped, \"exited with code 0\"", info.Status, info.Reason)
	}
	if got, want := kinds(rec.snapshot()), []string{"created:active", "status:stopped", "created:active"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

func TestResumeSpawnFailure(t *testing.T) {
	ws := t.TempDir()
	script := filepath.Join(ws, "agent.sh")
	writeScript := func() {
		if err := os.WriteFile(script, []byte("#!/bin/sh\necho run\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeScript()
	m, rec := newManager(t, sessions.Options{Workspace: ws})
	s := create(t, m, sessions.CreateOptions{Command: []string{script}})
	out := follow(s)
	first := out.untilEnd(t)
	rec.waitFor(t, 2)

	if err := os.Remove(script); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Resume(s.ID()); !errors.Is(err, sessions.ErrSpawn) {
		t.Fatalf("Resume of a removed program = %v, want ErrSpawn", err)
	}
	evs := rec.snapshot()
	if got, want := kinds(evs), []string{"created:active", "status:stopped", "status:error"}; !slices.Equal(got, want) {
		t.Fatalf("events = %v, want %v", got, want)
	}
	if st := s.StreamState(); st != first {
		t.Errorf("stream state after a failed Resume = %+v, want unchanged %+v", st, first)
	}

	// The session can be resumed once the program is back.
	writeScript()
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	out.untilEnd(t)
	if got, want := out.buf.String(), "run\r\n"+output.RunResetBase+"run\r\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
}

func TestShutdown(t *testing.T) {
	m, rec := newManager(t, sessions.Options{})
	ended := create(t, m, sessions.CreateOptions{Command: shell("exit 0")})
	waitRunEnded(t, ended)
	a := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
	b := create(t, m, sessions.CreateOptions{Command: shell("sleep 60")})

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Shutdown(ctx, time.Second); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	for _, s := range []*sessions.Session{a, b} {
		info := s.Info()
		if info.Status != sessions.StatusStopped || info.Reason != "stopped" || info.Exit == nil || info.Exit.Signal != 1 {
			t.Errorf("session %s after Shutdown: %s, %q, exit %s; want stopped by SIGHUP", s.ID(), info.Status, info.Reason, exitOf(info))
		}
		if st := s.StreamState(); !st.RunEnded || st.Closed {
			t.Errorf("stream state after Shutdown = %+v, want run ended, not closed", st)
		}
	}
	if got, want := ids(m.List()), []string{ended.ID(), a.ID(), b.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() after Shutdown = %v, want %v", got, want)
	}
	n := len(rec.waitFor(t, 6)) // 3 created, 3 status

	if s, err := m.Create(sessions.CreateOptions{Command: []string{"sleep", "60"}}); !errors.Is(err, sessions.ErrShuttingDown) || s != nil {
		t.Errorf("Create after Shutdown = %v, %v; want nil, ErrShuttingDown", s, err)
	}
	if _, err := m.Resume(ended.ID()); !errors.Is(err, sessions.ErrShuttingDown) {
		t.Errorf("Resume after Shutdown = %v, want ErrShuttingDown", err)
	}
	if got := len(rec.snapshot()); got != n {
		t.Errorf("%d events after the refused Create and Resume, want %d", got, n)
	}
}

func TestListOldestFirst(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	var want []string
	for i := range 4 {
		s := create(t, m, sessions.CreateOptions{Command: shell("exit 0"), Name: fmt.Sprintf("s%d", i)})
		want = append(want, s.ID())
	}
	if got := ids(m.List()); !slices.Equal(got, want) {
		t.Errorf("List() = %v, want %v", got, want)
	}
	for _, id := range want {
		if s, err := m.Get(id); err != nil || s.ID() != id {
			t.Errorf("Get(%s) = %v, %v", id, s, err)
		}
	}
}

func TestSessionEnvironment(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Env: []string{
		"PATH=" + os.Getenv("PATH"),
		"KEEP=kept",
		"AGENTMUX_TOKEN=secret",
		"AGENTMUX_SESSION_ID=spoofed",
		"TERM=dumb",
		"COLORTERM=no",
	}})
	s := create(t, m, sessions.CreateOptions{Command: shell(
		`printf '%s|%s|%s|%s|%s\n' "$TERM" "$COLORTERM" "$AGENTMUX_SESSION_ID" "${AGENTMUX_TOKEN-unset}" "$KEEP"; env | grep -c '^AGENTMUX_'`,
	)})
	out := follow(s)
	out.untilEnd(t)
	// AGENTMUX_SESSION_ID, and ROOT_PATH, WORKSPACE_PATH, BRANCH and PORT
	// (see TestSessionPlaceEnvironment).
	want := "xterm-256color|truecolor|" + s.ID() + "|unset|kept\r\n5\r\n"
	if got := out.buf.String(); got != want {
		t.Errorf("environment printed %q, want %q", got, want)
	}
}

// lines returns what a shell loop printing "line 0" to "line n-1" looks
// like through a terminal.
func lines(n int) (script, want string) {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d\r\n", i)
	}
	return fmt.Sprintf(`i=0; while [ $i -lt %d ]; do echo "line $i"; i=$((i+1)); done`, n), b.String()
}

// drain reads s from off until the run ends, without the testing.T, so it
// can run in its own goroutine; started, when not nil, is closed once the
// first bytes are in.
func drain(s *sessions.Session, off uint64, started chan<- struct{}) (string, error) {
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	var b bytes.Buffer
	p := make([]byte, 1000)
	for {
		st := s.StreamState()
		for off < st.End {
			n, err := s.ReadOutput(p, off)
			if err != nil {
				return b.String(), fmt.Errorf("ReadOutput(%d): %w", off, err)
			}
			b.Write(p[:n])
			off += uint64(n)
		}
		if started != nil && b.Len() > 0 {
			close(started)
			started = nil
		}
		if st.RunEnded && off >= st.End {
			return b.String(), nil
		}
		ch, cancel := s.WaitOutput(off+1, st.Epoch)
		select {
		case <-ch:
			cancel()
		case <-deadline.C:
			cancel()
			return b.String(), fmt.Errorf("run did not end within %v", testTimeout)
		}
	}
}

func TestReadersAtDifferentOffsets(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	script, want := lines(5000)
	s := create(t, m, sessions.CreateOptions{Command: shell(script)})

	type result struct {
		name string
		off  uint64
		out  string
		err  error
	}
	results := make(chan result, 3)
	started := make(chan struct{})
	go func() {
		out, err := drain(s, 0, started)
		results <- result{"first", 0, out, err}
	}()
	select {
	case <-started:
	case <-time.After(testTimeout):
		t.Fatalf("no output within %v", testTimeout)
	}
	// Two more readers join while the first is reading: one from the
	// start, one from the middle of the stream.
	go func() {
		out, err := drain(s, 0, nil)
		results <- result{"second", 0, out, err}
	}()
	go func() {
		out, err := drain(s, 1000, nil)
		results <- result{"third", 1000, out, err}
	}()
	for range 3 {
		select {
		case r := <-results:
			if r.err != nil {
				t.Errorf("%s reader: %v", r.name, r.err)
			}
			if r.out != want[r.off:] {
				t.Errorf("%s reader from %d got %d bytes, want %d: mismatch", r.name, r.off, len(r.out), len(want)-int(r.off))
			}
		case <-time.After(testTimeout):
			t.Fatalf("readers did not finish within %v", testTimeout)
		}
	}
}

func TestStuckReaderDoesNotStallOthers(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	script, want := lines(5000)
	s := create(t, m, sessions.CreateOptions{Command: shell(script)})

	// A reader that asks to be woken and then never looks again.
	st := s.StreamState()
	stuck, cancel := s.WaitOutput(1, st.Epoch)
	defer cancel()

	out := follow(s)
	end := out.untilEnd(t)
	if out.buf.String() != want || end.Exit != (output.ExitStatus{}) {
		t.Errorf("active reader got %d bytes (exit %+v), want the %d bytes of the stream and exit 0", out.buf.Len(), end.Exit, len(want))
	}
	select {
	case <-stuck:
	default:
		t.Error("the stuck reader's wait is still open after output arrived")
	}
}

func TestFullRingNeverBlocksTheProgram(t *testing.T) {
	const scrollback = 1024
	m, _ := newManager(t, sessions.Options{Scrollback: scrollback})
	script, want := lines(10000)
	s := create(t, m, sessions.CreateOptions{Command: shell(script)})

	// Nobody reads: the run must still end, with the ring holding the tail.
	st := waitRunEnded(t, s)
	if st.End != uint64(len(want)) || st.Start != st.End-scrollback || st.Exit != (output.ExitStatus{}) {
		t.Fatalf("stream state = %+v, want [%d, %d), exit 0", st, len(want)-scrollback, len(want))
	}
	p := make([]byte, 2*scrollback)
	if n, err := s.ReadOutput(p, 0); n != 0 || !errors.Is(err, output.ErrOverrun) {
		t.Errorf("ReadOutput(0) = %d, %v; want 0, output.ErrOverrun", n, err)
	}
	n, err := s.ReadOutput(p, st.Start)
	if err != nil || string(p[:n]) != want[st.Start:] {
		t.Errorf("ReadOutput(start) = %q, %v; want %q", p[:n], err, want[st.Start:])
	}
	// The replay starts after the first whole line in the ring.
	start, prefix, _ := s.ReplayStart(0)
	wantStart := st.Start + uint64(strings.IndexByte(want[st.Start:], '\n')) + 1
	if start != wantStart || len(prefix) != 0 {
		t.Errorf("ReplayStart() = %d, %q; want %d, no prefix", start, prefix, wantStart)
	}
}

// TestAdmit: an Admit hook that refuses stops Create and Resume with its
// own error, before anything starts or changes; once it admits again they
// work. It is not asked about a running session's Resume, which is
// refused as running, nor about an unknown one.
func TestAdmit(t *testing.T) {
	errFull := errors.New("no room for another agent")
	var refuse atomic.Bool
	var asked atomic.Int32
	m, rec := newManager(t, sessions.Options{Admit: func() error {
		asked.Add(1)
		if refuse.Load() {
			return errFull
		}
		return nil
	}})
	ended := create(t, m, sessions.CreateOptions{Command: shell("exit 0")})
	waitRunEnded(t, ended)
	rec.waitFor(t, 2)
	running := create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})

	refuse.Store(true)
	asked.Store(0)
	if s, err := m.Create(sessions.CreateOptions{Command: []string{"sleep", "60"}}); !errors.Is(err, errFull) || s != nil {
		t.Errorf("Create while refused = %v, %v; want nil and the hook's error", s, err)
	}
	if s, err := m.Resume(ended.ID()); !errors.Is(err, errFull) || s != nil {
		t.Errorf("Resume while refused = %v, %v; want nil and the hook's error", s, err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("hook asked %d times for one Create and one Resume, want 2", n)
	}
	if _, err := m.Resume(running.ID()); !errors.Is(err, sessions.ErrRunning) {
		t.Errorf("Resume of a running session while refused = %v, want ErrRunning", err)
	}
	if _, err := m.Resume("00000000-0000-4000-8000-000000000000"); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("Resume of an unknown id while refused = %v, want ErrNotFound", err)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("hook asked %d times, want no more for a running or unknown session", n)
	}
	if got, want := ids(m.List()), []string{ended.ID(), running.ID()}; !slices.Equal(got, want) {
		t.Errorf("List() after refusals = %v, want %v", got, want)
	}
	if info := ended.Info(); info.Status != sessions.StatusStopped {
		t.Errorf("refused Resume changed the session: status %s, want stopped", info.Status)
	}
	if got, want := kinds(rec.snapshot()), []string{"created:active", "status:stopped", "created:active"}; !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}

	refuse.Store(false)
	if _, err := m.Resume(ended.ID()); err != nil {
		t.Errorf("Resume once admitted: %v", err)
	}
	create(t, m, sessions.CreateOptions{Command: []string{"sleep", "60"}})
}
