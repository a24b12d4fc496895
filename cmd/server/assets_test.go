package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := io.WriteString(w, s); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestAssets: hashed files are immutable, the page revalidates, gzip goes
// to those who take it, and nothing else is served.
func TestAssets(t *testing.T) {
	const js = "console.log('agentmux');"
	a, err := newAssets(fstest.MapFS{
		"index.html":             {Data: []byte(`<script src="./app-ABCD1234.js"></script>`)},
		"app-ABCD1234.js":        {Data: []byte(js)},
		"app-ABCD1234.js.gz":     {Data: gz(t, js)},
		"chunks/x-EFGH5678.js":   {Data: []byte("x")},
		"favicon.svg":            {Data: []byte("<svg/>")},
		"manifest.webmanifest":   {Data: []byte(`{"name":"agentmux"}`)},
		"sw.js":                  {Data: []byte("self.addEventListener('install', () => {});")},
		"chunks/nohash.js":       {Data: []byte("y")},
		"chunks/nohash.js.gz.gz": {Data: []byte("z")},
	}, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, req)
		return w.Result()
	}
	body := func(resp *http.Response) string {
		t.Helper()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	page := get("/")
	etag := page.Header.Get("ETag")
	if page.StatusCode != http.StatusOK || page.Header.Get("Cache-Control") != "no-cache" || etag == "" ||
		page.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET / = %d %v, want the page, no-cache, an ETag", page.StatusCode, page.Header)
	}
	if again := get("/", "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
		t.Fatalf("GET / with its ETag = %d, want 304", again.StatusCode)
	}

	plain := get("/app-ABCD1234.js")
	if plain.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || plain.Header.Get("Content-Encoding") != "" ||
		plain.Header.Get("Vary") != "Accept-Encoding" || body(plain) != js {
		t.Fatalf("hashed file without gzip = %v", plain.Header)
	}
	zipped := get("/app-ABCD1234.js", "Accept-Encoding", "br, gzip")
	if zipped.Header.Get("Content-Encoding") != "gzip" || zipped.Header.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		zipped.Header.Get("ETag") == plain.Header.Get("ETag") {
		t.Fatalf("hashed file with gzip = %v", zipped.Header)
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(zr); err != nil || string(b) != js {
		t.Fatalf("gzip body = %q, %v", b, err)
	}
	if refused := get("/app-ABCD1234.js", "Accept-Encoding", "gzip;q=0"); refused.Header.Get("Content-Encoding") != "" {
		t.Fatal("gzip sent to a client that refused it")
	}
	if icon := get("/favicon.svg"); icon.Header.Get("Cache-Control") != "no-cache" || icon.Header.Get("Vary") != "" {
		t.Fatalf("unhashed file = %v, want no-cache and no Vary", icon.Header)
	}
	// The browser installs the app from its manifest, and registers the
	// worker only from a script served as JavaScript, revalidated so
	// that a new build's worker replaces the old one.
	if m := get("/manifest.webmanifest"); m.StatusCode != http.StatusOK || m.Header.Get("Content-Type") != "application/manifest+json" {
		t.Fatalf("the manifest = %d %v", m.StatusCode, m.Header)
	}
	if sw := get("/sw.js"); sw.StatusCode != http.StatusOK || sw.Header.Get("Content-Type") != "text/javascript; charset=utf-8" ||
		sw.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("the service worker = %d %v", sw.StatusCode, sw.Header)
	}
	if c := get("/chunks/x-EFGH5678.js"); c.StatusCode != http.StatusOK || c.Header.Get("Cache-Control") == "no-cache" {
		t.Fatalf("hashed chunk = %d %v", c.StatusCode, c.Header)
	}
	for _, p := range []string{"/chunks/", "/chunks", "/missing.js", "/app-ABCD1234.js.gz", "/../index.html/x"} {
		if r := get(p); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, r.StatusCode)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{
		"":                  false,
		"gzip":              true,
		"GZIP":              true,
		"br, gzip, deflate": true,
		"deflate, br":       false,
		"gzip;q=0":          false,
		"gzip; q=0.000":     false,
		"gzip;q=0.5":        true,
		"gzip;q=1":          true,
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Accept-Encoding", in)
		if got := acceptsGzip(req); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}

// openLog is a file system that records which files were opened.
type openLog struct {
	fs.FS
	mu     sync.Mutex
	opened []string
}

func (o *openLog) Open(name string) (fs.File, error) {
	f, err := o.FS.Open(name)
	if err == nil {
		if st, serr := f.Stat(); serr == nil && !st.IsDir() {
			o.mu.Lock()
			o.opened = append(o.opened, name)
			o.mu.Unlock()
		}
	}
	return f, err
}

func (o *openLog) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	got := o.opened
	o.opened = nil
	return got
}

// The embedded UI is read only as far as browsers ask for it: indexing it
// reads no file, and a gzip client's request reads the compressed twin
// alone. Reading it all at start kept all of it (source maps included)
// resident in the server's memory.
func TestAssetsReadOnlyWhatIsServed(t *testing.T) {
	const js = "console.log('agentmux');"
	files := &openLog{FS: fstest.MapFS{
		"index.html":            {Data: []byte("<p>")},
		"app-ABCD1234.js":       {Data: []byte(js)},
		"app-ABCD1234.js.gz":    {Data: gz(t, js)},
		"app-ABCD1234.js.map":   {Data: bytes.Repeat([]byte("m"), 1<<20)},
		"chunks/x-EFGH5678.js":  {Data: []byte("x")},
		"chunks/x-EFGH5678.map": {Data: []byte("{}")},
	}}
	a, err := newAssets(files, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	if got := files.take(); len(got) != 0 {
		t.Fatalf("indexing the UI read %v; it should read nothing before a browser asks", got)
	}
	for range 2 {
		req := httptest.NewRequest(http.MethodGet, "/app-ABCD1234.js", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		a.ServeHTTP(w, req)
		if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "gzip" || w.Header().Get("ETag") == "" {
			t.Fatalf("GET with gzip = %d %v", w.Code, w.Header())
		}
	}
	// The first request hashes the file and serves it, the second only
	// serves it: the hash is kept.
	if got, want := files.take(), []string{"app-ABCD1234.js.gz", "app-ABCD1234.js.gz", "app-ABCD1234.js.gz"}; !slices.Equal(got, want) {
		t.Errorf("serving the script twice with gzip opened %v, want %v", got, want)
	}
}
