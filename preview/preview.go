// Package preview serves the web servers agents start, each on an origin
// of its own: port 5173 at http://5173.localhost:<agentmux's port>/ (or
// 5173.<domain> behind a proxy), proxied to 127.0.0.1:5173. A previewed
// app's scripts then never share agentmux's origin, so the same-origin
// checks that guard the API and the WebSocket refuse them as they refuse
// any other site; and a preview origin serves the app and nothing of
// agentmux's.
//
// A preview must not lend its origin to other sites either. The app
// behind it sees its own origin (http://localhost:<port>, what dev
// servers check their hot-reload socket's Origin against) only on
// requests from pages of the preview's origin; every other Origin passes
// through as the browser sent it, so the app's own checks still work. And
// a request a browser marks as another site's is refused before it
// reaches the app: a WebSocket, a fetch or any request that is not a
// navigation, whose Origin is another origin (null included), and any
// subresource (a script, an image, a fetch) marked Sec-Fetch-Site:
// cross-site. Navigations pass, the UI's frame of the preview among them.
//
// A preview origin asks every browser to sign in, with or without
// agentmux's token: the UI gets a ticket from agentmux's own origin, good
// once and for a minute, and the preview origin turns it into a cookie of
// its own, good for cookieLife, signed with a key this process drew at
// random (so a restart signs everyone out). No other site can mint one,
// so no other site reaches a preview at all. Nothing of agentmux's goes
// on to the app: its token in Authorization, its cookies, the sign-in
// cookie.
//
// Previews have a budget of connections of their own, well below the
// listener's: a dev server's hot-reload socket or event stream holds its
// connection for as long as the page is open, and a page (or anyone) that
// opened hundreds would otherwise take every slot of the listener and
// lock agentmux's own API and WebSocket out.
package preview

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
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
	"sync"
	"syscall"
	"time"

	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/ratelog"
	"github.com/agentmux/agentmux/internal/sameorigin"
)

const (
	// MinPort is the lowest port previewed: below it are system services.
	MinPort = 1024
	// SignInPath is where a preview origin takes a ticket; an app is
	// unlikely to have a page there.
	SignInPath = "/.agentmux/sign-in"
	// DefaultMaxConnections is the previews' budget of connections when
	// Options.MaxConnections is 0: a quarter of agentmux's listener
	// (256), ample for a few apps' pages, their hot-reload sockets and
	// event streams, and a few hundred short requests a second.
	DefaultMaxConnections = 64
	// cookieName carries a preview origin's sign-in.
	cookieName = "agentmux_preview"
	// cookiePrefix begins the name of every cookie of agentmux's (the
	// token's, the preview's sign-in): none of them goes on to an app.
	cookiePrefix = "agentmux_"
	// ticketLife is how long a sign-in ticket may wait to be used.
	ticketLife = time.Minute
	// maxTickets bounds the tickets minted and not yet used or expired:
	// the UI mints one per preview shown or opened.
	maxTickets = 256
	// cookieLife is how long a preview origin's sign-in lasts: a working
	// day and more, not forever.
	cookieLife = 12 * time.Hour
	// refusalLogEvery is the least time between two log lines about
	// refused preview requests or an exhausted budget.
	refusalLogEvery = 10 * time.Second
)

// Options configure Previews.
type Options struct {
	// Domain, when set, serves port P also at P.<Domain>, for a proxy in
	// front of agentmux that routes the domain's names to it.
	Domain string
	// Token, when set, is agentmux's: a request that carries it as a
	// bearer token is signed in, and it is never passed to an app.
	Token string
	// Own reports agentmux's own ports, which are never proxied. Required.
	Own func(port int) bool
	// MaxConnections bounds the preview requests served at once, each a
	// connection for as long as it lasts (a hot-reload WebSocket, an
	// event stream); the next is answered 503. DefaultMaxConnections when
	// 0.
	MaxConnections int
	// Logger receives what goes wrong; nil means slog.Default().
	Logger *slog.Logger
}

// Previews routes the requests whose Host names a preview.
type Previews struct {
	opts Options
	// key signs the preview cookies; drawn at random by New.
	key []byte
	log *slog.Logger
	// transport carries every preview's requests, keeping connections
	// to the dev servers alive between them.
	transport *http.Transport
	// budget holds a token per preview request being served.
	budget chan struct{}
	// refusals and busy keep the log lines that any page can cause to
	// one per refusalLogEvery.
	refusals, busy ratelog.Limiter

	// mu protects tickets: the tickets minted and not yet used, by
	// value, with the port each signs in on and until when.
	mu      sync.Mutex
	tickets map[string]ticket
}

// ticket is a sign-in ticket waiting to be used.
type ticket struct {
	port   int
	expiry time.Time
}

