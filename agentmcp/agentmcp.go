// Package agentmcp serves agentmux to the agents it runs, as an MCP server
// (the official SDK's, over its streamable HTTP transport), so that an
// agent can list sessions, queue prompts for them and wait for them.
//
// Only an agent agentmux runs can call it: each run of an agent gets a
// secret of its own (sessions.EnvMCPSecret), sent as a bearer token,
// which names the calling session; a run that ended names nobody. Nothing
// a browser holds authenticates (no cookie, no token in a URL), and a
// request a browser shaped (an Origin, any Sec-Fetch-* header) is refused
// whatever it carries, so no web page can reach it through the user's
// browser.
//
// The server is stateless: each request is answered by a server built
// for its caller, so a request can never act for a session other than
// the one its secret names, and nothing is kept between requests.
package agentmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/sessions"
)

// MaxWait bounds wait_for.
const MaxWait = 10 * time.Minute

// DefaultMaxStarted is how many sessions one agent may have started at
// once when Options.MaxStarted is 0.
const DefaultMaxStarted = 3

// DefaultMaxDepth is how deep sessions may start sessions when
// Options.MaxDepth is 0: a session a person started may start some, and
// those start none.
const DefaultMaxDepth = 1

// Options are what the server serves from; Sessions is required.
type Options struct {
	Sessions *sessions.Manager
	// Version is agentmux's, as the server tells its clients.
	Version string
	// MaxStarted is how many sessions one agent may have started that
	// are still listed; 0 means DefaultMaxStarted.
	MaxStarted int
	// MaxDepth is how long a chain of sessions starting sessions may
	// grow: at 1, a session an agent started starts none. 0 means
	// DefaultMaxDepth.
	MaxDepth int
	// Counts, when set, gives a session's change against its base: the
	// lines added and removed and the files touched, as list_sessions
	// lists them.
	Counts func(sessionID string) (additions, deletions, files int)
	// OnCall, when set, is told of every tool call, done or refused, as
	// it ends: the activity feed's line. It must not block.
	OnCall func(Call)
	Logger *slog.Logger
}

// Call is one tool call an agent made.
type Call struct {
	// Caller is the calling session's id.
	Caller string
	Tool   string
	// Text says what was done, for people: "planner started 'tests' on
	// feature/tests".
	Text string
	// Target is the session the call was about, if any.
	Target string
	// Err is why the call was refused or failed; empty when it was done.
	Err  string
	Time time.Time
}

// Server is the MCP endpoint, an http.Handler.
type Server struct {
	opts    Options
	handler http.Handler
	tools   []toolDef

	// closed ends every call still in progress (a wait) at Close.
	closed    context.Context
	closeDone context.CancelFunc
}

// New returns the endpoint.
func New(opts Options) (*Server, error) {
	if opts.Sessions == nil {
		return nil, errors.New("agentmcp: no session manager")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxStarted <= 0 {
		opts.MaxStarted = DefaultMaxStarted
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	s := &Server{opts: opts}
	var err error
	if s.tools, err = s.define(); err != nil {
		return nil, err
	}
	s.closed, s.closeDone = context.WithCancel(context.Background())
	s.handler = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		caller, _ := r.Context().Value(callerKey{}).(*sessions.Session)
		return s.serverFor(r.Context(), caller)
	}, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	return s, nil
}

type callerKey struct{}

// ServeHTTP authenticates the caller, then answers as the MCP server.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.closed.Err() != nil {
		http.Error(w, "agentmux is shutting down", http.StatusServiceUnavailable)
		return
	}
	if browserShaped(r) {
		http.Error(w, "agentmux's MCP endpoint is for the agents agentmux runs, not for web pages", http.StatusForbidden)
		return
	}
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	caller, known := s.opts.Sessions.Caller(strings.TrimSpace(secret))
	if !ok || !known {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmux"`)
		http.Error(w, "no session's running agent holds this secret: send $"+sessions.EnvMCPSecret+" as a bearer token", http.StatusUnauthorized)
		return
	}
	s.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
}

