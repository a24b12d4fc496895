// Package githubtest is a stand-in for GitHub's REST API (and the one
// GraphQL query package forge sends), on httptest, for tests of forge and
// of everything that calls it, and for the UI tests' process
// (web/test/fakegithub).
//
// It answers exactly the calls forge makes, in GitHub's documented shapes
// (each handler names the docs page it follows; testdata holds the docs'
// example bodies the answers are checked against), with GitHub's manners:
// the token is checked (401 Bad credentials), GETs carry ETags and honour
// If-None-Match (304, not counted against the rate limit), every answer
// carries X-RateLimit-* and the limit can be spent (403 with the
// documented body) or a secondary limit hit (429 with Retry-After), lists
// are paged (per_page, page, Link), a second pull request of one head is
// refused (422), an unknown repository is a 404. It is served both at the
// root (as api.github.com) and under /api/v3 with GraphQL at /api/graphql
// (as GitHub Enterprise Server).
//
// It runs no goroutines of its own; New's httptest server is closed by
// the test's cleanup.
package githubtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the token New's server accepts.
const Token = "ghp_githubtestTOKEN0123456789abcdefghij"

// maxRequests bounds the requests kept for Requests.
const maxRequests = 10000

// Server is the stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the base URL of a server from New (http://127.0.0.1:port),
	// which is also its REST API's base (as https://api.github.com).
	URL string
	// WebURL is the base of the pages html_url points to; it is
	// https://github.com as the UI tests' remotes name it.
	WebURL string

	token string
	mux   *http.ServeMux

	// mu protects the following.
	mu        sync.Mutex
	repos     map[string]*repo // by lower-case owner/name: GitHub's names are case-insensitive
	jobLogs   map[int64]string
	requests  []Request
	nextID    int64
	limit     int
	remaining int
	reset     time.Time
	// spentUntil: the primary limit is spent until then (ExhaustRateLimit).
	spentUntil time.Time
	// secondaryUntil: requests get 429 with Retry-After until then.
	secondaryUntil time.Time
}

// repo is one repository's state.
type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	readOnly      bool
	pulls         []*Pull
	checks        map[string][]CheckRun
	statuses      map[string][]Status
	reviews       map[int][]Review
	threads       map[int][]Thread
}

// Pull is a pull request the stand-in holds.
type Pull struct {
	Number    int
	Title     string
	Body      string
	Head      string
	Base      string
	HeadSHA   string
	Draft     bool
	State     string // open | closed
	Merged    bool
	CreatedAt time.Time
}

// CheckRun is a check run to report for a commit. Zero fields take
// defaults: ID a fresh one, Status "completed" when Conclusion is set
// (else "queued"), App "github-actions".
type CheckRun struct {
	ID         int64
	Name       string
	Status     string // queued | in_progress | completed
	Conclusion string // success | failure | neutral | cancelled | skipped | timed_out | action_required
	DetailsURL string
	App        string // the app's slug
	Title      string // output.title
	Summary    string // output.summary
	Text       string // output.text
}

// Status is a commit status to report for a commit.
type Status struct {
	State       string // error | failure | pending | success
	Context     string
	TargetURL   string
	Description string
}

// Review is a submitted review of a pull request.
type Review struct {
	ID          int64
	User        string
	State       string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED | PENDING
	Body        string
	SubmittedAt time.Time // zero: now
}

// Thread is a review thread of a pull request.
type Thread struct {
	Resolved  bool
	Outdated  bool
	Path      string
	Line      int // 0: null (outdated)
	StartLine int // 0: null
	Comments  []Comment
}

// Comment is one comment of a review thread.
type Comment struct {
	Author string
	Body   string
}

// Request is one request the stand-in answered, for assertions.
type Request struct {
	Method string
	Path   string
	Query  string
	// Headers are the request's header names (canonical), never values.
	Headers []string
	// Conditional: it carried If-None-Match; NotModified: answered 304.
	Conditional, NotModified bool
	// Authorized: it carried the right token.
	Authorized bool
	Status     int
}

// New starts a stand-in on httptest that accepts Token; the test's
// cleanup closes it.
func New(t testing.TB) *Server {
	s := NewHandler(Token)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// NewHandler returns a stand-in that accepts token, to serve with one's
// own http.Server (web/test/fakegithub); its URL is "".
func NewHandler(token string) *Server {
	s := &Server{
		WebURL:  "https://github.com",
		token:   token,
		repos:   map[string]*repo{},
		jobLogs: map[int64]string{},
		nextID:  1000,
		limit:   5000, remaining: 5000,
		reset: time.Now().Add(time.Hour),
	}
	s.routes()
	return s
}

// AddRepo adds a repository (an existing one is kept).
func (s *Server) AddRepo(owner, name, defaultBranch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := strings.ToLower(owner + "/" + name)
	if _, ok := s.repos[key]; ok {
		return
	}
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	s.nextID++
	s.repos[key] = &repo{id: s.nextID, owner: owner, name: name, defaultBranch: defaultBranch,
		checks: map[string][]CheckRun{}, statuses: map[string][]Status{}, reviews: map[int][]Review{}, threads: map[int][]Thread{}}
}

// DenyWrites makes the token read-only on a repository: creating a pull
// request is answered 403 "Resource not accessible by personal access
// token", as GitHub answers a fine-grained token without the permission.
func (s *Server) DenyWrites(owner, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.repo(owner, name); r != nil {
		r.readOnly = true
	}
}

// SetChecks sets the check runs of a commit; sha "pull/<n>" means the
// head of pull request n.
func (s *Server) SetChecks(owner, name, sha string, runs []CheckRun) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, sha, err := s.commit(owner, name, sha)
	if err != nil {
		return err
	}
	for i := range runs {
		if runs[i].ID == 0 {
			s.nextID++
			runs[i].ID = s.nextID
		}
		if runs[i].Status == "" {
			runs[i].Status = "queued"
			if runs[i].Conclusion != "" {
				runs[i].Status = "completed"
			}
		}
		if runs[i].App == "" {
			runs[i].App = "github-actions"
		}
	}
	r.checks[sha] = append([]CheckRun(nil), runs...)
	return nil
}

