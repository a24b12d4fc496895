package main

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// bearerTransport sends a session's MCP secret with every request.
type bearerTransport struct{ secret string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPEndpoint: an agent finds agentmux's MCP endpoint and its secret
// in its environment, and lists the sessions through it with the SDK's
// client.
func TestMCPEndpoint(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	testutil.Eventually(t, waitTimeout, "the agent's MCP variables", func() bool {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok && (k == sessions.EnvMCPURL || k == sessions.EnvMCPSecret) {
				vars[k] = v
			}
		}
		return len(vars) == 2
	})
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: vars[sessions.EnvMCPURL], HTTPClient: &http.Client{Transport: bearerTransport{vars[sessions.EnvMCPSecret]}},
		DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", vars[sessions.EnvMCPURL], err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions"})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, s.ID+", custom): active") {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
}
