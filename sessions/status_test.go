package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// fastTiming shortens every detection delay so tests run in milliseconds;
// the silence limits are far enough apart to be told apart under -race.
var fastTiming = sessions.Timing{
	QuestionQuiet: 150 * time.Millisecond,
	IdleAfter:     time.Hour,
	WarnAfter:     2 * time.Hour,
	ErrorAfter:    3 * time.Hour,
}

// waitEvent waits for the first event after the first `after` events that
// matches, and returns its index.
func waitEvent(t *testing.T, rec *recorder, after int, what string, match func(sessions.Event) bool) (int, sessions.Event) {
	t.Helper()
	var (
		idx int
		got sessions.Event
	)
	testutil.Eventually(t, testTimeout, what, func() bool {
		evs := rec.snapshot()
		for i := after; i < len(evs); i++ {
			if match(evs[i]) {
				idx, got = i, evs[i]
				return true
			}
		}
		return false
	})
	return idx, got
}

func statusIs(st sessions.Status) func(sessions.Event) bool {
	return func(ev sessions.Event) bool { return ev.Kind == sessions.EventStatus && ev.Session.Status == st }
}

func isKind(k sessions.EventKind) func(sessions.Event) bool {
	return func(ev sessions.Event) bool { return ev.Kind == k }
}

// count counts the events from index from on that match.
func count(rec *recorder, from int, match func(sessions.Event) bool) int {
	n := 0
	for _, ev := range rec.snapshot()[from:] {
		if match(ev) {
			n++
		}
	}
	return n
}

// TestWaitingFromOutput runs a fake agent that rings the bell, sends a
// desktop notification and asks a question, each time waiting for an
// answer: each signal makes the session waiting with one needsInput, and
// the user's answer makes it active again.
func TestWaitingFromOutput(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Name: "fake agent", Command: shell(`
		printf 'working\n'
		printf 'ding\a\a'; printf '\a'
		read a; printf 'got %s\n' "$a"
		printf '\033]0;a title\007\033]9;Build finished\007'
		read b; printf 'got %s\n' "$b"
		printf 'Overwrite config.yaml? '
		read c; printf 'got %s\n' "$c"
		sleep 60`)})
	o := follow(s)

	// The bell.
	i, ev := waitEvent(t, rec, 0, "waiting after the bell", statusIs(sessions.StatusWaiting))
	if !strings.Contains(ev.Session.Reason, "bell") || !ev.Session.Running {
		t.Errorf("status after the bell: reason %q running %v", ev.Session.Reason, ev.Session.Running)
	}
	_, ni := waitEvent(t, rec, i, "needsInput after the bell", isKind(sessions.EventNeedsInput))
	if !strings.Contains(ni.Message, "'fake agent'") {
		t.Errorf("needsInput message %q does not name the session", ni.Message)
	}
	if s.Info().Status != sessions.StatusWaiting {
		t.Errorf("Info().Status = %s, want waiting", s.Info().Status)
	}
	// xterm.js answering a focus change or a query is not the user.
	if err := s.Write([]byte("\x1b[I")); err != nil {
		t.Fatal(err)
	}
	o.expect(t, "ding")
	if got := s.Info().Status; got != sessions.StatusWaiting {
		t.Errorf("after a focus report, status %s, want still waiting", got)
	}
	if err := s.Write([]byte("one\r")); err != nil {
		t.Fatal(err)
	}
	i, ev = waitEvent(t, rec, i, "active after the answer", statusIs(sessions.StatusActive))
	if ev.Session.Reason != "input from the user" {
		t.Errorf("reason %q, want input from the user", ev.Session.Reason)
	}

	// The desktop notification; the title before it rings nothing.
	i, ev = waitEvent(t, rec, i, "waiting after OSC 9", statusIs(sessions.StatusWaiting))
	if !strings.Contains(ev.Session.Reason, "Build finished") {
		t.Errorf("reason %q does not carry the notification's text", ev.Session.Reason)
	}
	if err := s.Write([]byte("two\r")); err != nil {
		t.Fatal(err)
	}
	i, _ = waitEvent(t, rec, i, "active after the second answer", statusIs(sessions.StatusActive))

	// The question, found once output is quiet.
	i, ev = waitEvent(t, rec, i, "waiting after the question", statusIs(sessions.StatusWaiting))
	if !strings.Contains(ev.Session.Reason, "Overwrite config.yaml?") {
		t.Errorf("reason %q does not quote the question", ev.Session.Reason)
	}
	if err := s.Write([]byte("y\r")); err != nil {
		t.Fatal(err)
	}
	i, _ = waitEvent(t, rec, i, "active after the third answer", statusIs(sessions.StatusActive))
	o.expect(t, "got y")

	// Three waiting periods, three notifications: three bells in one
	// period made one, and the answered question does not come back. A
	// control session asking now shows when its guess, and so this one's,
	// has had its time.
	ctl := create(t, m, sessions.CreateOptions{Command: shell(`printf 'Ready? '; sleep 60`)})
	waitEvent(t, rec, i, "the control session waiting", func(ev sessions.Event) bool {
		return ev.Session.ID == ctl.ID() && ev.Kind == sessions.EventNeedsInput
	})
	if n := count(rec, 0, func(ev sessions.Event) bool { return ev.Kind == sessions.EventNeedsInput && ev.Session.ID == s.ID() }); n != 3 {
		t.Errorf("%d needsInput events, want 3: %v", n, kinds(rec.snapshot()))
	}
	if n := count(rec, 0, func(ev sessions.Event) bool { return ev.Kind == sessions.EventTurnEnded && ev.Session.ID == s.ID() }); n != 3 {
		t.Errorf("%d turnEnded events, want 3, one a waiting period: %v", n, kinds(rec.snapshot()))
	}
	if n := count(rec, i+1, func(ev sessions.Event) bool { return statusIs(sessions.StatusWaiting)(ev) && ev.Session.ID == s.ID() }); n != 0 {
		t.Errorf("waiting again after the answer: %v", kinds(rec.snapshot()[i:]))
	}
}

