// Package apitest is what the tests of agentmux's HTTP API share, those
// of the httpapi package and those of the whole server in cmd/server: a
// client that sends requests, and the checks of the shapes the API
// answers with. It starts no server; each suite starts its own.
package apitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// Timeout bounds each request; generous, for -race on a busy two-core
// machine.
const Timeout = 20 * time.Second

// Client sends requests to one server for one test.
type Client struct {
	// T is the test that fails when a request does.
	T testing.TB
	// URL is the server's, without a trailing slash.
	URL string
	// HTTP sends the requests.
	HTTP *http.Client
	// Token, when set, goes with every request that carries no
	// Authorization of its own.
	Token string
}

// NewHTTPClient returns a client with its own transport, closed when the
// test ends so no keep-alive goroutine outlives it. It does not follow
// redirects, so tests see them.
func NewHTTPClient(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     tr,
		Timeout:       Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Do sends a request to the server at URL; header holds name, value pairs.
func (c *Client) Do(method, path, body string, header ...string) (*http.Response, []byte) {
	c.T.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.URL+path, rd)
	if err != nil {
		c.T.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1] // a client sends Request.Host, not a Host header
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return c.Send(req)
}

// Send sends req with the client's token, unless it carries an
// Authorization of its own, and returns the response and its whole body.
func (c *Client) Send(req *http.Request) (*http.Response, []byte) {
	c.T.Helper()
	if c.Token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		c.T.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.T.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return resp, b
}

// WantStatus fails the test unless resp has status want.
func WantStatus(t testing.TB, what string, resp *http.Response, body []byte, want int) {
	t.Helper()
	if resp.StatusCode != want {
		t.Fatalf("%s: status %d, want %d; body %s", what, resp.StatusCode, want, body)
	}
}

