package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// Each test takes port blocks from a base of its own, below the system's
// ephemeral ports (32768 and up), where outgoing connections would sit,
// and away from DefaultPortBase, which other tests' servers use.
const (
	envTestBase     = 23000
	takenTestBase   = 23200
	resumeTestBase  = 23400
	archiveTestBase = 23600
	runTestBase     = 23800
	fullTestBase    = 65535 - sessions.PortCount + 1
)

// listen listens on addr ("127.0.0.1" or "" for the wildcard) and port
// until the test ends: a port something else uses.
func listen(t *testing.T, addr string, port int) {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on %s:%d: %v", addr, port, err)
	}
	t.Cleanup(func() { l.Close() })
}

func portsOf(t *testing.T, s *sessions.Session) sessions.Ports {
	t.Helper()
	p := s.Info().Ports
	if p == nil {
		t.Fatalf("session %s has no ports", s.ID())
	}
	if p.Count != sessions.PortCount {
		t.Fatalf("session %s has %d ports, want %d", s.ID(), p.Count, sessions.PortCount)
	}
	return *p
}

func has(p sessions.Ports, port int) bool { return port >= p.First && port < p.First+p.Count }

// TestSessionPlaceEnvironment: the agent is told the workspace, its own
// tree, its branch and its first port, under agentmux's names and
// Conductor's, in a plain session and in a worktree session.
func TestSessionPlaceEnvironment(t *testing.T) {
	ws := testutil.NewRepo(t, "Port Tester", map[string]string{"a.txt": "a\n"})
	m, _ := newManager(t, sessions.Options{Workspace: ws, PortBase: envTestBase, Env: []string{
		"PATH=" + os.Getenv("PATH"),
		"AGENTMUX_PORT=1", // a server started inside a session hands nothing on
		"CONDUCTOR_PORT=2",
	}})
	script := shell(`printf 'root=%s|ws=%s|branch=%s|port=%s|croot=%s|cws=%s|cport=%s\n' ` +
		`"$AGENTMUX_ROOT_PATH" "$AGENTMUX_WORKSPACE_PATH" "$AGENTMUX_BRANCH" "$AGENTMUX_PORT" ` +
		`"$CONDUCTOR_ROOT_PATH" "$CONDUCTOR_WORKSPACE_PATH" "$CONDUCTOR_PORT"`)
	line := func(root, tree, branch string, port int) string {
		p := strconv.Itoa(port)
		return "root=" + root + "|ws=" + tree + "|branch=" + branch + "|port=" + p + "|croot=" + root + "|cws=" + tree + "|cport=" + p + "\r\n"
	}

	plain := create(t, m, sessions.CreateOptions{Command: script})
	out := follow(plain)
	out.untilEnd(t)
	if got, want := out.buf.String(), line(ws, ws, "main", portsOf(t, plain).First); got != want {
		t.Errorf("plain session printed %q, want %q", got, want)
	}

	wt := create(t, m, sessions.CreateOptions{Command: script, WorktreeBranch: "feat"})
	out = follow(wt)
	out.untilEnd(t)
	tree := filepath.Join(ws, sessions.WorktreesDir, "feat")
	if got, want := out.buf.String(), line(ws, tree, "feat", portsOf(t, wt).First); got != want {
		t.Errorf("worktree session printed %q, want %q", got, want)
	}

	// A script started for the session beside its agent gets the same.
	env, err := m.ScriptEnv(wt.ID())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range []string{
		"AGENTMUX_SESSION_ID=" + wt.ID(), "AGENTMUX_WORKSPACE_PATH=" + tree, "AGENTMUX_BRANCH=feat",
		"AGENTMUX_PORT=" + strconv.Itoa(portsOf(t, wt).First), "CONDUCTOR_PORT=" + strconv.Itoa(portsOf(t, wt).First),
		"PATH=" + os.Getenv("PATH"), // the agent's own environment too
	} {
		if !slices.Contains(env, kv) {
			t.Errorf("ScriptEnv = %q, without %q", env, kv)
		}
	}
	for _, kv := range env {
		if kv == "AGENTMUX_PORT=1" || kv == "CONDUCTOR_PORT=2" {
			t.Errorf("ScriptEnv hands on the server's own %s", kv)
		}
	}
}

