package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthTimeout bounds `agentmux health`: a container's health check must
// answer before its own timeout.
const healthTimeout = 3 * time.Second

// healthMain is `agentmux health`: it asks the server that the same flags
// and environment describe (--addr, AGENTMUX_ADDR) whether it is up, says
// so in one line and exits 0 when it is, 1 when it is not, 2 for bad flags.
// The image's health check runs it, so moving the port keeps it right.
func healthMain(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux health: %v (see agentmux --help)\n", err)
		return 2
	}
	url := healthURL(cfg.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux health: %v\n", err)
		return 1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stdout, "unhealthy: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	var h struct {
		Status   string `json:"status"`
		Version  string `json:"version"`
		UptimeMs int64  `json:"uptimeMs"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil || resp.StatusCode != http.StatusOK || h.Status != "ok" {
		fmt.Fprintf(stdout, "unhealthy: %s answered %s (%q)\n", url, resp.Status, h.Status)
		return 1
	}
	fmt.Fprintf(stdout, "ok: agentmux %s at %s, up %s\n", h.Version, url, (time.Duration(h.UptimeMs) * time.Millisecond).Round(time.Second))
	return 0
}

// healthURL is the health endpoint of a server listening on addr; a
// wildcard address is asked on the loopback address.
func healthURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/api/health"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/api/health"
}
