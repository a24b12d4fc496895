package sessions_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
)

// BenchmarkWorktreeStart times a new worktree session from Create until
// its agent's first output, with a setup script that does nothing and
// without one: the difference is what the setup adds to a session's start
// beyond the script's own run (a second program in the terminal, and the
// agent started once it ended). Each session is destroyed with its
// worktree after.
func BenchmarkWorktreeStart(b *testing.B) {
	for _, withSetup := range []bool{false, true} {
		b.Run(fmt.Sprintf("setup=%v", withSetup), func(b *testing.B) {
			dir := testutil.NewRepo(b, "Bench", map[string]string{"a.txt": "a\n"})
			opts := sessions.Options{Workspace: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), StopGrace: time.Second}
			if withSetup {
				opts.SetupScript = func() (scripts.Script, bool) { return scripts.Script{Name: scripts.Setup, Text: "true"}, true }
			}
			m, err := sessions.NewManager(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				_ = m.Shutdown(ctx, time.Second)
				m.Close()
			}()
			b.ResetTimer()
			for i := range b.N {
				s, err := m.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "echo agent-up; exec sleep 60"}, WorktreeBranch: fmt.Sprintf("b%d", i)})
				if err != nil {
					b.Fatal(err)
				}
				waitOutput(b, s, "agent-up")
				b.StopTimer()
				if err := m.DestroyWithWorktree(context.Background(), s.ID(), true); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// waitOutput waits until s's output holds want.
func waitOutput(tb testing.TB, s *sessions.Session, want string) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	wake := make(chan struct{}, 1)
	w := s.WatchOutput(wake)
	defer w.Close()
	for {
		st := s.StreamState()
		buf := make([]byte, st.End-st.Start)
		n, _ := s.ReadOutput(buf, st.Start)
		if strings.Contains(string(buf[:n]), want) {
			return
		}
		w.Arm(st.End+1, st.Epoch)
		select {
		case <-wake:
		case <-time.After(time.Until(deadline)):
			tb.Fatalf("no %q in the output: %q", want, buf[:n])
		}
	}
}
