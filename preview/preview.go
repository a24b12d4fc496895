// Package preview serves the web servers agents start, each on an origin
// of its own: port 5173 at http://5173.localhost:<agentmux's port>/ (or
// 5173.<domain> behind a proxy), proxied to 127.0.0.1:5173. A previewed
// app's scripts then never share agentmux's origin, so the same-origin
// checks that guard the API and the WebSocket refuse them as they refuse
// any other site; and a preview origin serves the app and nothing of
// agentmux's.
//
// With a token, a preview origin asks for it too: a browser signs in
// there with a short-lived ticket the UI gets from agentmux's own origin,
// which sets a cookie of that origin alone.
package preview

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const (
	// MinPort is the lowest port previewed: below it are system services.
	MinPort = 1024
	// cookieName carries a preview origin's sign-in.
	cookieName = "agentmux_preview"
	// SignInPath is where a preview origin takes a ticket; an app is
	// unlikely to have a page there.
	SignInPath = "/.agentmux/sign-in"
	// ticketLife is how long a sign-in ticket may be used.
	ticketLife = time.Minute
)

// Options configure Previews.
type Options struct {
	// Domain, when set, serves port P also at P.<Domain>, for a proxy in
	// front of agentmux that routes the domain's names to it.
	Domain string
	// Token, when set, is asked for on every preview origin.
	Token string
	// Own reports agentmux's own ports, which are never proxied. Required.
	Own func(port int) bool
	// Logger receives what goes wrong; nil means slog.Default().
	Logger *slog.Logger
}

// Previews routes the requests whose Host names a preview.
type Previews struct {
	opts Options
	// key signs tickets and cookies; derived from the token.
	key []byte
	log *slog.Logger
	// transport carries every preview's requests, keeping connections
	// to the dev servers alive between them.
	transport *http.Transport
}

// New returns Previews for opts.
func New(opts Options) (*Previews, error) {
	if opts.Own == nil {
		return nil, errors.New("preview: Options.Own is required")
	}
	opts.Domain = strings.ToLower(strings.Trim(opts.Domain, "."))
	p := &Previews{opts: opts, log: opts.Logger, transport: newTransport()}
	if p.log == nil {
		p.log = slog.Default()
	}
	if opts.Token != "" {
		m := hmac.New(sha256.New, []byte(opts.Token))
		m.Write([]byte("agentmux preview"))
		p.key = m.Sum(nil)
	}
	return p, nil
}

// Port returns the port a request's Host names as a preview: P.localhost
// or P.<Domain>, with or without agentmux's port.
func (p *Previews) Port(host string) (int, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	label, ok := strings.CutSuffix(host, ".localhost")
	if !ok && p.opts.Domain != "" {
		label, ok = strings.CutSuffix(host, "."+p.opts.Domain)
	}
	if !ok || label == "" || len(label) > 5 || label[0] == '0' || strings.Trim(label, "0123456789") != "" {
		return 0, false
	}
	port, err := strconv.Atoi(label)
	if err != nil || port > 65535 {
		return 0, false
	}
	return port, true
}

// Close drops the connections kept open to dev servers.
func (p *Previews) Close() { p.transport.CloseIdleConnections() }

// FrameSources are the previews' origins as a Content-Security-Policy
// names them, for agentmux's page to show them in a frame.
func FrameSources(domain string) []string {
	srcs := []string{"http://*.localhost:*", "https://*.localhost:*"}
	if d := strings.ToLower(strings.Trim(domain, ".")); d != "" {
		srcs = append(srcs, "http://*."+d+":*", "https://*."+d+":*")
	}
	return srcs
}

