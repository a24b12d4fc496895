package githubtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// docs pages the answers point to, as GitHub's do.
const (
	docsRateLimit = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
	docsSecondary = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docsCreatePR  = "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"
)

type prefixKey struct{}

// routes registers the endpoints, at the root; ServeHTTP maps /api/v3 and
// /api/graphql (GitHub Enterprise Server's) onto them.
func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /rate_limit", s.rateLimitHandler)
	m.HandleFunc("GET /repos/{owner}/{repo}", s.getRepo)
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls", s.listPulls)
	m.HandleFunc("POST /repos/{owner}/{repo}/pulls", s.createPull)
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}", s.getPull)
	m.HandleFunc("GET /repos/{owner}/{repo}/pulls/{number}/reviews", s.listReviews)
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", s.listCheckRuns)
	m.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/status", s.combinedStatus)
	m.HandleFunc("GET /repos/{owner}/{repo}/actions/jobs/{id}/logs", s.jobLogRedirect)
	m.HandleFunc("GET /_download/jobs/{id}/logs", s.jobLogDownload)
	m.HandleFunc("POST /graphql", s.graphQL)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { notFound(w) })
	s.mux = m
}

// ServeHTTP answers as GitHub would: the secondary limit first, then the
// token, then the primary limit; then the endpoint, whose 200 answer to a
// GET gets an ETag and becomes a 304 when If-None-Match holds it. Every
// answer carries X-RateLimit-*.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	prefix := ""
	switch p := r.URL.Path; {
	case p == "/api/graphql":
		prefix, r.URL.Path = "/api", "/graphql"
	case strings.HasPrefix(p, "/api/v3/"):
		prefix, r.URL.Path = "/api/v3", strings.TrimPrefix(p, "/api/v3")
	}
	r.URL.RawPath = ""
	r = r.WithContext(context.WithValue(r.Context(), prefixKey{}, prefix))
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Conditional: r.Header.Get("If-None-Match") != ""}
	for name := range r.Header {
		rec.Headers = append(rec.Headers, name)
	}
	sort.Strings(rec.Headers)
	rec.Authorized = s.authorized(r)
	status := s.serve(w, r, rec.Authorized)
	rec.Status, rec.NotModified = status, status == http.StatusNotModified
	s.mu.Lock()
	if len(s.requests) == maxRequests {
		s.requests = s.requests[1:]
	}
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
}

// authorized reports whether the request carries the token, as
// "Bearer <token>" or "token <token>" (docs.github.com/en/rest/authentication/authenticating-to-the-rest-api).
func (s *Server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(h, " ")
	return (strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) && tok == s.token && tok != ""
}

// serve answers one request and returns the status sent.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, authorized bool) int {
	if strings.HasPrefix(r.URL.Path, "/_download/") {
		// A signed download URL, on another host in GitHub's case: no
		// token, no rate limit.
		s.mux.ServeHTTP(w, r)
		return 200
	}
	now := time.Now()
	resource := "core"
	if r.URL.Path == "/graphql" {
		resource = "graphql"
	}
	s.mu.Lock()
	if !s.spentUntil.IsZero() && now.After(s.spentUntil) {
		s.spentUntil, s.remaining, s.reset = time.Time{}, s.limit, now.Add(time.Hour)
	}
	if now.After(s.reset) {
		s.remaining, s.reset = s.limit, now.Add(time.Hour)
	}
	secondary := now.Before(s.secondaryUntil)
	retryAfter := int(s.secondaryUntil.Sub(now).Seconds() + 0.999)
	spent := now.Before(s.spentUntil) || s.remaining <= 0
	s.mu.Unlock()

	if secondary {
		// docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-rate-limit
		s.limitHeaders(w, resource)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.",
			"documentation_url": docsSecondary,
		})
		return http.StatusTooManyRequests
	}
	if !authorized {
		// docs.github.com/en/rest/using-the-rest-api/troubleshooting-the-rest-api#failed-login-limit
		msg := "Bad credentials"
		if r.Header.Get("Authorization") == "" {
			msg = "Requires authentication"
		}
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": "401"})
		return http.StatusUnauthorized
	}
	if r.URL.Path == "/rate_limit" {
		// Asking for the rate limit does not count against it.
		s.limitHeaders(w, resource)
		s.mux.ServeHTTP(w, r)
		return http.StatusOK
	}
	if spent {
		s.limitHeaders(w, resource)
		writeJSON(w, http.StatusForbidden, map[string]string{
			"message":           "API rate limit exceeded for user ID 1. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000000:0000000:00000000.",
			"documentation_url": docsRateLimit,
		})
		return http.StatusForbidden
	}

	rec := httptest.NewRecorder()
	s.mux.ServeHTTP(rec, r)
	res := rec.Result()
	body := rec.Body.Bytes()
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	// docs.github.com/en/rest/using-the-rest-api/best-practices-for-using-the-rest-api#use-conditional-requests-if-appropriate:
	// a 304 does not count against the primary rate limit.
	if r.Method == http.MethodGet && res.StatusCode == http.StatusOK && len(body) > 0 {
		tag := etag(body)
		w.Header().Set("ETag", tag)
		w.Header().Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
		if r.Header.Get("If-None-Match") == tag {
			s.limitHeaders(w, resource)
			w.Header().Del("Content-Type")
			w.WriteHeader(http.StatusNotModified)
			return http.StatusNotModified
		}
	}
	s.mu.Lock()
	s.remaining--
	s.mu.Unlock()
	s.limitHeaders(w, resource)
	w.WriteHeader(res.StatusCode)
	w.Write(body)
	return res.StatusCode
}

