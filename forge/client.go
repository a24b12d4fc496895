package forge

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds on what the client reads and keeps.
const (
	maxBody      = 8 << 20  // one answer's body
	maxPages     = 10       // pages of one list followed by Link rel="next"
	perPage      = 100      // GitHub's largest page
	cacheEntries = 256      // conditional-request cache entries
	cacheBytes   = 32 << 20 // and their bodies, all together
	httpTimeout  = 10 * time.Second
	apiVersion   = "2022-11-28" // X-GitHub-Api-Version: the REST API version the shapes here follow
)

// Options configures a Client. The zero value is usable but has no token,
// which GitHub answers for public repositories only.
type Options struct {
	Token string
	// HTTP sends the requests; nil is a client with a 10 s timeout.
	HTTP *http.Client
	// UserAgent is sent as User-Agent ("agentmux/<version>"), which GitHub
	// requires; "" is "agentmux".
	UserAgent string
	// Logger gets one debug line per request; nil discards. It never
	// gets the token or the Authorization header.
	Logger *slog.Logger
}

// Client calls GitHub's API for one token. It is safe for concurrent use.
type Client struct {
	token string
	http  *http.Client
	ua    string
	log   *slog.Logger
	cache *etagCache

	// mu protects the following: the last rate-limit headers seen.
	mu        sync.Mutex
	limit     int
	remaining int
	reset     time.Time
}

// New returns a Client.
func New(opts Options) *Client {
	c := &Client{token: opts.Token, http: opts.HTTP, ua: opts.UserAgent, log: opts.Logger, cache: newETagCache(cacheEntries, cacheBytes)}
	if c.http == nil {
		c.http = &http.Client{Timeout: httpTimeout}
	}
	if c.ua == "" {
		c.ua = "agentmux"
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Limits returns the last rate-limit headers seen (zeros before any).
func (c *Client) Limits() (limit, remaining int, reset time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limit, c.remaining, c.reset
}

// answer is a response read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
	cached bool // the body is the cache's, after a 304
}

// get GETs a URL through the conditional-request cache; a non-2xx answer
// is an error (see check).
func (c *Client) get(ctx context.Context, u string) (answer, error) {
	return c.do(ctx, c.http, http.MethodGet, u, nil)
}

// do sends one request and reads its answer, bounded. GETs are
// conditional: a cached ETag goes as If-None-Match and a 304 returns the
// cached body. Any answer but 2xx and 3xx (which hc did not follow) is an
// error from check.
func (c *Client) do(ctx context.Context, hc *http.Client, method, u string, payload any) (answer, error) {
	var body io.Reader
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return answer{}, fmt.Errorf("encode %s %s: %w", method, pathOf(u), err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, pathOf(u), err)
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", c.ua)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	var hit *cacheEntry
	if method == http.MethodGet {
		if hit = c.cache.get(u); hit != nil {
			req.Header.Set("If-None-Match", hit.etag)
		}
	}
	start := time.Now()
	res, err := hc.Do(req)
	if err != nil {
		c.log.Debug("github request failed", "method", method, "path", pathOf(u), "err", transportError(err))
		return answer{}, fmt.Errorf("%w: %s %s: %v", ErrUnreachable, method, pathOf(u), transportError(err))
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, maxBody+1))
	if err != nil {
		return answer{}, fmt.Errorf("%w: %s %s: reading the answer: %v", ErrUnreachable, method, pathOf(u), transportError(err))
	}
	if len(b) > maxBody {
		return answer{}, fmt.Errorf("%w: %s %s: the answer is over %d bytes", ErrUnreachable, method, pathOf(u), maxBody)
	}
	c.noteLimits(res.Header)
	c.log.Debug("github request", "method", method, "path", pathOf(u), "status", res.StatusCode,
		"conditional", hit != nil, "ratelimit_remaining", res.Header.Get("X-RateLimit-Remaining"), "took", time.Since(start).Round(time.Millisecond))
	a := answer{status: res.StatusCode, header: res.Header, body: b}
	if res.StatusCode == http.StatusNotModified && hit != nil {
		a.body, a.cached = hit.body, true
		return a, nil
	}
	if err := c.check(method, u, a); err != nil {
		return a, err
	}
	if method == http.MethodGet {
		if etag := res.Header.Get("ETag"); etag != "" {
			c.cache.put(u, etag, b)
		}
	}
	return a, nil
}

// noteLimits keeps the rate-limit headers of an answer that has them.
func (c *Client) noteLimits(h http.Header) {
	if h.Get("X-RateLimit-Limit") == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	c.remaining, _ = strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		c.reset = time.Unix(s, 0)
	}
}

// check turns an answer that is not 2xx into the package's errors,
// following docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api
// and .../rate-limits-for-the-rest-api: a primary limit spent is 403 or
// 429 with X-RateLimit-Remaining: 0 (until X-RateLimit-Reset); a secondary
// one is 403 or 429 with Retry-After, or, without it, a message saying so
// (wait at least a minute).
func (c *Client) check(method, u string, a answer) error {
	if a.status >= 200 && a.status < 400 {
		return nil
	}
	where := method + " " + pathOf(u)
	if a.status >= 500 {
		return fmt.Errorf("%w: %s: %d %s", ErrUnreachable, where, a.status, http.StatusText(a.status))
	}
	var e struct {
		Message string `json:"message"`
		Errors  []struct {
			Message  string `json:"message"`
			Code     string `json:"code"`
			Field    string `json:"field"`
			Resource string `json:"resource"`
		} `json:"errors"`
		DocURL string `json:"documentation_url"`
	}
	_ = json.Unmarshal(a.body, &e) // a body that is not GitHub's JSON leaves the status alone to speak
	if a.status == http.StatusForbidden || a.status == http.StatusTooManyRequests {
		if rl := rateLimited(a.header, e.Message, a.status); rl != nil {
			return fmt.Errorf("%s: %w", where, rl)
		}
	}
	if a.status == http.StatusNotFound {
		return fmt.Errorf("%s: %w", where, ErrNotFound)
	}
	r := &Refused{Status: a.status, Message: clip(e.Message, maxMessage), DocURL: e.DocURL}
	if r.Message == "" {
		r.Message = http.StatusText(a.status)
	}
	for _, x := range e.Errors {
		switch {
		case x.Message != "":
			r.Errors = append(r.Errors, clip(x.Message, maxMessage))
		case x.Code != "":
			r.Errors = append(r.Errors, strings.TrimSpace(x.Resource+" "+x.Field+" "+x.Code))
		}
		if len(r.Errors) == 5 {
			break
		}
	}
	return fmt.Errorf("%s: %w", where, r)
}