// counts returns a session's change counts, zero when none are known.
func (s *Server) counts(sessionID string) (additions, deletions, files int) {
	if s.opts.Counts == nil {
		return 0, 0, 0
	}
	return s.opts.Counts(sessionID)
}

// browserShaped reports whether a browser made the request: only a
// browser sends Origin or the Sec-Fetch-* headers, and no page may set
// them.
func browserShaped(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	for name := range r.Header {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Sec-Fetch-") {
			return true
		}
	}
	return false
}

// The tools' hints to the agents, which may ask their user less for
// tools that change nothing.
var (
	yes, no  = true, false
	readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}
)

// define makes the tools every caller is served.
func (s *Server) define() ([]toolDef, error) {
	var defs []toolDef
	var errs []error
	add := func(d toolDef, err error) {
		defs = append(defs, d)
		errs = append(errs, err)
	}
	add(define(&mcp.Tool{
		Name:        "list_sessions",
		Annotations: readOnly,
		Description: "List every agentmux session: its id, name, agent, status (active, waiting for input, idle, error, stopped) and why (what it waits for), its git branch, how many lines it changed, and which session started it.",
	}, (*tools).listSessions))
	add(define(&mcp.Tool{
		Name:        "start_session",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no},
		Description: fmt.Sprintf("Start a new agentmux session: an agent (a profile such as claude, codex or shell), optionally in a new git worktree on a branch of its own (from a base you name), with a first prompt. Returns its id. You may have %d sessions you started at once, and sessions started %s. Refused when agentmux runs as many sessions as it may.", s.opts.MaxStarted, depthWords(s.opts.MaxDepth)),
	}, (*tools).startSession))
	add(define(&mcp.Tool{
		Name:        "send_prompt",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no},
		Description: "Queue a prompt for another session's agent: it is typed in as soon as the agent waits for input (at once if it waits now). The prompt is shown in agentmux as sent by you.",
	}, (*tools).sendPrompt))
	add(define(&mcp.Tool{
		Name:        "read_screen",
		Annotations: readOnly,
		Description: fmt.Sprintf("Read a session's terminal screen as text, as a person would see it (escape sequences interpreted, colours dropped), and optionally up to %d lines that scrolled off above it.", MaxScrollback),
	}, (*tools).readScreen))
	add(define(&mcp.Tool{
		Name:        "wait_for",
		Annotations: readOnly,
		Description: fmt.Sprintf("Wait until a session's agent waits for input or has exited, or until timeoutSeconds pass (at most %d), and say which.", int(MaxWait/time.Second)),
	}, (*tools).waitFor))
	add(define(&mcp.Tool{
		Name:        "get_diff",
		Annotations: readOnly,
		Description: "Get what a session changed against its base (for a worktree session, where its branch started): the files with their added and deleted lines, and the unified diff, cut at maxBytes.",
	}, (*tools).getDiff))
	add(define(&mcp.Tool{
		Name:        "stop_session",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &no},
		Description: "Stop and delete a session you started (its worktree and branch stay). Sessions you did not start are not yours to stop. Merging, pushing and deleting branches stay with people.",
	}, (*tools).stopSession))
	return defs, errors.Join(errs...)
}

// depthWords says how deep sessions may start sessions, as the tool's
// description finishes "sessions started ...".
func depthWords(depth int) string {
	if depth == 1 {
		return "by an agent cannot start more"
	}
	return fmt.Sprintf("by agents may start more up to %d levels below the session a person started", depth)
}

// Close ends the calls in progress, which say that agentmux is shutting
// down; the endpoint answers none after it.
func (s *Server) Close() { s.closeDone() }

// serverFor builds the MCP server that answers caller's request, whose
// context is req: the SDK does not end a tool's context when its request
// ends, so a wait ends on either, or at Close.
func (s *Server) serverFor(req context.Context, caller *sessions.Session) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentmux", Version: s.opts.Version}, nil)
	if caller == nil {
		return srv
	}
	t := &tools{srv: s, req: req, mgr: s.opts.Sessions, caller: caller, log: s.opts.Logger.With("session", caller.ID())}
	for _, d := range s.tools {
		srv.AddTool(d.tool, d.bind(t))
	}
	return srv
}
