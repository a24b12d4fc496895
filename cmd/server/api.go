package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	textclip "github.com/agentmux/agentmux/internal/clip"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/worktree"
)

// maxBodyBytes bounds API request bodies: every body is a small JSON
// object, and one that is larger is refused with 413 before it is parsed.
const maxBodyBytes = 64 << 10

// tokenCookie carries the token after the UI took it from ?token=.
const tokenCookie = "agentmux_token"

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
	case code == wire.CodeWorktreeDirty:
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
	e.Use(securityHeaders, s.checkHost, s.checkOrigin, s.requireToken)

	api := e.Group("/api")
	api.GET("/health", s.health)
	api.GET("/config", s.config)
	api.GET("/sessions", s.listSessions)
	api.POST("/sessions", s.createSession)
	api.GET("/sessions/:id", s.getSession, boundSessionID)
	api.GET("/sessions/:id/diff", s.getDiff, boundSessionID)
	api.DELETE("/sessions/:id", s.deleteSession, boundSessionID)
	api.POST("/sessions/:id/resume", s.resumeSession, boundSessionID)
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

// checkHost refuses requests whose Host is a name the server was not told
// about, unless a token guards it. Without this, DNS rebinding lets any web
// page drive the agents: a page on evil.test whose name then resolves to
// 127.0.0.1 is, to the browser, same-origin with the server, origin check
// included. Rebinding needs a name, so IP addresses are fine, and so is
// localhost, which resolves on this machine only.
func (s *server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	allowed := allowedHosts(s.cfg)
	return func(c echo.Context) error {
		host := c.Request().Host
		if s.cfg.Token != "" || host == "" || hostAllowed(host, allowed) {
			// No Host at all is HTTP/1.0 from a script (the image's
			// health check), never a browser.
			return next(c)
		}
		return errorJSON(c, http.StatusForbidden, wire.CodePermissionDenied, fmt.Sprintf(
			"Host %s is not allowed: without --token the server answers only to localhost, IP addresses and --allowed-hosts, "+
				"so other web pages cannot reach it through DNS rebinding; add the name with --allowed-hosts or set --token", textclip.Quote(host)))
	}
}

// allowedHosts is --allowed-hosts and the hosts of --allowed-origins.
func allowedHosts(cfg config) []string {
	allowed := slices.Clone(cfg.AllowedHosts)
	for _, o := range cfg.AllowedOrigins {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			allowed = append(allowed, strings.ToLower(u.Hostname()))
		}
	}
	return allowed
}

func hostAllowed(hostport string, allowed []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if net.ParseIP(host) != nil || host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	for _, a := range allowed {
		if a == "*" || a == host || strings.HasPrefix(a, ".") && strings.HasSuffix(host, a) {
			return true
		}
	}
	return false
}

// checkOrigin is the one same-origin check of every request that changes
// state: any method but GET, HEAD and OPTIONS, anywhere, and the WebSocket
// upgrade, which opens terminals; and of every read of the API. Such a request must come from this
// server's own page, an --allowed-origins one or no web page at all, with
// or without --token: a page on another port of localhost is the same
// site, so the browser sends it the token's cookie. Bodies must be JSON,
// which no page on another origin can send without a CORS preflight that
// this server never grants.
func (s *server) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		upgrade := req.URL.Path == "/ws"
		api := strings.HasPrefix(req.URL.Path, "/api/")
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			// Reads of the API are refused to other pages too: they could
			// not read the answer (no CORS), but would make the server
			// work (a diff runs git) for nothing.
			if !upgrade && (!api || req.Method == http.MethodOptions) {
				return next(c)
			}
		}
		if err := s.origins.Check(req); err != nil {
			s.noteRefusal(req, err)
			return errorJSON(c, http.StatusForbidden, wire.CodePermissionDenied, err.Error())
		}
		if !upgrade && req.Method != http.MethodGet && req.Method != http.MethodHead {
			if err := sameorigin.CheckJSONBody(req); err != nil {
				return errorJSON(c, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, err.Error())
			}
		}
		return next(c)
	}
}

// refusalLogEvery is the least time between two log lines about refused
// cross-origin requests: a hostile page that retries in a loop cannot
// flood the log; the lines count the ones left out.
const refusalLogEvery = 10 * time.Second

