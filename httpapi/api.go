// Package httpapi is agentmux's HTTP API: the routes under /api, their
// request and reply types, and how a failure is answered (wire's one
// mapping from domain errors to codes and statuses). Its handlers decode,
// check and hand over to the domain (sessions, ship, checkpoint, changes,
// the watchers, previews, ports and workspace scripts) and to the
// application state they share with the WebSocket, which Options names by
// what it does.
//
// It does not own the echo instance, the listener, the WebSocket, the
// static assets or the guard: cmd/server builds those and registers these
// routes behind the guard, whose same-origin and token checks every route,
// state-changing or not, goes through first.
package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/review"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/worktree"
)

// Reviews sends review comments on a session's changes as one queued
// prompt: the subset of the application's review state the API uses.
type Reviews interface {
	SendReview(id string, author sessions.Author, comments []review.Comment) (sessions.Prompt, int, error)
}

// Announcer tells every client what a request did to a session's branch
// or checkpoints, and who answered a waiting session.
type Announcer interface {
	OnBranch(m wire.BranchMessage)
	OnCheckpoint(sessionID string, cp checkpoint.Checkpoint)
	OnAnswered(m wire.AnsweredMessage)
}

// OverlapLister lists the overlaps between sessions' changes (collab's).
type OverlapLister interface {
	Overlaps() []wire.Overlap
}

// Checks gives the results of the check script on a session's
// checkpoints, by checkpoint id (package checks).
type Checks interface {
	Results(session string) (map[int]scripts.Result, error)
}

// Previews is the subset of the preview proxy the API uses: the address
// of a port's preview, plain or signed in, for the page that asks.
type Previews interface {
	URL(host string, port int, secure bool) string
	SignInURL(host string, port int, secure bool) (string, error)
}

// PortLister lists the ports listening in the container.
type PortLister interface {
	List() ([]ports.Port, error)
}

// MemoryStatus reads the memory monitor.
type MemoryStatus interface {
	Status() memory.Status
}

// WatchedTree is a session worktree's watcher, whose documents GET
// /api/documents lists with the workspace's.
type WatchedTree struct {
	SessionID string
	// Prefix is the worktree's directory relative to the workspace, with
	// a trailing slash.
	Prefix  string
	Watcher *watcher.Workspace
}

// Options are what the API serves from. Every field is required unless it
// says otherwise.
type Options struct {
	// Sessions is the session manager.
	Sessions *sessions.Manager
	// Workspace is the workspace's absolute path: GET /api/files serves
	// files under it, and GET /api/config names it.
	Workspace string
	// Files watches the workspace: its documents and its workflow.
	Files *watcher.Workspace
	// Worktrees returns the session worktrees' watchers; nil lists the
	// workspace's documents only.
	Worktrees func() []WatchedTree
	// Memory is the memory monitor GET /api/resources reads.
	Memory MemoryStatus
	// Ports lists the listening ports for GET /api/ports.
	Ports PortLister
	// Previews addresses the ports' previews.
	Previews Previews
	// IsOwnPort reports whether a port is one agentmux listens on, which
	// is never previewed; nil means none is.
	IsOwnPort func(port int) bool
	// Reviews sends review comments (POST /api/sessions/:id/review).
	Reviews Reviews
	// Announce tells the clients what a branch or checkpoint request did.
	Announce Announcer
	// Overlaps lists the overlaps between sessions' changes for GET
	// /api/overlaps; nil lists none.
	Overlaps OverlapLister
	// Checkpoints bound what a checkpoint keeps of untracked files; the
	// zero value is checkpoint's defaults.
	Checkpoints checkpoint.Options
	// Scripts reads the workspace scripts in force and keeps their
	// approvals (GET /api/scripts, POST /api/scripts/approve).
	Scripts *scripts.Trust
	// PullRequests opens and follows sessions' pull requests
	// (/api/sessions/:id/pull-request); nil serves none.
	PullRequests *pulls.Service
	// Attachments stores the files POST /api/sessions/:id/attachments
	// receives; nil answers that route 404.
	Attachments *attachments.Store
	// Checks gives the checks of sessions' checkpoints, which the list of
	// checkpoints shows; nil shows none.
	Checks Checks
	// Shares are the read-only links to sessions (/api/sessions/:id/shares).
	Shares *share.Links
	// Viewers counts who watches through each link, for their listing.
	Viewers ViewerCounter
	// Name is the workspace's name, as GET /api/config tells it.
	Name string
	// Version is the server's, as /api/health and /api/config tell it.
	Version string
	// Started is when the server started, for /api/health's uptime; the
	// zero value is when New was called.
	Started time.Time
	// Logger receives the API's logs; nil discards them.
	Logger *slog.Logger
}