// TestPortBlocksSkipTakenPortsAndOthersBlocks: a block with a port some
// program listens on (on loopback or on the wildcard address) is skipped;
// two sessions, the first stopped but listed, get disjoint blocks; a
// destroyed session's block is handed out again.
func TestPortBlocksSkipTakenPortsAndOthersBlocks(t *testing.T) {
	m, _ := newManager(t, sessions.Options{PortBase: takenTestBase})
	listen(t, "127.0.0.1", takenTestBase+3)
	listen(t, "", takenTestBase+sessions.PortCount+7)

	a := create(t, m, sessions.CreateOptions{Command: shell(`echo "a $AGENTMUX_PORT"`)})
	pa := portsOf(t, a)
	follow(a).expect(t, "a "+strconv.Itoa(pa.First))
	if pa.First != takenTestBase+2*sessions.PortCount {
		t.Errorf("first session's block starts at %d, want %d: the two blocks below have a port in use", pa.First, takenTestBase+2*sessions.PortCount)
	}
	waitRunEnded(t, a)

	// a has stopped but is listed: it keeps its block.
	b := create(t, m, sessions.CreateOptions{Command: shell(`exec sleep 60`)})
	pb := portsOf(t, b)
	if pb.First < pa.First+pa.Count && pa.First < pb.First+pb.Count {
		t.Errorf("blocks overlap: %+v and %+v", pa, pb)
	}
	for _, taken := range []int{takenTestBase + 3, takenTestBase + sessions.PortCount + 7} {
		if has(pa, taken) || has(pb, taken) {
			t.Errorf("port %d, in use, is in a block: %+v, %+v", taken, pa, pb)
		}
	}

	if err := m.Destroy(context.Background(), a.ID()); err != nil {
		t.Fatal(err)
	}
	c := create(t, m, sessions.CreateOptions{Command: shell(`exec sleep 60`)})
	if pc := portsOf(t, c); pc != pa {
		t.Errorf("after the first session was destroyed, a new one got %+v, want its block %+v back", pc, pa)
	}
}

// TestResumeKeepsFreePorts: a resumed session gets its block back while
// every port of it is free, and a new one, told to its agent, when a
// port of it is in use.
func TestResumeKeepsFreePorts(t *testing.T) {
	var log testutil.SyncBuffer
	m, _ := newManager(t, sessions.Options{PortBase: resumeTestBase, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s := create(t, m, sessions.CreateOptions{Command: shell(`echo "port $AGENTMUX_PORT"`)})
	out := follow(s)
	out.untilEnd(t)
	first := portsOf(t, s)

	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatal(err)
	}
	out.untilEnd(t)
	if got := portsOf(t, s); got != first {
		t.Errorf("resumed with its ports free, the session has %+v, want %+v", got, first)
	}

	// Its dev server's port taken by something else since.
	listen(t, "", first.First+5)
	if _, err := m.Resume(s.ID()); err != nil {
		t.Fatal(err)
	}
	out.untilEnd(t)
	moved := portsOf(t, s)
	if moved == first || has(moved, first.First+5) {
		t.Fatalf("resumed with port %d in use, the session has %+v; want a new block without it", first.First+5, moved)
	}
	if got, want := strings.Count(out.buf.String(), "port "+strconv.Itoa(moved.First)+"\r\n"), 1; got != want {
		t.Errorf("the last run was told its new port %d %d times, want %d; output %q", moved.First, got, want, out.buf.String())
	}
	// The person reading the terminal, and the log, are told the URLs moved.
	if note := fmt.Sprintf("this session's ports are now %d-%d", moved.First, moved.First+moved.Count-1); !strings.Contains(out.buf.String(), note) {
		t.Errorf("the terminal does not say %q; output %q", note, out.buf.String())
	}
	if line := fmt.Sprintf("was=%d now=%d", first.First, moved.First); !strings.Contains(log.String(), line) {
		t.Errorf("the log does not say %q; log:\n%s", line, log.String())
	}
}

// TestNoFreePortsRefusesTheSession: with no block free up to the last
// port, the session does not start, and the error says why.
func TestNoFreePortsRefusesTheSession(t *testing.T) {
	m, _ := newManager(t, sessions.Options{PortBase: fullTestBase})
	listen(t, "127.0.0.1", fullTestBase+4)
	_, err := m.Create(sessions.CreateOptions{Command: shell(`exit 0`)})
	if !errors.Is(err, sessions.ErrNoPorts) || !errors.Is(err, sessions.ErrSpawn) {
		t.Fatalf("Create with every block taken = %v, want ErrNoPorts and ErrSpawn", err)
	}
	if n := len(m.List()); n != 0 {
		t.Errorf("%d sessions listed after the refused create, want 0", n)
	}
}

func TestPortBaseIsChecked(t *testing.T) {
	for _, base := range []int{80, 65535} {
		if _, err := sessions.NewManager(sessions.Options{PortBase: base, Workspace: t.TempDir()}); err == nil {
			t.Errorf("NewManager with port base %d: no error", base)
		}
	}
}

// TestArchiveReleasesPorts: an archived session, which cannot be resumed,
// gives its block back while it stays listed.
func TestArchiveReleasesPorts(t *testing.T) {
	ws := testutil.NewRepo(t, "Port Tester", nil)
	m, _ := newManager(t, sessions.Options{Workspace: ws, PortBase: archiveTestBase})
	s := create(t, m, sessions.CreateOptions{Command: shell(`exec sleep 60`), WorktreeBranch: "done"})
	held := portsOf(t, s)
	if err := m.Archive(testutil.Context(t, testTimeout), s.ID()); err != nil {
		t.Fatal(err)
	}
	if p := s.Info().Ports; p != nil {
		t.Errorf("archived session still has ports %+v", *p)
	}
	next := create(t, m, sessions.CreateOptions{Command: shell(`exec sleep 60`)})
	if got := portsOf(t, next); got != held {
		t.Errorf("after the archive, a new session got %+v, want the archived one's %+v", got, held)
	}
}
