// Package sameorigin decides whether a request that would change state
// (start a command, stop one, open a terminal) comes from agentmux's own
// page, from an origin the operator trusts, or from no web page at all.
// It is the one check the HTTP API and the WebSocket share.
//
// A browser tells where a request comes from in two headers that no page
// can set: Origin (scheme, host and port of the page) and, in every
// browser since 2023, Sec-Fetch-Site (how that origin relates to the
// target). A request without either is not from a browser (curl, scripts,
// the agents' own tools) and cannot be forged by a web page, so it passes;
// the token, when set, guards it.
//
// net/http's CrossOriginProtection has the same idea but does not serve
// here: it passes every GET, and the WebSocket upgrade is a GET; it passes
// any request marked Sec-Fetch-Site: same-origin without looking at its
// Origin; and without Sec-Fetch-Site it compares the Origin's host with
// Host but not its scheme, so a page on https://host passes for a server
// on http://host. Its errors also name no remedy. This check compares
// scheme, host and port, requires both headers to agree when both are
// sent, and says in a sentence what the operator can do.
package sameorigin

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	textclip "github.com/agentmux/agentmux/internal/clip"
)

// Policy is the set of origins, besides the server's own, that may change
// state. The zero value, like New(nil), allows the server's own origin only.
type Policy struct {
	// trusted holds the allowed origins in canonical form
	// (scheme://host:port, lower case, port always given).
	trusted map[string]bool
	// any reports whether "*" was given: every origin but null passes.
	any bool
}

// New returns a policy that also trusts allowed, each "scheme://host[:port]"
// (http or https), or "*" for every origin.
func New(allowed []string) (*Policy, error) {
	p := &Policy{trusted: make(map[string]bool, len(allowed))}
	for _, a := range allowed {
		if a == "*" {
			p.any = true
			continue
		}
		o, err := parse(strings.TrimSuffix(a, "/"))
		if err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", a, err)
		}
		p.trusted[o] = true
	}
	return p, nil
}

// Error is a refused request. Its message says why and what to do.
type Error struct {
	msg string
}

func (e *Error) Error() string { return e.msg }

// Check returns nil when r may change state: it carries no Origin and no
// Sec-Fetch-Site other than same-origin or none (not a web page's
// request), or its Origin is the server's own (scheme, host and port) or
// a trusted one. Otherwise it returns an *Error. Origin "null" (sandboxed
// frames, file: pages, redirects across origins) is always refused.
func (p *Policy) Check(r *http.Request) error {
	origin := r.Header.Get("Origin")
	site := strings.ToLower(r.Header.Get("Sec-Fetch-Site"))
	if origin == "" {
		switch site {
		case "", "same-origin", "none":
			return nil
		}
		return &Error{msg: fmt.Sprintf("refused a request from another page (Sec-Fetch-Site: %s): only agentmux's own page may change state", clip(site))}
	}
	if origin == "null" {
		return &Error{msg: "refused a request with Origin: null (a sandboxed frame, a file: page or a cross-origin redirect): only agentmux's own page may change state"}
	}
	o, err := parse(origin)
	if err != nil {
		return &Error{msg: fmt.Sprintf("refused a request with a malformed Origin %q: %v", clip(origin), err)}
	}
	if p.any || p.trusted[o] {
		// Trusted origins are other origins by definition: Sec-Fetch-Site
		// says cross-site or same-site for them.
		return nil
	}
	own := ownOrigin(r)
	if o != own {
		return &Error{msg: fmt.Sprintf("refused a request from the page at %s: only agentmux's own page (%s) may change state; "+
			"to trust that page, start agentmux with --allowed-origins %s", o, own, o)}
	}
	switch site {
	case "", "same-origin", "none":
		return nil
	}
	// The Origin matched but the browser says the page is not ours: a
	// proxy in front rewrote Host or the scheme. Trust the browser.
	return &Error{msg: fmt.Sprintf("refused a request the browser marks Sec-Fetch-Site: %s although its Origin %s looks like this server's; "+
		"behind a proxy, pass the original Host and X-Forwarded-Proto, or start agentmux with --allowed-origins", clip(site), o)}
}

// IsOwn reports whether origin, an Origin header's value, is the origin
// r was sent to (scheme, host and port, as Check compares them): for a
// server that shares no state with its own origin's pages but must still
// tell its own pages' requests from other sites' (the previews).
func IsOwn(r *http.Request, origin string) bool {
	o, err := parse(origin)
	return err == nil && o == ownOrigin(r)
}

// ownOrigin is the origin a browser sees this server at: the scheme of the
// connection, or X-Forwarded-Proto from a TLS-terminating proxy (a header
// no web page can set across origins: it would need a CORS preflight this
// server never grants), and the Host the request was sent to.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if fp := r.Header.Get("X-Forwarded-Proto"); fp != "" {
		first, _, _ := strings.Cut(fp, ",")
		switch p := strings.ToLower(strings.TrimSpace(first)); p {
		case "http", "https":
			scheme = p
		}
	}
	o, err := parse(scheme + "://" + r.Host)
	if err != nil {
		return "" // matches no parsed origin
	}
	return o
}

// parse returns an origin in canonical form: scheme://host:port, lower
// case, with the scheme's default port written out.
func parse(s string) (string, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", fmt.Errorf("not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("want http:// or https://")
	case u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("want scheme://host[:port] and nothing else")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return "", fmt.Errorf("no host")
	}
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(host), port), nil
}

// CheckJSONBody returns an *Error unless r's body, if it has one or says
// what it is, is JSON. Forms and text/plain are what a page on another
// origin can send without asking the server first (a CORS preflight);
// requiring JSON closes that door even where the Origin check is not
// enough (a browser that sends neither Origin nor Sec-Fetch-Site).
func CheckJSONBody(r *http.Request) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		if r.ContentLength == 0 {
			return nil // no body: curl -XPOST, a resume
		}
		return &Error{msg: "a request body needs Content-Type: application/json"}
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return &Error{msg: fmt.Sprintf("Content-Type %q is not accepted: request bodies are JSON (Content-Type: application/json)", clip(ct))}
	}
	return nil
}

// clip bounds text taken from a request before it goes into a reply.
func clip(s string) string { return textclip.String(s, 80, "...") }