// API serves the routes under /api.
type API struct {
	opts Options
	mgr  *sessions.Manager
	log  *slog.Logger
}

// New returns the API serving from opts.
func New(opts Options) (*API, error) {
	switch {
	case opts.Sessions == nil:
		return nil, errors.New("httpapi: no session manager")
	case opts.Workspace == "":
		return nil, errors.New("httpapi: no workspace")
	case opts.Files == nil, opts.Memory == nil, opts.Ports == nil, opts.Previews == nil, opts.Reviews == nil, opts.Announce == nil, opts.Scripts == nil,
		opts.Shares == nil, opts.Viewers == nil:
		return nil, errors.New("httpapi: the workspace watcher, memory monitor, port lister, previews, reviews, announcer, scripts, share links and viewers are required")
	}
	if opts.Worktrees == nil {
		opts.Worktrees = func() []WatchedTree { return nil }
	}
	if opts.IsOwnPort == nil {
		opts.IsOwnPort = func(int) bool { return false }
	}
	if opts.Started.IsZero() {
		opts.Started = time.Now()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &API{opts: opts, mgr: opts.Sessions, log: log}, nil
}

// MaxBodyBytes bounds API request bodies: every body is a small JSON
// object, and one that is larger is refused with 413 before it is parsed.
const MaxBodyBytes = 64 << 10

// WriteError answers with an API error. The message is bounded however it
// was made: a reply must not grow with what the client sent.
func WriteError(c echo.Context, status int, code, msg string) error {
	return c.JSON(status, wire.NewErrorBody(code, textclip.Message(msg)))
}

// errorJSON is WriteError, named short for the handlers here.
func errorJSON(c echo.Context, status int, code, msg string) error {
	return WriteError(c, status, code, msg)
}

// sessionError answers a failure from the domain (the sessions package,
// mostly) with the code and status wire's mapping gives it.
func sessionError(c echo.Context, err error) error {
	code, status := wire.ErrorStatus(err)
	return errorJSON(c, status, code, err.Error())
}

// Register adds the API's routes to api, the group for /api, with a
// catch-all that answers any other path under it with the API's 404.
func (a *API) Register(api *echo.Group) {
	api.GET("/health", a.health)
	api.GET("/config", a.config)
	api.GET("/sessions", a.listSessions)
	api.POST("/sessions", a.createSession)
	api.GET("/sessions/:id", a.getSession, boundSessionID)
	api.GET("/sessions/:id/diff", a.getDiff, boundSessionID)
	api.DELETE("/sessions/:id", a.deleteSession, boundSessionID)
	api.PATCH("/sessions/:id", a.patchSession, boundSessionID)
	api.POST("/sessions/:id/resume", a.resumeSession, boundSessionID)
	api.POST("/sessions/:id/setup", a.retrySetup, boundSessionID)
	api.POST("/sessions/:id/run", a.startRun, boundSessionID)
	api.DELETE("/sessions/:id/run", a.stopRun, boundSessionID)
	api.POST("/sessions/:id/input", a.sessionInput, boundSessionID)
	api.POST("/sessions/:id/answer", a.answer, boundSessionID)
	api.POST("/sessions/:id/review", a.sendReview, boundSessionID)
	a.registerShares(api)
	a.registerPullRequests(api)
	api.POST("/sessions/:id/attachments", a.postAttachment, boundSessionID)
	a.shipRoutes(api)
	api.GET("/overlaps", a.getOverlaps)
	api.GET("/ports", a.listPorts)
	api.POST("/ports/:port/preview", a.signInPreview)
	api.GET("/files", a.getFile)
	api.GET("/workflow", a.getWorkflow)
	api.GET("/documents", a.getDocuments)
	api.GET("/resources", a.getResources)
	api.GET("/usage", a.getUsage)
	api.GET("/scripts", a.getScripts)
	api.POST("/scripts/approve", a.approveScripts)
	api.PUT("/scripts/settings", a.putScriptSettings)
	api.Any("/*", func(c echo.Context) error {
		return errorJSON(c, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no API route %s %s", clip(c.Request().Method), clip(c.Request().URL.Path)))
	})
}

// boundSessionID answers a session route whose id is too long to be one
// without echoing it: errors quote the id, and a reply must not grow with
// what the client sent.
func boundSessionID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(c.Param("id")) > wire.MaxSessionIDLen {
			return errorJSON(c, http.StatusNotFound, wire.CodeSessionNotFound,
				fmt.Sprintf("no such session: session ids are UUIDs of %d characters", wire.MaxSessionIDLen))
		}
		return next(c)
	}
}

