package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// onTmpfs returns a command that runs the helper server (see
// TestHelperServer) in a mount namespace of its own, with a tmpfs of size
// mounted on dir: a file system the test can fill for real, that no other
// process sees and that goes with the namespace. It needs the right to
// mount: root's, or a user namespace's; the test is skipped, saying why,
// where the kernel refuses both.
func onTmpfs(t *testing.T, dir, size string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare is not installed: no way to mount a small file system to fill")
	}
	const script = `mount -t tmpfs -o size="$1" tmpfs "$0" && shift && exec "$@"`
	var refusals []string
	for _, flags := range [][]string{{"--mount"}, {"--user", "--map-root-user", "--mount"}} {
		probe := t.TempDir()
		args := append(append([]string(nil), flags...), "sh", "-c", script, probe, size, "true")
		out, err := exec.Command("unshare", args...).CombinedOutput()
		if err == nil {
			args := append(append([]string(nil), flags...), "sh", "-c", script, dir, size, os.Args[0], "-test.run=^TestHelperServer$")
			return exec.Command("unshare", args...)
		}
		refusals = append(refusals, fmt.Sprintf("unshare %s mount -t tmpfs: %v: %s", strings.Join(flags, " "), err, bytes.TrimSpace(out)))
	}
	t.Skipf("cannot mount a tmpfs here, as root or in a user namespace: %s", strings.Join(refusals, "; "))
	return nil
}

// readMessage reads conn's next message, waiting at most waitTimeout.
func readMessage(conn *websocket.Conn) (int, []byte, error) {
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	return conn.ReadMessage()
}

// TestFullDiskIsAState: with the data directory on a 1 MiB file system
// that a session fills, saves fail for real (ENOSPC) and that is a state,
// not a log line every save interval: /api/health says degraded with the
// reason (what, where, what to do), a WebSocket that connects is told at
// once (save.status), and the log says it once however many saves fail.
// Once a session frees the space, health is ok again and the log says so
// once; the server never stopped serving.
func TestFullDiskIsAState(t *testing.T) {
	workspace, dataDir := t.TempDir(), t.TempDir()
	h := startHelperCmd(t, onTmpfs(t, dataDir, "1m"),
		serverArgs(workspace, dataDir, "--save-interval", "100ms", "--scrollback", "64KiB", "--log-level", "debug"))
	h.waitServing()
	hc := newHTTPClient(t)
	base := "http://" + h.addr
	health := func() (st struct{ Status, Reason string }) {
		t.Helper()
		if err := getJSON(hc, base+"/api/health", &st); err != nil {
			t.Fatalf("GET /api/health: %v", err)
		}
		return st
	}
	if st := health(); st.Status != "ok" || st.Reason != "" {
		t.Fatalf("health before the disk fills: %+v, want ok without a reason", st)
	}

	// A session fills the file system, as an agent's build could; another
	// prints, so there is always something new to save.
	fill := filepath.Join(dataDir, "fill")
	createAt(t, hc, base, map[string]any{"name": "fill", "command": []string{"sh", "-c", `head -c 8M /dev/zero > "$0"; echo filled; exec sleep 60`, fill}})
	createAt(t, hc, base, map[string]any{"name": "print", "command": []string{"sh", "-c", "while :; do seq 1 2000; sleep 0.05; done"}})

	const failing, recovered = "sessions are not being saved", "sessions are saved again"
	testutil.Eventually(t, waitTimeout, "health to say degraded", func() bool { return health().Status == "degraded" })
	st := health()
	for _, want := range []string{"the disk is full", filepath.Join(dataDir, "agentmux.db"), "no space left on device", "Free space", "Since "} {
		if !strings.Contains(st.Reason, want) {
			t.Errorf("health's reason %q does not say %q", st.Reason, want)
		}
	}

	// A client that connects now is told at once.
	conn, _, err := dialWS(t, "ws://"+h.addr+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	var told wire.SaveStatusMessage
	for told.Type != wire.TypeSaveStatus {
		_, b, err := readMessage(conn)
		if err != nil {
			t.Fatalf("waiting for save.status on connecting: %v", err)
		}
		told = wire.SaveStatusMessage{}
		if err := json.Unmarshal(b, &told); err != nil {
			t.Fatal(err)
		}
	}
	if !told.Failing || told.Database != filepath.Join(dataDir, "agentmux.db") || !strings.Contains(told.Error, "no space left") || told.Advice == "" || told.Since == 0 {
		t.Errorf("save.status on connecting: %+v, want failing, with the database, the error, advice and since", told)
	}

	// Many refused commits (each logged at debug level), one line that
	// says so.
	testutil.Eventually(t, waitTimeout, "five refused commits", func() bool {
		return len(linesWith(h.stderr.String(), `msg="save sessions"`, "no space left on device")) >= 5
	})
	if got := linesWith(h.stderr.String(), failing); len(got) != 1 || !strings.Contains(got[0], "level=ERROR") {
		t.Fatalf("want exactly one ERROR line %q for five refused commits, got %q", failing, got)
	}
	if got := linesWith(h.stderr.String(), "level=ERROR"); len(got) != 1 {
		t.Errorf("want one ERROR line in all, got %q", got)
	}

	// Space comes back: a session frees it.
	createAt(t, hc, base, map[string]any{"name": "free", "command": []string{"rm", "-f", fill}})
	testutil.Eventually(t, waitTimeout, "health to say ok again", func() bool { return health().Status == "ok" })
	if st := health(); st.Reason != "" {
		t.Errorf("health after recovery still gives a reason: %q", st.Reason)
	}
	testutil.Eventually(t, waitTimeout, "the connected client to be told", func() bool {
		_, b, err := readMessage(conn)
		if err != nil {
			t.Fatalf("waiting for save.status after recovery: %v", err)
		}
		var m wire.SaveStatusMessage
		return json.Unmarshal(b, &m) == nil && m.Type == wire.TypeSaveStatus && !m.Failing
	})
	out := h.stderr.String()
	if got := linesWith(out, recovered); len(got) != 1 || !strings.Contains(got[0], "level=INFO") {
		t.Errorf("want exactly one INFO line %q, got %q", recovered, got)
	}
	if got := linesWith(out, failing); len(got) != 1 {
		t.Errorf("want still exactly one line %q, got %q", failing, got)
	}
}
