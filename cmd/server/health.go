package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// healthTimeout bounds `agentmux health`: a container's health check must
// answer before its own timeout.
const healthTimeout = 3 * time.Second

// addrFile is the file, inside --data-dir, in which a listening server
// keeps the address it listens on, for `agentmux health`. The database's
// lock makes one server the only one using a data directory, so the file
// is that server's; it writes the file once listening and removes it when
// it shuts down.
const addrFile = "agentmux.addr"

// healthMain is `agentmux health`: it asks the running server whether it
// is up, says so in one line and exits 0 when it is, 1 when it is not, 2
// for bad flags. The server it asks is, in this order: the one at --addr
// when that flag is given; the one whose address is in --data-dir's
// agentmux.addr (the same flag, AGENTMUX_DATA_DIR or default as the
// server's; the default is the workspace's, so it takes --workspace or
// the current directory as the server does), which is wherever that
// server listens, whichever flag or
// variable moved it; else the one at AGENTMUX_ADDR or the default address.
// The image's health check runs it, so moving the port keeps it right.
func healthMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentmux health: %v (see agentmux --help)\n", err)
		return 2
	}
	addr, from := healthAddr(cfg, isAddrGiven(args), getenv)
	u := healthURL(addr)
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	h, err := askHealth(ctx, u)
	if err != nil {
		fmt.Fprintf(stdout, "unhealthy: no agentmux answers at %s (%s): %v\n", addr, from, err)
		return 1
	}
	up := (time.Duration(h.UptimeMs) * time.Millisecond).Round(time.Second)
	if h.Status == statusDegraded {
		// Up all the same: exit 0, for a health check that restarted it
		// would end every agent and free no disk. The line, which
		// docker inspect shows, says what is wrong.
		fmt.Fprintf(stdout, "degraded: agentmux %s at %s, up %s: %s\n", h.Version, u, up, h.Reason)
		return 0
	}
	fmt.Fprintf(stdout, "ok: agentmux %s at %s, up %s\n", h.Version, u, up)
	return 0
}

// statusDegraded is /api/health's status while the server serves but
// cannot do all of its job; its reason says why.
const statusDegraded = "degraded"

// isAddrGiven reports whether args, which parseConfig accepted, name --addr.
func isAddrGiven(args []string) bool {
	var cfg config
	flags := newFlagSet(&cfg)
	if flags.Parse(args) != nil {
		return false
	}
	given := false
	flags.Visit(func(f *flag.Flag) { given = given || f.Name == "addr" })
	return given
}

// healthAddr is the address `agentmux health` asks, and where it came from
// in words for the one line it prints.
func healthAddr(cfg config, addrGiven bool, getenv func(string) string) (addr, from string) {
	if addrGiven {
		return cfg.Addr, "--addr"
	}
	fallback := "the default address"
	if getenv(envName("addr")) != "" {
		fallback = envName("addr")
	}
	dir := cfg.DataDir
	if dir == "" {
		// The default is the workspace's own: the same --workspace (or
		// current directory) as the server's finds it.
		ws, err := resolveWorkspace(cfg.Workspace)
		if err == nil {
			dir, err = defaultDataDir(getenv, ws)
		}
		if err != nil {
			return cfg.Addr, fallback + "; " + err.Error()
		}
	}
	path := filepath.Join(dir, addrFile)
	a, err := readAddrFile(path)
	switch {
	case err == nil:
		return a, "the address in " + path
	case errors.Is(err, fs.ErrNotExist):
		return cfg.Addr, fallback + "; no server has written " + path
	default:
		return cfg.Addr, fallback + "; " + err.Error()
	}
}

// health is the part of /api/health's answer that `agentmux health` reads.
type health struct {
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Version  string `json:"version"`
	UptimeMs int64  `json:"uptimeMs"`
}

// askHealth GETs u and returns the answer when it is {"status":"ok"} or
// {"status":"degraded"}.
func askHealth(ctx context.Context, u string) (health, error) {
	var h health
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return h, fmt.Errorf("make request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return h, fmt.Errorf("no answer within %v", healthTimeout)
		}
		// Not the url.Error's `Get "http://...":` again; the line has the
		// address already.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return h, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil {
		return h, fmt.Errorf("%s answered %s, not agentmux's health: %w", u, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || h.Status != "ok" && h.Status != statusDegraded {
		return h, fmt.Errorf("%s answered %s, status %q", u, resp.Status, h.Status)
	}
	return h, nil
}

// healthURL is the health endpoint of a server listening on addr. A
// wildcard address (0.0.0.0, [::], or no host) is asked on 127.0.0.1,
// whichever family it names: Go's wildcard listener takes both, and a
// container may have no IPv6 loopback for [::1].
func healthURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/api/health"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/api/health"
}

// writeAddrFile records addr, the address the server listens on, in
// dir's agentmux.addr for `agentmux health`. It writes a temporary file and
// renames it, so a health check never reads half an address.
func writeAddrFile(dir, addr string) (err error) {
	tmp, err := os.CreateTemp(dir, "."+addrFile+"-*")
	if err != nil {
		return fmt.Errorf("write listen address: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.WriteString(addr + "\n"); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write listen address: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write listen address: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, addrFile)); err != nil {
		return fmt.Errorf("write listen address: %w", err)
	}
	return nil
}

// removeAddrFile removes dir's agentmux.addr; one already gone is no error.
func removeAddrFile(dir string) error {
	if err := os.Remove(filepath.Join(dir, addrFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove listen address: %w", err)
	}
	return nil
}

// readAddrFile reads the address a server wrote with writeAddrFile.
func readAddrFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read listen address: %w", err)
	}
	addr := strings.TrimSpace(string(b))
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("%s holds no address: %w", path, err)
	}
	return addr, nil
}
