package agentmcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// Latency of the tools an orchestrating agent calls most, through the
// SDK's client over the real HTTP transport, with four other sessions
// either busy (printing as fast as their terminals take it, as an agent
// streaming a build's log does) or idle, in the same run:
//
//	go test -run XXX -bench 'ReadScreen|ListSessions' -benchtime 200x ./agentmcp/
func BenchmarkReadScreen(b *testing.B) {
	for _, load := range []string{"idle", "busy"} {
		b.Run(load, func(b *testing.B) {
			cs, worker := benchEnv(b, load == "busy")
			args := map[string]any{"sessionId": worker, "scrollbackLines": 100}
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_screen", Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("read_screen: %v %+v", err, res)
				}
			}
		})
	}
}

func BenchmarkListSessions(b *testing.B) {
	for _, load := range []string{"idle", "busy"} {
		b.Run(load, func(b *testing.B) {
			cs, _ := benchEnv(b, load == "busy")
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions"})
				if err != nil || res.IsError {
					b.Fatalf("list_sessions: %v %+v", err, res)
				}
			}
		})
	}
}

// benchEnv starts a planner and four workers, busy or idle, and returns
// the planner's client and a worker's id. Busy workers print numbered
// lines without pause; idle ones printed a screenful and wait.
func benchEnv(b *testing.B, busy bool) (*mcp.ClientSession, string) {
	e := newEnv(b)
	planner, err := e.mgr.Create(sessions.CreateOptions{Name: "planner", Command: []string{"sh", "-c", "exec sleep 600"}})
	if err != nil {
		b.Fatal(err)
	}
	script := `seq 1 200; exec sleep 600`
	if busy {
		script = `i=0; while :; do i=$((i+1)); echo "building module $i: compiling, linking and testing"; done`
	}
	var worker *sessions.Session
	for range 4 {
		if worker, err = e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", script}, Cols: 120, Rows: 40}); err != nil {
			b.Fatal(err)
		}
	}
	testutil.Eventually(b, 10*time.Second, "the workers' output", func() bool {
		return strings.Contains(output(worker), "200") || strings.Contains(output(worker), "module 200")
	})
	return connect(b, e, secretOf(b, planner)), worker.ID()
}
