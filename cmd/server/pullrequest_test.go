package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/forge/githubtest"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/wire"
)

// prEnv is a server whose workspace's origin names github.com/octo/demo
// while its pushes go to a bare repository beside it, with the GitHub
// stand-in as its API and the stand-in's token in a file.
type prEnv struct {
	*apiEnv
	gh    *githubtest.Server
	bare  string
	token string
	// replies are the bodies of the replies read, to look for the token.
	replies []byte
}

// newPREnv gives the server the stand-in's API at its root, as
// api.github.com, or with enterprise behind a front that serves
// /api/v3/ and /api/graphql alone, as a GitHub Enterprise server does.
func newPREnv(t *testing.T, enterprise bool, args ...string) *prEnv {
	t.Helper()
	apitest.SkipWithoutGit(t)
	gh := githubtest.New(t)
	gh.AddRepo("octo", "demo", "main")
	api := gh.URL
	if enterprise {
		target, err := url.Parse(gh.URL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(target)
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasPrefix(r.URL.Path, "/api/v3/") && r.URL.Path != "/api/graphql" {
				http.NotFound(w, r)
				return
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(front.Close)
		api = front.URL + "/api/v3"
	}
	tokenFile := filepath.Join(t.TempDir(), "gh-token")
	if err := os.WriteFile(tokenFile, []byte(githubtest.Token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The server's own environment holds no token: the file is the one.
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	e := newRepoAPI(t, append([]string{"--github-api", api, "--github-token-file", tokenFile, "--pull-request-refresh", "1s"}, args...)...)
	apitest.SetCommitter(t, e.dir)
	bare := filepath.Join(t.TempDir(), "demo.git")
	git(t, e.dir, "init", "--quiet", "--bare", bare)
	git(t, e.dir, "remote", "add", "origin", "https://github.com/octo/demo.git")
	git(t, e.dir, "config", "remote.origin.pushurl", bare)
	git(t, e.dir, "push", "--quiet", "origin", "main")
	return &prEnv{apiEnv: e, gh: gh, bare: bare, token: githubtest.Token}
}

// worktreeWithCommit makes a worktree session on branch with one commit
// of its own.
func (e *prEnv) worktreeWithCommit(branch, subject string) wire.Session {
	e.t.Helper()
	s := e.create(`{"worktree":{"branch":"` + branch + `"},"command":["sh","-c","exec sleep 60"]}`)
	tree := s.Worktree.Path
	if err := os.WriteFile(filepath.Join(tree, "login.go"), []byte("package login\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	git(e.t, tree, "add", "login.go")
	git(e.t, tree, "commit", "--quiet", "-m", subject)
	return s
}

func (e *prEnv) pullRequest(id string) httpapi.PullRequestReply {
	e.t.Helper()
	resp, b := e.do(http.MethodGet, "/api/sessions/"+id+"/pull-request", "")
	wantStatus(e.t, "get the pull request", resp, b, http.StatusOK)
	var r httpapi.PullRequestReply
	apitest.DecodeJSON(e.t, b, &r)
	e.replies = append(e.replies, b...)
	return r
}

// TestPullRequestOpenFollowAndBringBack: from a worktree session, the
// branch is pushed and its pull request opened on the forge with the
// suggested text; asking again links it rather than opening a second;
// its checks and reviews reach the page as they change; the failing
// checks' log and the unresolved review threads come back to the agent.
// The token goes to the forge and nowhere else: not in a reply, a log
// line, or the agent's environment.
func TestPullRequestOpenFollowAndBringBack(t *testing.T) {
	e := newPREnv(t, false)
	s := e.worktreeWithCommit("feat-login", "Add the login form")

	r := e.pullRequest(s.ID)
	if !r.Forge.Ready || r.Forge.Source != "file" || r.Forge.Host != "github.com" || r.Forge.API != e.gh.URL || r.PullRequest != nil {
		t.Fatalf("before opening: %+v, want ready through the file for github.com at the stand-in, no pull request", r)
	}
	resp, b := e.do(http.MethodGet, "/api/sessions/"+s.ID+"/pull-request/draft", "")
	wantStatus(t, "suggest", resp, b, http.StatusOK)
	var sug pulls.Suggestion
	apitest.DecodeJSON(t, b, &sug)
	if sug.Title != "Add the login form" || sug.Head != "feat-login" || sug.Base != "main" || !strings.Contains(sug.Body, "- Add the login form") {
		t.Errorf("suggestion %+v, want the commit's subject, feat-login into main, the commit listed", sug)
	}

	owner, _, err := apitest.DialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.WriteJSON(map[string]any{"type": "session.attach", "sessionId": s.ID}); err != nil {
		t.Fatal(err)
	}

	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{"body":"Reviewed by a person."}`)
	wantStatus(t, "open", resp, b, http.StatusCreated)
	var opened httpapi.OpenedReply
	apitest.DecodeJSON(t, b, &opened)
	pulled := e.gh.Pulls("octo", "demo")
	if len(pulled) != 1 || pulled[0].Head != "feat-login" || pulled[0].Base != "main" || pulled[0].Title != "Add the login form" || pulled[0].Body != "Reviewed by a person." {
		t.Fatalf("the forge holds %+v, want one pull request of feat-login into main with the suggested title and the given body", pulled)
	}
	if !opened.Created || opened.Number != pulled[0].Number || opened.State != "open" || !strings.HasSuffix(opened.URL, "/octo/demo/pull/"+strconv.Itoa(opened.Number)) {
		t.Errorf("opened %+v, want pull request %d, created, open", opened, pulled[0].Number)
	}
	if got := strings.TrimSpace(git(t, e.bare, "rev-parse", "refs/heads/feat-login")); got != strings.TrimSpace(git(t, s.Worktree.Path, "rev-parse", "HEAD")) {
		t.Errorf("the remote's feat-login is %q, want the worktree's HEAD: the branch was not pushed", got)
	}
	if ref := e.get(s.ID).PullRequest; ref == nil || ref.Number != opened.Number || ref.URL != opened.URL {
		t.Errorf("the session names %+v, want pull request %d", ref, opened.Number)
	}
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{}`)
	wantStatus(t, "open again", resp, b, http.StatusOK)
	var again httpapi.OpenedReply
	apitest.DecodeJSON(t, b, &again)
	if again.Created || again.Number != opened.Number || len(e.gh.Pulls("octo", "demo")) != 1 {
		t.Errorf("opening again: %+v and %d pull requests, want the same one linked", again, len(e.gh.Pulls("octo", "demo")))
	}

	// Checks turn from pending to failing; the page is told each.
	if err := e.gh.SetChecks("octo", "demo", "pull/"+strconv.Itoa(opened.Number), []githubtest.CheckRun{
		{Name: "lint", Status: "in_progress"}, {Name: "test", Conclusion: "success"},
	}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, owner, "the checks pending", func(m viewerMsg) bool { return prChecks(t, m) == "pending" })
	if err := e.gh.SetChecks("octo", "demo", "pull/"+strconv.Itoa(opened.Number), []githubtest.CheckRun{
		{Name: "lint", Conclusion: "failure", DetailsURL: "https://github.com/octo/demo/actions/runs/5/job/77"}, {Name: "test", Conclusion: "success"},
	}); err != nil {
		t.Fatal(err)
	}
	e.gh.SetJobLog(77, "golangci-lint run\nlogin.go:1:1: package comment missing (revive)\n\x1b[31mexit status 1\x1b[0m\n")
	readUntil(t, owner, "the checks failing", func(m viewerMsg) bool { return prChecks(t, m) == "failing" })
	if v := e.pullRequest(s.ID).PullRequest; v == nil || v.Checks.State != "failing" || len(v.Checks.Failing) != 1 || v.Checks.Failing[0] != "lint" || v.Checks.Passed != 1 {
		t.Errorf("the pull request shows %+v, want lint failing and one passing", v)
	}

	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request/fix-checks", `{"by":"alice"}`)
	wantStatus(t, "fix checks", resp, b, http.StatusOK)
	e.replies = append(e.replies, b...)
	var fixed httpapi.FixChecksReply
	apitest.DecodeJSON(t, b, &fixed)
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := sess.Queue()
	if len(fixed.Checks) != 1 || fixed.Checks[0] != "lint" || len(q.Prompts) != 1 || q.Prompts[0].ID != fixed.PromptID {
		t.Fatalf("fix-checks %+v, queue %+v: want one prompt about lint", fixed, q.Prompts)
	}
	if text := q.Prompts[0].Text; !strings.Contains(text, "lint") || !strings.Contains(text, "package comment missing") || strings.Contains(text, "\x1b") {
		t.Errorf("the prompt %q does not name lint with its log, free of escapes", text)
	}

	// Reviewers: one thread open, one resolved; a change asked for.
	if err := e.gh.AddThread("octo", "demo", opened.Number, githubtest.Thread{Path: "login.go", Line: 1,
		Comments: []githubtest.Comment{{Author: "octocat", Body: "Say what the package is for."}, {Author: "hubot", Body: "+1"}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.gh.AddThread("octo", "demo", opened.Number, githubtest.Thread{Resolved: true, Path: "login.go", Line: 1,
		Comments: []githubtest.Comment{{Author: "octocat", Body: "Already done."}}}); err != nil {
		t.Fatal(err)
	}
	if err := e.gh.AddReview("octo", "demo", opened.Number, githubtest.Review{User: "octocat", State: "CHANGES_REQUESTED"}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, owner, "changes requested", func(m viewerMsg) bool {
		v := prView(t, m)
		return v != nil && v.ReviewDecision == "changes_requested" && v.Unresolved == 1 &&
			len(v.Reviews) == 1 && v.Reviews[0].Author == "octocat" && v.Reviews[0].State == "changes_requested"
	})
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request/address-review", `{"by":"alice"}`)
	wantStatus(t, "address review", resp, b, http.StatusOK)
	e.replies = append(e.replies, b...)
	var addressed httpapi.AddressedReply
	apitest.DecodeJSON(t, b, &addressed)
	if addressed.Comments != 1 || addressed.Left != 0 {
		t.Errorf("address-review %+v, want the one unresolved thread", addressed)
	}
	readUntil(t, owner, "the thread in the review draft", func(m viewerMsg) bool {
		if m.Type != wire.TypeReviewDraft {
			return false
		}
		var d struct {
			Comments []struct {
				Path string
				Line int
				Text string
			}
		}
		if err := json.Unmarshal(m.raw, &d); err != nil {
			t.Fatal(err)
		}
		return len(d.Comments) == 1 && d.Comments[0].Path == "login.go" && d.Comments[0].Line == 1 &&
			strings.HasPrefix(d.Comments[0].Text, "@octocat: Say what the package is for.") && strings.Contains(d.Comments[0].Text, "hubot: +1")
	})

	// The token went to the forge, with every request, and nowhere else.
	for _, rq := range e.gh.Requests() {
		if !rq.Authorized && !strings.HasPrefix(rq.Path, "/_download/") {
			t.Errorf("%s %s went to the forge without the token", rq.Method, rq.Path)
		}
	}
	if strings.Contains(string(e.replies), e.token) || strings.Contains(e.log.String(), e.token) {
		t.Error("the token is in a reply or the server's log")
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(sess.Pid()), "environ"))
	if err != nil {
		t.Fatalf("read the agent's environment: %v", err)
	}
	if strings.Contains(string(env), e.token) {
		t.Error("the token is in the agent's environment")
	}
}

// prView decodes a session.pullRequest's view; nil for another message.
func prView(t *testing.T, m viewerMsg) *pulls.View {
	t.Helper()
	if m.Type != wire.TypeSessionPullRequest {
		return nil
	}
	var msg wire.PullRequestMessage
	if err := json.Unmarshal(m.raw, &msg); err != nil {
		t.Fatal(err)
	}
	return &msg.PullRequest
}

func prChecks(t *testing.T, m viewerMsg) string {
	if v := prView(t, m); v != nil {
		return v.Checks.State
	}
	return ""
}

// TestPullRequestRefusals: each thing missing or refused is said in
// words with its code, and nothing is opened: no token, a remote on
// another forge, a session without a worktree, the forge refusing the
// write in its own words, and the rate limit spent.
func TestPullRequestRefusals(t *testing.T) {
	e := newPREnv(t, false)
	s := e.worktreeWithCommit("feat-x", "Change x")

	plain := e.create(`{"command":["sh","-c","exec sleep 60"]}`)
	resp, b := e.do(http.MethodPost, "/api/sessions/"+plain.ID+"/pull-request", `{}`)
	wantError(t, "a session without a worktree", resp, b, http.StatusConflict, wire.CodeNotAWorktree)

	e.gh.DenyWrites("octo", "demo")
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{}`)
	if msg := wantError(t, "no permission", resp, b, http.StatusConflict, wire.CodeForgeRefused); !strings.Contains(msg, "Resource not accessible") {
		t.Errorf("the refusal %q does not quote the forge", msg)
	}
	if n := len(e.gh.Pulls("octo", "demo")); n != 0 {
		t.Fatalf("%d pull requests after the refusal", n)
	}

	e.gh.ExhaustRateLimit(90 * time.Second)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{}`)
	wantError(t, "rate limited", resp, b, http.StatusTooManyRequests, wire.CodeForgeRateLimited)
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 60 || ra > 91 {
		t.Errorf("Retry-After %q, want about 90 s", resp.Header.Get("Retry-After"))
	}

	for _, bad := range []string{`{"title":"two\nlines"}`, `{"title":"` + strings.Repeat("x", 257) + `"}`, `{"body":"a\u0007bell"}`, `{"draft":"yes"}`} {
		resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", bad)
		wantError(t, "bad body "+bad[:min(len(bad), 30)], resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request/fix-checks", `{}`)
	wantError(t, "fix-checks without a pull request", resp, b, http.StatusConflict, wire.CodeNoPullRequest)

	// Another forge's remote; then no remote of GitHub's at all.
	git(t, e.dir, "remote", "set-url", "origin", "https://gitlab.com/octo/demo.git")
	r := e.pullRequest(s.ID)
	if r.Forge.Ready || !strings.Contains(r.Forge.Missing, "another forge") {
		t.Errorf("a GitLab remote: %+v, want not ready, saying so", r.Forge)
	}
	resp, b = e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{}`)
	wantError(t, "a GitLab remote", resp, b, http.StatusConflict, wire.CodeForgeNotReady)
}

// TestPullRequestWithoutToken: with no token anywhere, the forge is not
// ready and says what to set.
func TestPullRequestWithoutToken(t *testing.T) {
	apitest.SkipWithoutGit(t)
	t.Setenv("GITHUB_TOKEN", "")
	t.Setenv("GH_TOKEN", "")
	t.Setenv("GH_CONFIG_DIR", t.TempDir()) // a gh, if installed, logged in nowhere
	e := newRepoAPI(t)
	git(t, e.dir, "remote", "add", "origin", "git@github.com:octo/demo.git")
	s := e.create(`{"worktree":{"branch":"feat-y"},"command":["sh","-c","exec sleep 60"]}`)
	r := (&prEnv{apiEnv: e}).pullRequest(s.ID)
	if r.Forge.Ready || r.Forge.Host != "github.com" || !strings.Contains(r.Forge.Missing, "GITHUB_TOKEN") {
		t.Errorf("without a token: %+v, want not ready for github.com, naming GITHUB_TOKEN", r.Forge)
	}
	resp, b := e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{}`)
	wantError(t, "no token", resp, b, http.StatusConflict, wire.CodeForgeNotReady)
}

// TestPullRequestOnEnterprise: a remote on a GitHub Enterprise host is
// served by the API --github-api names, and the forge says which host.
func TestPullRequestOnEnterprise(t *testing.T) {
	e := newPREnv(t, true)
	api := e.srv.cfg.GitHubAPI
	git(t, e.dir, "remote", "set-url", "origin", "https://github.acme.test/octo/demo.git")
	git(t, e.dir, "config", "remote.origin.pushurl", e.bare)
	s := e.worktreeWithCommit("feat-ghe", "Change for GHE")
	r := e.pullRequest(s.ID)
	if !r.Forge.Ready || r.Forge.Host != "github.acme.test" || r.Forge.API != api {
		t.Fatalf("forge %+v, want ready for github.acme.test at %s", r.Forge, api)
	}
	resp, b := e.do(http.MethodPost, "/api/sessions/"+s.ID+"/pull-request", `{"draft":true}`)
	wantStatus(t, "open on Enterprise", resp, b, http.StatusCreated)
	var opened httpapi.OpenedReply
	apitest.DecodeJSON(t, b, &opened)
	if opened.State != "draft" {
		t.Errorf("opened %+v, want a draft", opened)
	}
	if n := len(e.gh.Pulls("octo", "demo")); n != 1 {
		t.Errorf("%d pull requests through the Enterprise API, want 1", n)
	}
	if v := e.pullRequest(s.ID).PullRequest; v == nil || v.Error != "" || v.State != "draft" {
		t.Errorf("followed through the Enterprise API (GraphQL at /api/graphql too): %+v", v)
	}
}
