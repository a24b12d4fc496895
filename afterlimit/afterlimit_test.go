package afterlimit_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/afterlimit"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor = 20 * time.Second

// agent stands in for Claude Code at its prompt: it prints each line it
// is given. Its hooks are called as Claude Code's would be.
var agent = sessions.Profile{
	Name:   "claude-like",
	Start:  []string{"sh", "-c", `while IFS= read -r l; do printf 'got:%s\n' "$l"; done`},
	Resume: []string{"sh", "-c", `while IFS= read -r l; do printf 'got:%s\n' "$l"; done`},
	Hooks:  true,
}

// server is a manager on a real bbolt file and its planner on a fake
// clock, which a test stops and starts again as agentmux restarts.
type server struct {
	mgr    *sessions.Manager
	st     *store.Store
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, dir string, clock *clockwork.FakeClock) *server {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "agentmux.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mgr, err := sessions.NewManager(sessions.Options{
		Workspace:          dir,
		Store:              st,
		Profiles:           map[string]sessions.Profile{agent.Name: agent},
		Hooks:              &sessions.HookConfig{URL: "http://127.0.0.1:1/hooks", SettingsFile: filepath.Join(dir, "hooks.json")},
		ContinueAfterLimit: true,
		Logger:             slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{mgr: mgr, st: st, cancel: cancel, done: make(chan struct{})}
	p := afterlimit.New(mgr, afterlimit.Options{Clock: clock, Text: "continue", Margin: time.Minute, Log: slog.New(slog.DiscardHandler)})
	go func() {
		defer close(s.done)
		p.Run(ctx)
	}()
	return s
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	<-s.done
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := s.mgr.Shutdown(ctx, time.Second); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	s.mgr.Close()
	if err := s.st.Close(); err != nil {
		t.Errorf("close store: %v", err)
	}
}

// secret is the hook secret of s's current run.
func secret(t *testing.T, s *sessions.Session) string {
	t.Helper()
	var v string
	testutil.Eventually(t, waitFor, "the agent's hook secret", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, val, ok := strings.Cut(kv, "="); ok && k == sessions.EnvHookSecret {
				v = val
			}
		}
		return v != ""
	})
	return v
}

// limit has s's agent report, as Claude Code does, its 5-hour window
// full until resets and the turn ended by the limit.
func limit(t *testing.T, s *sessions.Session, resets time.Time) {
	t.Helper()
	sec := secret(t, s)
	status := fmt.Sprintf(`{"model":{"display_name":"Opus"},"cost":{"total_cost_usd":1.5},"rate_limits":{"five_hour":{"used_percentage":100,"resets_at":%d}}}`, resets.Unix())
	if err := s.StatusLine(sec, []byte(status)); err != nil {
		t.Fatal(err)
	}
	if err := s.Hook(sec, []byte(`{"hook_event_name":"StopFailure","error":"rate_limit","last_assistant_message":"You've hit your session limit · resets 1am (UTC)"}`)); err != nil {
		t.Fatal(err)
	}
	info := s.Info()
	if info.Status != sessions.StatusLimited || info.Limit == nil || info.Limit.ResetsAt == nil || !info.Limit.ResetsAt.Equal(resets.Truncate(time.Second)) || !info.Limit.Continue {
		t.Fatalf("after the limit: status %s, limit %+v", info.Status, info.Limit)
	}
}

// continues counts the continue prompts the agent got.
func continues(s *sessions.Session) int {
	st := s.StreamState()
	buf := make([]byte, st.End-st.Start)
	n, _ := s.ReadOutput(buf, st.Start)
	return len(gotContinue.FindAllIndex(buf[:n], -1))
}

// gotContinue is the agent's line for a continue prompt (the terminal's
// echo of it is not).
var gotContinue = regexp.MustCompile(`got:[^\n]*continue`)

func waitContinued(t *testing.T, s *sessions.Session, want int) {
	t.Helper()
	testutil.Eventually(t, waitFor, fmt.Sprintf("%d continue prompts in %s", want, s.Info().Name), func() bool { return continues(s) == want })
}

// advance moves the clock on once the planner sleeps on it.
func advance(t *testing.T, clock *clockwork.FakeClock, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("the planner never waited for the clock: %v", err)
	}
	clock.Advance(d)
}

// TestContinueInOrderOnce: at the reset (and its margin) the sessions a
// limit stopped get the continue prompt one at a time, in the order they
// stopped, each once; one the user typed into first gets none.
func TestContinueInOrderOnce(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Now())
	srv := start(t, dir, clock)
	defer srv.stop(t)
	var ss []*sessions.Session
	for _, name := range []string{"first", "second", "typed"} {
		s, err := srv.mgr.Create(sessions.CreateOptions{Agent: agent.Name, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	resets := clock.Now().Add(time.Hour)
	for _, s := range ss {
		limit(t, s, resets)
	}
	// The user answers the third themselves.
	if err := ss[2].Write([]byte("go on\r")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitFor, "typing lifts the limit", func() bool { return ss[2].Info().Limit == nil })

	advance(t, clock, time.Hour) // the reset, but not its margin
	if n := continues(ss[0]); n != 0 {
		t.Fatalf("continued %d times before the margin passed", n)
	}
	advance(t, clock, time.Minute)
	waitContinued(t, ss[0], 1)
	if l := ss[1].Info().Limit; l == nil || l.ContinuedAt != nil {
		t.Fatalf("the second went with the first: %+v", l)
	}
	// The first works again; after it has for a while, the second goes.
	advance(t, clock, 10*time.Second)
	waitContinued(t, ss[1], 1)
	if l := ss[1].Info().Limit; l != nil {
		t.Errorf("the second is still limited: %+v", l)
	}
	advance(t, clock, 3*time.Hour)
	for _, s := range ss[:2] {
		if n := continues(s); n != 1 {
			t.Errorf("%s: continued %d times", s.Info().Name, n)
		}
	}
	if n := continues(ss[2]); n != 0 {
		t.Errorf("the session the user typed into was continued %d times", n)
	}
}

// TestContinueAcrossRestart: the plan is stored: after a restart the
// limited session is resumed at the reset and continued, and after
// another restart it is not continued again.
func TestContinueAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Now())
	srv := start(t, dir, clock)
	s, err := srv.mgr.Create(sessions.CreateOptions{Agent: agent.Name, Name: "night"})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	limit(t, s, clock.Now().Add(2*time.Hour))
	srv.stop(t)

	srv = start(t, dir, clock)
	s, err = srv.mgr.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if info := s.Info(); info.Status != sessions.StatusLimited || info.Running || info.Limit == nil || !info.Limit.Continue {
		t.Fatalf("after the restart: %s, running %v, limit %+v", info.Status, info.Running, info.Limit)
	}
	advance(t, clock, 2*time.Hour+time.Minute)
	testutil.Eventually(t, waitFor, "the resume at the reset", func() bool { return s.Info().Running })
	// Claude Code at its prompt after the resume.
	if err := s.Hook(secret(t, s), []byte(`{"hook_event_name":"SessionStart","source":"resume"}`)); err != nil {
		t.Fatal(err)
	}
	waitContinued(t, s, 1)
	srv.stop(t)

	srv = start(t, dir, clock)
	defer srv.stop(t)
	s, err = srv.mgr.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	// The prompt went, and the stored limit says so: nothing is planned.
	if l := s.Info().Limit; l != nil && l.ContinuedAt == nil {
		t.Fatalf("after the second restart the limit is planned again: %+v", l)
	}
	if q := s.Queue(); len(q.Prompts) != 0 {
		t.Errorf("queued after the second restart: %+v", q)
	}
}