// Split sends the requests whose Host names a preview to the preview, and
// every other request to next: agentmux's API, WebSocket and UI are never
// served on a preview origin.
func (p *Previews) Split(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if port, ok := p.Port(r.Host); ok {
			p.serve(w, r, port)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// URL is where port's preview is, for a page of agentmux's served at
// host (its Host, with its port): on the preview domain when host is
// under it, else on localhost.
func (p *Previews) URL(host string, port int, secure bool) string {
	scheme := "http"
	if secure {
		scheme = "https"
	}
	name, hostPort, err := net.SplitHostPort(host)
	if err != nil {
		name, hostPort = host, ""
	}
	suffix := "localhost"
	if d := p.opts.Domain; d != "" && (name == d || strings.HasSuffix(name, "."+d)) {
		suffix = d
	}
	u := scheme + "://" + strconv.Itoa(port) + "." + suffix
	if hostPort != "" {
		u += ":" + hostPort
	}
	return u + "/"
}

// SignInURL is URL with a ticket that signs a browser in on that origin,
// for a page already signed in on agentmux's; without a token, URL.
func (p *Previews) SignInURL(host string, port int, secure bool) string {
	u := p.URL(host, port, secure)
	if p.key == nil {
		return u
	}
	return strings.TrimSuffix(u, "/") + SignInPath + "?ticket=" + url.QueryEscape(p.ticket(port, time.Now().Add(ticketLife)))
}

// ticket signs port until expiry.
func (p *Previews) ticket(port int, expiry time.Time) string {
	exp := strconv.FormatInt(expiry.Unix(), 10)
	return exp + "." + p.sign("ticket", port, exp)
}

// sign is the key's MAC of what, port and extra.
func (p *Previews) sign(what string, port int, extra string) string {
	m := hmac.New(sha256.New, p.key)
	fmt.Fprintf(m, "%s\x00%d\x00%s", what, port, extra)
	return hex.EncodeToString(m.Sum(nil))
}

// validTicket reports whether t signs port and has not expired.
func (p *Previews) validTicket(t string, port int) bool {
	exp, mac, ok := strings.Cut(t, ".")
	unix, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || time.Now().Unix() > unix {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(mac), []byte(p.sign("ticket", port, exp))) == 1
}

// signedIn reports whether r carries the token or port's cookie.
func (p *Previews) signedIn(r *http.Request, port int) bool {
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
		subtle.ConstantTimeCompare([]byte(auth), []byte(p.opts.Token)) == 1 {
		return true
	}
	c, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(p.sign("cookie", port, ""))) == 1
}

func (p *Previews) serve(w http.ResponseWriter, r *http.Request, port int) {
	switch {
	case port < MinPort:
		page(w, http.StatusForbidden, "Not previewed", fmt.Sprintf("Ports below %d are system services: agentmux does not preview port %d.", MinPort, port), false)
		return
	case p.opts.Own(port):
		page(w, http.StatusForbidden, "Not previewed", fmt.Sprintf("Port %d is agentmux's own.", port), false)
		return
	}
	if p.key != nil {
		if r.URL.Path == SignInPath {
			p.signIn(w, r, port)
			return
		}
		if !p.signedIn(r, port) {
			page(w, http.StatusUnauthorized, "Sign in from agentmux",
				fmt.Sprintf("This preview of port %d asks for agentmux's token: open it from agentmux's Preview view, which signs you in here.", port), false)
			return
		}
	}
	// A dev server's hot reload holds its WebSocket (or event stream)
	// open for as long as the page is: the listener's deadlines, made
	// for agentmux's own short requests, would cut it.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	p.proxy(port).ServeHTTP(w, r)
}

// signIn takes a ticket and, when it is good, sets the origin's cookie.
func (p *Previews) signIn(w http.ResponseWriter, r *http.Request, port int) {
	if !p.validTicket(r.URL.Query().Get("ticket"), port) {
		page(w, http.StatusUnauthorized, "Sign-in link expired",
			"This sign-in link is not valid (they last a minute): open the preview again from agentmux.", false)
		return
	}
	// The preview is shown in a frame of agentmux's page, another site:
	// a browser sets and sends a cookie there only if it is SameSite=None,
	// which must be Secure (browsers count http://*.localhost as secure),
	// and Partitioned keeps it to frames of that page (CHIPS). Over plain
	// http on a preview domain, the browser drops it: use https there.
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: p.sign("cookie", port, ""), Path: "/",
		HttpOnly: true, SameSite: http.SameSiteNoneMode, Secure: true, Partitioned: true,
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// proxy is the reverse proxy to port. Dev servers check the Host they are
// asked for (Vite's allowedHosts, webpack-dev-server's host check) and
// the Origin of their hot-reload socket: both are sent as localhost:port,
// what they accept by default, with the preview's own in X-Forwarded-*.
func (p *Previews) proxy(port int) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	local := "localhost:" + strconv.Itoa(port)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = local
			if o := pr.In.Header.Get("Origin"); o != "" {
				pr.Out.Header.Set("Origin", "http://"+local)
			}
			removeCookie(pr.Out, cookieName)
		},
		Transport: p.transport,
		// Stream as it comes: event streams and chunked pages.
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if errors.Is(err, syscall.ECONNREFUSED) {
				page(w, http.StatusBadGateway, "Nothing listens on "+strconv.Itoa(port)+" yet",
					fmt.Sprintf("Nothing listens on port %d yet. This page reloads itself until something does.", port), true)
				return
			}
			p.log.Debug("preview proxy failed", "port", port, "err", err)
			page(w, http.StatusBadGateway, "Preview failed", fmt.Sprintf("Port %d did not answer: %v", port, err), true)
		},
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
	}
}

// newTransport returns a transport that reaches a port on the loopback
// address: 127.0.0.1, else ::1, where a dev server that listens on
// "localhost" may have bound alone.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", port))
		if errors.Is(err, syscall.ECONNREFUSED) {
			if c6, err6 := d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", port)); err6 == nil {
				return c6, nil
			}
		}
		return c, err
	}
	t.Proxy = nil // the dev server is here, whatever HTTP_PROXY says
	return t
}

// removeCookie drops name from r's cookies: the preview's sign-in is for
// agentmux, not for the app behind it.
func removeCookie(r *http.Request, name string) {
	cookies := r.Cookies()
	r.Header.Del("Cookie")
	for _, c := range cookies {
		if c.Name != name {
			r.AddCookie(c)
		}
	}
}

// page answers with a small page of agentmux's saying what is wrong; with
// retry, it reloads itself every two seconds.
func page(w http.ResponseWriter, status int, title, text string, retry bool) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	refresh := ""
	if retry {
		refresh = `<meta http-equiv="refresh" content="2">`
	}
	fmt.Fprintf(w, `<!doctype html><html><head><meta charset="utf-8">%s<title>%s</title>`+
		`<style>body{font:15px system-ui,sans-serif;margin:3em;color:#ccc;background:#16181d}</style></head>`+
		`<body><h1>%s</h1><p>%s</p></body></html>`, refresh, html.EscapeString(title), html.EscapeString(title), html.EscapeString(text))
}
