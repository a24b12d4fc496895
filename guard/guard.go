// Package guard is the gate in front of every route of agentmux's HTTP
// server: the API, the WebSocket upgrade and the UI. agentmux hands out
// shells, so the gate is one chain, installed once on the whole router,
// that no route can be added beside:
//
//  1. security headers on every response, refusals included, so no page
//     on another origin can frame the UI or load anything from it;
//  2. the Host check: without a token only localhost, IP addresses and
//     the names the operator allowed are answered, which defeats DNS
//     rebinding;
//  3. the same-origin check (sameorigin's decision) of every request that
//     changes state and of every read of the API, and JSON bodies only
//     (but for the one upload route, see isUpload);
//  4. the token, when one is set, with signing in by ?token=; but for
//     the WebSocket of a read-only link's viewer (/ws?share=<secret>),
//     whose secret the hub checks and which grants that link alone.
//
// internal/sameorigin stays the decision alone, free of echo and of the
// API's error shape, because the WebSocket hub asks it too; this package
// applies it, with the Host and token checks, as echo middleware and
// answers refusals in the API's error shape with wire's codes.
package guard

import (
	"cmp"
	"crypto/subtle"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/ratelog"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/wire"
)

// TokenCookie carries the token after a browser signed in with ?token=.
const TokenCookie = "agentmux_token"

// HubTokenCookie is agentmux hub's TokenCookie. A browser keeps cookies
// by host, whatever the port: with one cookie for both, signing in to a
// hub on localhost:8090 would sign the browser out of the workspace on
// localhost:8080.
const HubTokenCookie = "agentmux_hub_token"

// refusalLogEvery is the least time between two log lines about refused
// cross-origin requests: a hostile page that retries in a loop cannot
// flood the log; the lines count the ones left out.
const refusalLogEvery = 10 * time.Second

// contentSecurityPolicy allows the page its own scripts only: no inline
// script, no framing by others; it may frame frames, the origins of the
// previews. Styles may be inline because xterm.js themes itself with a
// <style> element.
func contentSecurityPolicy(frames []string) string {
	frameSrc := "'none'"
	if len(frames) > 0 {
		frameSrc = strings.Join(frames, " ")
	}
	return "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; connect-src 'self'; frame-src " + frameSrc + "; " +
		"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// Options configure a Guard. The zero value guards with no token,
// answers localhost and IP addresses only, and trusts no other origin.
type Options struct {
	// Token, when not empty, must come with every request to /api (but
	// /api/health) and /ws: as "Authorization: Bearer <token>", or in
	// the cookie (Cookie). A page asked with ?token= signs the browser in.
	Token string
	// Cookie names the cookie that carries the token after signing in;
	// TokenCookie when empty.
	Cookie string
	// Frames are the sources (as a CSP names them) the UI may show in a
	// frame: the previews' origins. None when empty.
	Frames []string
	// Hosts are the names a request's Host may carry without a token,
	// besides localhost, *.localhost and IP addresses: a name, ".domain"
	// for every name under it, or "*" for any. With a token, every Host
	// is answered: the token is the guard.
	Hosts []string
	// Origins decides which web pages may change state; nil trusts the
	// server's own page only.
	Origins *sameorigin.Policy
	// Logger receives the refused cross-origin requests, at most one line
	// per 10 s; nil discards them.
	Logger *slog.Logger
}

// Guard is the gate. Its Middleware is safe for concurrent use.
type Guard struct {
	// csp is the Content-Security-Policy every response carries.
	csp      string
	token    string
	cookie   string
	hosts    []string
	origins  *sameorigin.Policy
	log      *slog.Logger
	refusals ratelog.Limiter
}

// New returns the gate opts describe.
func New(opts Options) *Guard {
	g := &Guard{
		csp:      contentSecurityPolicy(opts.Frames),
		token:    opts.Token,
		cookie:   cmp.Or(opts.Cookie, TokenCookie),
		hosts:    opts.Hosts,
		origins:  opts.Origins,
		log:      opts.Logger,
		refusals: ratelog.Limiter{Every: refusalLogEvery},
	}
	if g.origins == nil {
		g.origins = &sameorigin.Policy{}
	}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return g
}

// Middleware is the whole gate as one echo middleware, its checks in the
// order the package doc gives. Install it with Echo.Use, before any
// route, so that it wraps every one of them.
func (g *Guard) Middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return g.securityHeaders(g.checkHost(g.checkOrigin(g.requireToken(next))))
}

// refuse answers with an API error, as the API's handlers do. The
// message is bounded however it was made: a reply must not grow with
// what the client sent.
func refuse(c echo.Context, status int, code, msg string) error {
	return c.JSON(status, wire.NewErrorBody(code, textclip.Message(msg)))
}

// securityHeaders sets the headers every response carries; handlers may
// tighten them (GET /api/files sandboxes what it serves).
func (g *Guard) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", g.csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// No page on another origin may load anything from here, not even
		// as a script or an image (a workspace's .js, a session list).
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		return next(c)
	}
}

