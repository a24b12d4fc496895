package httpapi_test

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// TestFilesAPIServesNothingABrowserRuns: finding 8 of the third review.
// A workspace .js was served as text/javascript on agentmux's own origin,
// so script-src 'self' took it as a script and it registered as a service
// worker under /api/. Now no file is served with a type a browser runs
// there: scripts, workers, pages and stylesheets as text, an SVG only in
// a sandbox; the UI's markdown, YAML, text and images as before.
func TestFilesAPIServesNothingABrowserRuns(t *testing.T) {
	e := newAPI(t)
	// The types a browser runs as a script, a worker or a module
	// (WHATWG's JavaScript MIME type essences, and WebAssembly), or shows
	// as a document of the origin that served it.
	runs := []string{
		"application/ecmascript", "application/javascript", "application/x-ecmascript", "application/x-javascript",
		"text/ecmascript", "text/javascript", "text/javascript1.0", "text/javascript1.5", "text/jscript",
		"text/livescript", "text/x-ecmascript", "text/x-javascript", "application/wasm",
		"text/html", "application/xhtml+xml", "text/xml", "application/xml", "text/xsl", "application/xslt+xml", "text/css",
	}
	const (
		script = "self.addEventListener('fetch', () => {})\n"
		html   = "<!doctype html><html><script>alert(document.domain)</script></html>\n"
		svg    = "<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>\n"
		text   = "text/plain; charset=utf-8"
	)
	for _, tc := range []struct{ name, content, want string }{
		{"sw.js", script, text},
		{"SW.JS", script, text},
		{"mod.mjs", script, text},
		{"lib.cjs", script, text},
		{"data.json", `{"a":1}`, text},
		{"page.html", html, text},
		{"page.HTML", html, text},
		{"page.xhtml", html, text},
		{"page", html, text},
		{"feed.xml", "<?xml version=\"1.0\"?><?xml-stylesheet href=\"s.xsl\"?><a/>", text},
		{"style.xsl", "<?xml version=\"1.0\"?><xsl:stylesheet/>", text},
		{"site.css", "body{color:red}\n", text},
		{"main.go", "package main\n", text},
		{"Makefile", "all:\n\ttrue\n", text},
		{"utf16.txt", "\xfe\xff\x00h\x00i", "text/plain; charset=utf-16be"},
		{"app.wasm", "\x00asm\x01\x00\x00\x00", "application/octet-stream"},
		{"archive.zip", "PK\x03\x04\x14\x00\x00\x00", "application/octet-stream"},
		{"report.pdf", "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", "application/octet-stream"},
		{"binary.dat", "\x00\x01\x02\x03", "application/octet-stream"},
		{"docs/prd.md", html, "text/markdown; charset=utf-8"},
		{"plan.yml", "a: 1\n", "text/yaml; charset=utf-8"},
		{"shot.png", "\x89PNG\r\n\x1a\n", "image/png"},
		{"photo.JPG", "\xff\xd8\xff", "image/jpeg"},
		{"diagram.svg", svg, "image/svg+xml"},
	} {
		testutil.WriteFile(t, e.dir, tc.name, tc.content)
		name, want := tc.name, tc.want
		resp, b := e.At(t).RawGet("/api/files?path=" + url.QueryEscape(name))
		apitest.WantStatus(t, name, resp, b, http.StatusOK)
		ct := resp.Header.Get("Content-Type")
		if ct != want {
			t.Errorf("%s: Content-Type %q, want %q", name, ct, want)
		}
		mt, _, _ := mime.ParseMediaType(ct)
		if slices.Contains(runs, mt) {
			t.Errorf("%s is served as %s, which a browser runs", name, ct)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
			t.Errorf("%s: Content-Security-Policy %q, want a sandbox", name, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", name)
		}
	}
}

// TestFilesAPI: GET /api/files serves workspace files raw and nothing
// outside the workspace, however the path gets there.
func TestFilesAPI(t *testing.T) {
	e := newAPI(t)
	const prd = "# PRD\n\nCafé — ✓ <script>alert(1)</script>\n\x00binary-ish tail\n"
	testutil.WriteFile(t, e.dir, "docs/prd.md", prd)
	testutil.WriteFile(t, e.dir, "docs/plan.yaml", "a: 1\n")
	big, err := os.Create(filepath.Join(e.dir, "docs", "big.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(8<<20 + 1); err != nil { // sparse: no 8 MiB written
		t.Fatal(err)
	}
	if err := big.Close(); err != nil {
		t.Fatal(err)
	}

	fileOK := func(what, query, wantBody, wantType string) {
		t.Helper()
		resp, b := e.At(t).RawGet("/api/files?" + query)
		apitest.WantStatus(t, what, resp, b, http.StatusOK)
		if string(b) != wantBody {
			t.Errorf("%s: body %q, want %q", what, b, wantBody)
		}
		if ct := resp.Header.Get("Content-Type"); ct != wantType {
			t.Errorf("%s: Content-Type %q, want %q", what, ct, wantType)
		}
		if v := resp.Header.Get("X-Content-Type-Options"); v != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q, want nosniff", what, v)
		}
	}
	fileOK("docs/prd.md", "path=docs/prd.md", prd, "text/markdown; charset=utf-8")
	fileOK("docs/prd.md, escaped", "path="+url.QueryEscape("docs/prd.md"), prd, "text/markdown; charset=utf-8")
	fileOK("./docs/prd.md", "path=./docs/prd.md", prd, "text/markdown; charset=utf-8")
	fileOK("docs/plan.yaml", "path=docs/plan.yaml", "a: 1\n", "text/yaml; charset=utf-8")

	// Symlinks that stay inside are followed.
	if err := os.Symlink(filepath.Join(e.dir, "docs", "prd.md"), filepath.Join(e.dir, "prd-link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("prd.md", filepath.Join(e.dir, "docs", "alias.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("docs", filepath.Join(e.dir, "documents")); err != nil {
		t.Fatal(err)
	}
	fileOK("absolute symlink inside", "path=prd-link.md", prd, "text/markdown; charset=utf-8")
	fileOK("relative symlink inside", "path=docs/alias.md", prd, "text/markdown; charset=utf-8")
	fileOK("symlinked directory inside", "path=documents/prd.md", prd, "text/markdown; charset=utf-8")

	// Symlinks that leave.
	if err := os.Symlink("/etc/passwd", filepath.Join(e.dir, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(e.dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../../../../../etc/passwd", filepath.Join(e.dir, "docs", "rel-leak.md")); err != nil {
		t.Fatal(err)
	}
	outsideDir := t.TempDir() // a sibling of the workspace, same prefix
	if err := os.WriteFile(filepath.Join(outsideDir, "secret.md"), []byte("TOP-SECRET-CONTENT\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outsideDir, "secret.md"), filepath.Join(e.dir, "sibling.md")); err != nil {
		t.Fatal(err)
	}
	outsideRel, err := filepath.Rel(e.dir, filepath.Join(outsideDir, "secret.md"))
	if err != nil {
		t.Fatal(err)
	}
	// A hard link is the outside file itself under a name inside.
	if err := os.Link(filepath.Join(outsideDir, "secret.md"), filepath.Join(e.dir, "docs", "hard.md")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		what, query string
	}{
		{"../etc/passwd", "path=" + url.QueryEscape("../etc/passwd")},
		{"../etc/passwd unescaped", "path=../etc/passwd"},
		{"/etc/passwd", "path=" + url.QueryEscape("/etc/passwd")},
		{"docs/../../x", "path=" + url.QueryEscape("docs/../../x")},
		{"..", "path=.."},
		{"raw %2F traversal", "path=..%2F..%2Fetc%2Fpasswd"},
		{"raw %2F absolute", "path=%2Fetc%2Fpasswd"},
		{"raw %2F%2F absolute", "path=%2F%2Fetc%2Fpasswd"},
		{"sibling directory by relative path", "path=" + url.QueryEscape(outsideRel)},
		{"symlink to /etc/passwd", "path=leak"},
		{"symlinked directory to /etc", "path=out/passwd"},
		{"relative symlink climbing out", "path=docs/rel-leak.md"},
		{"symlink to a sibling directory", "path=sibling.md"},
		{"hard link to a file outside", "path=docs/hard.md"},
	} {
		resp, b := e.At(t).RawGet("/api/files?" + tc.query)
		msg := apitest.WantError(t, tc.what, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
		if strings.HasPrefix(tc.what, "hard link") && !strings.Contains(msg, "hard links") {
			t.Errorf("%s: message %q does not say why", tc.what, msg)
		}
		if strings.Contains(string(b), "root:") || strings.Contains(string(b), "TOP-SECRET") {
			t.Errorf("%s: body leaks the file: %s", tc.what, b)
		}
	}

	for _, tc := range []struct {
		what, query string
		status      int
		code        string
	}{
		{"missing file", "path=docs/missing.md", http.StatusNotFound, wire.CodeNotFound},
		{"missing directory", "path=nowhere/x.md", http.StatusNotFound, wire.CodeNotFound},
		{"directory", "path=docs", http.StatusBadRequest, wire.CodeInvalidMessage},
		{"symlink to a directory", "path=documents", http.StatusBadRequest, wire.CodeInvalidMessage},
		{"over 8 MiB", "path=docs/big.md", http.StatusRequestEntityTooLarge, wire.CodeInvalidMessage},
		{"the workspace itself", "path=.", http.StatusBadRequest, wire.CodeInvalidMessage},
		{"no path parameter", "", http.StatusBadRequest, wire.CodeInvalidMessage},
		{"empty path parameter", "path=", http.StatusBadRequest, wire.CodeInvalidMessage},
		{"NUL in the path", "path=docs%2Fprd.md%00.txt", http.StatusBadRequest, wire.CodeInvalidMessage},
	} {
		resp, b := e.At(t).RawGet("/api/files?" + tc.query)
		apitest.WantError(t, tc.what, resp, b, tc.status, tc.code)
	}
}

// fifoAnswerBound is how long GET /api/files may take on a FIFO; a
// regular answer takes milliseconds.
const fifoAnswerBound = 5 * time.Second

// TestFilesAPIFifo: a FIFO in the workspace is not a file to serve, and
// asking for it must not hang the request: opening a FIFO for reading
// blocks until a writer comes, which may be never.
func TestFilesAPIFifo(t *testing.T) {
	e := newAPI(t)
	fifo := filepath.Join(e.dir, "docs", "pipe.md")
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		resp *http.Response
		body []byte
		err  error
	}
	done := make(chan result, 1)
	go func() { // no t.Fatal here: the result goes back to the test
		var r result
		r.resp, r.err = e.HTTP.Get(e.ts.URL + "/api/files?path=docs/pipe.md")
		if r.err == nil {
			r.body, r.err = io.ReadAll(r.resp.Body)
			r.resp.Body.Close()
		}
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(fifoAnswerBound):
		t.Errorf("GET /api/files?path=docs/pipe.md (a FIFO): no answer within %v; the handler is stuck opening it", fifoAnswerBound)
		// Release the handler: a writer's open ends a reader's blocked
		// open. Non-blocking, so the test never waits on it.
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatalf("open the FIFO for writing to release the server: %v", err)
		}
		w.Close()
		select {
		case r = <-done:
		case <-time.After(waitTimeout):
			t.Fatalf("GET /api/files on a FIFO: no answer within %v even after a writer came", waitTimeout)
		}
	}
	if r.err != nil {
		t.Fatalf("GET /api/files on a FIFO: %v", r.err)
	}
	apitest.WantError(t, "a FIFO", r.resp, r.body, http.StatusBadRequest, wire.CodeInvalidMessage)
}

// TestFilesAPIDanglingLinkTellsNothing: a link to a missing outside path is
// refused like a link to an existing one, so the answer does not reveal
// which outside paths exist.
func TestFilesAPIDanglingLinkTellsNothing(t *testing.T) {
	e := newAPI(t)
	for name, target := range map[string]string{"exists": "/etc/passwd", "missing": "/etc/agentmux-no-such-file"} {
		if err := os.Symlink(target, filepath.Join(e.dir, name)); err != nil {
			t.Fatal(err)
		}
		res, err := http.Get(e.ts.URL + "/api/files?path=" + name)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("link to %s outside: status %d, want 403 either way", name, res.StatusCode)
		}
	}
}
