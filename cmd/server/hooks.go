package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// Agents with notification hooks (Claude Code) run `agentmux hook` from
// them, and Codex runs it as its notify program; it forwards the hook's
// input, or Codex's notification, to the server that started the agent.
// The server takes those calls on a listener of their own, bound to the
// loopback address whatever --addr is, so nothing outside the container
// can reach it even when the UI is served to the network; each call must
// also carry the calling session's secret.

// hookSettingsFile is the Claude Code settings file inside --data-dir.
const hookSettingsFile = "claude-hooks.json"

// hookServer serves hook calls on its own loopback listener.
type hookServer struct {
	ln   net.Listener
	http *http.Server
	done chan struct{} // closed when Serve has returned
	log  *slog.Logger
}

// listenHooks opens the loopback listener and writes the settings file
// that points Claude Code's hooks at it. The returned config is for the
// session manager; start serves once the manager exists.
func listenHooks(dataDir string, log *slog.Logger) (*hookServer, *sessions.HookConfig, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find this program for agent hooks: %w", err)
	}
	settings := filepath.Join(dataDir, hookSettingsFile)
	if err := os.WriteFile(settings, sessions.ClaudeHookSettings(shellQuote(exe)+" hook"), 0o600); err != nil {
		return nil, nil, fmt.Errorf("write agent hook settings: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen for agent hooks: %w", err)
	}
	cfg := &sessions.HookConfig{
		URL:           "http://" + ln.Addr().String() + "/hooks",
		SettingsFile:  settings,
		NotifyCommand: []string{exe, "hook"},
	}
	return &hookServer{ln: limitListen(ln, maxHookConnections, "hooks", log), done: make(chan struct{}), log: log}, cfg, nil
}

// mcpConfig points the agents at the MCP endpoint this listener serves,
// with the Claude Code runs' configurations in dataDir; nil, when on is
// false, gives them none.
func (h *hookServer) mcpConfig(on bool, dataDir string) *sessions.MCPConfig {
	if !on {
		return nil
	}
	return &sessions.MCPConfig{URL: "http://" + h.ln.Addr().String() + "/mcp", Dir: filepath.Join(dataDir, mcpConfigDir)}
}

// mcpConfigDir holds, inside --data-dir, each Claude Code run's MCP
// configuration.
const mcpConfigDir = "mcp"

// start serves hook calls for the sessions mgr holds, and the agents'
// MCP endpoint, mcp (which authenticates its callers itself; nil serves
// none), until stop.
func (h *hookServer) start(mgr *sessions.Manager, mcp http.Handler) {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.POST("/hooks/:id", func(c echo.Context) error { return hookCall(c, mgr, (*sessions.Session).Hook) })
	e.POST("/hooks/:id/statusline", func(c echo.Context) error { return hookCall(c, mgr, (*sessions.Session).StatusLine) })
	e.Any("/mcp", func(c echo.Context) error {
		if mcp == nil {
			return httpapi.WriteError(c, http.StatusNotFound, wire.CodeNotFound, "agentmux serves no MCP tools: it was started with --mcp=false")
		}
		if !isLoopback(c.Request().RemoteAddr) {
			return httpapi.WriteError(c, http.StatusForbidden, wire.CodeForbidden, "agentmux's MCP endpoint is for the agents on this machine only")
		}
		mcp.ServeHTTP(c.Response(), c.Request())
		return nil
	})
	e.Any("/*", func(c echo.Context) error {
		return httpapi.WriteError(c, http.StatusNotFound, wire.CodeNotFound, "this listener takes agent hook calls only")
	})
	h.http = newHTTPServer(e, h.log, defaultLimits)
	go func() {
		defer close(h.done)
		if err := h.http.Serve(h.ln); !errors.Is(err, http.ErrServerClosed) {
			h.log.Error("agent hook listener stopped", "err", err)
		}
	}()
}