// limitHeaders sets X-RateLimit-* as docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#checking-the-status-of-your-rate-limit lists them.
func (s *Server) limitHeaders(w http.ResponseWriter, resource string) {
	s.mu.Lock()
	limit, remaining, reset := s.limit, max(s.remaining, 0), s.reset
	s.mu.Unlock()
	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Used", strconv.Itoa(limit-remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
}

// rateLimitHandler follows docs.github.com/en/rest/rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user.
func (s *Server) rateLimitHandler(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	one := map[string]any{"limit": s.limit, "remaining": max(s.remaining, 0), "reset": s.reset.Unix(), "used": s.limit - max(s.remaining, 0)}
	s.mu.Unlock()
	res := func(name string) map[string]any {
		m := map[string]any{"resource": name}
		for k, v := range one {
			m[k] = v
		}
		return m
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resources": map[string]any{"core": res("core"), "graphql": res("graphql"), "search": res("search")},
		"rate":      res("core"),
	})
}

// notFound is GitHub's 404, for an unknown repository or one the token
// cannot see alike.
func notFound(w http.ResponseWriter) {
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found", "documentation_url": "https://docs.github.com/rest", "status": "404"})
}

// base is the API's base URL as the client called it.
func base(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	prefix, _ := r.Context().Value(prefixKey{}).(string)
	if prefix == "/api" {
		prefix = "/api/v3"
	}
	return scheme + "://" + r.Host + prefix
}

// user is a simple-user object (docs.github.com/en/rest/users/users).
func user(api, web, login string) map[string]any {
	id := int64(0)
	for _, c := range login {
		id = id*31 + int64(c)
	}
	id = id%1000000 + 1
	u := api + "/users/" + login
	return map[string]any{
		"login": login, "id": id, "node_id": "MDQ6VXNlcj" + strconv.FormatInt(id, 10),
		"avatar_url": "https://avatars.githubusercontent.com/u/" + strconv.FormatInt(id, 10) + "?v=4", "gravatar_id": "",
		"url": u, "html_url": web + "/" + login, "followers_url": u + "/followers",
		"following_url": u + "/following{/other_user}", "gists_url": u + "/gists{/gist_id}",
		"starred_url": u + "/starred{/owner}{/repo}", "subscriptions_url": u + "/subscriptions",
		"organizations_url": u + "/orgs", "repos_url": u + "/repos", "events_url": u + "/events{/privacy}",
		"received_events_url": u + "/received_events", "type": "User", "site_admin": false,
	}
}

