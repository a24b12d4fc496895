package forge_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/forge/githubtest"
)

// testTimeout bounds each test's calls.
const testTimeout = 10 * time.Second

// setup starts a stand-in with repository o/r and a client of it that
// logs into the returned buffer.
func setup(t *testing.T) (*githubtest.Server, *forge.Client, forge.Repo, *bytes.Buffer, context.Context) {
	t.Helper()
	s := githubtest.New(t)
	s.AddRepo("o", "r", "main")
	var logs bytes.Buffer
	c := forge.New(forge.Options{Token: githubtest.Token, UserAgent: "agentmux/test",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	r, err := forge.RepoOf("https://github.com/o/r.git", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return s, c, r, &logs, ctx
}

// noToken fails the test when the token shows in the logs or an error.
func noToken(t *testing.T, logs *bytes.Buffer, errs ...error) {
	t.Helper()
	if strings.Contains(logs.String(), githubtest.Token) || strings.Contains(logs.String(), "Authorization") {
		t.Errorf("the logs hold the token or the Authorization header:\n%s", logs)
	}
	for _, err := range errs {
		if err != nil && strings.Contains(err.Error(), githubtest.Token) {
			t.Errorf("an error holds the token: %v", err)
		}
	}
}

// TestCreateThenFindExisting: a pull request is created (base from the
// repository's default branch), then found open for its head, and a second
// create is refused with GitHub's words.
func TestCreateThenFindExisting(t *testing.T) {
	s, c, r, logs, ctx := setup(t)
	none, err := c.FindOpen(ctx, r, "feature/x")
	if err != nil || none != nil {
		t.Fatalf("FindOpen before = %v, %v; want nil, nil", none, err)
	}
	pr, err := c.Create(ctx, r, forge.NewPull{Title: "Add x", Body: "why", Head: "feature/x", Draft: true})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Number != 1 || pr.State != "draft" || pr.Base != "main" || pr.Head != "feature/x" || pr.URL != "https://github.com/o/r/pull/1" || pr.HeadSHA == "" {
		t.Errorf("Create = %+v", pr)
	}
	if got := s.Pulls("o", "r"); len(got) != 1 || got[0].Body != "why" || !got[0].Draft {
		t.Errorf("the stand-in holds %+v", got)
	}
	found, err := c.FindOpen(ctx, r, "feature/x")
	if err != nil || found == nil || found.Number != 1 {
		t.Fatalf("FindOpen after = %+v, %v", found, err)
	}
	_, err = c.Create(ctx, r, forge.NewPull{Title: "Again", Head: "feature/x", Base: "main"})
	var refused *forge.Refused
	if !errors.Is(err, forge.ErrRefused) || !errors.As(err, &refused) || refused.Status != 422 {
		t.Fatalf("second Create: %v", err)
	}
	if want := "GitHub refused (422): Validation Failed: A pull request already exists for o:feature/x."; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if refused.DocURL == "" {
		t.Error("the refusal lost its documentation URL")
	}
	noToken(t, logs, err)
}

// TestForbidden: a token that may not write gets GitHub's 403, a refusal
// (not a rate limit).
func TestForbidden(t *testing.T) {
	s, c, r, logs, ctx := setup(t)
	s.DenyWrites("o", "r")
	_, err := c.Create(ctx, r, forge.NewPull{Title: "x", Head: "b", Base: "main"})
	if !errors.Is(err, forge.ErrRefused) || errors.Is(err, forge.ErrRateLimited) || !strings.Contains(err.Error(), "(403): Resource not accessible by personal access token") {
		t.Fatalf("Create = %v", err)
	}
	noToken(t, logs, err)
}

// TestNotFound: an unknown repository and an unknown pull request are
// ErrNotFound, REST and GraphQL alike.
func TestNotFound(t *testing.T) {
	_, c, r, logs, ctx := setup(t)
	other := r
	other.Name = "nope"
	_, err1 := c.FindOpen(ctx, other, "b")
	_, err2 := c.Pull(ctx, r, 7)
	_, err3 := c.UnresolvedComments(ctx, other, 1)
	_, err4 := c.UnresolvedComments(ctx, r, 7)
	for i, err := range []error{err1, err2, err3, err4} {
		if !errors.Is(err, forge.ErrNotFound) {
			t.Errorf("call %d: %v, want ErrNotFound", i+1, err)
		}
	}
	noToken(t, logs, err1, err2, err3, err4)
}

// TestBadToken: a wrong token is GitHub's 401 Bad credentials.
func TestBadToken(t *testing.T) {
	s, _, r, _, ctx := setup(t)
	c := forge.New(forge.Options{Token: "wrong"})
	_, err := c.Pull(ctx, r, 1)
	if !errors.Is(err, forge.ErrRefused) || !strings.Contains(err.Error(), "(401): Bad credentials") {
		t.Fatalf("Pull = %v", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error holds the token: %v", err)
	}
	_ = s
}

// TestRateLimited: a spent primary limit (403, X-RateLimit-Remaining: 0)
// and a secondary one (429, Retry-After) are *RateLimited saying until
// when; Limits reports the headers last seen.
func TestRateLimited(t *testing.T) {
	s, c, r, logs, ctx := setup(t)
	if _, err := c.FindOpen(ctx, r, "b"); err != nil {
		t.Fatal(err)
	}
	if limit, remaining, reset := c.Limits(); limit != 5000 || remaining != 4999 || reset.IsZero() {
		t.Errorf("Limits = %d, %d, %v", limit, remaining, reset)
	}
	s.ExhaustRateLimit(30 * time.Minute)
	_, err := c.Pull(ctx, r, 1)
	var rl *forge.RateLimited
	if !errors.Is(err, forge.ErrRateLimited) || !errors.As(err, &rl) {
		t.Fatalf("Pull with the limit spent = %v", err)
	}
	if d := time.Until(rl.Reset); d < 29*time.Minute || d > 31*time.Minute || rl.Remaining != 0 || rl.Limit != 5000 || rl.Resource != "core" {
		t.Errorf("RateLimited = %+v", rl)
	}
	if !strings.Contains(err.Error(), "until "+rl.Reset.Local().Format("15:04:05")) {
		t.Errorf("error %q does not say until when", err)
	}
	if _, remaining, _ := c.Limits(); remaining != 0 {
		t.Errorf("Limits' remaining = %d, want 0", remaining)
	}

	s2, c2, r2, _, _ := setup(t)
	s2.SecondaryRateLimit(90 * time.Second)
	_, err = c2.Checks(ctx, r2, "abc")
	if !errors.As(err, &rl) || time.Until(rl.Reset) < 80*time.Second || time.Until(rl.Reset) > 100*time.Second {
		t.Fatalf("Checks under a secondary limit = %v (%+v)", err, rl)
	}
	if n := len(s2.Requests()); n != 1 {
		t.Errorf("the client sent %d requests; it must not retry", n)
	}
	noToken(t, logs, err)
}

// TestConditional: a second GET of an unchanged pull request sends
// If-None-Match, the stand-in answers 304, and the client returns what it
// had, without spending the rate limit; a change is seen at once.
func TestConditional(t *testing.T) {
	s, c, r, _, ctx := setup(t)
	created, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Pull(ctx, r, created.Number)
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := c.Limits()
	second, err := c.Pull(ctx, r, created.Number)
	if err != nil || second != first {
		t.Fatalf("second Pull = %+v, %v; want %+v", second, err, first)
	}
	reqs := s.Requests()
	last := reqs[len(reqs)-1]
	if !last.Conditional || !last.NotModified || last.Status != http.StatusNotModified {
		t.Errorf("the last request was %+v; want If-None-Match answered 304", last)
	}
	if _, after, _ := c.Limits(); after != before {
		t.Errorf("a 304 spent the rate limit: %d -> %d", before, after)
	}
	if err := s.SetPullState("o", "r", created.Number, "merged"); err != nil {
		t.Fatal(err)
	}
	third, err := c.Pull(ctx, r, created.Number)
	if err != nil || third.State != "merged" {
		t.Errorf("Pull after the merge = %+v, %v", third, err)
	}
}

// TestPagination: reviews over several pages are all read, following
// Link rel="next"; Decision reads them.
func TestPagination(t *testing.T) {
	s, c, r, _, ctx := setup(t)
	if _, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 230 {
		state := "COMMENTED"
		if i == 5 {
			state = "CHANGES_REQUESTED"
		}
		if err := s.AddReview("o", "r", 1, githubtest.Review{User: fmt.Sprintf("u%d", i%7), State: state, SubmittedAt: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	reviews, err := c.Reviews(ctx, r, 1)
	if err != nil || len(reviews) != 230 {
		t.Fatalf("Reviews = %d, %v; want 230", len(reviews), err)
	}
	if reviews[5].State != "CHANGES_REQUESTED" || reviews[5].Author != "u5" || !reviews[5].SubmittedAt.Equal(t0.Add(5*time.Minute)) {
		t.Errorf("review 5 = %+v", reviews[5])
	}
	if got := forge.Decision(reviews); got != "changes_requested" {
		t.Errorf("Decision = %q", got)
	}
	pages := 0
	for _, q := range s.Requests() {
		if strings.HasSuffix(q.Path, "/reviews") {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("%d pages asked for, want 3 (100, 100, 30)", pages)
	}
}

// TestPagesBounded: a list longer than 10 pages is cut there.
func TestPagesBounded(t *testing.T) {
	s, c, r, _, ctx := setup(t)
	if _, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	for range 1050 {
		s.AddReview("o", "r", 1, githubtest.Review{User: "u", State: "COMMENTED"})
	}
	reviews, err := c.Reviews(ctx, r, 1)
	if err != nil || len(reviews) != 1000 {
		t.Fatalf("Reviews = %d, %v; want 1000 (10 pages)", len(reviews), err)
	}
}

// TestDecision: each author's latest verdict counts; a dismissal takes
// one back; comments are no verdict.
func TestDecision(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2024, 1, 1, 0, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		reviews []forge.Review
		want    string
	}{
		{nil, ""},
		{[]forge.Review{{"a", "COMMENTED", at(1)}}, ""},
		{[]forge.Review{{"a", "APPROVED", at(1)}, {"a", "COMMENTED", at(2)}}, "approved"},
		{[]forge.Review{{"a", "CHANGES_REQUESTED", at(1)}, {"a", "APPROVED", at(2)}}, "approved"},
		{[]forge.Review{{"a", "APPROVED", at(1)}, {"b", "CHANGES_REQUESTED", at(2)}}, "changes_requested"},
		{[]forge.Review{{"b", "CHANGES_REQUESTED", at(1)}, {"b", "DISMISSED", at(2)}, {"a", "APPROVED", at(3)}}, "approved"},
	} {
		if got := forge.Decision(tc.reviews); got != tc.want {
			t.Errorf("Decision(%v) = %q, want %q", tc.reviews, got, tc.want)
		}
	}
}

// TestChecks: check runs and statuses become one list; a status of a
// check run's name gives way to it; the states add up.
func TestChecks(t *testing.T) {
	s, c, r, _, ctx := setup(t)
	if _, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	sha := s.HeadSHA("o", "r", 1)
	none, err := c.Checks(ctx, r, sha)
	if err != nil || none.State != "none" || len(none.Checks) != 0 {
		t.Fatalf("Checks with none = %+v, %v", none, err)
	}
	s.SetChecks("o", "r", "pull/1", []githubtest.CheckRun{
		{ID: 41, Name: "test", Status: "in_progress"},
		{ID: 42, Name: "lint", Conclusion: "success"},
	})
	s.SetStatuses("o", "r", sha, []githubtest.Status{{State: "failure", Context: "lint"}, {State: "success", Context: "ci/legacy", TargetURL: "https://ci.example/1"}})
	got, err := c.Checks(ctx, r, sha)
	if err != nil || got.State != "pending" || len(got.Checks) != 3 {
		t.Fatalf("Checks = %+v, %v", got, err)
	}
	want := map[string]string{"test": "pending", "lint": "passing", "ci/legacy": "passing"}
	for _, ch := range got.Checks {
		if want[ch.Name] != ch.State {
			t.Errorf("%s is %s, want %s", ch.Name, ch.State, want[ch.Name])
		}
	}
	if got.Checks[2].JobID != 41 {
		t.Errorf("test's JobID = %d, want 41", got.Checks[2].JobID)
	}
	s.SetChecks("o", "r", sha, []githubtest.CheckRun{{ID: 41, Name: "test", Conclusion: "failure", Title: "1 failed"}, {ID: 42, Name: "lint", Conclusion: "success"}})
	got, err = c.Checks(ctx, r, sha)
	if err != nil || got.State != "failing" {
		t.Fatalf("Checks = %+v, %v", got, err)
	}
}

// TestLogTail: a job's log is reached through the 302 its endpoint
// answers, fetched without the token, and cut to its tail at a line; a
// check with no job or no log gives its summary.
func TestLogTail(t *testing.T) {
	s, c, r, logs, ctx := setup(t)
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "2024-01-01T00:00:00.0000000Z line %d\n", i)
	}
	s.SetJobLog(41, b.String())
	got, err := c.LogTail(ctx, r, forge.Check{Name: "test", JobID: 41, Summary: "1 failed"}, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 200 || !strings.HasSuffix(got, "line 4999\n") || !strings.HasPrefix(got, "2024-") {
		t.Errorf("LogTail = %q", got)
	}
	var sawRedirect, sawDownload bool
	for _, q := range s.Requests() {
		sawRedirect = sawRedirect || q.Path == "/repos/o/r/actions/jobs/41/logs" && q.Status == http.StatusFound
		if strings.HasPrefix(q.Path, "/_download/") {
			sawDownload = true
			for _, h := range q.Headers {
				if h == "Authorization" {
					t.Error("the token was sent to the log's download URL")
				}
			}
		}
	}
	if !sawRedirect || !sawDownload {
		t.Errorf("redirect seen %v, download seen %v", sawRedirect, sawDownload)
	}
	got, err = c.LogTail(ctx, r, forge.Check{Name: "gone", JobID: 99, Summary: "the summary"}, 200)
	if err != nil || got != "the summary" {
		t.Errorf("LogTail of an expired log = %q, %v", got, err)
	}
	got, err = c.LogTail(ctx, r, forge.Check{Name: "status"}, 200)
	if err != nil || got != "" {
		t.Errorf("LogTail of nothing = %q, %v", got, err)
	}
	noToken(t, logs, err)
}

// TestUnresolvedComments: unresolved, current threads only, one entry
// each, replies appended; pages of GraphQL followed.
func TestUnresolvedComments(t *testing.T) {
	s, c, r, _, ctx := setup(t)
	if _, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b", Base: "main"}); err != nil {
		t.Fatal(err)
	}
	s.AddThread("o", "r", 1, githubtest.Thread{Path: "a.go", Line: 12, StartLine: 10, Comments: []githubtest.Comment{{Author: "ann", Body: "rename this"}, {Author: "bob", Body: "agreed"}}})
	s.AddThread("o", "r", 1, githubtest.Thread{Resolved: true, Path: "b.go", Line: 3, Comments: []githubtest.Comment{{Author: "ann", Body: "done"}}})
	s.AddThread("o", "r", 1, githubtest.Thread{Outdated: true, Path: "c.go", Comments: []githubtest.Comment{{Author: "ann", Body: "old"}}})
	for i := range 150 {
		s.AddThread("o", "r", 1, githubtest.Thread{Path: "d.go", Line: i + 1, Comments: []githubtest.Comment{{Author: "cy", Body: "n"}}})
	}
	got, err := c.UnresolvedComments(ctx, r, 1)
	if err != nil || len(got) != 151 {
		t.Fatalf("UnresolvedComments = %d, %v; want 151", len(got), err)
	}
	want := forge.ReviewComment{Path: "a.go", Line: 12, StartLine: 10, Author: "ann", Body: "rename this\n\nbob: agreed", URL: got[0].URL}
	if got[0] != want || !strings.HasPrefix(got[0].URL, "https://github.com/o/r/pull/1#discussion_r") {
		t.Errorf("first = %+v, want %+v", got[0], want)
	}
}

// TestEnterprise: an Enterprise host's API is <host>/api/v3 and its
// GraphQL /api/graphql, as the stand-in serves them over TLS.
func TestEnterprise(t *testing.T) {
	s := githubtest.NewHandler(githubtest.Token)
	srv := httptest.NewTLSServer(s)
	defer srv.Close()
	s.AddRepo("o", "r", "main")
	r, err := forge.RepoOf("git@github.example.com:o/r.git", "")
	if err != nil || r.API != "https://github.example.com/api/v3" || r.Host != "github.example.com" {
		t.Fatalf("RepoOf = %+v, %v", r, err)
	}
	// Every host name dials the stand-in; its certificate is httptest's.
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the certificate names example.com, not github.example.com
	c := forge.New(forge.Options{Token: githubtest.Token, HTTP: &http.Client{Transport: tr, Timeout: testTimeout}})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	pr, err := c.Create(ctx, r, forge.NewPull{Title: "t", Head: "b"})
	if err != nil || pr.Number != 1 {
		t.Fatalf("Create = %+v, %v", pr, err)
	}
	s.AddThread("o", "r", 1, githubtest.Thread{Path: "a", Line: 1, Comments: []githubtest.Comment{{Author: "x", Body: "y"}}})
	if got, err := c.UnresolvedComments(ctx, r, 1); err != nil || len(got) != 1 {
		t.Fatalf("UnresolvedComments = %v, %v", got, err)
	}
	var rest, gql int
	for _, q := range s.Requests() {
		switch {
		case q.Path == "/graphql":
			gql++
		case strings.HasPrefix(q.Path, "/repos/"):
			rest++
		}
	}
	if rest != 2 || gql != 1 {
		t.Errorf("REST %d, GraphQL %d requests", rest, gql)
	}
}

// TestRepoOf: the forms of remote URL, the API each gets, the override,
// and what is not GitHub.
func TestRepoOf(t *testing.T) {
	for _, tc := range []struct {
		remote, override string
		want             forge.Repo
	}{
		{"https://github.com/o/r.git", "", forge.Repo{"github.com", "o", "r", "https://api.github.com"}},
		{"https://user:secret@github.com/o/r", "", forge.Repo{"github.com", "o", "r", "https://api.github.com"}},
		{"git@github.com:o/r.git", "", forge.Repo{"github.com", "o", "r", "https://api.github.com"}},
		{"ssh://git@ssh.github.com:443/o/r.git", "", forge.Repo{"github.com", "o", "r", "https://api.github.com"}},
		{"https://github.corp.example:8443/o/r", "", forge.Repo{"github.corp.example", "o", "r", "https://github.corp.example:8443/api/v3"}},
		{"https://git.corp.example/o/r", "https://ghe.corp.example/api/v3/", forge.Repo{"git.corp.example", "o", "r", "https://ghe.corp.example/api/v3"}},
		// GitHub Enterprise is reached through the remote's host.
		{"git@git.corp.example:o/r.git", "", forge.Repo{"git.corp.example", "o", "r", "https://git.corp.example/api/v3"}},
		{"https://github.com/o/r", "http://127.0.0.1:9", forge.Repo{"github.com", "o", "r", "http://127.0.0.1:9"}},
	} {
		got, err := forge.RepoOf(tc.remote, tc.override)
		if err != nil || got != tc.want {
			t.Errorf("RepoOf(%q, %q) = %+v, %v; want %+v", tc.remote, tc.override, got, err, tc.want)
		}
	}
	for _, remote := range []string{"", "/srv/git/r.git", "https://github.com/o", "https://github.com/o/r/x", "https://gitlab.com/o/r", "https://gitea.corp.example/o/r", "https://x:secret@gitlab.com/o/r"} {
		_, err := forge.RepoOf(remote, "")
		if !errors.Is(err, forge.ErrNotGitHub) {
			t.Errorf("RepoOf(%q) = %v, want ErrNotGitHub", remote, err)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("RepoOf(%q)'s error shows the password: %v", remote, err)
		}
	}
}

// TestFindToken: file > GITHUB_TOKEN > GH_TOKEN > gh, and each failure
// says what was looked for.
func TestFindToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	gh := filepath.Join(dir, "gh")
	if err := os.WriteFile(gh, []byte("#!/bin/sh\n[ \"$*\" = \"auth token --hostname github.example.com\" ] && echo gho_fromgh && exit 0\necho 'no oauth token found for '\"$4\" >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("  ghp_fromfile\n"), 0o600)

	check := func(opts forge.TokenOptions, host, wantTok string, wantSrc forge.TokenSource) {
		t.Helper()
		tok, src, err := forge.FindToken(ctx, host, opts)
		if err != nil || tok != wantTok || src != wantSrc {
			t.Errorf("FindToken = %q, %+v, %v; want %q, %+v", tok, src, err, wantTok, wantSrc)
		}
	}
	env["GITHUB_TOKEN"], env["GH_TOKEN"] = "ghp_github", "ghp_gh"
	check(forge.TokenOptions{File: file, Getenv: getenv, GH: gh}, "github.com", "ghp_fromfile", forge.TokenSource{Kind: "file", Detail: file})
	check(forge.TokenOptions{Getenv: getenv, GH: gh}, "github.com", "ghp_github", forge.TokenSource{Kind: "GITHUB_TOKEN"})
	delete(env, "GITHUB_TOKEN")
	check(forge.TokenOptions{Getenv: getenv, GH: gh}, "github.com", "ghp_gh", forge.TokenSource{Kind: "GH_TOKEN"})
	delete(env, "GH_TOKEN")
	check(forge.TokenOptions{Getenv: getenv, GH: gh}, "github.example.com", "gho_fromgh", forge.TokenSource{Kind: "gh", Detail: "gh auth token --hostname github.example.com"})

	// gh found on PATH.
	t.Setenv("PATH", dir)
	check(forge.TokenOptions{Getenv: getenv}, "github.example.com", "gho_fromgh", forge.TokenSource{Kind: "gh", Detail: "gh auth token --hostname github.example.com"})

	for _, tc := range []struct {
		opts forge.TokenOptions
		says string
	}{
		{forge.TokenOptions{Getenv: getenv, GH: gh}, "found none (no oauth token found for github.com; run `gh auth login`)"},
		{forge.TokenOptions{Getenv: getenv, GH: filepath.Join(dir, "absent")}, "GITHUB_TOKEN and GH_TOKEN are unset"},
		{forge.TokenOptions{File: filepath.Join(dir, "missing"), Getenv: getenv, GH: gh}, "the token file " + filepath.Join(dir, "missing") + " cannot be read"},
	} {
		_, _, err := forge.FindToken(ctx, "github.com", tc.opts)
		if !errors.Is(err, forge.ErrNoToken) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("FindToken = %v; want ErrNoToken saying %q", err, tc.says)
		}
	}
	os.WriteFile(file, []byte(" \n"), 0o600)
	if _, _, err := forge.FindToken(ctx, "github.com", forge.TokenOptions{File: file, Getenv: func(string) string { return "ghp_env" }}); !errors.Is(err, forge.ErrNoToken) || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("an empty file fell through or said %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, _, err := forge.FindToken(ctx, "github.com", forge.TokenOptions{Getenv: getenv}); !errors.Is(err, forge.ErrNoToken) || !strings.Contains(err.Error(), "gh is not installed") {
		t.Errorf("no gh on PATH: %v", err)
	}
}

// TestUnreachable: a closed port and a 5xx are ErrUnreachable.
func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusBadGateway) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := forge.New(forge.Options{Token: githubtest.Token})
	r, _ := forge.RepoOf("https://github.com/o/r", srv.URL)
	if _, err := c.Pull(ctx, r, 1); !errors.Is(err, forge.ErrUnreachable) {
		t.Errorf("5xx: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r, _ = forge.RepoOf("https://github.com/o/r", "http://"+addr)
	if _, err := c.Pull(ctx, r, 1); !errors.Is(err, forge.ErrUnreachable) || strings.Contains(err.Error(), githubtest.Token) {
		t.Errorf("closed port: %v", err)
	}
}
