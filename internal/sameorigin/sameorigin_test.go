package sameorigin

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// request is a POST to host with the given headers (name, value pairs).
func request(host string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://"+host+"/api/sessions", nil)
	r.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	return r
}

func TestCheck(t *testing.T) {
	p, err := New([]string{"https://ui.example", "http://dev.example:3000/"})
	if err != nil {
		t.Fatal(err)
	}
	const host = "127.0.0.1:8080"
	for _, tc := range []struct {
		name   string
		host   string
		header []string
		ok     bool
	}{
		{"curl: no Origin, no Sec-Fetch-Site", host, nil, true},
		{"own page", host, []string{"Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "same-origin"}, true},
		{"own page, old browser", host, []string{"Origin", "http://127.0.0.1:8080"}, true},
		{"typed in the address bar", host, []string{"Sec-Fetch-Site", "none"}, true},
		{"own page, upper case", "LocalHost:8080", []string{"Origin", "http://localhost:8080"}, true},
		{"default port written out", "example.test", []string{"Origin", "http://example.test:80"}, true},
		{"IPv6", "[::1]:8080", []string{"Origin", "http://[::1]:8080"}, true},
		{"trusted origin", host, []string{"Origin", "https://ui.example", "Sec-Fetch-Site", "cross-site"}, true},
		{"trusted origin, port", host, []string{"Origin", "http://dev.example:3000", "Sec-Fetch-Site", "cross-site"}, true},
		{"trusted origin, explicit default port", host, []string{"Origin", "https://ui.example:443"}, true},

		{"another site", host, []string{"Origin", "http://evil.test", "Sec-Fetch-Site", "cross-site"}, false},
		{"another site, old browser", host, []string{"Origin", "http://evil.test"}, false},
		{"another port of localhost", host, []string{"Origin", "http://127.0.0.1:3000", "Sec-Fetch-Site", "same-site"}, false},
		{"another port, old browser", host, []string{"Origin", "http://127.0.0.1:3000"}, false},
		{"another scheme", host, []string{"Origin", "https://127.0.0.1:8080"}, false},
		{"https page, http server, default ports", "example.test", []string{"Origin", "https://example.test"}, false},
		{"null", host, []string{"Origin", "null"}, false},
		{"null, same-origin claimed", host, []string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, false},
		{"cross-site without Origin", host, []string{"Sec-Fetch-Site", "cross-site"}, false},
		{"same-site without Origin", host, []string{"Sec-Fetch-Site", "same-site"}, false},
		{"Origin matches but the browser says cross-site", host, []string{"Origin", "http://127.0.0.1:8080", "Sec-Fetch-Site", "cross-site"}, false},
		{"host as a prefix", host, []string{"Origin", "http://127.0.0.1:8080.evil.test"}, false},
		{"host in the path", host, []string{"Origin", "http://evil.test/127.0.0.1:8080"}, false},
		{"user info", host, []string{"Origin", "http://evil.test@127.0.0.1:8080"}, false},
		{"file", host, []string{"Origin", "file://"}, false},
		{"trusted host, wrong scheme", host, []string{"Origin", "http://ui.example"}, false},
		{"trusted host, wrong port", host, []string{"Origin", "http://dev.example:3001"}, false},
		{"garbage", host, []string{"Origin", "%zz"}, false},
	} {
		err := p.Check(request(tc.host, tc.header...))
		if ok := err == nil; ok != tc.ok {
			t.Errorf("%s: Check = %v, want ok %v", tc.name, err, tc.ok)
		}
		var e *Error
		if err != nil && (!errors.As(err, &e) || !strings.Contains(err.Error(), "refused")) {
			t.Errorf("%s: error %q does not say it refused", tc.name, err)
		}
	}
}

// TestCheckBehindProxy: a TLS-terminating proxy says the page's scheme in
// X-Forwarded-Proto; a direct TLS connection is https on its own.
func TestCheckBehindProxy(t *testing.T) {
	p := &Policy{}
	r := request("agents.example", "Origin", "https://agents.example", "X-Forwarded-Proto", "https")
	if err := p.Check(r); err != nil {
		t.Errorf("behind a TLS proxy: %v", err)
	}
	r = request("agents.example", "Origin", "https://agents.example")
	r.TLS = &tls.ConnectionState{}
	if err := p.Check(r); err != nil {
		t.Errorf("over TLS: %v", err)
	}
	r = request("agents.example", "Origin", "http://agents.example", "X-Forwarded-Proto", "https")
	if err := p.Check(r); err == nil {
		t.Error("an http page was taken for the https server")
	}
}

// TestIsOwn: an origin is the request's own when scheme, host and port
// all match, as Check compares them, and never when it does not parse.
func TestIsOwn(t *testing.T) {
	for _, tc := range []struct {
		host, origin string
		header       []string
		want         bool
	}{
		{"5173.localhost:8080", "http://5173.localhost:8080", nil, true},
		{"5173.localhost:8080", "http://5173.LOCALHOST:8080", nil, true},
		{"5173.localhost", "http://5173.localhost:80", nil, true},
		{"5173.dev.example", "https://5173.dev.example", []string{"X-Forwarded-Proto", "https"}, true},
		{"5173.localhost:8080", "http://localhost:8080", nil, false},
		{"5173.localhost:8080", "http://3000.localhost:8080", nil, false},
		{"5173.localhost:8080", "https://5173.localhost:8080", nil, false},
		{"5173.localhost:8080", "http://5173.localhost:8081", nil, false},
		{"5173.localhost:8080", "null", nil, false},
		{"5173.localhost:8080", "", nil, false},
		{"5173.localhost:8080", "http://5173.localhost:8080/path", nil, false},
		{"", "http://", nil, false},
	} {
		r := request(tc.host, tc.header...)
		if got := IsOwn(r, tc.origin); got != tc.want {
			t.Errorf("IsOwn(Host %q, %q) = %v, want %v", tc.host, tc.origin, got, tc.want)
		}
	}
}

func TestCheckAny(t *testing.T) {
	p, err := New([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(request("127.0.0.1:8080", "Origin", "http://evil.test", "Sec-Fetch-Site", "cross-site")); err != nil {
		t.Errorf("* refused another origin: %v", err)
	}
	if err := p.Check(request("127.0.0.1:8080", "Origin", "null")); err == nil {
		t.Error("* allowed Origin: null")
	}
}

func TestNewRefusesMalformedOrigins(t *testing.T) {
	for _, o := range []string{"allowed.example", "ftp://x.example", "http://x.example/path", "http://user@x.example", "http://", "null", "http://x.example?q"} {
		if _, err := New([]string{o}); err == nil {
			t.Errorf("New(%q) accepted it", o)
		}
	}
}

func TestCheckJSONBody(t *testing.T) {
	for _, tc := range []struct {
		ctype string
		body  string
		ok    bool
	}{
		{"application/json", `{}`, true},
		{"application/json; charset=utf-8", `{}`, true},
		{"Application/JSON", `{}`, true},
		{"", "", true}, // no body at all
		{"", `{}`, false},
		{"text/plain", `{"command":["sh"]}`, false},
		{"text/plain;charset=UTF-8", "", false},
		{"application/x-www-form-urlencoded", "a=b", false},
		{"multipart/form-data; boundary=x", "", false},
		{"application/json-seq", `{}`, false},
		{"application/jsonx", `{}`, false},
		{";;", `{}`, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/api/sessions", strings.NewReader(tc.body))
		if tc.ctype != "" {
			r.Header.Set("Content-Type", tc.ctype)
		}
		if err := CheckJSONBody(r); (err == nil) != tc.ok {
			t.Errorf("Content-Type %q, body %q: %v, want ok %v", tc.ctype, tc.body, err, tc.ok)
		}
	}
}

// FuzzCheck: whatever the headers, a request passes only when it carries
// no Origin and no cross-site mark, or its Origin is the server's own or a
// trusted one; null never passes; an error message stays short.
func FuzzCheck(f *testing.F) {
	for _, seed := range [][3]string{
		{"127.0.0.1:8080", "http://127.0.0.1:8080", "same-origin"},
		{"127.0.0.1:8080", "http://127.0.0.1:3000", "same-site"},
		{"localhost:8080", "null", ""},
		{"example.test", "https://example.test", ""},
		{"[::1]:80", "http://[::1]", "none"},
		{"127.0.0.1:8080", "https://ui.example", "cross-site"},
		{"127.0.0.1:8080", "", "cross-site"},
		{"x", "http://x:80/", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], "")
	}
	p, err := New([]string{"https://ui.example"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host, origin, site, forwarded string) {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Host = host
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if site != "" {
			r.Header.Set("Sec-Fetch-Site", site)
		}
		if forwarded != "" {
			r.Header.Set("X-Forwarded-Proto", forwarded)
		}
		err := p.Check(r)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			return
		}
		// It passed: say why it may.
		switch s := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); {
		case r.Header.Get("Origin") == "":
			if s != "" && s != "same-origin" && s != "none" {
				t.Errorf("no Origin, Sec-Fetch-Site %q passed", s)
			}
		case origin == "null":
			t.Error("Origin null passed")
		default:
			o, err := parse(origin)
			if err != nil {
				t.Fatalf("malformed Origin %q passed", origin)
			}
			if !p.trusted[o] {
				if o != ownOrigin(r) {
					t.Errorf("Origin %q (%s) passed for server %s", origin, o, ownOrigin(r))
				}
				if s != "" && s != "same-origin" && s != "none" {
					t.Errorf("own Origin with Sec-Fetch-Site %q passed", s)
				}
			}
		}
	})
}