// New returns Previews for opts.
func New(opts Options) (*Previews, error) {
	if opts.Own == nil {
		return nil, errors.New("preview: Options.Own is required")
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	opts.Domain = strings.ToLower(strings.Trim(opts.Domain, "."))
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("preview: draw a signing key: %w", err)
	}
	p := &Previews{
		opts: opts, key: key, log: opts.Logger, transport: newTransport(),
		budget:   make(chan struct{}, opts.MaxConnections),
		refusals: ratelog.Limiter{Every: refusalLogEvery},
		busy:     ratelog.Limiter{Every: refusalLogEvery},
		tickets:  make(map[string]ticket),
	}
	if p.log == nil {
		p.log = slog.Default()
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

// SignInURL is URL with a ticket that signs a browser in on that origin
// once, within ticketLife, for a page already on agentmux's own origin
// (the caller's check): the address the UI's frame and "open in a new
// tab" go to.
func (p *Previews) SignInURL(host string, port int, secure bool) (string, error) {
	t, err := p.mint(port, time.Now())
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(p.URL(host, port, secure), "/") + SignInPath + "?ticket=" + url.QueryEscape(t), nil
}

// mint makes a ticket for port, good once until now+ticketLife. At
// maxTickets, expired ones are dropped first, then the one closest to
// expiring: a page that asked for hundreds loses its oldest, nobody
// else's.
func (p *Previews) mint(port int, now time.Time) (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("draw a sign-in ticket: %w", err)
	}
	t := hex.EncodeToString(b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tickets) >= maxTickets {
		var oldest string
		for v, tk := range p.tickets {
			if !now.Before(tk.expiry) {
				delete(p.tickets, v)
			} else if oldest == "" || tk.expiry.Before(p.tickets[oldest].expiry) {
				oldest = v
			}
		}
		if len(p.tickets) >= maxTickets {
			delete(p.tickets, oldest)
		}
	}
	p.tickets[t] = ticket{port: port, expiry: now.Add(ticketLife)}
	return t, nil
}

// redeem reports whether t is a ticket for port that has not expired and
// was not used, and uses it up: a ticket is spent whatever port it is
// tried on, so one that leaked is good for nothing.
func (p *Previews) redeem(t string, port int, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	tk, ok := p.tickets[t]
	if !ok {
		return false
	}
	delete(p.tickets, t)
	return tk.port == port && now.Before(tk.expiry)
}

// cookieValue is port's sign-in cookie until expiry: the expiry and the
// key's MAC of both.
func (p *Previews) cookieValue(port int, expiry time.Time) string {
	exp := strconv.FormatInt(expiry.Unix(), 10)
	return exp + "." + p.mac(port, exp)
}

// mac is the key's MAC of a cookie for port until exp.
func (p *Previews) mac(port int, exp string) string {
	m := hmac.New(sha256.New, p.key)
	fmt.Fprintf(m, "cookie\x00%d\x00%s", port, exp)
	return hex.EncodeToString(m.Sum(nil))
}

// signedIn reports whether r carries agentmux's token or a sign-in cookie
// of port's that this process made and that has not expired.
func (p *Previews) signedIn(r *http.Request, port int, now time.Time) bool {
	if p.isToken(r.Header.Get("Authorization")) {
		return true
	}
	for _, c := range r.CookiesNamed(cookieName) {
		exp, mac, ok := strings.Cut(c.Value, ".")
		unix, err := strconv.ParseInt(exp, 10, 64)
		if ok && err == nil && now.Unix() < unix &&
			subtle.ConstantTimeCompare([]byte(mac), []byte(p.mac(port, exp))) == 1 {
			return true
		}
	}
	return false
}

// isToken reports whether auth, an Authorization header, is agentmux's
// token as a bearer token.
func (p *Previews) isToken(auth string) bool {
	scheme, tok, ok := strings.Cut(auth, " ")
	return ok && p.opts.Token != "" && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(p.opts.Token)) == 1
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
	if reason := otherSite(r); reason != "" {
		if ok, suppressed := p.refusals.Allow(); ok {
			p.log.Warn("refused a request to a preview from another site", "port", port, "method", r.Method, "path", textclip.String(r.URL.Path, 80, "..."),
				"remote", r.RemoteAddr, "reason", reason, "refused since last line", suppressed)
		}
		page(w, http.StatusForbidden, "Refused", fmt.Sprintf("This preview of port %d refuses %s: only its own pages may use it.", port, reason), false)
		return
	}
	now := time.Now()
	if r.URL.Path == SignInPath {
		p.signIn(w, r, port, now)
		return
	}
	if !p.signedIn(r, port, now) {
		page(w, http.StatusUnauthorized, "Sign in from agentmux",
			fmt.Sprintf("This preview of port %d needs agentmux's sign-in: open it from agentmux's Preview view (or its Open button), which signs you in here.", port), false)
		return
	}
	select {
	case p.budget <- struct{}{}:
		defer func() { <-p.budget }()
	default:
		if ok, suppressed := p.busy.Allow(); ok {
			p.log.Warn("preview connection budget exhausted; refusing preview requests until some end", "budget", cap(p.budget), "refused since last line", suppressed)
		}
		w.Header().Set("Retry-After", "2")
		page(w, http.StatusServiceUnavailable, "Too many preview connections",
			fmt.Sprintf("The previews hold all %d of their connections (hot-reload sockets, event streams, requests in progress). This page tries again by itself.", cap(p.budget)), true)
		return
	}
	// A dev server's hot reload holds its WebSocket (or event stream)
	// open for as long as the page is: the listener's deadlines, made
	// for agentmux's own short requests, would cut it. The budget bounds
	// how many do.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	p.proxy(port).ServeHTTP(w, r)
}