// clip bounds request text quoted in an error.
func clip(s string) string { return textclip.String(s, textclip.Quoted, "...") }

// decodeBody decodes a request's JSON body into v: one JSON object of at
// most MaxBodyBytes, no unknown fields; an empty body leaves v as it is.
// A failure has already been answered (400, or 413 for a body too large)
// when it returns false.
func decodeBody(c echo.Context, v any) (ok bool, _ error) {
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return false, errorJSON(c, http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge,
			fmt.Sprintf("the request body is over %d bytes; API bodies are small JSON objects", MaxBodyBytes))
	}
	if err != nil {
		// The decoder's message may quote a field name of any length.
		return false, errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "bad request body: "+clip(err.Error()))
	}
	if dec.More() {
		return false, errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "bad request body: more than one JSON value")
	}
	return true, nil
}

// ErrorHandler returns the echo error handler that renders echo's own
// errors (unknown route, wrong method) in the API's error shape, logging
// the server's own failures to log.
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) { httpError(log, err, c) }
}

func httpError(log *slog.Logger, err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, msg := http.StatusInternalServerError, err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status, msg = he.Code, fmt.Sprint(he.Message)
	}
	code := wire.CodeInternal
	switch status {
	case http.StatusNotFound:
		code = wire.CodeNotFound
	case http.StatusMethodNotAllowed:
		code = wire.CodeMethodNotAllowed
	}
	if status >= 500 {
		log.Error("request failed", "path", c.Request().URL.Path, "err", err)
	}
	if err := errorJSON(c, status, code, msg); err != nil {
		log.Debug("write error response", "err", err)
	}
}

// health answers whether the server is up and, while saving the sessions
// fails, that it is degraded and why. Degraded is still 200: probes that
// restart a server whose answer fails would end every running agent,
// and a restart frees no disk.
func (a *API) health(c echo.Context) error {
	r := HealthReply{Status: "ok", Version: a.opts.Version, UptimeMs: time.Since(a.opts.Started).Milliseconds()}
	if st := a.mgr.SaveStatus(); st.Failing {
		v := wire.SaveStatusView(st)
		r.Status = "degraded"
		r.Reason = fmt.Sprintf("%s Since %s (%s ago), database %s: %s. %s", v.Message,
			st.Since.UTC().Format(time.RFC3339), time.Since(st.Since).Round(time.Second), v.Database, v.Error, v.Advice)
	}
	return c.JSON(http.StatusOK, r)
}

// config tells the UI what it cannot know otherwise: where the workspace
// is (file.changed carries absolute paths), how many sessions may run, and
// whether the workspace is a git repository git will work in (asked each
// time: a user may run git init meanwhile), without which the UI offers
// no worktree; when git refuses it for its owner, gitRefusal says so in
// words, for the UI to show instead of "not a repository".
func (a *API) config(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), gitAskTimeout)
	defer cancel()
	repoErr := worktree.CheckRepository(ctx, a.opts.Workspace)
	body := ConfigReply{
		Workspace:     a.opts.Workspace,
		MaxSessions:   a.mgr.MaxSessions(),
		KeepSessions:  a.mgr.KeepSessions(),
		Version:       a.opts.Version,
		Name:          a.opts.Name,
		GitRepository: repoErr == nil,
	}
	if errors.Is(repoErr, worktree.ErrUntrusted) {
		body.GitRefusal = repoErr.Error()
	}
	return c.JSON(http.StatusOK, body)
}

// gitAskTimeout bounds the git command behind GET /api/config's
// gitRepository; one that takes longer answers false.
const gitAskTimeout = 2 * time.Second

func (a *API) listSessions(c echo.Context) error {
	list := a.mgr.List()
	out := make([]wire.Session, len(list))
	for i, sess := range list {
		out[i] = wire.SessionView(sess.Info())
	}
	return c.JSON(http.StatusOK, SessionsReply{Sessions: out})
}

func (a *API) getSession(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, SessionReply{Session: wire.SessionView(sess.Info())})
}

// createRequest is the body of POST /api/sessions; every field is optional.
type createRequest struct {
	Name     string   `json:"name"`
	Cwd      string   `json:"cwd"`
	Agent    string   `json:"agent"`
	Command  []string `json:"command"`
	Cols     int      `json:"cols"`
	Rows     int      `json:"rows"`
	Worktree *struct {
		Branch string `json:"branch"`
	} `json:"worktree"`
}