// TestIdleAndStuck covers a live agent that goes silent: idle, then a
// warning, then an error; output brings it back and clears them, and they
// come again after the next silence.
func TestIdleAndStuck(t *testing.T) {
	timing := sessions.Timing{QuestionQuiet: time.Hour, IdleAfter: 300 * time.Millisecond, WarnAfter: 600 * time.Millisecond, ErrorAfter: 900 * time.Millisecond}
	m, rec := newManager(t, sessions.Options{Timing: timing})
	s := create(t, m, sessions.CreateOptions{Name: "quiet", Command: shell(`echo hi; while read l; do echo "got $l"; done`)})

	for round := range 2 {
		from := len(rec.snapshot())
		i, ev := waitEvent(t, rec, from, fmt.Sprintf("round %d: idle", round), statusIs(sessions.StatusIdle))
		if !ev.Session.Running {
			t.Errorf("round %d: an idle session whose agent runs says Running false", round)
		}
		if !strings.Contains(ev.Session.Reason, "no output for 300ms") {
			t.Errorf("round %d: idle reason %q", round, ev.Session.Reason)
		}
		i, w := waitEvent(t, rec, i, fmt.Sprintf("round %d: warning", round), isKind(sessions.EventWarning))
		if w.Severity != sessions.SeverityWarning || !strings.Contains(w.Message, "No output for 600ms") || !strings.Contains(w.Message, "'quiet'") {
			t.Errorf("round %d: first warning %+v", round, w)
		}
		_, e := waitEvent(t, rec, i+1, fmt.Sprintf("round %d: error", round), isKind(sessions.EventWarning))
		if e.Severity != sessions.SeverityError {
			t.Errorf("round %d: second warning has severity %s, want error", round, e.Severity)
		}
		// Output ends the silence. Input alone is not output; its echo is.
		if err := s.Write([]byte("x\r")); err != nil {
			t.Fatal(err)
		}
		_, ev = waitEvent(t, rec, from, fmt.Sprintf("round %d: active again", round), statusIs(sessions.StatusActive))
		if ev.Session.Reason != "output resumed" {
			t.Errorf("round %d: reason %q, want output resumed", round, ev.Session.Reason)
		}
	}
	if n := count(rec, 0, isKind(sessions.EventWarning)); n != 4 {
		t.Errorf("%d warnings over two silences, want 4", n)
	}
}

