package agentmcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bridge serves agentmux's MCP tools over t (`agentmux mcp` runs it on
// stdio), for an agent that speaks MCP only to a program it starts: it
// connects to the endpoint at url with secret, as the agent's run was
// told them, and hands every tool call on. It returns when t's peer
// leaves or ctx ends.
func Bridge(ctx context.Context, url, secret, version string, t mcp.Transport) error {
	if url == "" || secret == "" {
		return errors.New("no endpoint or secret: run this from an agent agentmux started, which has them in AGENTMUX_MCP_URL and AGENTMUX_MCP_SECRET")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentmux-bridge", Version: version}, nil)
	remote, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: bearer{secret: secret, next: http.DefaultTransport}},
		DisableStandaloneSSE: true, // the endpoint is stateless: it sends nothing unasked
	}, nil)
	if err != nil {
		return fmt.Errorf("connect to agentmux at %s: %w", url, err)
	}
	defer remote.Close()
	tools, err := remote.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list agentmux's tools: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentmux", Version: version}, nil)
	for _, tool := range tools.Tools {
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return remote.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	if err := srv.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve the tools: %w", err)
	}
	return nil
}

// bearer sends the secret with every request.
type bearer struct {
	secret string
	next   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.secret)
	return b.next.RoundTrip(r)
}
