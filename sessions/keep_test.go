package sessions_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// TestKeptSessionsAreBounded: sessions that ended count against
// KeepSessions as running ones do; a create past it is refused with a
// message saying what to do, nothing is deleted to make room, and
// deleting an ended session does.
func TestKeptSessionsAreBounded(t *testing.T) {
	m, _ := newManager(t, sessions.Options{MaxSessions: 2, KeepSessions: 5})
	var made []*sessions.Session
	for i := range 5 {
		s := create(t, m, sessions.CreateOptions{Command: shell(fmt.Sprintf("echo ended %d", i))})
		testutil.Eventually(t, testTimeout, "session to end", func() bool { return !s.Info().Running })
		made = append(made, s)
	}
	_, err := m.Create(sessions.CreateOptions{Command: shell("echo one more")})
	if !errors.Is(err, sessions.ErrStoreFull) || !strings.Contains(err.Error(), "delete ended sessions") {
		t.Fatalf("sixth create: %v, want ErrStoreFull saying to delete ended sessions", err)
	}
	if n := len(m.List()); n != 5 {
		t.Fatalf("%d sessions listed after the refusal, want the 5 kept", n)
	}
	// Resuming a kept session adds none: it is allowed.
	if _, err := m.Resume(made[0].ID()); err != nil {
		t.Fatalf("resume a kept session at the bound: %v", err)
	}
	if err := m.Destroy(t.Context(), made[1].ID()); err != nil {
		t.Fatal(err)
	}
	create(t, m, sessions.CreateOptions{Command: shell("echo made room")})
	if _, err := sessions.NewManager(sessions.Options{MaxSessions: 4, KeepSessions: 3}); err == nil {
		t.Errorf("KeepSessions below MaxSessions was accepted")
	}
}

// TestConcurrentCreatesKeepTheLimits: creates racing each other (their
// processes start outside the Manager's lock) never run more sessions
// than MaxSessions, nor keep more than KeepSessions.
func TestConcurrentCreatesKeepTheLimits(t *testing.T) {
	m, _ := newManager(t, sessions.Options{MaxSessions: 4, KeepSessions: 6})
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		ok, limit, any int
	)
	for range 16 {
		wg.Go(func() {
			_, err := m.Create(sessions.CreateOptions{Command: shell("exec sleep 60")})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, sessions.ErrLimitReached):
				limit++
			default:
				any++
				t.Errorf("create: %v", err)
			}
		})
	}
	wg.Wait()
	running := 0
	for _, s := range m.List() {
		if s.Info().Running {
			running++
		}
	}
	if ok != 4 || limit != 12 || running != 4 {
		t.Fatalf("16 racing creates: %d started, %d refused at the limit, %d other; %d running; want 4, 12, 0 and 4", ok, limit, any, running)
	}
}
