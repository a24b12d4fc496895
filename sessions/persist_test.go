package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions/output"
	"github.com/agentmux/agentmux/sessions/store"
)

const storeTimeout = 10 * time.Second

func openTestStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newStoreManager returns a Manager persisting to st; the caller shuts it
// down and closes it.
func newStoreManager(t *testing.T, st *store.Store, workspace string, scrollback int) *Manager {
	t.Helper()
	fake := Profile{
		Name:   "fake",
		Start:  []string{"sh", "-c", `echo "start {id} in $PWD"; exec sleep 60`},
		Resume: []string{"sh", "-c", `echo "resume {id} in $PWD"; exec sleep 60`},
	}
	m, err := NewManager(Options{
		Workspace:    workspace,
		Scrollback:   scrollback,
		Profiles:     map[string]Profile{"fake": fake},
		Store:        st,
		SaveInterval: 50 * time.Millisecond,
		StopGrace:    time.Second,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func stopManager(t *testing.T, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.Shutdown(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	m.Close()
}

// restartManager stops m and closes st, as a server stopping does, then
// opens the store at path again with a new manager on it, as the next
// server does; both are closed when the test ends.
func restartManager(t *testing.T, m *Manager, st *store.Store, path, workspace string, scrollback int) *Manager {
	t.Helper()
	stopManager(t, m)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, path)
	t.Cleanup(func() { st.Close() })
	m = newStoreManager(t, st, workspace, scrollback)
	t.Cleanup(func() { stopManager(t, m) })
	return m
}

// outputOf returns what s's ring holds now. A session still writing can
// overwrite the oldest bytes between the state and the read; that read is
// retried, as a subscriber resyncs.
func outputOf(t *testing.T, s *Session) string {
	t.Helper()
	for {
		st := s.StreamState()
		b := make([]byte, st.End-st.Start)
		n, err := s.ReadOutput(b, st.Start)
		if errors.Is(err, output.ErrOverrun) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
}

func TestRestartListsIdleSessionsWithTheirScreens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "agentmux.db")
	workspace := t.TempDir()
	if err := os.Mkdir(filepath.Join(workspace, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	// One session fills its ring past its size, inside the alternate
	// screen with the cursor hidden; one is a plain profile session.
	big, err := m.Create(CreateOptions{Name: "big", Command: []string{"sh", "-c",
		`printf '\033[?1049h\033[?25l'; i=0; while [ $i -lt 800 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	small, err := m.Create(CreateOptions{Name: "small", Agent: "fake", Cwd: "sub", Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "both outputs", func() bool {
		return strings.Contains(outputOf(t, big), "line 799") && strings.Contains(outputOf(t, small), "start ")
	})
	bigState, bigScreen := big.StreamState(), outputOf(t, big)
	bigStart, bigPrefix, _ := big.ReplayStart(0)
	m = restartManager(t, m, st, path, workspace, 4096)
	list := m.List()
	if len(list) != 2 || list[0].ID() != big.ID() || list[1].ID() != small.ID() {
		t.Fatalf("restored %d sessions, want big then small", len(list))
	}
	for _, s := range list {
		info := s.Info()
		if info.Status != StatusIdle || !strings.Contains(info.Reason, "restored") {
			t.Errorf("%s: status %s (%s), want idle and restored", info.Name, info.Status, info.Reason)
		}
	}
	if info := list[1].Info(); info.Cwd != filepath.Join(workspace, "sub") || info.Cols != 100 || info.Rows != 30 || info.Agent != "fake" {
		t.Errorf("small restored as %+v", info)
	}

	// The big screen replays from the same place, with its modes, and
	// the stream continues at the same offsets.
	rb := list[0]
	if st := rb.StreamState(); st.End != bigState.End {
		t.Fatalf("restored stream ends at %d, want %d", st.End, bigState.End)
	}
	start, prefix, _ := rb.ReplayStart(0)
	if start != bigStart || !bytes.Equal(prefix, bigPrefix) || !bytes.Contains(prefix, []byte("\x1b[?1049h")) {
		t.Fatalf("restored replay starts at %d with %q, want %d with %q", start, prefix, bigStart, bigPrefix)
	}
	buf := make([]byte, bigState.End-start)
	n, err := rb.ReadOutput(buf, start)
	if err != nil || !strings.HasSuffix(bigScreen, string(buf[:n])) || !strings.Contains(string(buf[:n]), "line 799") {
		t.Fatalf("restored screen (%d bytes, %v) is not the saved one", n, err)
	}

	// Resume runs the profile's resume command in the same directory and
	// continues the stream.
	if _, err := m.Resume(small.ID()); err != nil {
		t.Fatal(err)
	}
	rs := list[1]
	want := "resume " + small.ID() + " in " + filepath.Join(workspace, "sub")
	testutil.Eventually(t, storeTimeout, "the resumed agent's output", func() bool {
		return strings.Contains(outputOf(t, rs), want)
	})
	if info := rs.Info(); info.Status != StatusActive || info.Reason != "resumed" {
		t.Fatalf("resumed session = %s (%s)", info.Status, info.Reason)
	}
	if !strings.HasPrefix(outputOf(t, rs), "start ") {
		t.Fatalf("resumed stream lost its saved screen: %q", outputOf(t, rs))
	}
}

func TestDestroyedSessionsStayGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	m := newStoreManager(t, st, t.TempDir(), 4096)
	keep, err := m.Create(CreateOptions{Agent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := m.Create(CreateOptions{Agent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "output", func() bool { return strings.Contains(outputOf(t, gone), "start") })
	// Let the saver write the screen first, so its delete is tested too.
	testutil.Eventually(t, storeTimeout, "a saved screen", func() bool {
		saved, _, err := load(st)
		for _, sv := range saved {
			if sv.record.ID == gone.ID() && len(sv.screen.Data) > 0 {
				return err == nil
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.Destroy(ctx, gone.ID()); err != nil {
		t.Fatal(err)
	}
	stopManager(t, m)
	saved, skipped, err := load(st)
	if err != nil || len(skipped) != 0 || len(saved) != 1 || saved[0].record.ID != keep.ID() {
		t.Fatalf("store holds %d sessions (%v, %v), want only the kept one", len(saved), skipped, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// Load lists records only: the screen is looked for in the file
	// itself, in either of the forms the store keeps it (package store).
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		screens := tx.Bucket([]byte("screens"))
		if screens.Get([]byte(gone.ID())) != nil || screens.Bucket([]byte(gone.ID())) != nil {
			return errors.New("the destroyed session's screen is still stored")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestScreensAreSavedWhileSessionsRun(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	m := newStoreManager(t, st, t.TempDir(), 1<<20)
	defer stopManager(t, m)
	s, err := m.Create(CreateOptions{Command: []string{"sh", "-c", `i=0; while :; do echo "tick $i"; i=$((i+1)); sleep 0.02; done`}})
	if err != nil {
		t.Fatal(err)
	}
	// Without any shutdown, as after kill -9, the store catches up with
	// the output within a few save intervals.
	testutil.Eventually(t, storeTimeout, "tick 10 in the running output", func() bool { return strings.Contains(outputOf(t, s), "tick 10\r\n") })
	testutil.Eventually(t, storeTimeout, "tick 10 in the store", func() bool {
		saved, _, err := load(st)
		return err == nil && len(saved) == 1 && bytes.Contains(saved[0].screen.Data, []byte("tick 10\r\n"))
	})
}

// Saves add what is new to the stored screen; whatever the store holds
// once the output stops, without any shutdown (as after kill -9), is the
// screen a replay shows: same start, same modes, same bytes.
func TestSavedPiecesRestoreTheScreen(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	const scrollback = 16 << 10
	m := newStoreManager(t, st, t.TempDir(), scrollback)
	defer stopManager(t, m)
	s, err := m.Create(CreateOptions{Command: []string{"sh", "-c", `printf '\033[?1049h\033[?2004h'; i=0; while [ $i -lt 1500 ]; do echo "line $i of the log"; i=$((i+1)); [ $((i % 50)) = 0 ] && sleep 0.01; done; printf '\033[?25l'; echo done; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "the end of the output", func() bool { return strings.HasSuffix(outputOf(t, s), "done\r\n") })
	var sc store.Screen
	testutil.Eventually(t, storeTimeout, "the end of the output in the store", func() bool {
		saved, _, err := load(st)
		if err != nil || len(saved) != 1 {
			return false
		}
		sc = saved[0].screen
		return bytes.HasSuffix(sc.Data, []byte("done\r\n"))
	})
	restored := output.NewRing(scrollback)
	restored.Restore(sc.Start, sc.Prefix, sc.Data, sc.Cut)
	wantStart, wantPrefix, _ := s.ReplayStart(0)
	if got := restored.State(); got.End != s.StreamState().End {
		t.Fatalf("the stored screen ends at %d, the output at %d", got.End, s.StreamState().End)
	}
	start, prefix, _ := restored.ReplayStart(0)
	if start != wantStart || !bytes.Equal(prefix, wantPrefix) || !bytes.Contains(prefix, []byte("\x1b[?1049h")) || !bytes.Contains(prefix, []byte("\x1b[?2004h")) {
		t.Fatalf("the stored screen replays from %d with %q, the session from %d with %q", start, prefix, wantStart, wantPrefix)
	}
	if got, want := restored.Since(start, scrollback), []byte(outputOf(t, s)); !bytes.HasSuffix(want, got) || len(got) < scrollback/2 {
		t.Fatalf("the stored screen replays %d bytes that are not the end of the session's %d", len(got), len(want))
	}
}

// Quiet is told once the output stops, at the first save that finds
// nothing new after one that saved output, and again after the next
// burst.
func TestQuietIsToldWhenTheOutputStops(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	quiet := make(chan struct{}, 8)
	m, err := NewManager(Options{
		Workspace:    t.TempDir(),
		Store:        st,
		SaveInterval: 50 * time.Millisecond,
		StopGrace:    time.Second,
		Quiet:        func() { quiet <- struct{}{} },
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stopManager(t, m)
	s, err := m.Create(CreateOptions{Command: []string{"sh", "-c", `seq 1 2000; read go; seq 1 2000; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	for burst := range 2 {
		select {
		case <-quiet:
		case <-time.After(storeTimeout):
			t.Fatalf("not told that burst %d stopped", burst+1)
		}
		if burst == 0 {
			if err := s.Write([]byte("\n")); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out := outputOf(t, s); strings.Count(out, "2000\r\n") != 2 {
		t.Fatalf("told quiet twice, but the output is %q", out[max(0, len(out)-200):])
	}
}

func TestUnreadableRecordIsLeftOutNotFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	m := newStoreManager(t, st, t.TempDir(), 4096)
	good, err := m.Create(CreateOptions{Agent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	stopManager(t, m)
	// A damaged screen (in either of its forms: package store) is the
	// store's to skip, the record the Manager's.
	j := store.NewJournal(st, slog.New(slog.DiscardHandler))
	j.PutRecord("bad", []byte("{not json"))
	// A screen whose prefix runs past its end.
	j.PutSnapshot(good.ID(), nil, []byte{0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}, false)
	j.Close()
	saved, skipped, err := load(st)
	if err != nil || len(saved) != 1 || saved[0].record.ID != good.ID() || len(skipped) != 2 {
		t.Fatalf("load = %d saved, skipped %v, %v; want the good one and two reasons", len(saved), skipped, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRestart measures a restart's work up to the sessions being
// listed: open the database, restore four sessions with full 1 MiB
// screens, list them.
func BenchmarkRestart(b *testing.B) {
	path := filepath.Join(b.TempDir(), "agentmux.db")
	st, err := store.Open(path, time.Second)
	if err != nil {
		b.Fatal(err)
	}
	line := []byte("\x1b[32mok\x1b[0m  github.com/agentmux/agentmux/ws  12.3s  héllo 日本語\r\n")
	data := bytes.Repeat(line, (1<<20)/len(line))
	prefix := []byte("\x1b[?1049h")
	j := store.NewJournal(st, slog.New(slog.DiscardHandler))
	for i := range 4 {
		r := record{ID: fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i), Name: "s", Profile: Profile{Name: "shell", Start: []string{"sh"}},
			Command: []string{"sh"}, Cwd: "/", CreatedAt: time.Now(), Cols: 80, Rows: 24}
		v, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		j.PutSnapshot(r.ID, v, append(store.ScreenHead(5<<20, prefix, len(data)), data...), false)
	}
	j.Close()
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		st, err := store.Open(path, time.Second)
		if err != nil {
			b.Fatal(err)
		}
		m, err := NewManager(Options{Workspace: "/", Store: st, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(m.List()); n != 4 {
			b.Fatalf("listed %d sessions", n)
		}
		m.Close()
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestResumeWhenTheDirectoryIsGone(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	workspace := t.TempDir()
	if err := os.Mkdir(filepath.Join(workspace, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := newStoreManager(t, st, workspace, 4096)
	defer stopManager(t, m)
	s, err := m.Create(CreateOptions{Agent: "fake", Cwd: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.stop(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(workspace, "gone")); err != nil {
		t.Fatal(err)
	}
	_, err = m.Resume(s.ID())
	if !errors.Is(err, ErrSpawn) || !strings.Contains(err.Error(), "working directory") || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("resume into a removed directory = %v, want ErrSpawn naming the directory", err)
	}
	if info := s.Info(); info.Status != StatusError || !strings.Contains(info.Reason, "no longer exists") {
		t.Fatalf("status = %s (%s)", info.Status, info.Reason)
	}
}

// setsidHolder starts a session whose agent leaves behind a process in a
// session of its own that keeps the terminal open, and kills that process
// when the test ends.
func setsidHolder(t *testing.T, m *Manager, then string) *Session {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "holder.pid")
	// The holder writes its pid once it has left the agent's session, and
	// the agent waits for that: an agent that ended while the holder was
	// still inside would hang the terminal up on it too.
	s, err := m.Create(CreateOptions{Command: []string{"sh", "-c",
		`setsid sh -c 'echo $$ > "$0"; exec sleep 60' "$0" & while [ ! -s "$0" ]; do sleep 0.05; done; ` + then, pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	testutil.Eventually(t, storeTimeout, "the holder's pid", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		_, err = fmt.Sscan(string(b), &pid)
		return err == nil && pid > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return s
}

func TestRunEndsWhenAnEscapedProcessHoldsTheTerminal(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	m := newStoreManager(t, st, t.TempDir(), 4096)
	defer stopManager(t, m)
	// The agent exits at once; the setsid'd sleep keeps the terminal.
	s := setsidHolder(t, m, "exit 0")
	testutil.Eventually(t, storeTimeout, "the run to end", func() bool { return s.StreamState().RunEnded })
	if info := s.Info(); info.Status != StatusStopped || info.Exit == nil || info.Exit.Code != 0 {
		t.Fatalf("session = %s (%s), exit %+v", info.Status, info.Reason, info.Exit)
	}
}

func TestDestroyWhenAnEscapedProcessHoldsTheTerminal(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	m := newStoreManager(t, st, t.TempDir(), 4096)
	defer stopManager(t, m)
	s := setsidHolder(t, m, "while :; do sleep 1; done")
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.Destroy(ctx, s.ID()); err != nil {
		t.Fatalf("Destroy = %v", err)
	}
	if _, err := m.Get(s.ID()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the session is still there: %v", err)
	}
}

// TestRestartKeepsWorktree: a worktree session is listed after a restart
// with its worktree, resumes in it, and its worktree can still be removed.
func TestRestartKeepsWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	path := filepath.Join(t.TempDir(), "agentmux.db")
	workspace := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = workspace
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}

	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	s, err := m.Create(CreateOptions{Command: []string{"sh", "-c", "pwd; exec sleep 60"}, WorktreeBranch: "feat"})
	if err != nil {
		t.Fatal(err)
	}
	// Base is what the workspace had checked out when the worktree was made.
	want := Worktree{Path: filepath.Join(workspace, WorktreesDir, "feat"), Branch: "feat", Base: "main"}
	if got := s.Info().Worktree; got == nil || *got != want || s.Info().Cwd != want.Path {
		t.Fatalf("worktree %+v cwd %s, want %+v", got, s.Info().Cwd, want)
	}
	// The saved screen must hold the first run's pwd for the count below.
	testutil.Eventually(t, storeTimeout, "pwd of the first run", func() bool {
		return strings.Contains(outputOf(t, s), want.Path)
	})
	m = restartManager(t, m, st, path, workspace, 4096)
	r, err := m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Info().Worktree; got == nil || *got != want || r.Info().Running {
		t.Fatalf("restored worktree %+v running %v, want %+v and not running", got, r.Info().Running, want)
	}
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "pwd of the resumed run", func() bool {
		return strings.Count(outputOf(t, r), want.Path) >= 2
	})
	if err := m.DestroyWithWorktree(context.Background(), s.ID(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(want.Path); !os.IsNotExist(err) {
		t.Errorf("worktree still there after removal: %v", err)
	}
}

// TestRestartKeepsFailuresAndResetsResumedTerminals: a session whose agent
// failed on its own is still an error after a restart, with its exit code;
// one that exited cleanly comes back idle. A resumed session whose last
// run left the alternate screen, a hidden cursor and mouse reporting on
// starts its new run after the reset that turns them off.
func TestRestartKeepsFailuresAndResetsResumedTerminals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	workspace := t.TempDir()
	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	failed, err := m.Create(CreateOptions{Name: "failed", Command: []string{"sh", "-c", "echo oops; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	clean, err := m.Create(CreateOptions{Name: "clean", Command: []string{"sh", "-c", "echo fine"}})
	if err != nil {
		t.Fatal(err)
	}
	vim, err := m.Create(CreateOptions{Name: "vim", Command: []string{"sh", "-c",
		`printf '\033[?1049h\033[?25l\033[?1000h\033[?1006hediting'; exec sleep 60`}})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "both runs over and the editor drawn", func() bool {
		return !failed.Info().Running && !clean.Info().Running && strings.Contains(outputOf(t, vim), "editing")
	})
	m = restartManager(t, m, st, path, workspace, 4096)
	byName := map[string]*Session{}
	for _, s := range m.List() {
		byName[s.Info().Name] = s
	}
	if info := byName["failed"].Info(); info.Status != StatusError || info.Exit == nil || info.Exit.Code != 3 || !strings.Contains(info.Reason, "code 3") {
		t.Errorf("failed session after a restart: %s (%s), exit %+v; want error, exited with code 3", info.Status, info.Reason, info.Exit)
	}
	if info := byName["clean"].Info(); info.Status != StatusIdle {
		t.Errorf("cleanly exited session after a restart: %s, want idle", info.Status)
	}

	rv := byName["vim"]
	before := rv.StreamState()
	if before.Live() != before.End {
		t.Errorf("restored screen: live from %d, want its end %d (nothing in it may be answered)", before.Live(), before.End)
	}
	// The resume command of a custom session is its command again: the
	// editor's screen comes back, after the reset.
	if _, err := m.Resume(rv.ID()); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, storeTimeout, "the resumed run's output", func() bool {
		return strings.Count(outputOf(t, rv), "editing") == 2
	})
	out := outputOf(t, rv)
	after := rv.StreamState()
	reset := out[before.End-after.Start : after.RunStart-after.Start]
	for _, want := range []string{output.RunResetBase, "\x1b[?1049l", "\x1b[?25h", "\x1b[?1000l", "\x1b[?1006l"} {
		if !strings.Contains(reset, want) {
			t.Errorf("the reset between runs %q lacks %q", reset, want)
		}
	}
	if !strings.HasPrefix(out[after.RunStart-after.Start:], "\x1b[?1049h") {
		t.Errorf("the new run's output does not start right after the reset: %q", out[after.RunStart-after.Start:])
	}
}

// TestRestartKeepsConversation: the conversation an agent recorded is
// saved, so a resume after a restart continues it.
func TestRestartKeepsConversation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	workspace := t.TempDir()
	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	s, err := m.Create(CreateOptions{Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	s.learnedConversation("0191e0a2-7c4e-7000-8000-00000000abcd")
	m = restartManager(t, m, st, path, workspace, 4096)
	got, err := m.Get(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	if c := got.Info().Conversation; c != "0191e0a2-7c4e-7000-8000-00000000abcd" {
		t.Errorf("conversation after a restart %q", c)
	}
}

// TestKeptSessionsBoundHoldsAfterRestart: the sessions restored at start
// count against KeepSessions, and none is dropped to make room, even when
// more were kept than the new bound allows.
func TestKeptSessionsBoundHoldsAfterRestart(t *testing.T) {
	path, workspace := filepath.Join(t.TempDir(), "agentmux.db"), t.TempDir()
	st := openTestStore(t, path)
	m := newStoreManager(t, st, workspace, 4096)
	for range 4 {
		if _, err := m.Create(CreateOptions{Agent: "fake"}); err != nil {
			t.Fatal(err)
		}
	}
	stopManager(t, m)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openTestStore(t, path)
	defer st.Close()
	m, err := NewManager(Options{Workspace: workspace, MaxSessions: 2, KeepSessions: 3, Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer stopManager(t, m)
	if n := len(m.List()); n != 4 {
		t.Fatalf("%d sessions restored, want all 4 (nothing deleted behind the user's back)", n)
	}
	if _, err := m.Create(CreateOptions{Command: []string{"true"}}); !errors.Is(err, ErrStoreFull) {
		t.Fatalf("create with 4 kept of 3: %v, want ErrStoreFull", err)
	}
}

// blockStore holds the database's only write transaction, as a disk stuck
// in an fsync would, until the returned function is called.
func blockStore(t *testing.T, st *store.Store) (release func()) {
	t.Helper()
	release, err := st.BlockWrites()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return release
}

// TestAStuckStoreHoldsUpNoSession: while the database cannot be written,
// a Create or Destroy waits for it (what the caller is told must survive
// a crash), but nothing else does: another session's run still ends and
// reports its status. Once the database frees, everything is written in
// the order it happened, and a Create returns only once its session is on
// disk.
func TestAStuckStoreHoldsUpNoSession(t *testing.T) {
	st := openTestStore(t, filepath.Join(t.TempDir(), "agentmux.db"))
	defer st.Close()
	statuses := make(chan Info, 16)
	m, err := NewManager(Options{
		Workspace:    t.TempDir(),
		Store:        st,
		SaveInterval: 20 * time.Millisecond,
		StopGrace:    time.Second,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(func(ev Event) {
		if ev.Kind == EventStatus {
			statuses <- ev.Session
		}
	})
	short, err := m.Create(CreateOptions{Name: "short", Command: []string{"sh", "-c", "read x; echo done; exit 3"}})
	if err != nil {
		t.Fatal(err)
	}
	if saved, _, err := load(st); err != nil || len(saved) != 1 || saved[0].record.ID != short.ID() {
		t.Fatalf("after Create returned the store holds %d sessions (%v), want the new one", len(saved), err)
	}
	gone, err := m.Create(CreateOptions{Name: "gone", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}

	release := blockStore(t, st)
	destroyed := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		destroyed <- m.Destroy(ctx, gone.ID())
	}()
	if err := short.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case info := <-statuses:
			done = info.ID == short.ID() && info.Status == StatusError
		case <-time.After(storeTimeout):
			t.Fatal("a session's end was not reported while the database was stuck")
		}
	}

	release()
	select {
	case err := <-destroyed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(storeTimeout):
		t.Fatal("Destroy did not return once the database was free")
	}
	if saved, _, err := load(st); err != nil || len(saved) != 1 || saved[0].record.ID != short.ID() {
		t.Fatalf("after Destroy returned the store holds %d sessions (%v), want only the short one", len(saved), err)
	}
	stopManager(t, m)
	saved, skipped, err := load(st)
	if err != nil || len(skipped) != 0 || len(saved) != 1 {
		t.Fatalf("store holds %d sessions (%v, %v), want only the short one", len(saved), skipped, err)
	}
	r := saved[0].record
	if r.ID != short.ID() || r.Status != StatusError || r.Exit == nil || r.Exit.Code != 3 {
		t.Errorf("stored record %+v, want the short session's end with code 3", r)
	}
	if !bytes.Contains(saved[0].screen.Data, []byte("done")) {
		t.Errorf("stored screen %q, want its output", saved[0].screen.Data)
	}
}

// TestRestoresTheDatabaseOfAnEarlierBuild: a database written by the
// build before the store was a package of its own (the store's
// testdata/v1.db, whose bytes its tests list) restores every session as
// that build restored it, and a record or queue read from it is written
// back byte for byte.
func TestRestoresTheDatabaseOfAnEarlierBuild(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("store", "testdata", "v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agentmux.db")
	if err := os.WriteFile(path, golden, 0o600); err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t, path)
	defer st.Close()
	// The workspace its sessions ran in: their records name none, and
	// their working directories are in it.
	m, err := NewManager(Options{Workspace: "/work/space", Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer stopManager(t, m)

	list := m.List()
	if len(list) != 2 {
		t.Fatalf("restored %d sessions, want 2", len(list))
	}
	a, b := list[0], list[1]
	ai := a.Info()
	if ai.ID != "0f6b1a2e-3c4d-4e5f-8a9b-0c1d2e3f4a5b" || ai.Name != "claude 1" || ai.Agent != "claude" ||
		ai.Status != StatusIdle || !strings.Contains(ai.Reason, "restored") || ai.Running || ai.Exit != nil ||
		ai.Cwd != "/work/space/.worktrees/feat" || ai.Cols != 120 || ai.Rows != 40 || ai.Conversation != "" ||
		!ai.CreatedAt.Equal(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)) ||
		!ai.LastActivityAt.Equal(time.Date(2025, 3, 1, 11, 30, 0, 500_000_000, time.UTC)) {
		t.Errorf("session A restored as %+v", ai)
	}
	wantProfile := Profile{Name: "claude", Start: []string{"claude", "--session-id", "{id}"}, Resume: []string{"claude", "--resume", "{id}"}, Hooks: true, Conversation: "claude"}
	if !reflect.DeepEqual(ai.Profile, wantProfile) ||
		!slices.Equal(ai.Command, []string{"claude", "--session-id", ai.ID, "--settings", "/data/hooks.json"}) {
		t.Errorf("session A's profile %+v, command %q", ai.Profile, ai.Command)
	}
	if w := ai.Worktree; w == nil || *w != (Worktree{Path: "/work/space/.worktrees/feat", Branch: "feat", Base: "main"}) {
		t.Errorf("session A's worktree %+v", w)
	}
	wantQueue := Queue{Rev: 3, Prompts: []Prompt{{ID: "5d1c6a0e-8f2b-4c3d-9e4f-a5b6c7d8e9f0", Author: Author{ID: "ann-1", Name: "Ann"},
		Text: "go on\nand on", QueuedAt: time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)}}}
	if q := a.Queue(); !reflect.DeepEqual(q, wantQueue) {
		t.Errorf("session A's queue %+v, want %+v", q, wantQueue)
	}
	const screenA = "héllo\r\nready?\r\n"
	if ss := a.StreamState(); ss.Start != 1<<20+5 || ss.End != 1<<20+5+uint64(len(screenA)) || outputOf(t, a) != screenA {
		t.Errorf("session A's screen restored as %d..%d %q", ss.Start, ss.End, outputOf(t, a))
	}
	if _, prefix, _ := a.ReplayStart(0); !bytes.Contains(prefix, []byte("\x1b[?1049h")) {
		t.Errorf("session A's replay re-enters %q, want the alternate screen and the hidden cursor", prefix)
	}

	bi := b.Info()
	if bi.ID != "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d" || bi.Name != "codex 1" || bi.Status != StatusError || bi.Reason != "exited with code 3" ||
		bi.Exit == nil || *bi.Exit != (output.ExitStatus{Code: 3}) || bi.Conversation != "0191e0a2-7c4e-7000-8000-00000000abcd" ||
		!bi.Profile.Notify || bi.Profile.Conversation != ConversationCodex || bi.Worktree != nil {
		t.Errorf("session B restored as %+v", bi)
	}
	if q := b.Queue(); len(q.Prompts) != 0 || q.Rev != 0 {
		t.Errorf("session B's queue %+v, want none", q)
	}
	if ss := b.StreamState(); ss.Start != 42 || ss.End != 42+5 || outputOf(t, b) != "bye\r\n" {
		t.Errorf("session B's screen restored as %d..%d %q", ss.Start, ss.End, outputOf(t, b))
	}

	list2, skipped, err := st.Load()
	if err != nil || len(skipped) != 0 || len(list2) != 2 {
		t.Fatalf("load = %d saved, skipped %v, %v", len(list2), skipped, err)
	}
	for _, sv := range list2 {
		var r record
		if err := json.Unmarshal(sv.Record, &r); err != nil {
			t.Fatal(err)
		}
		if again, err := json.Marshal(r); err != nil || !bytes.Equal(again, sv.Record) {
			t.Errorf("session %s's record written back as %s (%v), want %s", sv.ID, again, err, sv.Record)
		}
		if sv.Queue == nil {
			continue
		}
		var q Queue
		if err := json.Unmarshal(sv.Queue, &q); err != nil {
			t.Fatal(err)
		}
		if again, err := json.Marshal(q); err != nil || !bytes.Equal(again, sv.Queue) {
			t.Errorf("session %s's queue written back as %s (%v), want %s", sv.ID, again, err, sv.Queue)
		}
	}
}

// TestIsOfWorkspace: a record that names its workspace belongs to that
// one only; one saved before records named theirs belongs to the
// workspace its working directory or worktree is in, and a workspace
// whose path another's begins with is not the other.
func TestIsOfWorkspace(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    record
		ws   string
		want bool
	}{
		{"named", record{Workspace: "/src/app", Cwd: "/elsewhere"}, "/src/app", true},
		{"named another", record{Workspace: "/src/other", Cwd: "/src/app"}, "/src/app", false},
		{"old, in it", record{Cwd: "/src/app"}, "/src/app", true},
		{"old, below it", record{Cwd: "/src/app/web"}, "/src/app", true},
		{"old, a sibling with its name as prefix", record{Cwd: "/src/app2"}, "/src/app", false},
		{"old, above it", record{Cwd: "/src"}, "/src/app", false},
		{"old, worktree in it", record{Cwd: "/tmp/x", Worktree: &Worktree{Path: "/src/app/.worktrees/feat"}}, "/src/app", true},
		{"old, no cwd", record{}, "/src/app", false},
		{"old, relative cwd", record{Cwd: "web"}, "/src/app", false},
	} {
		if got := isOfWorkspace(tc.r, tc.ws); got != tc.want {
			t.Errorf("%s: isOfWorkspace(%+v, %q) = %v, want %v", tc.name, tc.r, tc.ws, got, tc.want)
		}
	}
}