// stop closes the listener and waits for calls in flight, until ctx ends.
func (h *hookServer) stop(ctx context.Context) error {
	if h.http == nil {
		return h.ln.Close()
	}
	err := h.http.Shutdown(ctx)
	<-h.done
	return err
}

// hookCall applies one hook call to its session with apply: a hook's
// input (Session.Hook) or a status line's (Session.StatusLine).
func hookCall(c echo.Context, mgr *sessions.Manager, apply func(*sessions.Session, string, []byte) error) error {
	req := c.Request()
	if !isLoopback(req.RemoteAddr) {
		return httpapi.WriteError(c, http.StatusForbidden, wire.CodeForbidden, "agent hooks are taken from this machine only")
	}
	if req.Header.Get("Origin") != "" || req.Header.Get("Sec-Fetch-Site") != "" {
		// A browser page: hooks are never called from one.
		return httpapi.WriteError(c, http.StatusForbidden, wire.CodeForbidden, "agent hooks are not taken from web pages")
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), req.Body, maxHookBodyBytes))
	if err != nil {
		return httpapi.WriteError(c, http.StatusBadRequest, wire.CodeInvalidMessage, "read hook input: "+err.Error())
	}
	sess, err := mgr.Get(c.Param("id"))
	if err != nil {
		// Said as for a wrong secret: a caller without one learns nothing
		// about which sessions exist.
		return httpapi.WriteError(c, http.StatusUnauthorized, wire.CodeUnauthorized, sessions.ErrHookSecret.Error())
	}
	switch err := apply(sess, req.Header.Get(sessions.HookHeader), body); {
	case errors.Is(err, sessions.ErrHookSecret):
		return httpapi.WriteError(c, http.StatusUnauthorized, wire.CodeUnauthorized, err.Error())
	case err != nil:
		return httpapi.WriteError(c, http.StatusBadRequest, wire.CodeInvalidMessage, err.Error())
	}
	return c.NoContent(http.StatusNoContent)
}

// isLoopback reports whether addr (host:port, as a peer's or a
// listener's) is on this machine only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// shellQuote quotes s for a POSIX shell, which runs hook commands.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// hookTimeout bounds a hook call: the agent waits for its hooks.
const hookTimeout = 5 * time.Second

// maxHookBodyBytes bounds a hook call's input. It is larger than the
// API's bound: an agent's hook input quotes the tool's input, which for a
// file write is the file, and it comes from this machine only.
const maxHookBodyBytes = 1 << 20

// hookMain is `agentmux hook [input]`, run by an agent's hooks: it posts
// the hook input to the server in $AGENTMUX_HOOK_URL with the session's
// secret. The input is the last argument when there is one (Codex's notify
// program gets its notification so, with stdin closed), else stdin
// (Claude Code's hooks). It always exits 0 and prints nothing on stdout,
// since Claude Code reads a hook's stdout and exit code as instructions
// (exit 2 would block the tool the agent is about to use); trouble goes
// to stderr.
func hookMain(args []string, stdin io.Reader, getenv func(string) string, stderr io.Writer) int {
	url, secret := getenv(sessions.EnvHookURL), getenv(sessions.EnvHookSecret)
	if url == "" || secret == "" {
		fmt.Fprintf(stderr, "agentmux hook: %s and %s are not set; run this from an agent agentmux started\n", sessions.EnvHookURL, sessions.EnvHookSecret)
		return 0
	}
	var body []byte
	if len(args) > 0 {
		body = []byte(args[len(args)-1])
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, maxHookBodyBytes))
		if err != nil {
			fmt.Fprintf(stderr, "agentmux hook: read input: %v\n", err)
			return 0
		}
		body = b
	}
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook: %v\n", err)
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sessions.HookHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook: %v\n", err)
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "agentmux hook: the server answered %s: %s\n", resp.Status, strings.TrimSpace(string(msg)))
	}
	return 0
}