// WantError checks an API error: the status, JSON content, exactly the
// {"error":{"code","message"}} shape, the code and a non-empty message. It
// returns the message.
func WantError(t testing.TB, what string, resp *http.Response, body []byte, status int, code string) string {
	t.Helper()
	WantStatus(t, what, resp, body, status)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want JSON", what, ct)
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			// Files only for MERGE_CONFLICT.
			Files []string `json:"files"`
		} `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		t.Fatalf("%s: body %s is not the error shape: %v", what, body, err)
	}
	if e.Error.Code != code {
		t.Errorf("%s: code %q, want %q; body %s", what, e.Error.Code, code, body)
	}
	if e.Error.Message == "" {
		t.Errorf("%s: empty error message; body %s", what, body)
	}
	if (e.Error.Files != nil) != (code == wire.CodeMergeConflict) {
		t.Errorf("%s: files %v in a %s error; only MERGE_CONFLICT names files", what, e.Error.Files, code)
	}
	return e.Error.Message
}

// sessionKeys are the fields of Session JSON (SPEC 3) while it runs; exitCode
// appears once the run ended, worktree only for worktree sessions and ports
// once the agent started (a session restored without a block has none until
// it is resumed).
var sessionKeys = []string{"id", "name", "status", "agent", "command", "cwd", "createdAt", "lastActivityAt", "cols", "rows", "running", "sendFailures"}

// DecodeSession decodes {"session": Session}, checking the wrapper and the
// field names.
func DecodeSession(t testing.TB, body []byte) wire.Session {
	t.Helper()
	var wrap map[string]json.RawMessage
	if err := json.Unmarshal(body, &wrap); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	raw, ok := wrap["session"]
	if !ok || len(wrap) != 1 {
		t.Fatalf("body %s: want exactly {\"session\":...}", body)
	}
	return CheckSessionJSON(t, raw)
}

// CheckSessionJSON decodes one Session, checking its field names.
func CheckSessionJSON(t testing.TB, raw json.RawMessage) wire.Session {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		t.Fatalf("decode session %s: %v", raw, err)
	}
	for _, k := range sessionKeys {
		if _, ok := fields[k]; !ok {
			t.Errorf("session %s has no %q", raw, k)
		}
	}
	for k := range fields {
		if !slices.Contains(sessionKeys, k) && k != "exitCode" && k != "worktree" && k != "permission" && k != "ports" && k != "check" && k != "archive" && k != "setup" && k != "runOf" && k != "startedBy" && k != "usage" && k != "limit" && k != "reason" && k != "waitingSince" && k != "pullRequest" {
			t.Errorf("session %s has unexpected field %q", raw, k)
		}
	}
	var s wire.Session
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("decode session %s: %v", raw, err)
	}
	return s
}

// Create posts a session and expects 201.
func (c *Client) Create(body string) wire.Session {
	c.T.Helper()
	resp, b := c.Do(http.MethodPost, "/api/sessions", body)
	WantStatus(c.T, "create "+body, resp, b, http.StatusCreated)
	return DecodeSession(c.T, b)
}

// CreateCommand creates a session that runs argv.
func (c *Client) CreateCommand(argv []string) wire.Session {
	c.T.Helper()
	b, err := json.Marshal(map[string]any{"command": argv})
	if err != nil {
		c.T.Fatal(err)
	}
	return c.Create(string(b))
}

// List lists the sessions, checking the reply's shape.
func (c *Client) List() []wire.Session {
	c.T.Helper()
	resp, b := c.Do(http.MethodGet, "/api/sessions", "")
	WantStatus(c.T, "list", resp, b, http.StatusOK)
	var wrap struct {
		Sessions []json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(b, &wrap); err != nil || wrap.Sessions == nil {
		c.T.Fatalf("list body %s: want {\"sessions\":[...]} (err %v)", b, err)
	}
	out := make([]wire.Session, len(wrap.Sessions))
	for i, raw := range wrap.Sessions {
		out[i] = CheckSessionJSON(c.T, raw)
	}
	return out
}

// Get gets one session and expects 200.
func (c *Client) Get(id string) wire.Session {
	c.T.Helper()
	resp, b := c.Do(http.MethodGet, "/api/sessions/"+id, "")
	WantStatus(c.T, "get "+id, resp, b, http.StatusOK)
	return DecodeSession(c.T, b)
}

// IDs returns the sessions' ids, in order.
func IDs(list []wire.Session) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID
	}
	return out
}

// ProcessGone reports whether no process has this pid (kill(pid, 0) gives
// ESRCH). A zombie still counts as present.
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// WaitGone waits until no process has this pid, failing t after Timeout.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	testutil.Eventually(t, Timeout, fmt.Sprintf("process %d to be gone", pid), func() bool { return ProcessGone(pid) })
}

// Commands run as sessions. Each takes its pid file as $0.

// Sleeper runs for a minute and dies of SIGHUP.
func Sleeper() []string { return []string{"sh", "-c", "exec sleep 60"} }

// PIDSleeper writes its pid to path, then runs for a minute; SIGHUP ends it.
func PIDSleeper(path string) []string {
	return []string{"sh", "-c", `echo $$ > "$0"; exec sleep 60`, path}
}

// At returns a copy of c reporting to t, for use inside t's subtest: a
// subtest must not fail its parent from its own goroutine.
func (c *Client) At(t testing.TB) *Client {
	at := *c
	at.T = t
	return &at
}

// Git runs git in dir and returns its output, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// SkipWithoutGit skips t when git is not installed.
func SkipWithoutGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
}

// InitRepo makes dir a git repository with one commit on main.
func InitRepo(t testing.TB, dir string) {
	t.Helper()
	Git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	Git(t, dir, "add", ".")
	Git(t, dir, "commit", "-q", "-m", "first")
}

// Branches lists repo's branches, one a line.
func Branches(t testing.TB, repo string) string {
	t.Helper()
	return Git(t, repo, "branch", "--list", "--format=%(refname:short)")
}

// SetCommitter tells the repository at dir who commits, for the routes
// that commit (git refuses without a name).
func SetCommitter(t testing.TB, dir string) {
	t.Helper()
	Git(t, dir, "config", "user.name", "Dev")
	Git(t, dir, "config", "user.email", "dev@example.com")
}

// DecodeJSON decodes b into v, failing t on error.
func DecodeJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
}

// Diff is GET /api/sessions/:id/diff's answer.
type Diff struct {
	Base  string `json:"base"`
	Files []struct {
		Path      string `json:"path"`
		OldPath   string `json:"oldPath"`
		Status    string `json:"status"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
		Binary    bool   `json:"binary"`
		Patch     string `json:"patch"`
	} `json:"files"`
	Truncated bool `json:"truncated"`
}

// Diff gets a session's changes, query included ("?path=..." or ""),
// and expects 200.
func (c *Client) Diff(id, query string) Diff {
	c.T.Helper()
	resp, b := c.Do(http.MethodGet, "/api/sessions/"+id+"/diff"+query, "")
	WantStatus(c.T, "diff", resp, b, http.StatusOK)
	var d Diff
	if err := json.Unmarshal(b, &d); err != nil {
		c.T.Fatalf("diff body %s: %v", b, err)
	}
	return d
}

// RawGet sends GET URL+pathAndQuery exactly as given: the query is not
// re-encoded.
func (c *Client) RawGet(pathAndQuery string) (*http.Response, []byte) {
	t := c.T
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.URL+pathAndQuery, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, query, ok := strings.Cut(pathAndQuery, "?"); ok && req.URL.RawQuery != query {
		t.Fatalf("query of %q changed to %q", pathAndQuery, req.URL.RawQuery)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", pathAndQuery, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", pathAndQuery, err)
	}
	return resp, b
}
