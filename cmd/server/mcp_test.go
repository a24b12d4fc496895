package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/httpapi/apitest"
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

// mcpVars reads the MCP variables a session's agent was given.
func mcpVars(t *testing.T, e *apiEnv, id string) map[string]string {
	t.Helper()
	sess, err := e.srv.mgr.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	testutil.Eventually(t, waitTimeout, "the agent's environment", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
		for _, kv := range strings.Split(string(b), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok && (k == sessions.EnvMCPURL || k == sessions.EnvMCPSecret || k == sessions.EnvSessionID) {
				vars[k] = v
			}
		}
		return err == nil && vars[sessions.EnvSessionID] != ""
	})
	return vars
}

// TestMCPEndpoint: an agent finds agentmux's MCP endpoint and its secret
// in its environment, and lists the sessions through it with the SDK's
// client.
func TestMCPEndpoint(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	vars := mcpVars(t, e, s.ID)
	cs, err := connectMCP(vars)
	if err != nil {
		t.Fatalf("connect to %s: %v", vars[sessions.EnvMCPURL], err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions"})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, s.ID+", custom): active") {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
}

// TestMCPBridgeCommand: `agentmux mcp`, started as an agent starts a stdio
// MCP server, with the run's variables, serves the tools.
func TestMCPBridgeCommand(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	vars := mcpVars(t, e, s.ID)
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), sessions.EnvMCPURL+"="+vars[sessions.EnvMCPURL], sessions.EnvMCPSecret+"="+vars[sessions.EnvMCPSecret])
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-agent", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("start agentmux mcp: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions"})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, s.ID+", custom): active") {
		t.Fatalf("list_sessions: %v %+v", err, res)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("agentmux mcp ended with %v", err)
	}

	// Without the variables it says where they come from.
	out, err := exec.Command(os.Args[0], "mcp").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "run this from an agent agentmux started") {
		t.Errorf("agentmux mcp without the variables: %v %s", err, out)
	}
}

// TestMCPOff: with --mcp=false the agents get no MCP variables and the
// endpoint answers that it serves none.
func TestMCPOff(t *testing.T) {
	e := newAPI(t, "--mcp=false")
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	vars := mcpVars(t, e, s.ID)
	if len(vars) != 1 {
		t.Fatalf("the agent got %v", vars)
	}
	url := "http://" + e.srv.hooks.ln.Addr().String() + "/mcp"
	resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST %s: %d", url, resp.StatusCode)
	}
}

// TestMCPListCounts: list_sessions gives each session's change as the
// live change tracker last counted it, the same figures the UI shows.
func TestMCPListCounts(t *testing.T) {
	e := newAPI(t)
	apitest.InitRepo(t, e.dir)
	s := e.createCommand([]string{"sh", "-c", "exec sleep 60"})
	cs, err := connectMCP(mcpVars(t, e, s.ID))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := os.WriteFile(filepath.Join(e.dir, "new.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, "list_sessions to count the new file", func() bool {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions"})
		if err != nil || res.IsError {
			t.Fatalf("list_sessions: %v %+v", err, res)
		}
		return strings.Contains(res.Content[0].(*mcp.TextContent).Text, "1 file changed, +2 -0")
	})
}

// connectMCP connects the SDK's client to the endpoint and with the
// secret an agent's environment vars names, as the agent would.
func connectMCP(vars map[string]string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	return client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: vars[sessions.EnvMCPURL], HTTPClient: &http.Client{Transport: bearerTransport{vars[sessions.EnvMCPSecret]}},
		DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
}