// repoJSON is a repository object, the fields of
// docs.github.com/en/rest/repos/repos#get-a-repository that matter here.
func (s *Server) repoJSON(r *http.Request, rp *repo) map[string]any {
	api := base(r)
	u := api + "/repos/" + rp.owner + "/" + rp.name
	return map[string]any{
		"id": rp.id, "node_id": "MDEwOlJlcG9zaXRvcnk" + strconv.FormatInt(rp.id, 10),
		"name": rp.name, "full_name": rp.owner + "/" + rp.name, "owner": user(api, s.WebURL, rp.owner),
		"private": false, "html_url": s.WebURL + "/" + rp.owner + "/" + rp.name, "description": nil, "fork": false,
		"url": u, "pulls_url": u + "/pulls{/number}", "statuses_url": u + "/statuses/{sha}",
		"clone_url": s.WebURL + "/" + rp.owner + "/" + rp.name + ".git", "default_branch": rp.defaultBranch,
		"visibility": "public", "archived": false, "disabled": false,
		"permissions": map[string]bool{"admin": false, "maintain": false, "push": !rp.readOnly, "triage": !rp.readOnly, "pull": true},
	}
}

// getRepo follows docs.github.com/en/rest/repos/repos#get-a-repository.
func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, s.repoJSON(r, rp))
}

// pullJSON is a pull request object: "pull-request-simple" in lists,
// "pull-request" (with merged, mergeable, counts...) alone; the fields of
// docs.github.com/en/rest/pulls/pulls (testdata/pulls-get.json, pulls-create.json).
func (s *Server) pullJSON(r *http.Request, rp *repo, p *Pull, full bool) map[string]any {
	api := base(r)
	u := api + "/repos/" + rp.owner + "/" + rp.name
	self := u + "/pulls/" + strconv.Itoa(p.Number)
	html := s.WebURL + "/" + rp.owner + "/" + rp.name + "/pull/" + strconv.Itoa(p.Number)
	issue := u + "/issues/" + strconv.Itoa(p.Number)
	ts := p.CreatedAt.UTC().Format(time.RFC3339)
	var closedAt, mergedAt any
	if p.State == "closed" {
		closedAt = ts
	}
	if p.Merged {
		mergedAt = ts
	}
	ref := func(branch, sha string) map[string]any {
		return map[string]any{"label": rp.owner + ":" + branch, "ref": branch, "sha": sha, "user": user(api, s.WebURL, rp.owner), "repo": s.repoJSON(r, rp)}
	}
	link := func(h string) map[string]string { return map[string]string{"href": h} }
	out := map[string]any{
		"url": self, "id": int64(p.Number) + rp.id*1000, "node_id": "MDExOlB1bGxSZXF1ZXN0" + strconv.Itoa(p.Number),
		"html_url": html, "diff_url": html + ".diff", "patch_url": html + ".patch", "issue_url": issue,
		"commits_url": self + "/commits", "review_comments_url": self + "/comments",
		"review_comment_url": u + "/pulls/comments{/number}", "comments_url": issue + "/comments",
		"statuses_url": u + "/statuses/" + p.HeadSHA, "number": p.Number, "state": p.State, "locked": false,
		"title": p.Title, "user": user(api, s.WebURL, rp.owner), "body": p.Body, "labels": []any{}, "milestone": nil,
		"active_lock_reason": nil, "created_at": ts, "updated_at": ts, "closed_at": closedAt, "merged_at": mergedAt,
		"merge_commit_sha": nil, "assignee": nil, "assignees": []any{}, "requested_reviewers": []any{}, "requested_teams": []any{},
		"head": ref(p.Head, p.HeadSHA), "base": ref(p.Base, fakeSHA(rp.owner, rp.name, p.Base)),
		"_links": map[string]any{"self": link(self), "html": link(html), "issue": link(issue), "comments": link(issue + "/comments"),
			"review_comments": link(self + "/comments"), "review_comment": link(u + "/pulls/comments{/number}"),
			"commits": link(self + "/commits"), "statuses": link(u + "/statuses/" + p.HeadSHA)},
		"author_association": "OWNER", "auto_merge": nil, "draft": p.Draft,
	}
	if full {
		out["merged"] = p.Merged
		out["mergeable"] = true
		out["rebaseable"] = true
		out["mergeable_state"] = "clean"
		out["merged_by"] = nil
		out["comments"] = 0
		out["review_comments"] = len(rp.threads[p.Number])
		out["maintainer_can_modify"] = false
		out["commits"] = 1
		out["additions"] = 1
		out["deletions"] = 0
		out["changed_files"] = 1
	}
	return out
}

