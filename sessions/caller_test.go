package sessions

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
)

// envOf reads a running session's agent's environment.
func envOf(t *testing.T, s *Session) map[string]string {
	t.Helper()
	vars := map[string]string{}
	testutil.Eventually(t, hookTimeout, "the agent's environment", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
		return err == nil && vars[EnvSessionID] != ""
	})
	return vars
}

// TestAgentsAreGivenTheMCPServer: a Claude Code run gets agentmux's MCP
// server in a configuration file of its own, readable by its owner only,
// holding the secret its environment holds; a Codex run gets it through
// -c overrides that name the variable; a run script gets nothing; and the
// file goes with the session.
func TestAgentsAreGivenTheMCPServer(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcp")
	agent := []string{"sh", "-c", "exec sleep 60"}
	m := hookedManager(t, func(o *Options) {
		o.Profiles["codex-like"] = Profile{Name: "codex-like", Start: agent, Notify: true}
		o.Hooks.NotifyCommand = []string{"notify"}
		o.MCP = &MCPConfig{URL: "http://127.0.0.1:1/mcp", Dir: dir}
	})

	claude, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	vars := envOf(t, claude)
	argv := claude.Info().Command
	i := slices.Index(argv, "--mcp-config")
	if i < 0 || i+1 >= len(argv) {
		t.Fatalf("no --mcp-config in %q", argv)
	}
	file := argv[i+1]
	if file != filepath.Join(dir, claude.ID()+".json") || strings.Contains(strings.Join(argv, " "), vars[EnvMCPSecret]) {
		t.Errorf("the command line %q (the secret must not be on it)", argv)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the configuration file: %v %v", fi, err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(file)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	srv := cfg.MCPServers[MCPServerName]
	if srv.Type != "http" || srv.URL != "http://127.0.0.1:1/mcp" || srv.Headers["Authorization"] != "Bearer "+vars[EnvMCPSecret] || vars[EnvMCPURL] != srv.URL {
		t.Errorf("the configuration %s for the environment's %q", b, vars[EnvMCPSecret])
	}
	if got, ok := m.Caller(vars[EnvMCPSecret]); !ok || got != claude {
		t.Error("the secret names no caller")
	}

	codex, err := m.Create(CreateOptions{Agent: "codex-like"})
	if err != nil {
		t.Fatal(err)
	}
	envOf(t, codex)
	want := []string{
		"-c", `mcp_servers.agentmux.url="http://127.0.0.1:1/mcp"`,
		"-c", `mcp_servers.agentmux.bearer_token_env_var="AGENTMUX_MCP_SECRET"`,
		"-c", "mcp_servers.agentmux.tool_timeout_sec=660",
	}
	if argv := codex.Info().Command; !slices.Equal(argv[len(argv)-len(want):], want) {
		t.Errorf("codex's command %q, want it to end with %q", argv, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	if err := m.Destroy(ctx, claude.ID()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the configuration outlived its session: %v", err)
	}
}

// TestNoMCPServer: without MCP (--mcp=false) an agent gets no variables
// and no arguments.
func TestNoMCPServer(t *testing.T) {
	m := hookedManager(t, nil)
	s, err := m.Create(CreateOptions{Agent: "claude-like"})
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, hookTimeout, "the agent's environment", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(s.Pid()) + "/environ")
		return err == nil && strings.Contains(string(b), EnvHookSecret) && !strings.Contains(string(b), "AGENTMUX_MCP")
	})
	if slices.Contains(s.Info().Command, "--mcp-config") {
		t.Errorf("command %q", s.Info().Command)
	}
}

// hookedManager is a manager whose "claude-like" agent takes hooks, as
// Claude Code does, and does nothing; tune, when not nil, changes its
// options first.
func hookedManager(t *testing.T, tune func(*Options)) *Manager {
	t.Helper()
	opts := Options{
		Workspace: t.TempDir(),
		Profiles:  map[string]Profile{"claude-like": {Name: "claude-like", Start: []string{"sh", "-c", "exec sleep 60"}, Hooks: true}},
		Hooks:     &HookConfig{URL: "http://127.0.0.1:1/hooks", SettingsFile: filepath.Join(t.TempDir(), "hooks.json")},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if tune != nil {
		tune(&opts)
	}
	m, err := NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
		defer cancel()
		_ = m.Shutdown(ctx, time.Second)
	})
	return m
}
