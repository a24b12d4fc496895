package guard

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// host is where the tests' server is, as the browser sees it.
const host = "127.0.0.1:8080"

// gated is a router behind the gate whose routes all answer 200 "ok",
// and what the gate logged.
func gated(t *testing.T, opts Options) (*echo.Echo, *testutil.SyncBuffer) {
	t.Helper()
	logBuf := &testutil.SyncBuffer{}
	opts.Logger = slog.New(slog.NewTextHandler(logBuf, nil))
	e := echo.New()
	e.Use(New(opts).Middleware)
	ok := func(c echo.Context) error { return c.String(http.StatusOK, "ok") }
	e.GET("/api/health", ok)
	e.GET("/api/sessions", ok)
	e.POST("/api/sessions", ok)
	e.DELETE("/api/sessions/:id", ok)
	e.POST("/api/sessions/:id/attachments", ok)
	e.POST("/api/sessions/:id/review", ok)
	e.GET("/ws", ok)
	e.GET("/*", ok)
	e.POST("/*", ok)
	return e, logBuf
}

// serve sends method target (a path and query) to e with a body and
// headers (name, value pairs; "Host" sets the Host).
func serve(e *echo.Echo, method, target, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

// check fails the test unless rec has status and, when code is not
// empty, that error code; it returns the error message.
func check(t *testing.T, what string, rec *httptest.ResponseRecorder, status int, code string) string {
	t.Helper()
	var b wire.ErrorBody
	_ = json.Unmarshal(rec.Body.Bytes(), &b)
	if rec.Code != status || b.Error.Code != code {
		t.Errorf("%s: %d %q (%s), want %d %q", what, rec.Code, b.Error.Code, rec.Body, status, code)
	}
	return b.Error.Message
}

// TestOriginCheck: every request that changes state, anywhere, the
// WebSocket upgrade and every read of the API must come from the server's
// own page, a trusted one or no page at all, and bodies must be JSON;
// pages and assets load from anywhere.
func TestOriginCheck(t *testing.T) {
	trusted, err := sameorigin.New([]string{"https://ui.example"})
	if err != nil {
		t.Fatal(err)
	}
	e, logBuf := gated(t, Options{Origins: trusted})
	evil := []string{"Origin", "http://evil.test", "Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}
	for _, r := range []struct{ method, target string }{
		{http.MethodPost, "/api/sessions"},
		{http.MethodDelete, "/api/sessions/x"},
		{http.MethodGet, "/api/sessions"},
		{http.MethodGet, "/ws"},
		{http.MethodPost, "/anywhere"},
	} {
		msg := check(t, "from another site: "+r.method+" "+r.target, serve(e, r.method, r.target, "{}", evil...), http.StatusForbidden, wire.CodePermissionDenied)
		if !strings.Contains(msg, "--allowed-origins") {
			t.Errorf("%s %s: message %q does not say how to trust the page", r.method, r.target, msg)
		}
	}
	check(t, "a page from another site", serve(e, http.MethodGet, "/index.html", "", evil...), http.StatusOK, "")
	if rec := serve(e, http.MethodOptions, "/api/sessions", "", evil...); rec.Code == http.StatusForbidden {
		t.Errorf("OPTIONS from another site refused: %s", rec.Body)
	}

	own := []string{"Origin", "http://" + host, "Sec-Fetch-Site", "same-origin"}
	check(t, "the own page's JSON", serve(e, http.MethodPost, "/api/sessions", "{}", append(own, "Content-Type", "application/json")...), http.StatusOK, "")
	check(t, "a trusted page's read", serve(e, http.MethodGet, "/api/sessions", "", "Origin", "https://ui.example", "Sec-Fetch-Site", "cross-site"), http.StatusOK, "")
	check(t, "a script's JSON", serve(e, http.MethodPost, "/api/sessions", "{}", "Content-Type", "application/json"), http.StatusOK, "")
	check(t, "a script's empty POST", serve(e, http.MethodPost, "/api/sessions", ""), http.StatusOK, "")
	for _, ctype := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		msg := check(t, "the own page's "+ctype, serve(e, http.MethodPost, "/api/sessions", "{}", append(own, "Content-Type", ctype)...),
			http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType)
		if !strings.Contains(msg, "application/json") {
			t.Errorf("Content-Type %q: message %q does not say what to send", ctype, msg)
		}
	}
	// One line said it; a page retrying in a loop does not flood the log.
	if n := strings.Count(logBuf.String(), "refused a request from another web page"); n != 1 {
		t.Errorf("%d log lines about refused requests, want 1:\n%s", n, logBuf)
	}
}

// TestUploadTakesMultipart: the attachments route alone takes a
// multipart body, from the server's own page or a script; a page on
// another origin is refused all the same, with or without the headers a
// form sends, and multipart anywhere else is still 415.
func TestUploadTakesMultipart(t *testing.T) {
	e, _ := gated(t, Options{})
	form := "multipart/form-data; boundary=x"
	body := "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\n\r\nhi\r\n--x--\r\n"
	own := []string{"Origin", "http://" + host, "Sec-Fetch-Site", "same-origin", "Content-Type", form}
	check(t, "the own page's upload", serve(e, http.MethodPost, "/api/sessions/abc/attachments", body, own...), http.StatusOK, "")
	check(t, "a script's upload", serve(e, http.MethodPost, "/api/sessions/abc/attachments", body, "Content-Type", form), http.StatusOK, "")
	for _, h := range [][]string{
		{"Origin", "http://evil.test", "Sec-Fetch-Site", "cross-site", "Content-Type", form},
		{"Origin", "http://evil.test", "Content-Type", form},
		{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site", "Content-Type", form},
		{"Origin", "null", "Sec-Fetch-Site", "cross-site", "Content-Type", form},
	} {
		check(t, fmt.Sprintf("a form from another page %v", h), serve(e, http.MethodPost, "/api/sessions/abc/attachments", body, h...),
			http.StatusForbidden, wire.CodePermissionDenied)
	}
	for _, target := range []string{"/api/sessions", "/api/sessions/abc/review", "/api/sessions/abc/attachments/x", "/api/sessions//attachments", "/anywhere/attachments"} {
		check(t, "multipart to "+target, serve(e, http.MethodPost, target, body, own...), http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType)
	}
	// Other bodies to the upload route keep the JSON rule.
	check(t, "text/plain to the upload route", serve(e, http.MethodPost, "/api/sessions/abc/attachments", body, append(own[:4:4], "Content-Type", "text/plain")...),
		http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType)
}

// TestHostCheck: without a token, only localhost, IP addresses and the
// allowed names are answered, so a page on a name rebound to this machine
// cannot drive it; with one, any Host is, and the token guards.
func TestHostCheck(t *testing.T) {
	e, _ := gated(t, Options{Hosts: []string{"dev.example", ".app.github.dev"}})
	for _, h := range []string{"evil.test:8080", "localhost.evil.test", "x.app.github.dev.evil.test", "app.github.dev", "127.0.0.1.nip.io:8080"} {
		for _, target := range []string{"/api/sessions", "/", "/api/health"} {
			msg := check(t, h+target, serve(e, http.MethodGet, target, "", "Host", h), http.StatusForbidden, wire.CodePermissionDenied)
			if !strings.Contains(msg, "--allowed-hosts") || !strings.Contains(msg, h) {
				t.Errorf("%s%s: message %q does not say what to do", h, target, msg)
			}
		}
	}
	for _, h := range []string{"localhost:8080", "LOCALHOST", "agentmux.localhost:1", "127.0.0.1:8080", "[::1]:8080", "10.0.0.5", "dev.example:8080", "x.app.github.dev", "localhost.", ""} {
		check(t, "Host "+h, serve(e, http.MethodGet, "/api/sessions", "", "Host", h), http.StatusOK, "")
	}

	tok, _ := gated(t, Options{Token: "s3cret"})
	check(t, "another name, no token", serve(tok, http.MethodGet, "/api/sessions", "", "Host", "evil.test:8080"), http.StatusUnauthorized, wire.CodeUnauthorized)
	check(t, "another name, the token", serve(tok, http.MethodGet, "/api/sessions", "", "Host", "evil.test:8080", "Authorization", "Bearer s3cret"), http.StatusOK, "")
}

// TestToken: with a token, /api (but its health) and /ws want it as a
// Bearer header or the cookie; pages do not, and a page asked with
// ?token= signs the browser in.
func TestToken(t *testing.T) {
	e, _ := gated(t, Options{Token: "s3cret"})
	for _, target := range []string{"/api/sessions", "/ws", "/api/sessions?token=s3cret"} {
		check(t, target+" without a token", serve(e, http.MethodGet, target, ""), http.StatusUnauthorized, wire.CodeUnauthorized)
	}
	for _, auth := range []string{"s3cret", "Basic s3cret", "Bearers3cret", "Bearer", "Bearer wrong"} {
		check(t, "Authorization: "+auth, serve(e, http.MethodGet, "/api/sessions", "", "Authorization", auth), http.StatusUnauthorized, wire.CodeUnauthorized)
	}
	check(t, "a bare token beside the cookie", serve(e, http.MethodGet, "/api/sessions", "", "Authorization", "s3cret", "Cookie", TokenCookie+"=s3cret"),
		http.StatusUnauthorized, wire.CodeUnauthorized)
	check(t, "a wrong cookie", serve(e, http.MethodGet, "/api/sessions", "", "Cookie", TokenCookie+"=wrong"), http.StatusUnauthorized, wire.CodeUnauthorized)
	for _, auth := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret"} {
		check(t, "Authorization: "+auth, serve(e, http.MethodGet, "/api/sessions", "", "Authorization", auth), http.StatusOK, "")
	}
	check(t, "the cookie", serve(e, http.MethodGet, "/ws", "", "Cookie", TokenCookie+"=s3cret"), http.StatusOK, "")
	check(t, "health", serve(e, http.MethodGet, "/api/health", ""), http.StatusOK, "")
	check(t, "a page", serve(e, http.MethodGet, "/index.html", ""), http.StatusOK, "")

	check(t, "signing in with a wrong token", serve(e, http.MethodGet, "/?token=wrong", ""), http.StatusUnauthorized, wire.CodeUnauthorized)
	for _, tc := range []struct {
		name   string
		header []string
		secure bool
	}{
		{"over http", nil, false},
		{"behind an https proxy", []string{"X-Forwarded-Proto", "https"}, true},
		{"behind a Forwarded https proxy", []string{"Forwarded", `for=1.2.3.4;proto="https"`}, true},
	} {
		rec := serve(e, http.MethodGet, "/docs/?tab=2&token=s3cret", "", tc.header...)
		check(t, "signing in "+tc.name, rec, http.StatusSeeOther, "")
		if loc := rec.Header().Get("Location"); loc != "./?tab=2" {
			t.Errorf("signing in %s: Location %q, want ./?tab=2", tc.name, loc)
		}
		cookies := rec.Result().Cookies()
		if len(cookies) != 1 {
			t.Fatalf("signing in %s: cookies %v", tc.name, cookies)
		}
		c := cookies[0]
		if c.Name != TokenCookie || c.Value != "s3cret" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != tc.secure || c.Path != "" {
			t.Errorf("signing in %s: cookie %+v, want HttpOnly, SameSite=Strict, no Path, Secure %v", tc.name, c, tc.secure)
		}
	}
}

// TestSecurityHeaders: every response carries them, refusals included.
func TestSecurityHeaders(t *testing.T) {
	e, _ := gated(t, Options{Token: "s3cret"})
	for what, rec := range map[string]*httptest.ResponseRecorder{
		"a page":         serve(e, http.MethodGet, "/", ""),
		"a refusal":      serve(e, http.MethodPost, "/api/sessions", "", "Origin", "http://evil.test"),
		"no token":       serve(e, http.MethodGet, "/api/sessions", ""),
		"a signing in":   serve(e, http.MethodGet, "/?token=s3cret", ""),
		"an unknown API": serve(e, http.MethodPut, "/api/nope", "", "Authorization", "Bearer s3cret"),
	} {
		h := rec.Header()
		for name, want := range map[string]string{
			"Content-Security-Policy":      contentSecurityPolicy(nil),
			"X-Content-Type-Options":       "nosniff",
			"X-Frame-Options":              "DENY",
			"Referrer-Policy":              "no-referrer",
			"Cross-Origin-Resource-Policy": "same-origin",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s (%d): %s %q, want %q", what, rec.Code, name, got, want)
			}
		}
	}
	if csp := contentSecurityPolicy(nil); !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self';") ||
		!strings.Contains(csp, "frame-src 'none';") {
		t.Errorf("the policy %q lets others frame the page, scripts run from elsewhere, or the page frame anything", csp)
	}
	if csp := contentSecurityPolicy([]string{"http://*.localhost:*"}); !strings.Contains(csp, "frame-src http://*.localhost:*;") {
		t.Errorf("the policy %q does not let the page frame the previews", csp)
	}
}

// TestSignInRedirect: the address is relative to the page, never another
// host's, and drops only the token.
func TestSignInRedirect(t *testing.T) {
	for in, want := range map[string]string{
		"/?token=x":                     "./",
		"/index.html?tab=2&token=x":     "./index.html?tab=2",
		"//evil.example/x?token=x":      "./x",
		"/javascript:alert(1)?token=x":  "./javascript:alert(1)",
		"/a/b?token=x&z=1":              "./b?z=1",
		"/%5C%5Cevil.example/?token=x":  "./",
		"/%5C%5Cevil.example?token=x":   "./%5C%5Cevil.example",
		"/https:%2F%2Fevil.example?t=1": "./https:%2F%2Fevil.example?t=1",
	} {
		u, err := url.ParseRequestURI(in)
		if err != nil {
			t.Fatal(err)
		}
		got := signInRedirect(u)
		if got != want {
			t.Errorf("signInRedirect(%q) = %q, want %q", in, got, want)
		}
		base, _ := url.Parse("https://host/proxy/8080/")
		if ref, err := url.Parse(got); err != nil || base.ResolveReference(ref).Host != "host" {
			t.Errorf("signInRedirect(%q) = %q leaves the host", in, got)
		}
	}
}
