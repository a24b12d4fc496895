package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/sessions/store"
)

// sessionNames returns the names of the sessions the server run by r
// lists, sorted.
func sessionNames(t *testing.T, r *runner) []string {
	t.Helper()
	var names []string
	for _, s := range listAt(t, newHTTPClient(t), "http://"+r.addr) {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// stopRun stops the server run by r and expects a clean exit.
func stopRun(t *testing.T, r *runner) {
	t.Helper()
	r.signal(syscall.SIGTERM)
	if code := r.wait(); code != 0 {
		t.Fatalf("run exited %d; log:\n%s", code, r.log)
	}
}

// sleeperIn is a server's arguments for workspace ws: sessions that
// sleep, and what else is given.
func sleeperIn(ws string, extra ...string) []string {
	return append([]string{"--addr", "127.0.0.1:0", "--workspace", ws, "--agent-cmd", "sh -c 'exec sleep 60'", "--shutdown-grace", "1s"}, extra...)
}

// TestWorkspacesHaveDataDirsOfTheirOwn: two servers started in two
// workspaces without --data-dir, with the same state directory, run at
// once (no shared database, no shared lock), and neither ever lists the
// other's sessions; each finds its own again after a restart.
func TestWorkspacesHaveDataDirsOfTheirOwn(t *testing.T) {
	env := envOf(map[string]string{"XDG_STATE_HOME": t.TempDir()})
	ws1, ws2 := t.TempDir(), t.TempDir()
	hc := newHTTPClient(t)

	r1 := startRun(t, env, sleeperIn(ws1)...)
	createAt(t, hc, "http://"+r1.addr, map[string]any{"name": "one"})
	r2 := startRun(t, env, sleeperIn(ws2)...)
	if got := sessionNames(t, r2); len(got) != 0 {
		t.Errorf("the second workspace's server lists %v, the first's sessions", got)
	}
	createAt(t, hc, "http://"+r2.addr, map[string]any{"name": "two"})
	if got := sessionNames(t, r1); !slices.Equal(got, []string{"one"}) {
		t.Errorf("the first workspace's server lists %v, want [one]", got)
	}
	stopRun(t, r1)
	stopRun(t, r2)

	for _, tc := range []struct {
		ws   string
		want []string
	}{{ws1, []string{"one"}}, {ws2, []string{"two"}}} {
		r := startRun(t, env, sleeperIn(tc.ws)...)
		if got := sessionNames(t, r); !slices.Equal(got, tc.want) {
			t.Errorf("after a restart in %s: %v, want %v", tc.ws, got, tc.want)
		}
		stopRun(t, r)
	}
}

// TestSharedDataDirListsOnlyTheWorkspaces: servers of two workspaces
// given the same --data-dir, one after the other, list only their own
// workspace's sessions, and leave the other's in the database as they
// were.
func TestSharedDataDirListsOnlyTheWorkspaces(t *testing.T) {
	shared := t.TempDir()
	ws1, ws2 := t.TempDir(), t.TempDir()
	hc := newHTTPClient(t)

	r := startRun(t, noEnv, sleeperIn(ws1, "--data-dir", shared)...)
	createAt(t, hc, "http://"+r.addr, map[string]any{"name": "a"})
	stopRun(t, r)

	r = startRun(t, noEnv, sleeperIn(ws2, "--data-dir", shared)...)
	if got := sessionNames(t, r); len(got) != 0 {
		t.Errorf("the second workspace lists %v from the shared data directory, want none", got)
	}
	createAt(t, hc, "http://"+r.addr, map[string]any{"name": "b"})
	stopRun(t, r)

	r = startRun(t, noEnv, sleeperIn(ws1, "--data-dir", shared)...)
	if got := sessionNames(t, r); !slices.Equal(got, []string{"a"}) {
		t.Errorf("the first workspace again: %v, want [a]", got)
	}
	stopRun(t, r)
	r = startRun(t, noEnv, sleeperIn(ws2, "--data-dir", shared)...)
	if got := sessionNames(t, r); !slices.Equal(got, []string{"b"}) {
		t.Errorf("the second workspace again: %v, want [b]: the first's server must leave it alone", got)
	}
	stopRun(t, r)
}

// writeOldRecords writes, as a version before issue 40 did in its
// shared default data directory, sessions that name no workspace: only
// their working directory says which they belong to. cwds maps a
// session's name to its cwd.
func writeOldRecords(t *testing.T, path string, cwds map[string]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(path, storeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	j := store.NewJournal(st, slog.New(slog.DiscardHandler))
	i := 0
	for name, cwd := range cwds {
		i++
		id := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		j.PutRecord(id, fmt.Appendf(nil, `{"id":%q,"name":%q,"command":["sh"],"cwd":%q,"createdAt":%q,"lastActivityAt":%q,"status":"exited","cols":80,"rows":24}`,
			id, name, cwd, time.Now().UTC().Format(time.RFC3339), time.Now().UTC().Format(time.RFC3339)))
	}
	j.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUpgradeKeepsTheWorkspacesSessions: the first start of a workspace
// with a data directory of its own takes the workspace's sessions from
// the database earlier versions shared between workspaces (those whose
// working directory is in it), copied, the shared file left as it was;
// another workspace takes its own at its first start. A shared database
// that another agentmux holds stops a first start rather than start it
// without its sessions.
func TestUpgradeKeepsTheWorkspacesSessions(t *testing.T) {
	state := t.TempDir()
	env := envOf(map[string]string{"XDG_STATE_HOME": state})
	root := t.TempDir()
	ws1, ws2 := filepath.Join(root, "app"), filepath.Join(root, "app2") // ws1 is a prefix of ws2's path
	for _, d := range []string{ws1, filepath.Join(ws1, "sub"), ws2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	shared := filepath.Join(state, "agentmux", dbFile)
	writeOldRecords(t, shared, map[string]string{"old-one": ws1, "old-sub": filepath.Join(ws1, "sub"), "old-two": ws2})
	before, err := os.ReadFile(shared)
	if err != nil {
		t.Fatal(err)
	}

	r := startRun(t, env, sleeperIn(ws1)...)
	if got := sessionNames(t, r); !slices.Equal(got, []string{"old-one", "old-sub"}) {
		t.Errorf("the first workspace after the upgrade lists %v, want its two old sessions", got)
	}
	if got := linesWith(r.log.String(), "copied there from the database earlier versions shared", "sessions=2"); len(got) != 1 {
		t.Errorf("want one line saying two sessions were copied; log:\n%s", r.log)
	}
	stopRun(t, r)
	r = startRun(t, env, sleeperIn(ws2)...)
	if got := sessionNames(t, r); !slices.Equal(got, []string{"old-two"}) {
		t.Errorf("the second workspace after the upgrade lists %v, want [old-two]", got)
	}
	stopRun(t, r)
	if after, err := os.ReadFile(shared); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the shared database changed (%d bytes before, %d after, %v)", len(before), len(after), err)
	}

	// A first start while an older agentmux holds the shared file.
	held, err := store.Open(shared, storeTimeout)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	ws3 := filepath.Join(root, "third")
	if err := os.Mkdir(ws3, 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if code := run(nil, sleeperIn(ws3), env, &out, nil); code != 1 {
		t.Fatalf("a first start with the shared database held: exit %d, want 1; log:\n%s", code, &out)
	}
	if got := linesWith(out.String(), "level=ERROR", shared, "stop that agentmux first"); len(got) != 1 {
		t.Errorf("want one ERROR line naming %s and what to do; log:\n%s", shared, &out)
	}
	dir, err := defaultDataDir(env, ws3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, dbFile)); !os.IsNotExist(err) {
		t.Errorf("a refused first start left a database that would stand for the workspace's sessions: %v", err)
	}
	if strings.Contains(out.String(), "listening") {
		t.Errorf("the refused start listened; log:\n%s", &out)
	}
}
