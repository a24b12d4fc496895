package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/agentmcp"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// agentCallView is an agent's tool call as the activity feed's line
// (agent.call).
func agentCallView(c agentmcp.Call) wire.AgentCallMessage {
	return wire.AgentCallMessage{
		SessionID: c.Caller,
		Tool:      c.Tool,
		Text:      c.Text,
		TargetID:  c.Target,
		Error:     c.Err,
		Timestamp: c.Time.UTC().Format(time.RFC3339Nano),
	}
}

// mcpHandler is the agents' MCP endpoint, nil when --mcp=false.
func (s *server) mcpHandler() http.Handler {
	if s.mcp == nil {
		return nil // not a nil *agentmcp.Server in an interface
	}
	return s.mcp
}

// mcpMain is `agentmux mcp`: agentmux's MCP tools on stdin and stdout,
// for an agent that speaks MCP only to a program it starts. It reaches
// the server that started the agent through the run's AGENTMUX_MCP_URL
// and AGENTMUX_MCP_SECRET, and ends when the agent closes stdin or sends
// SIGINT or SIGTERM.
func mcpMain(getenv func(string) string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := agentmcp.Bridge(ctx, getenv(sessions.EnvMCPURL), getenv(sessions.EnvMCPSecret), version, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintf(stderr, "agentmux mcp: %v\n", err)
		return 1
	}
	return 0
}