// TestWaitingIsNotStuck: a session that waits for its user gets no stuck
// warning, however long the user takes.
func TestWaitingIsNotStuck(t *testing.T) {
	timing := sessions.Timing{QuestionQuiet: time.Hour, IdleAfter: 100 * time.Millisecond, WarnAfter: 200 * time.Millisecond, ErrorAfter: 300 * time.Millisecond}
	m, rec := newManager(t, sessions.Options{Timing: timing})
	s := create(t, m, sessions.CreateOptions{Command: shell(`printf '\a'; sleep 60`)})
	waitEvent(t, rec, 0, "waiting", statusIs(sessions.StatusWaiting))
	// A silent control session started after it shows when its limits,
	// and so the waiting one's, have passed.
	ctl := create(t, m, sessions.CreateOptions{Command: shell(`sleep 60`)})
	waitEvent(t, rec, 0, "the control session's error", func(ev sessions.Event) bool {
		return ev.Session.ID == ctl.ID() && ev.Kind == sessions.EventWarning && ev.Severity == sessions.SeverityError
	})
	mine := func(match func(sessions.Event) bool) func(sessions.Event) bool {
		return func(ev sessions.Event) bool { return ev.Session.ID == s.ID() && match(ev) }
	}
	if n := count(rec, 0, mine(isKind(sessions.EventWarning))); n != 0 {
		t.Errorf("a waiting session got %d stuck warnings: %v", n, kinds(rec.snapshot()))
	}
	if n := count(rec, 0, mine(statusIs(sessions.StatusIdle))); n != 0 {
		t.Errorf("a waiting session turned idle: %v", kinds(rec.snapshot()))
	}
}

// TestExitEndsWaiting: a run that ends while waiting ends as any run does.
func TestExitEndsWaiting(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Command: shell(`printf '\a'; read x; exit 3`)})
	i, _ := waitEvent(t, rec, 0, "waiting", statusIs(sessions.StatusWaiting))
	if err := s.Write([]byte("\x04")); err != nil { // EOF at the prompt: read fails, exit 3
		t.Fatal(err)
	}
	_, ev := waitEvent(t, rec, i, "error", statusIs(sessions.StatusError))
	if ev.Session.Running {
		t.Errorf("an ended run says Running true")
	}
}

// TestInputToAgentThatNeverReads: input to an agent that does not read is
// queued, never blocking the caller, up to a bound; past it, it is refused
// with ErrInputFull. Destroying the session ends the blocked delivery.
func TestInputToAgentThatNeverReads(t *testing.T) {
	m, _ := newManager(t, sessions.Options{})
	s := create(t, m, sessions.CreateOptions{Command: shell(`stty raw -echo; echo ready; exec sleep 600`)})
	follow(s).expect(t, "ready")
	chunk := []byte(strings.Repeat("p", 1024))
	var err error
	sent := 0
	// The terminal takes about 68 KiB, the queue 1 MiB: 2 MiB is past both.
	for sent < 2<<20 {
		if err = s.Write(chunk); err != nil {
			break
		}
		sent += len(chunk)
	}
	if !errors.Is(err, sessions.ErrInputFull) || !strings.Contains(err.Error(), "not reading") {
		t.Fatalf("after %d bytes: %v, want ErrInputFull", sent, err)
	}
	if sent < 1<<20 {
		t.Errorf("refused after %d bytes, want at least the 1 MiB queue", sent)
	}
	if err := s.Interrupt(); err != nil {
		t.Errorf("Interrupt with a full queue: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := m.Destroy(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if err := s.Write([]byte("x")); !errors.Is(err, sessions.ErrNotRunning) {
		t.Errorf("Write after the end: %v, want ErrNotRunning", err)
	}
}