func (a *API) createSession(c echo.Context) error {
	var req createRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	var branch string
	if req.Worktree != nil {
		if branch = req.Worktree.Branch; branch == "" {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "bad request body: worktree needs a branch")
		}
	}
	sess, err := a.mgr.Create(sessions.CreateOptions{
		Name: req.Name, Cwd: req.Cwd, Agent: req.Agent, Command: req.Command, Cols: req.Cols, Rows: req.Rows,
		WorktreeBranch: branch,
	})
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusCreated, SessionReply{Session: wire.SessionView(sess.Info())})
}

func (a *API) deleteSession(c echo.Context) error {
	var removeWorktree, force bool
	for name, v := range map[string]*bool{"removeWorktree": &removeWorktree, "force": &force} {
		q := c.QueryParam(name)
		if q == "" {
			continue
		}
		b, err := strconv.ParseBool(q)
		if err != nil {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("%s=%s: want true or false", name, textclip.Quote(q)))
		}
		*v = b
	}
	if force && !removeWorktree {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "force=true only applies with removeWorktree=true")
	}
	var err error
	if removeWorktree {
		err = a.mgr.DestroyWithWorktree(c.Request().Context(), c.Param("id"), force)
	} else {
		err = a.mgr.Destroy(c.Request().Context(), c.Param("id"))
	}
	if err != nil {
		return sessionError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// reviewRequest is POST /api/sessions/:id/review's body.
type reviewRequest struct {
	Comments []review.Comment `json:"comments"`
	// Author is the name the prompt is queued under; "api" when empty.
	Author string `json:"author"`
}

// sendReview queues review comments on a session's changes as one
// prompt, as a draft's send does, without the draft.
func (a *API) sendReview(c echo.Context) error {
	var req reviewRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	if len(req.Comments) == 0 {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "comments: give at least one")
	}
	name := cmp.Or(req.Author, "api")
	if err := sessions.CheckName(name); err != nil {
		return sessionError(c, fmt.Errorf("author: %w", err))
	}
	// Comments sent this way are the request's, whatever they claim.
	for i := range req.Comments {
		req.Comments[i].ID, req.Comments[i].Author, req.Comments[i].At = "", review.Author{}, time.Time{}
	}
	p, pos, err := a.opts.Reviews.SendReview(c.Param("id"), sessions.Author{ID: "api", Name: name}, req.Comments)
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, QueuedReply{PromptID: p.ID, Position: pos})
}

// patchRequest is the body of PATCH /api/sessions/:id: the session's
// settings to change; one left out stays as it is.
type patchRequest struct {
	SendFailures *bool `json:"sendFailures"`
	// ContinueAfterLimit turns the continue prompt at the reset of the
	// usage limit that stopped the session on or off.
	ContinueAfterLimit *bool `json:"continueAfterLimit"`
}

func (a *API) patchSession(c echo.Context) error {
	var req patchRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	if req.SendFailures == nil && req.ContinueAfterLimit == nil {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "nothing to change: the body sets no setting (there are sendFailures and continueAfterLimit, each true or false)")
	}
	if req.ContinueAfterLimit != nil {
		// First: it is refused for a session not limited, and then
		// nothing changes.
		if err := a.mgr.SetContinue(c.Param("id"), *req.ContinueAfterLimit); err != nil {
			return sessionError(c, err)
		}
	}
	if req.SendFailures != nil {
		if err := a.mgr.SetSendFailures(c.Param("id"), *req.SendFailures); err != nil {
			return sessionError(c, err)
		}
	}
	return a.getSession(c)
}

// retrySetup runs a worktree session's setup script again; its agent
// starts when it succeeds.
func (a *API) retrySetup(c echo.Context) error {
	sess, err := a.mgr.RetrySetup(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, SessionReply{Session: wire.SessionView(sess.Info())})
}

// startRun starts the run script in force for a session, in its run
// session (restarted when it runs), in the run mode in force.
func (a *API) startRun(c echo.Context) error {
	set, err := a.opts.Scripts.Load()
	if err != nil {
		return sessionError(c, err)
	}
	sc, ok := set.Get(scripts.Run)
	if !ok || !a.opts.Scripts.Approved(sc) {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "no run script may run: the workspace has none (agentmux.json's scripts.run, or --run-script), or it waits for approval")
	}
	run, err := a.mgr.StartRun(c.Request().Context(), c.Param("id"), sc, set.RunMode)
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, SessionReply{Session: wire.SessionView(run.Info())})
}

// stopRun stops a session's run script; its run session stays listed.
func (a *API) stopRun(c echo.Context) error {
	if err := a.mgr.StopRun(c.Request().Context(), c.Param("id")); err != nil {
		return sessionError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *API) resumeSession(c echo.Context) error {
	sess, err := a.mgr.Resume(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, SessionReply{Session: wire.SessionView(sess.Info())})
}