// SetStatuses sets the commit statuses of a commit; sha "pull/<n>" means
// the head of pull request n.
func (s *Server) SetStatuses(owner, name, sha string, statuses []Status) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, sha, err := s.commit(owner, name, sha)
	if err != nil {
		return err
	}
	r.statuses[sha] = append([]Status(nil), statuses...)
	return nil
}

// AddReview adds a review to a pull request.
func (s *Server) AddReview(owner, name string, number int, rv Review) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p := s.pull(owner, name, number)
	if p == nil {
		return fmt.Errorf("githubtest: no pull request %s/%s#%d", owner, name, number)
	}
	if rv.ID == 0 {
		s.nextID++
		rv.ID = s.nextID
	}
	if rv.SubmittedAt.IsZero() {
		rv.SubmittedAt = time.Now().UTC().Truncate(time.Second)
	}
	r.reviews[number] = append(r.reviews[number], rv)
	return nil
}

// AddThread adds a review thread to a pull request.
func (s *Server) AddThread(owner, name string, number int, th Thread) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, p := s.pull(owner, name, number)
	if p == nil {
		return fmt.Errorf("githubtest: no pull request %s/%s#%d", owner, name, number)
	}
	r.threads[number] = append(r.threads[number], th)
	return nil
}

// SetJobLog sets an Actions job's log.
func (s *Server) SetJobLog(jobID int64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobLogs[jobID] = text
}

// ExhaustRateLimit spends the primary rate limit until resetIn from now.
func (s *Server) ExhaustRateLimit(resetIn time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spentUntil = time.Now().Add(resetIn)
	s.remaining = 0
	s.reset = s.spentUntil
}

// SecondaryRateLimit answers every request 429 with Retry-After until
// retryAfter from now, as GitHub does when a secondary limit is hit.
func (s *Server) SecondaryRateLimit(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secondaryUntil = time.Now().Add(retryAfter)
}

// SetPullState closes (or merges, or reopens) a pull request: state is
// "open", "closed" or "merged".
func (s *Server) SetPullState(owner, name string, number int, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, p := s.pull(owner, name, number)
	if p == nil {
		return fmt.Errorf("githubtest: no pull request %s/%s#%d", owner, name, number)
	}
	p.State, p.Merged = state, state == "merged"
	if p.Merged {
		p.State = "closed"
	}
	return nil
}

// Pulls returns a repository's pull requests, oldest first.
func (s *Server) Pulls(owner, name string) []Pull {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repo(owner, name)
	if r == nil {
		return nil
	}
	out := make([]Pull, len(r.pulls))
	for i, p := range r.pulls {
		out[i] = *p
	}
	return out
}

// Requests returns the requests answered so far, oldest first (at most
// the last maxRequests).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// HeadSHA returns a pull request's head commit ("" when there is none).
func (s *Server) HeadSHA(owner, name string, number int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, p := s.pull(owner, name, number); p != nil {
		return p.HeadSHA
	}
	return ""
}

// repo finds a repository; s.mu is held.
func (s *Server) repo(owner, name string) *repo {
	return s.repos[strings.ToLower(owner+"/"+name)]
}

// pull finds a pull request; s.mu is held.
func (s *Server) pull(owner, name string, number int) (*repo, *Pull) {
	r := s.repo(owner, name)
	if r == nil {
		return nil, nil
	}
	for _, p := range r.pulls {
		if p.Number == number {
			return r, p
		}
	}
	return r, nil
}

// commit resolves "pull/<n>" to that pull request's head; s.mu is held.
func (s *Server) commit(owner, name, sha string) (*repo, string, error) {
	r := s.repo(owner, name)
	if r == nil {
		return nil, "", fmt.Errorf("githubtest: no repository %s/%s", owner, name)
	}
	if n, ok := strings.CutPrefix(sha, "pull/"); ok {
		num, _ := strconv.Atoi(n)
		_, p := s.pull(owner, name, num)
		if p == nil {
			return nil, "", fmt.Errorf("githubtest: no pull request %s/%s#%s", owner, name, n)
		}
		return r, p.HeadSHA, nil
	}
	return r, sha, nil
}

// fakeSHA is a stable commit id for a branch the stand-in has no commits of.
func fakeSHA(owner, name, branch string) string {
	sum := sha256.Sum256([]byte(strings.ToLower(owner+"/"+name) + ":" + branch))
	return hex.EncodeToString(sum[:20])
}

// etag is a weak ETag of a body, as GitHub sends them (W/"…").
func etag(body []byte) string {
	sum := sha256.Sum256(body)
	return `W/"` + hex.EncodeToString(sum[:16]) + `"`
}

// writeJSON answers with a JSON body; s.mu is not held.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}
