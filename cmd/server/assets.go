package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// hashedName matches the files the UI build names by their content
// (esbuild's [name]-[hash]): a new build gives them new names, so a
// browser may keep them for good.
var hashedName = regexp.MustCompile(`-[A-Z0-9]{8}\.[a-z0-9]+$`)

// assets serves the built UI. Content-hashed files are cached for a year
// as immutable; the rest, index.html above all, is revalidated on every
// load by its ETag, so a reload over a slow tunnel costs one small request
// and a new build is picked up at once. A file with a precompressed .gz
// twin (made by the build) is sent compressed to clients that take gzip.
type assets struct {
	fsys fs.FS
	// etags holds, by name, each file's strong validator: the hash of its
	// bytes, computed the first time the file is served and kept, since
	// the files are embedded and never change. Not at start: reading
	// every file (source maps, the lazy chunks) would make all of the
	// embedded UI resident in the server's memory for good, though a
	// browser fetches a fraction of it, and most servers run for hours
	// with no browser at all.
	etags map[string]func() (string, error)
	// index is the page served at the root: index.html, or the hub's.
	index string
}

// newAssets serves the files of fsys, index at the root.
func newAssets(fsys fs.FS, index string) (*assets, error) {
	a := &assets{fsys: fsys, etags: make(map[string]func() (string, error)), index: index}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		a.etags[name] = sync.OnceValues(func() (string, error) { return hashFile(fsys, name) })
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index the UI's files: %w", err)
	}
	return a, nil
}

// hashFile returns a strong validator for the file's bytes.
func hashFile(fsys fs.FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12]) + `"`, nil
}

// contentTypes are the types of the UI's files that Go's table and the
// system's may not know. The service worker (sw.js) needs a JavaScript
// type, which .js has everywhere.
var contentTypes = map[string]string{
	".webmanifest": "application/manifest+json",
}

// zeroTime leaves Last-Modified out: embedded files have no time, and the
// ETag says more.
var zeroTime time.Time

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// One page: the root is index.html, and there are no directory
	// listings.
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = a.index
	}
	if _, ok := a.etags[name]; !ok || strings.HasSuffix(name, ".gz") {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	if ct := cmp.Or(contentTypes[path.Ext(name)], mime.TypeByExtension(path.Ext(name))); ct != "" {
		h.Set("Content-Type", ct)
	}
	if hashedName.MatchString(name) {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	serve := name
	if _, ok := a.etags[name+".gz"]; ok {
		h.Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			// Another representation, with a validator of its own: the
			// hash of the compressed bytes.
			serve = name + ".gz"
			h.Set("Content-Encoding", "gzip")
		}
	}
	etag, err := a.etags[serve]()
	if err != nil {
		http.Error(w, "cannot read "+name, http.StatusInternalServerError)
		return
	}
	h.Set("ETag", etag)
	f, err := a.fsys.Open(serve)
	if err != nil {
		http.Error(w, "cannot read "+name, http.StatusInternalServerError)
		return
	}
	defer f.Close()
	rs, ok := f.(io.ReadSeeker)
	if !ok {
		http.Error(w, "cannot read "+name, http.StatusInternalServerError)
		return
	}
	http.ServeContent(w, r, name, zeroTime, rs)
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip
// (and does not refuse it with q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		coding, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q, ok := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !ok {
			return true // no weight: 1
		}
		w, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		return err == nil && w > 0
	}
	return false
}