// otherSite says why r, to a preview, is another site's request to
// refuse, or "" when it is not: a navigation (top-level or a frame),
// which a browser marks Sec-Fetch-Mode: navigate, or a request of the
// preview's own pages, or not a browser's at all (no Origin, no
// Sec-Fetch-Site). Any other request with another Origin is refused, a
// WebSocket's included (a browser always sends one there), and so is a
// subresource marked cross-site, which may carry no Origin (a script, an
// image).
func otherSite(r *http.Request) string {
	if r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Upgrade") == "" {
		return ""
	}
	what := "a request"
	if r.Header.Get("Upgrade") != "" {
		what = "a WebSocket"
	}
	if origin := r.Header.Get("Origin"); origin != "" && !sameorigin.IsOwn(r, origin) {
		return fmt.Sprintf("%s from the page at %s", what, textclip.Quote(origin))
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return what + " from another site (Sec-Fetch-Site: cross-site)"
	}
	return ""
}

// signIn takes a ticket and, when it is good, sets the origin's cookie.
func (p *Previews) signIn(w http.ResponseWriter, r *http.Request, port int, now time.Time) {
	if !p.redeem(r.URL.Query().Get("ticket"), port, now) {
		page(w, http.StatusUnauthorized, "Sign-in link used or expired",
			"This sign-in link is not valid: each works once, within a minute. Open the preview again from agentmux.", false)
		return
	}
	// The preview is shown in a frame of agentmux's page, another site:
	// a browser sets and sends a cookie there only if it is SameSite=None,
	// which must be Secure (browsers count http://*.localhost as secure),
	// and Partitioned keeps it to frames of that page (CHIPS). Over plain
	// http on a preview domain, the browser drops it: use https there.
	expiry := now.Add(cookieLife)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: p.cookieValue(port, expiry), Path: "/", MaxAge: int(cookieLife / time.Second),
		HttpOnly: true, SameSite: http.SameSiteNoneMode, Secure: true, Partitioned: true,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// proxy is the reverse proxy to port. Dev servers check the Host they are
// asked for (Vite's allowedHosts, webpack-dev-server's host check) and
// the Origin of their hot-reload socket: the Host is sent as
// localhost:port, and so is the Origin of the preview's own pages, what
// they accept by default, with the preview's own in X-Forwarded-*. Every
// other Origin (a navigation's from another site) is the browser's.
func (p *Previews) proxy(port int) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	local := "localhost:" + strconv.Itoa(port)
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
			pr.Out.Host = local
			if o := pr.In.Header.Get("Origin"); o != "" && sameorigin.IsOwn(pr.In, o) {
				pr.Out.Header.Set("Origin", "http://"+local)
			}
			if p.isToken(pr.Out.Header.Get("Authorization")) {
				pr.Out.Header.Del("Authorization")
			}
			removeCookies(pr.Out, cookiePrefix)
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

// removeCookies drops r's cookies whose names begin with prefix: the
// sign-in and the token are agentmux's, not the app's. The app's own
// pass as the browser wrote them, byte for byte: parsing and writing them
// again would drop or quote values net/http does not like.
func removeCookies(r *http.Request, prefix string) {
	var kept []string
	for _, line := range r.Header.Values("Cookie") {
		for part := range strings.SplitSeq(line, ";") {
			part = strings.TrimSpace(part)
			name, _, _ := strings.Cut(part, "=")
			if part != "" && !strings.HasPrefix(strings.TrimSpace(name), prefix) {
				kept = append(kept, part)
			}
		}
	}
	r.Header.Del("Cookie")
	if len(kept) > 0 {
		r.Header.Set("Cookie", strings.Join(kept, "; "))
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