// rateLimited reads a 403's or 429's headers and message; nil when the
// answer is not about the rate limit (a 403 for want of permission).
func rateLimited(h http.Header, message string, status int) *RateLimited {
	rl := &RateLimited{Resource: h.Get("X-RateLimit-Resource")}
	rl.Limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	remaining := h.Get("X-RateLimit-Remaining")
	rl.Remaining, _ = strconv.Atoi(remaining)
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s >= 0 {
		rl.Reset = time.Now().Add(time.Duration(s) * time.Second)
		return rl
	}
	if remaining == "0" {
		if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			rl.Reset = time.Unix(s, 0)
		}
		return rl
	}
	if status == http.StatusTooManyRequests || strings.Contains(strings.ToLower(message), "rate limit") {
		rl.Reset = time.Now().Add(time.Minute)
		return rl
	}
	return nil
}

// transportError is a transport error without its URL (a download URL's
// query is a signature) — the caller names the path itself.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.New("timed out")
	}
	return err
}

// pathOf is a URL's path, for logs and errors: never its query or user.
func pathOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(bad URL)"
	}
	return p.Path
}

// getJSON GETs a URL and decodes its JSON into v.
func (c *Client) getJSON(ctx context.Context, u string, v any) error {
	a, err := c.get(ctx, u)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		return fmt.Errorf("%w: GET %s: the answer is not the JSON expected: %v", ErrUnreachable, pathOf(u), err)
	}
	return nil
}

// pages GETs a list and the pages after it (Link rel="next", at most
// maxPages), handing each page's body to each.
func (c *Client) pages(ctx context.Context, u string, each func(body []byte) error) error {
	for range maxPages {
		a, err := c.get(ctx, u)
		if err != nil {
			return err
		}
		if err := each(a.body); err != nil {
			return fmt.Errorf("%w: GET %s: the answer is not the JSON expected: %v", ErrUnreachable, pathOf(u), err)
		}
		if u = nextLink(a.header.Get("Link")); u == "" {
			return nil
		}
	}
	c.log.Debug("github list cut at the page limit", "path", pathOf(u), "pages", maxPages)
	return nil
}

// nextLink finds rel="next" in a Link header, as
// docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
// shows it: <https://api.github.com/...&page=2>; rel="next", <...>; rel="last".
func nextLink(h string) string {
	for part := range strings.SplitSeq(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok {
			continue
		}
		for p := range strings.SplitSeq(params, ";") {
			if k, v, _ := strings.Cut(strings.TrimSpace(p), "="); k == "rel" && strings.Trim(v, `"`) == "next" {
				return strings.Trim(strings.TrimSpace(target), "<>")
			}
		}
	}
	return ""
}

// endpoint is a REST URL under r.API: the path's segments are escaped.
func endpoint(r Repo, query url.Values, segs ...string) string {
	var b strings.Builder
	b.WriteString(r.API)
	b.WriteString("/repos/")
	b.WriteString(url.PathEscape(r.Owner))
	b.WriteByte('/')
	b.WriteString(url.PathEscape(r.Name))
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if len(query) > 0 {
		b.WriteByte('?')
		b.WriteString(query.Encode())
	}
	return b.String()
}

// cacheEntry is one conditional-request cache entry.
type cacheEntry struct {
	url, etag string
	body      []byte
}

// etagCache is a least-recently-used cache of GET answers by URL, bounded
// in entries and bytes.
type etagCache struct {
	maxEntries, maxBytes int

	// mu protects the following.
	mu    sync.Mutex
	order *list.List // of *cacheEntry, most recent first
	byURL map[string]*list.Element
	bytes int
}

func newETagCache(entries, bytes int) *etagCache {
	return &etagCache{maxEntries: entries, maxBytes: bytes, order: list.New(), byURL: map[string]*list.Element{}}
}

// get returns the entry for url, or nil; the entry is not to be changed.
func (c *etagCache) get(url string) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byURL[url]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry)
}

// put keeps an answer, dropping the least recently used past the bounds.
func (c *etagCache) put(url, etag string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byURL[url]; ok {
		c.bytes -= len(el.Value.(*cacheEntry).body)
		c.order.Remove(el)
		delete(c.byURL, url)
	}
	if len(body) > c.maxBytes {
		return
	}
	c.byURL[url] = c.order.PushFront(&cacheEntry{url: url, etag: etag, body: body})
	c.bytes += len(body)
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		el := c.order.Back()
		e := el.Value.(*cacheEntry)
		c.order.Remove(el)
		delete(c.byURL, e.url)
		c.bytes -= len(e.body)
	}
}

// len reports how many entries the cache holds.
func (c *etagCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
