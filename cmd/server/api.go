package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/review"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/worktree"
)

// maxBodyBytes bounds API request bodies: every body is a small JSON
// object, and one that is larger is refused with 413 before it is parsed.
const maxBodyBytes = 64 << 10

// errorJSON answers with an API error. The message is bounded however it
// was made: a reply must not grow with what the client sent.
func errorJSON(c echo.Context, status int, code, msg string) error {
	return c.JSON(status, wire.NewErrorBody(code, textclip.Message(msg)))
}

// sessionError answers a failure from the sessions package with its
// protocol code and the HTTP status that fits it.
func sessionError(c echo.Context, err error) error {
	code := wire.ErrorCode(err)
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, sessions.ErrRunning):
		status = http.StatusConflict
	case code == wire.CodeSessionNotFound:
		status = http.StatusNotFound
	case code == wire.CodeSessionLimitReached, code == wire.CodeSessionStoreFull:
		status = http.StatusConflict
	case code == wire.CodePTYSpawnFailed, code == wire.CodeInvalidMessage, code == wire.CodeWorktreeError:
		status = http.StatusBadRequest
	case code == wire.CodeWorktreeDirty, code == wire.CodeQueueFull, code == wire.CodeInputFull:
		status = http.StatusConflict
	case code == wire.CodePermissionDenied, code == wire.CodeMemoryCritical:
		status = http.StatusServiceUnavailable
	}
	return errorJSON(c, status, code, err.Error())
}

// newRouter returns the HTTP routes: the API, the WebSocket and the UI.
func (s *server) newRouter() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.httpError
	e.Use(s.guard.Middleware) // before any route: it must wrap them all

	api := e.Group("/api")
	api.GET("/health", s.health)
	api.GET("/config", s.config)
	api.GET("/sessions", s.listSessions)
	api.POST("/sessions", s.createSession)
	api.GET("/sessions/:id", s.getSession, boundSessionID)
	api.GET("/sessions/:id/diff", s.getDiff, boundSessionID)
	api.DELETE("/sessions/:id", s.deleteSession, boundSessionID)
	api.POST("/sessions/:id/resume", s.resumeSession, boundSessionID)
	api.POST("/sessions/:id/input", s.sessionInput, boundSessionID)
	api.POST("/sessions/:id/review", s.sendReview, boundSessionID)
	s.shipRoutes(api)
	api.GET("/ports", s.listPorts)
	api.POST("/ports/:port/preview", s.signInPreview)
	api.GET("/files", s.getFile)
	api.GET("/workflow", s.getWorkflow)
	api.GET("/documents", s.getDocuments)
	api.GET("/resources", s.getResources)
	api.Any("/*", func(c echo.Context) error {
		return errorJSON(c, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no API route %s %s", clip(c.Request().Method), clip(c.Request().URL.Path)))
	})
	e.GET("/ws", func(c echo.Context) error {
		s.hub.ServeHTTP(c.Response(), c.Request())
		return nil // the hub answered, upgrade or error alike
	})
	e.GET("/*", echo.WrapHandler(s.assets))
	return e
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
// most maxBodyBytes, no unknown fields; an empty body leaves v as it is.
// A failure has already been answered (400, or 413 for a body too large)
// when it returns false.
func decodeBody(c echo.Context, v any) (ok bool, _ error) {
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return false, errorJSON(c, http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge,
			fmt.Sprintf("the request body is over %d bytes; API bodies are small JSON objects", maxBodyBytes))
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

// httpError renders echo's own errors (unknown route, wrong method) in the
// API's error shape.
func (s *server) httpError(err error, c echo.Context) {
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
		s.log.Error("request failed", "path", c.Request().URL.Path, "err", err)
	}
	if err := errorJSON(c, status, code, msg); err != nil {
		s.log.Debug("write error response", "err", err)
	}
}

// allowedHosts is what the guard answers without a token besides
// localhost and IP addresses: --allowed-hosts and the hosts of
// --allowed-origins.
func allowedHosts(cfg config) []string {
	allowed := slices.Clone(cfg.AllowedHosts)
	for _, o := range cfg.AllowedOrigins {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			allowed = append(allowed, strings.ToLower(u.Hostname()))
		}
	}
	return allowed
}

func (s *server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{
		"status":   "ok",
		"version":  version,
		"uptimeMs": time.Since(s.started).Milliseconds(),
	})
}

// config tells the UI what it cannot know otherwise: where the workspace
// is (file.changed carries absolute paths), how many sessions may run, and
// whether the workspace is a git repository git will work in (asked each
// time: a user may run git init meanwhile), without which the UI offers
// no worktree; when git refuses it for its owner, gitRefusal says so in
// words, for the UI to show instead of "not a repository".
func (s *server) config(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), gitAskTimeout)
	defer cancel()
	repoErr := worktree.CheckRepository(ctx, s.cfg.Workspace)
	body := map[string]any{
		"workspace":     s.cfg.Workspace,
		"maxSessions":   s.mgr.MaxSessions(),
		"keepSessions":  s.mgr.KeepSessions(),
		"version":       version,
		"gitRepository": repoErr == nil,
	}
	if errors.Is(repoErr, worktree.ErrUntrusted) {
		body["gitRefusal"] = repoErr.Error()
	}
	return c.JSON(http.StatusOK, body)
}

// gitAskTimeout bounds the git command behind GET /api/config's
// gitRepository; one that takes longer answers false.
const gitAskTimeout = 2 * time.Second

func (s *server) listSessions(c echo.Context) error {
	list := s.mgr.List()
	out := make([]wire.Session, len(list))
	for i, sess := range list {
		out[i] = wire.SessionView(sess.Info())
	}
	return c.JSON(http.StatusOK, map[string]any{"sessions": out})
}

func (s *server) getSession(c echo.Context) error {
	sess, err := s.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"session": wire.SessionView(sess.Info())})
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

func (s *server) createSession(c echo.Context) error {
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
	sess, err := s.mgr.Create(sessions.CreateOptions{
		Name: req.Name, Cwd: req.Cwd, Agent: req.Agent, Command: req.Command, Cols: req.Cols, Rows: req.Rows,
		WorktreeBranch: branch,
	})
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusCreated, map[string]any{"session": wire.SessionView(sess.Info())})
}

func (s *server) deleteSession(c echo.Context) error {
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
		err = s.mgr.DestroyWithWorktree(c.Request().Context(), c.Param("id"), force)
	} else {
		err = s.mgr.Destroy(c.Request().Context(), c.Param("id"))
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
func (s *server) sendReview(c echo.Context) error {
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
	p, pos, err := s.app.SendReview(c.Param("id"), sessions.Author{ID: "api", Name: name}, req.Comments)
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"promptId": p.ID, "position": pos})
}

func (s *server) resumeSession(c echo.Context) error {
	sess, err := s.mgr.Resume(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"session": wire.SessionView(sess.Info())})
}