// checkHost refuses requests whose Host is a name the server was not told
// about, unless a token guards it. Without this, DNS rebinding lets any web
// page drive the agents: a page on evil.test whose name then resolves to
// 127.0.0.1 is, to the browser, same-origin with the server, origin check
// included. Rebinding needs a name, so IP addresses are fine, and so is
// localhost, which resolves on this machine only.
func (g *Guard) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		host := c.Request().Host
		if g.token != "" || host == "" || hostAllowed(host, g.hosts) {
			// No Host at all is HTTP/1.0 from a script (the image's
			// health check), never a browser.
			return next(c)
		}
		return refuse(c, http.StatusForbidden, wire.CodePermissionDenied, fmt.Sprintf(
			"Host %s is not allowed: without --token the server answers only to localhost, IP addresses and --allowed-hosts, "+
				"so other web pages cannot reach it through DNS rebinding; add the name with --allowed-hosts or set --token", textclip.Quote(host)))
	}
}

// hostAllowed reports whether hostport names this machine (localhost, an
// IP address) or one of allowed.
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
// upgrade, which opens terminals; and of every read of the API. Such a
// request must come from this server's own page, a trusted one or no web
// page at all, with or without a token: a page on another port of
// localhost is the same site, so the browser sends it the token's cookie.
// Bodies must be JSON, which no page on another origin can send without a
// CORS preflight that this server never grants.
func (g *Guard) checkOrigin(next echo.HandlerFunc) echo.HandlerFunc {
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
		if err := g.origins.Check(req); err != nil {
			g.noteRefusal(req, err)
			return refuse(c, http.StatusForbidden, wire.CodePermissionDenied, err.Error())
		}
		if !upgrade && req.Method != http.MethodGet && req.Method != http.MethodHead && !isUpload(req) {
			if err := sameorigin.CheckJSONBody(req); err != nil {
				return refuse(c, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType, err.Error())
			}
		}
		return next(c)
	}
}

// isUpload reports whether req is the one request whose body may be
// multipart/form-data rather than JSON: POST
// /api/sessions/<id>/attachments, a file for a session's agent, which the
// UI sends as FormData and API clients as curl -F. It is asked after the
// Origin check, which a page on another origin fails whatever its body:
// a form it posts carries its Origin (browsers send one on every
// cross-origin POST), so the JSON rule's defence, a preflight, is not
// needed here. Any other route keeps the JSON rule.
func isUpload(req *http.Request) bool {
	if req.Method != http.MethodPost {
		return false
	}
	rest, ok := strings.CutPrefix(req.URL.Path, "/api/sessions/")
	if !ok {
		return false
	}
	id, ok := strings.CutSuffix(rest, "/attachments")
	if !ok || id == "" || strings.Contains(id, "/") {
		return false
	}
	mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// noteRefusal logs a refused cross-origin request, rate-limited.
func (g *Guard) noteRefusal(r *http.Request, err error) {
	ok, suppressed := g.refusals.Allow()
	if !ok {
		return
	}
	g.log.Warn("refused a request from another web page", "method", r.Method, "path", r.URL.Path,
		"remote", r.RemoteAddr, "reason", err.Error(), "refused since last line", suppressed)
}

// requireToken enforces the token on /api and /ws (health excepted). The
// token may come as a Bearer header, as the cookie the UI sets, or once as
// ?token= on a page, which sets the cookie and redirects to the clean URL.
func (g *Guard) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if g.token == "" {
			return next(c)
		}
		req := c.Request()
		path := req.URL.Path
		if q := req.URL.Query().Get("token"); q != "" && !strings.HasPrefix(path, "/api/") && path != "/ws" {
			if !g.tokenOK(q) {
				return refuse(c, http.StatusUnauthorized, wire.CodeUnauthorized, "wrong token")
			}
			// No Path: the browser scopes the cookie to the directory of
			// the page it asked for, which behind a path-prefix proxy
			// (/proxy/8080/) is that prefix, and on a plain server "/".
			// Secure when the browser came over https, to this server or
			// to a proxy that says so: such a cookie is never sent over
			// plain http. (Trusting the header costs nothing: a browser
			// that came over http just keeps no Secure cookie.)
			c.SetCookie(&http.Cookie{Name: g.cookie, Value: q, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: CameOverHTTPS(req)})
			return c.Redirect(http.StatusSeeOther, signInRedirect(req.URL))
		}
		if (!strings.HasPrefix(path, "/api/") && path != "/ws") || path == "/api/health" {
			return next(c)
		}
		if path == "/ws" && req.URL.Query().Has("share") {
			// A viewer of a read-only link: the link's secret is its only
			// credential, and the WebSocket hub, which checks it, serves
			// such an upgrade as that link's viewer or not at all.
			return next(c)
		}
		var given string
		if auth := req.Header.Get("Authorization"); auth != "" {
			scheme, tok, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return refuse(c, http.StatusUnauthorized, wire.CodeUnauthorized, "the Authorization header must be \"Bearer <token>\"")
			}
			given = strings.TrimSpace(tok)
		} else if ck, err := req.Cookie(g.cookie); err == nil {
			given = ck.Value
		}
		if !g.tokenOK(given) {
			return refuse(c, http.StatusUnauthorized, wire.CodeUnauthorized, "missing or wrong token")
		}
		return next(c)
	}
}

// tokenOK reports whether given is the token, in constant time.
func (g *Guard) tokenOK(given string) bool {
	return subtle.ConstantTimeCompare([]byte(given), []byte(g.token)) == 1
}

// CameOverHTTPS reports whether the browser's request came over https,
// directly or through a proxy that says so (X-Forwarded-Proto, or
// Forwarded's proto=).
func CameOverHTTPS(req *http.Request) bool {
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