// noteRefusal logs a refused cross-origin request, rate-limited.
func (s *server) noteRefusal(r *http.Request, err error) {
	ok, suppressed := s.refusals.Allow()
	if !ok {
		return
	}
	s.log.Warn("refused a request from another web page", "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "reason", err.Error(), "refused since last line", suppressed)
}

// requireToken enforces --token on /api and /ws (health excepted). The token
// may come as a Bearer header, as the cookie the UI sets, or once as
// ?token= on a page, which sets the cookie and redirects to the clean URL.
func (s *server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Token == "" {
			return next(c)
		}
		req := c.Request()
		path := req.URL.Path
		if q := req.URL.Query().Get("token"); q != "" && !strings.HasPrefix(path, "/api/") && path != "/ws" {
			if !s.tokenOK(q) {
				return errorJSON(c, http.StatusUnauthorized, wire.CodeUnauthorized, "wrong token")
			}
			// No Path: the browser scopes the cookie to the directory of
			// the page it asked for, which behind a path-prefix proxy
			// (/proxy/8080/) is that prefix, and on a plain server "/".
			// Secure when the browser came over https, to this server or
			// to a proxy that says so: such a cookie is never sent over
			// plain http. (Trusting the header costs nothing: a browser
			// that came over http just keeps no Secure cookie.)
			c.SetCookie(&http.Cookie{Name: tokenCookie, Value: q, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: cameOverHTTPS(req)})
			return c.Redirect(http.StatusSeeOther, signInRedirect(req.URL))
		}
		if (!strings.HasPrefix(path, "/api/") && path != "/ws") || path == "/api/health" {
			return next(c)
		}
		var given string
		if auth := req.Header.Get("Authorization"); auth != "" {
			scheme, tok, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return errorJSON(c, http.StatusUnauthorized, wire.CodeUnauthorized, "the Authorization header must be \"Bearer <token>\"")
			}
			given = strings.TrimSpace(tok)
		} else if ck, err := req.Cookie(tokenCookie); err == nil {
			given = ck.Value
		}
		if !s.tokenOK(given) {
			return errorJSON(c, http.StatusUnauthorized, wire.CodeUnauthorized, "missing or wrong token")
		}
		return next(c)
	}
}

// cameOverHTTPS reports whether the browser's request came over https,
// directly or through a proxy that says so (X-Forwarded-Proto, or
// Forwarded's proto=).
func cameOverHTTPS(req *http.Request) bool {
	if req.TLS != nil || strings.EqualFold(strings.TrimSpace(strings.Split(req.Header.Get("X-Forwarded-Proto"), ",")[0]), "https") {
		return true
	}
	for _, part := range strings.Split(strings.Split(req.Header.Get("Forwarded"), ",")[0], ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && strings.EqualFold(k, "proto") {
			return strings.EqualFold(strings.Trim(v, `"`), "https")
		}
	}
	return false
}

// signInRedirect is where signing in sends the browser: the page it asked
// for, without the token. The address is relative to that page (its last
// segment), so it holds behind a proxy that serves the server under a path
// prefix the server never sees; "./" keeps a segment with a colon from
// reading as a scheme, and a relative address cannot name another host.
func signInRedirect(u *url.URL) string {
	p := u.EscapedPath()
	loc := "./" + p[strings.LastIndex(p, "/")+1:]
	query := u.Query()
	query.Del("token")
	if q := query.Encode(); q != "" {
		loc += "?" + q
	}
	return loc
}

func (s *server) tokenOK(given string) bool {
	return subtle.ConstantTimeCompare([]byte(given), []byte(s.cfg.Token)) == 1
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

// contentSecurityPolicy allows the page its own scripts only: no inline
// script, no framing by others. Styles may be inline because xterm.js
// themes itself with a <style> element.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the headers every response carries; handlers may
// tighten them (GET /api/files sandboxes what it serves).
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// No page on another origin may load anything from here, not even
		// as a script or an image (a workspace's .js, a session list).
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		return next(c)
	}
}

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

func (s *server) resumeSession(c echo.Context) error {
	sess, err := s.mgr.Resume(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, map[string]any{"session": wire.SessionView(sess.Info())})
}