// listPulls follows docs.github.com/en/rest/pulls/pulls#list-pull-requests:
// state (open, closed, all; default open), head (user:ref), base, sorted
// by creation, newest first; paged.
func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		notFound(w)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var items []any
	for i := len(rp.pulls) - 1; i >= 0; i-- {
		p := rp.pulls[i]
		if state != "all" && p.State != state {
			continue
		}
		if h := q.Get("head"); h != "" {
			owner, branch, ok := strings.Cut(h, ":")
			if !ok || !strings.EqualFold(owner, rp.owner) || branch != p.Head {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		items = append(items, s.pullJSON(r, rp, p, false))
	}
	page, ok := paginate(w, r, items)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// createPull follows docs.github.com/en/rest/pulls/pulls#create-a-pull-request:
// 201 with the pull request and its Location; 422 Validation Failed for a
// missing field, a head equal to its base, or a second open pull request
// of one head and base; 403 when the token may not write.
func (s *Server) createPull(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Title string `json:"title"`
		Head  string `json:"head"`
		Base  string `json:"base"`
		Body  string `json:"body"`
		Draft bool   `json:"draft"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON", "documentation_url": docsCreatePR, "status": "400"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		notFound(w)
		return
	}
	if rp.readOnly {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by personal access token", "documentation_url": docsCreatePR, "status": "403"})
		return
	}
	invalid := func(errs ...map[string]string) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": errs, "documentation_url": docsCreatePR, "status": "422"})
	}
	var missing []map[string]string
	for field, v := range map[string]string{"title": in.Title, "head": in.Head, "base": in.Base} {
		if v == "" {
			missing = append(missing, map[string]string{"resource": "PullRequest", "field": field, "code": "missing_field"})
		}
	}
	if len(missing) > 0 {
		sort.Slice(missing, func(i, j int) bool { return missing[i]["field"] < missing[j]["field"] })
		invalid(missing...)
		return
	}
	head := in.Head
	if owner, branch, ok := strings.Cut(head, ":"); ok && strings.EqualFold(owner, rp.owner) {
		head = branch
	}
	if head == in.Base {
		invalid(map[string]string{"resource": "PullRequest", "code": "custom", "message": "No commits between " + in.Base + " and " + head})
		return
	}
	for _, p := range rp.pulls {
		if p.State == "open" && p.Head == head && p.Base == in.Base {
			invalid(map[string]string{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + rp.owner + ":" + head + "."})
			return
		}
	}
	p := &Pull{Number: len(rp.pulls) + 1, Title: in.Title, Body: in.Body, Head: head, Base: in.Base, Draft: in.Draft,
		State: "open", HeadSHA: fakeSHA(rp.owner, rp.name, head), CreatedAt: time.Now().UTC().Truncate(time.Second)}
	rp.pulls = append(rp.pulls, p)
	out := s.pullJSON(r, rp, p, true)
	w.Header().Set("Location", out["url"].(string))
	writeJSON(w, http.StatusCreated, out)
}

// getPull follows docs.github.com/en/rest/pulls/pulls#get-a-pull-request.
func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	rp, p := s.pull(r.PathValue("owner"), r.PathValue("repo"), n)
	if p == nil {
		notFound(w)
		return
	}
	writeJSON(w, http.StatusOK, s.pullJSON(r, rp, p, true))
}

// listReviews follows docs.github.com/en/rest/pulls/reviews#list-reviews-for-a-pull-request:
// oldest first, paged.
func (s *Server) listReviews(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := strconv.Atoi(r.PathValue("number"))
	rp, p := s.pull(r.PathValue("owner"), r.PathValue("repo"), n)
	if p == nil {
		notFound(w)
		return
	}
	api := base(r)
	prURL := api + "/repos/" + rp.owner + "/" + rp.name + "/pulls/" + strconv.Itoa(n)
	html := s.WebURL + "/" + rp.owner + "/" + rp.name + "/pull/" + strconv.Itoa(n)
	items := []any{}
	for _, rv := range rp.reviews[n] {
		h := html + "#pullrequestreview-" + strconv.FormatInt(rv.ID, 10)
		item := map[string]any{
			"id": rv.ID, "node_id": "MDE3OlB1bGxSZXF1ZXN0UmV2aWV3" + strconv.FormatInt(rv.ID, 10),
			"user": user(api, s.WebURL, rv.User), "body": rv.Body, "state": rv.State, "html_url": h,
			"pull_request_url": prURL, "author_association": "COLLABORATOR",
			"_links":    map[string]any{"html": map[string]string{"href": h}, "pull_request": map[string]string{"href": prURL}},
			"commit_id": p.HeadSHA, "submitted_at": rv.SubmittedAt.UTC().Format(time.RFC3339),
		}
		if rv.State == "PENDING" {
			delete(item, "submitted_at") // a review not yet submitted has no time
		}
		items = append(items, item)
	}
	page, ok := paginate(w, r, items)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// listCheckRuns follows docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference:
// {total_count, check_runs}, filter=latest (the default) keeps the last
// run of each name, check_name and status filter; paged.
func (s *Server) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		notFound(w)
		return
	}
	ref := r.PathValue("ref")
	q := r.URL.Query()
	runs := rp.checks[ref]
	if q.Get("filter") != "all" {
		last := map[string]int{}
		for i, cr := range runs {
			last[cr.Name] = i
		}
		var kept []CheckRun
		for i, cr := range runs {
			if last[cr.Name] == i {
				kept = append(kept, cr)
			}
		}
		runs = kept
	}
	api := base(r)
	u := api + "/repos/" + rp.owner + "/" + rp.name
	items := []any{}
	for _, cr := range runs {
		if n := q.Get("check_name"); n != "" && n != cr.Name {
			continue
		}
		if st := q.Get("status"); st != "" && st != cr.Status {
			continue
		}
		id := strconv.FormatInt(cr.ID, 10)
		html := s.WebURL + "/" + rp.owner + "/" + rp.name + "/runs/" + id
		details := cr.DetailsURL
		if details == "" && cr.App == "github-actions" {
			details = s.WebURL + "/" + rp.owner + "/" + rp.name + "/actions/runs/" + strconv.FormatInt(cr.ID+7, 10) + "/job/" + id
		}
		var conclusion, completed any
		started := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
		if cr.Status == "completed" {
			conclusion, completed = cr.Conclusion, time.Now().UTC().Format(time.RFC3339)
		}
		items = append(items, map[string]any{
			"id": cr.ID, "head_sha": ref, "node_id": "MDg6Q2hlY2tSdW4" + id, "external_id": "",
			"url": u + "/check-runs/" + id, "html_url": html, "details_url": details,
			"status": cr.Status, "conclusion": conclusion, "started_at": started, "completed_at": completed,
			"output": map[string]any{"title": nullable(cr.Title), "summary": nullable(cr.Summary), "text": nullable(cr.Text),
				"annotations_count": 0, "annotations_url": u + "/check-runs/" + id + "/annotations"},
			"name":        cr.Name,
			"check_suite": map[string]any{"id": cr.ID + 5},
			"app": map[string]any{"id": 15368, "slug": cr.App, "node_id": "MDM6QXBwMTUzNjg=", "name": cr.App,
				"owner": user(api, s.WebURL, "github"), "description": "", "external_url": s.WebURL, "html_url": s.WebURL + "/apps/" + cr.App,
				"created_at": "2018-07-30T09:30:17Z", "updated_at": "2019-12-10T19:10:30Z", "permissions": map[string]string{}, "events": []string{}},
			"pull_requests": s.pullsAt(r, rp, ref),
		})
	}
	page, ok := paginate(w, r, items)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(items), "check_runs": page})
}

// pullsAt is a check run's pull_requests: the open ones whose head is
// sha, in the short form the docs show; s.mu is held.
func (s *Server) pullsAt(r *http.Request, rp *repo, sha string) []any {
	api := base(r)
	out := []any{}
	for _, p := range rp.pulls {
		if p.HeadSHA != sha || p.State != "open" {
			continue
		}
		repoRef := map[string]any{"id": rp.id, "url": api + "/repos/" + rp.owner + "/" + rp.name, "name": rp.name}
		out = append(out, map[string]any{
			"url": api + "/repos/" + rp.owner + "/" + rp.name + "/pulls/" + strconv.Itoa(p.Number), "id": int64(p.Number) + rp.id*1000, "number": p.Number,
			"head": map[string]any{"ref": p.Head, "sha": p.HeadSHA, "repo": repoRef},
			"base": map[string]any{"ref": p.Base, "sha": fakeSHA(rp.owner, rp.name, p.Base), "repo": repoRef},
		})
	}
	return out
}

// combinedStatus follows docs.github.com/en/rest/commits/statuses#get-the-combined-status-for-a-specific-reference:
// state is failure if any status is error or failure, pending if any is
// pending or there is none, else success; statuses are paged.
func (s *Server) combinedStatus(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	if rp == nil {
		notFound(w)
		return
	}
	ref := r.PathValue("ref")
	api := base(r)
	u := api + "/repos/" + rp.owner + "/" + rp.name
	sts := rp.statuses[ref]
	state := "success"
	if len(sts) == 0 {
		state = "pending"
	}
	items := []any{}
	for i, st := range sts {
		switch st.State {
		case "error", "failure":
			state = "failure"
		case "pending":
			if state != "failure" {
				state = "pending"
			}
		}
		ts := time.Now().UTC().Format(time.RFC3339)
		items = append(items, map[string]any{
			"url": u + "/statuses/" + ref, "avatar_url": "https://github.com/images/error/hubot_happy.gif", "id": i + 1,
			"node_id": "MDY6U3RhdHVzMQ" + strconv.Itoa(i), "state": st.State, "description": st.Description,
			"target_url": st.TargetURL, "context": st.Context, "created_at": ts, "updated_at": ts,
		})
	}
	page, ok := paginate(w, r, items)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"state": state, "statuses": page, "sha": ref, "total_count": len(items),
		"repository": s.repoJSON(r, rp), "commit_url": u + "/commits/" + ref, "url": u + "/commits/" + ref + "/status",
	})
}

// jobLogRedirect follows docs.github.com/en/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run:
// 302 to a URL that expires, which the stand-in serves under /_download/
// (GitHub's is on another host, and takes no token).
func (s *Server) jobLogRedirect(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	rp := s.repo(r.PathValue("owner"), r.PathValue("repo"))
	_, ok := s.jobLogs[id]
	s.mu.Unlock()
	if rp == nil || !ok {
		notFound(w)
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	q := url.Values{"urlExpires": {time.Now().Add(time.Minute).UTC().Format(time.RFC3339)}, "urlSigningMethod": {"HMACV1"}, "urlSignature": {"c2lnbmF0dXJl"}}
	w.Header().Set("Location", scheme+"://"+r.Host+"/_download/jobs/"+strconv.FormatInt(id, 10)+"/logs?"+q.Encode())
	w.WriteHeader(http.StatusFound)
}

// jobLogDownload serves a job's log. Like the storage GitHub's URL points
// to, it refuses a request that carries an Authorization header (the
// signature in the URL is the credential), so a client that leaks the
// API's token there fails.
func (s *Server) jobLogDownload(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		http.Error(w, "AuthenticationFailed: an Authorization header is not expected with a signed URL", http.StatusBadRequest)
		return
	}
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	text, ok := s.jobLogs[id]
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("urlSignature") == "" {
		http.Error(w, "BlobNotFound", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, text)
}

// firstArg reads `first: N` of reviewThreads in a query.
var firstArg = regexp.MustCompile(`reviewThreads\s*\(\s*first\s*:\s*(\d+)`)

// graphQL answers the one query forge sends (repository.pullRequest.reviewThreads,
// with its variables) and `viewer { login }`; it parses no GraphQL: it
// recognises them. The object's fields are those of
// docs.github.com/en/graphql/reference/objects#pullrequestreviewthread;
// errors are as docs.github.com/en/graphql/guides/forming-calls-with-graphql
// shows them (200 with "errors", type NOT_FOUND).
func (s *Server) graphQL(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"})
		return
	}
	switch {
	case strings.Contains(in.Query, "reviewThreads"):
	case strings.Contains(in.Query, "viewer"):
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"viewer": map[string]any{"login": "octocat"}}})
		return
	default:
		writeJSON(w, http.StatusOK, map[string]any{"errors": []map[string]any{{"message": "githubtest answers only the reviewThreads query of package forge and viewer { login }"}}})
		return
	}
	owner, _ := in.Variables["owner"].(string)
	name, _ := in.Variables["name"].(string)
	number, _ := in.Variables["number"].(float64)
	cursor, _ := in.Variables["cursor"].(string)
	first := 100
	if m := firstArg.FindStringSubmatch(in.Query); m != nil {
		first, _ = strconv.Atoi(m[1])
	}
	first = min(max(first, 1), 100)

	s.mu.Lock()
	defer s.mu.Unlock()
	rp, p := s.pull(owner, name, int(number))
	if rp == nil {
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": nil}, "errors": []map[string]any{{
			"type": "NOT_FOUND", "path": []string{"repository"}, "locations": []map[string]int{{"line": 2, "column": 3}},
			"message": fmt.Sprintf("Could not resolve to a Repository with the name '%s/%s'.", owner, name)}}})
		return
	}
	if p == nil {
		writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": nil}}, "errors": []map[string]any{{
			"type": "NOT_FOUND", "path": []string{"repository", "pullRequest"}, "locations": []map[string]int{{"line": 3, "column": 5}},
			"message": fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", int(number))}}})
		return
	}
	start := 0
	if c, err := base64.StdEncoding.DecodeString(cursor); err == nil && bytes.HasPrefix(c, []byte("cursor:v2:")) {
		start, _ = strconv.Atoi(string(c[len("cursor:v2:"):]))
	}
	threads := rp.threads[p.Number]
	start = min(start, len(threads))
	end := min(start+first, len(threads))
	nodes := []any{}
	for i, th := range threads[start:end] {
		comments := []any{}
		for j, c := range th.Comments {
			comments = append(comments, map[string]any{
				"author": map[string]string{"login": c.Author}, "body": c.Body,
				"url": fmt.Sprintf("%s/%s/%s/pull/%d#discussion_r%d", s.WebURL, rp.owner, rp.name, p.Number, (start+i+1)*1000+j),
			})
		}
		nodes = append(nodes, map[string]any{
			"id": fmt.Sprintf("PRRT_kwDOstandin%d", start+i), "isResolved": th.Resolved, "isOutdated": th.Outdated,
			"path": th.Path, "line": nullableInt(th.Line), "startLine": nullableInt(th.StartLine),
			"comments": map[string]any{"nodes": comments},
		})
	}
	endCursor := any(nil)
	if end > start {
		endCursor = base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(end)))
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"repository": map[string]any{"pullRequest": map[string]any{
		"reviewThreads": map[string]any{
			"pageInfo": map[string]any{"hasNextPage": end < len(threads), "endCursor": endCursor},
			"nodes":    nodes,
		}}}}})
}

// paginate cuts items to the page asked for (per_page, at most 100,
// default 30; page from 1) and sets Link as
// docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api
// shows: prev, next, last, first, each with the request's other
// parameters.
func paginate(w http.ResponseWriter, r *http.Request, items []any) ([]any, bool) {
	q := r.URL.Query()
	per, page := 30, 1
	if v := q.Get("per_page"); v != "" {
		per, _ = strconv.Atoi(v)
	}
	if v := q.Get("page"); v != "" {
		page, _ = strconv.Atoi(v)
	}
	per = min(max(per, 1), 100)
	page = max(page, 1)
	last := max((len(items)+per-1)/per, 1)
	link := func(n int, rel string) string {
		q.Set("page", strconv.Itoa(n))
		return "<" + base(r) + r.URL.Path + "?" + q.Encode() + `>; rel="` + rel + `"`
	}
	var links []string
	if page > 1 {
		links = append(links, link(page-1, "prev"))
	}
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	from := min((page-1)*per, len(items))
	to := min(from+per, len(items))
	if items == nil {
		items = []any{}
	}
	return items[from:to], true
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullableInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}
