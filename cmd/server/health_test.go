package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runHealth runs `agentmux health` with args and env, and returns its exit
// code and what it printed to stdout and stderr.
func runHealth(t *testing.T, env map[string]string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = healthMain(args, envOf(env), &o, &e)
	return code, o.String(), e.String()
}

// isOneLine reports whether s is exactly one line.
func isOneLine(s string) bool {
	return strings.Count(s, "\n") == 1 && strings.HasSuffix(s, "\n")
}

// closedPort is a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// TestHealthSubcommand: agentmux health with no flags finds the server
// that uses its data directory wherever that server's --addr put it, even
// when AGENTMUX_ADDR names another port; an explicit --addr wins; once the
// server has stopped it fails with one line that says where it looked.
func TestHealthSubcommand(t *testing.T) {
	// Named as the workspace's default data directory under
	// $XDG_STATE_HOME is.
	state, workspace := t.TempDir(), t.TempDir()
	dataDir, err := defaultDataDir(envOf(map[string]string{"XDG_STATE_HOME": state}), workspace)
	if err != nil {
		t.Fatal(err)
	}
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--workspace", workspace, "--agent-cmd", "sh")
	_, port, _ := net.SplitHostPort(r.addr)
	if b, err := os.ReadFile(filepath.Join(dataDir, addrFile)); err != nil || string(b) != r.addr+"\n" {
		t.Errorf("%s: %q, %v; want %q", addrFile, b, err, r.addr+"\n")
	}

	elsewhere := "127.0.0.1:" + closedPort(t)
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"data dir from the environment", map[string]string{"AGENTMUX_DATA_DIR": dataDir}, nil},
		{"AGENTMUX_ADDR elsewhere", map[string]string{"AGENTMUX_DATA_DIR": dataDir, "AGENTMUX_ADDR": elsewhere}, nil},
		{"--data-dir", nil, []string{"--data-dir", dataDir}},
		{"the workspace's default data directory", map[string]string{"XDG_STATE_HOME": state, "AGENTMUX_WORKSPACE": workspace}, nil},
	} {
		code, out, errOut := runHealth(t, tc.env, tc.args...)
		if code != 0 || !strings.HasPrefix(out, "ok: agentmux ") || !strings.Contains(out, "http://127.0.0.1:"+port+"/api/health") || !isOneLine(out) || errOut != "" {
			t.Errorf("%s: exit %d, %q %q; want 0 and one ok line for port %s", tc.name, code, out, errOut, port)
		}
	}

	code, out, _ := runHealth(t, map[string]string{"AGENTMUX_DATA_DIR": dataDir}, "--addr", elsewhere)
	if code != 1 || !strings.Contains(out, elsewhere+" (--addr)") {
		t.Errorf("an explicit --addr does not win: exit %d, %q", code, out)
	}

	r.signal(syscall.SIGTERM)
	if code := r.wait(); code != 0 {
		t.Fatalf("run exited %d", code)
	}
	if _, err := os.Stat(filepath.Join(dataDir, addrFile)); !os.IsNotExist(err) {
		t.Errorf("%s after a clean shutdown: %v, want it removed", addrFile, err)
	}
	code, out, errOut := runHealth(t, map[string]string{"AGENTMUX_DATA_DIR": dataDir, "AGENTMUX_ADDR": "127.0.0.1:" + port})
	want := "unhealthy: no agentmux answers at 127.0.0.1:" + port + " (AGENTMUX_ADDR; no server has written " + filepath.Join(dataDir, addrFile) + "): "
	if code != 1 || !strings.HasPrefix(out, want) || !strings.Contains(out, "connection refused") || !isOneLine(out) || errOut != "" {
		t.Errorf("health of a stopped server: exit %d, %q %q; want 1 and one line starting %q", code, out, errOut, want)
	}

	if code, _, errOut := runHealth(t, nil, "--addr", "nonsense"); code != 2 || !isOneLine(errOut) {
		t.Errorf("health with a bad address: exit %d, %q", code, errOut)
	}
}

// TestHealthWildcard: a server listening on every address writes the
// wildcard, and health asks it on 127.0.0.1.
func TestHealthWildcard(t *testing.T) {
	dataDir := t.TempDir()
	r := startRun(t, noEnv, "--addr", "0.0.0.0:0", "--data-dir", dataDir, "--workspace", t.TempDir(), "--agent-cmd", "sh")
	_, port, _ := net.SplitHostPort(r.addr)
	if lines := linesWith(r.log.String(), "agentmux listening", "url=http://localhost:"+port+"/"); len(lines) != 1 {
		t.Errorf("a wildcard listener logs no URL a person can open:\n%s", r.log)
	}
	code, out, _ := runHealth(t, map[string]string{"AGENTMUX_DATA_DIR": dataDir})
	if code != 0 || !strings.Contains(out, "http://127.0.0.1:"+port+"/api/health") {
		t.Errorf("health of a wildcard listener: exit %d, %q", code, out)
	}
}

// TestHealthStaleAddrFile: an address file a killed server left behind
// makes health fail, naming the file, rather than ask some other address.
func TestHealthStaleAddrFile(t *testing.T) {
	dataDir := t.TempDir()
	stale := "127.0.0.1:" + closedPort(t)
	if err := writeAddrFile(dataDir, stale); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dataDir, addrFile)
	code, out, _ := runHealth(t, map[string]string{"AGENTMUX_DATA_DIR": dataDir})
	if want := "unhealthy: no agentmux answers at " + stale + " (the address in " + path + "): "; code != 1 || !strings.HasPrefix(out, want) || !isOneLine(out) {
		t.Errorf("stale address file: exit %d, %q; want one line starting %q", code, out, want)
	}

	if err := os.WriteFile(path, []byte("nonsense\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runHealth(t, map[string]string{"AGENTMUX_DATA_DIR": dataDir, "AGENTMUX_ADDR": stale})
	if code != 1 || !strings.Contains(out, stale+" (AGENTMUX_ADDR; "+path+" holds no address: ") || !isOneLine(out) {
		t.Errorf("address file without an address: exit %d, %q; want the fall-back to AGENTMUX_ADDR, saying why", code, out)
	}

	if err := removeAddrFile(dataDir); err != nil {
		t.Fatal(err)
	}
	if err := removeAddrFile(dataDir); err != nil {
		t.Errorf("removing a removed address file: %v", err)
	}
	if ents, err := os.ReadDir(dataDir); err != nil || len(ents) != 0 {
		t.Errorf("data directory after remove: %v %v, want empty (no temporary files left)", ents, err)
	}
}

// TestHealthURL: wildcard hosts of either family are asked on 127.0.0.1
// (a container may have no [::1]); other hosts as they are.
func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:8080":   "http://127.0.0.1:8080/api/health",
		"[::]:8080":      "http://127.0.0.1:8080/api/health",
		":8080":          "http://127.0.0.1:8080/api/health",
		"127.0.0.1:9090": "http://127.0.0.1:9090/api/health",
		"[::1]:9090":     "http://[::1]:9090/api/health",
		"localhost:9090": "http://localhost:9090/api/health",
		"10.1.2.3:80":    "http://10.1.2.3:80/api/health",
	} {
		if got := healthURL(addr); got != want {
			t.Errorf("healthURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
