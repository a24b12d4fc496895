package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
)

func TestMain(m *testing.M) {
	// Agents started by servers under test run this binary as their hook
	// command, as they run agentmux itself in production.
	if len(os.Args) > 2 && os.Args[1] == "hook" && os.Args[2] == "statusline" {
		os.Exit(statusLineMain(os.Stdin, os.Getenv, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "hook" {
		os.Exit(hookMain(os.Args[2:], os.Stdin, os.Getenv, os.Stderr))
	}
	// An agent's stdio MCP server, the bridge (mcp_test.go).
	if len(os.Args) > 1 && os.Args[1] == "mcp" {
		os.Exit(mcpMain(os.Getenv, os.Stderr))
	}
	// A session's dev server, for the preview tests (previews_test.go).
	if len(os.Args) > 1 && os.Args[1] == "serve-app" {
		serveApp(os.Args[2:])
	}
	// Thousands of listeners, for the ports tests (ports_test.go).
	if len(os.Args) > 2 && os.Args[1] == "hold-ports" {
		n, err := strconv.Atoi(os.Args[2])
		if err != nil {
			os.Exit(2)
		}
		testutil.HoldListeners(n)
	}
	goleak.VerifyTestMain(m)
}

// waitTimeout bounds every wait in these tests; generous, for -race on a
// busy two-core machine.
const waitTimeout = 20 * time.Second

// linesWith returns the lines of s that contain every one of subs.
func linesWith(s string, subs ...string) []string {
	var out []string
	for line := range strings.Lines(s) {
		ok := true
		for _, sub := range subs {
			ok = ok && strings.Contains(line, sub)
		}
		if ok {
			out = append(out, strings.TrimRight(line, "\n"))
		}
	}
	return out
}

func noEnv(string) string { return "" }

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// The sessions' commands and the wait for a process to end are apitest's,
// which httpapi's tests share.
var (
	processGone = apitest.ProcessGone
	waitGone    = apitest.WaitGone
	sleeper     = apitest.Sleeper
	pidSleeper  = apitest.PIDSleeper
)

// hupIgnorer ignores SIGHUP (its children inherit that), then writes its pid
// to path, so the pid file proves the trap is in place; only SIGKILL ends
// it.
func hupIgnorer(path string) []string {
	return []string{"sh", "-c", `trap "" HUP; echo $$ > "$0"; while :; do sleep 1; done`, path}
}

// newHTTPClient is apitest's: a client closed when the test ends, that
// does not follow redirects.
var newHTTPClient = apitest.NewHTTPClient

// The WebSocket client of these tests is apitest's, which httpapi's tests
// share.
type wsMsg = apitest.Msg

var (
	dialWS   = apitest.DialWS
	readWS   = apitest.ReadWS
	expectWS = apitest.ExpectWS
)
