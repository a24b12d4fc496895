package sessions

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The agents agentmux runs may call it back (package agentmcp): each run
// of an agent gets a secret of its own in its environment, which names
// the session that calls, and the agents that speak MCP are pointed at
// the endpoint for that run only, with their own configuration left as it
// is. A run script's or a setup's run gets nothing: it is no agent.
const (
	// EnvMCPSecret holds the run's secret, sent as a bearer token.
	EnvMCPSecret = "AGENTMUX_MCP_SECRET"
	// EnvMCPURL holds the address of agentmux's MCP endpoint.
	EnvMCPURL = "AGENTMUX_MCP_URL"
	// MCPServerName is the name the agents know agentmux's MCP server
	// by: Claude Code calls its tools mcp__agentmux__<tool>.
	MCPServerName = "agentmux"
	// MCPToolTimeout is how long Codex lets one of agentmux's tools run:
	// wait_for waits up to 10 minutes, past Codex's own default of 60
	// seconds.
	MCPToolTimeout = 11 * 60
)

// MCPConfig points the agents agentmux runs at its MCP endpoint.
type MCPConfig struct {
	// URL is the endpoint, given to every agent's run in
	// AGENTMUX_MCP_URL with a secret of its own in AGENTMUX_MCP_SECRET.
	URL string
	// Dir is where each Claude Code run's MCP configuration is written,
	// readable by its owner only, as it holds the run's secret. Empty
	// registers agentmux with no Claude Code run.
	Dir string
}

// callerLocked returns the variables and the arguments that let the run
// being started, of argv, call agentmux back, and keeps its secret. mu
// must be held.
func (s *Session) callerLocked() (env, args []string, err error) {
	s.run.callerSecret = ""
	if s.mcp == nil || s.mcp.URL == "" || s.setup.next || s.runOf != "" {
		return nil, nil, nil
	}
	secret := newSecret()
	switch {
	case s.profile.Hooks && s.mcp.Dir != "":
		// Claude Code takes servers from a file for this run alone; the
		// secret goes in the file rather than on the command line, which
		// every process on the machine can read.
		file, err := s.writeMCPConfig(secret)
		if err != nil {
			return nil, nil, err
		}
		args = []string{"--mcp-config", file}
	case s.profile.Notify:
		// A -c override holds for this run only; Codex reads the secret
		// from the environment variable it is told of.
		key := "mcp_servers." + MCPServerName + "."
		args = []string{
			"-c", key + "url=" + tomlString(s.mcp.URL),
			"-c", key + `bearer_token_env_var="` + EnvMCPSecret + `"`,
			"-c", key + "tool_timeout_sec=" + strconv.Itoa(MCPToolTimeout),
		}
	}
	s.run.callerSecret = secret
	return []string{EnvMCPURL + "=" + s.mcp.URL, EnvMCPSecret + "=" + secret}, args, nil
}

// writeMCPConfig writes the Claude Code MCP configuration of the session's
// run being started and returns its path.
func (s *Session) writeMCPConfig(secret string) (string, error) {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	b, err := json.Marshal(map[string]map[string]server{"mcpServers": {MCPServerName: {
		Type: "http", URL: s.mcp.URL, Headers: map[string]string{"Authorization": "Bearer " + secret},
	}}})
	if err != nil {
		return "", fmt.Errorf("encode the MCP configuration: %w", err)
	}
	if err := os.MkdirAll(s.mcp.Dir, 0o700); err != nil {
		return "", fmt.Errorf("make the MCP configuration's directory: %w", err)
	}
	file := s.mcpConfigFile()
	// Written whole under a new name, then renamed: a run never reads
	// half a file, nor an earlier run's secret.
	tmp, err := os.CreateTemp(s.mcp.Dir, ".mcp-*.json")
	if err != nil {
		return "", fmt.Errorf("write the MCP configuration: %w", err)
	}
	_, werr := tmp.Write(b)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("write the MCP configuration: %w", werr)
	}
	return file, nil
}

// mcpConfigFile is where the session's Claude Code runs find their MCP
// configuration.
func (s *Session) mcpConfigFile() string {
	return filepath.Join(s.mcp.Dir, s.id+".json")
}

// removeMCPConfig removes the session's MCP configuration, if it has one.
func (s *Session) removeMCPConfig() {
	if s.mcp == nil || s.mcp.Dir == "" {
		return
	}
	if err := os.Remove(s.mcpConfigFile()); err != nil && !os.IsNotExist(err) {
		s.log.Warn("remove the MCP configuration", "err", err)
	}
}

// Caller returns the session whose running agent holds secret, the
// secret its run was given to call agentmux with. A secret of a run that
// ended names nobody.
func (m *Manager) Caller(secret string) (*Session, bool) {
	if secret == "" {
		return nil, false
	}
	for _, s := range m.List() {
		s.mu.Lock()
		ok := s.run.phase == phaseRunning && s.run.callerSecret != "" &&
			subtle.ConstantTimeCompare([]byte(secret), []byte(s.run.callerSecret)) == 1
		s.mu.Unlock()
		if ok {
			return s, true
		}
	}
	return nil, false
}
