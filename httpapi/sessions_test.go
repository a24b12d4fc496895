package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

func TestHealth(t *testing.T) {
	e := newAPI(t)
	resp, b := e.Do(http.MethodGet, "/api/health", "")
	apitest.WantStatus(t, "health", resp, b, http.StatusOK)
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	if h["status"] != "ok" {
		t.Errorf("status = %v, want ok", h["status"])
	}
	if v, ok := h["version"].(string); !ok || v == "" {
		t.Errorf("version = %#v, want a non-empty string", h["version"])
	}
	if ms, ok := h["uptimeMs"].(float64); !ok || ms < 0 {
		t.Errorf("uptimeMs = %#v, want a non-negative number", h["uptimeMs"])
	}
}

func TestCreateSessionDefaults(t *testing.T) {
	e := newAPI(t)
	before := time.Now()
	s := e.Create("{}")
	after := time.Now()

	if u, err := uuid.Parse(s.ID); err != nil || u.Version() != 4 || u.String() != s.ID {
		t.Errorf("id %q is not a lower-case UUIDv4 (err %v)", s.ID, err)
	}
	if s.Status != "active" {
		t.Errorf("status = %q, want active", s.Status)
	}
	if s.Cols != 80 || s.Rows != 24 {
		t.Errorf("size = %dx%d, want 80x24", s.Cols, s.Rows)
	}
	if s.Agent != "custom" {
		t.Errorf("agent = %q, want custom (from --agent-cmd)", s.Agent)
	}
	if want := []string{"sh", "-c", "exec sleep 60"}; !slices.Equal(s.Command, want) {
		t.Errorf("command = %q, want %q", s.Command, want)
	}
	if s.Cwd != e.dir {
		t.Errorf("cwd = %q, want the workspace %q", s.Cwd, e.dir)
	}
	if s.Name == "" {
		t.Error("name is empty; want a generated one")
	}
	if s.ExitCode != nil {
		t.Errorf("exitCode = %d on a running session; want it absent", *s.ExitCode)
	}
	// Re-read createdAt as text: it must be RFC 3339 and taken during the
	// request.
	var raw struct {
		Session struct {
			CreatedAt      string `json:"createdAt"`
			LastActivityAt string `json:"lastActivityAt"`
		} `json:"session"`
	}
	_, b := e.Do(http.MethodGet, "/api/sessions/"+s.ID, "")
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	created, err := time.Parse(time.RFC3339, raw.Session.CreatedAt)
	if err != nil {
		t.Errorf("createdAt %q is not RFC 3339: %v", raw.Session.CreatedAt, err)
	} else if created.Before(before.Truncate(time.Second)) || created.After(after) {
		t.Errorf("createdAt %v is outside the request (%v .. %v)", created, before, after)
	}
	if _, err := time.Parse(time.RFC3339, raw.Session.LastActivityAt); err != nil {
		t.Errorf("lastActivityAt %q is not RFC 3339: %v", raw.Session.LastActivityAt, err)
	}
}

func TestCreateSessionWithOptions(t *testing.T) {
	e := newAPI(t)
	sub := filepath.Join(e.dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	s := e.Create(`{"name":"build","cwd":"sub","command":["sleep","60"],"cols":120,"rows":40}`)
	if s.Name != "build" || s.Cwd != sub || s.Cols != 120 || s.Rows != 40 || !slices.Equal(s.Command, []string{"sleep", "60"}) {
		t.Errorf("session = %+v; want name build, cwd %s, 120x40, command [sleep 60]", s, sub)
	}
	// 0 means the default size; so does an absent body.
	s = e.Create(`{"cols":0,"rows":0}`)
	if s.Cols != 80 || s.Rows != 24 {
		t.Errorf("cols/rows 0: size %dx%d, want 80x24", s.Cols, s.Rows)
	}
	req, err := http.NewRequest(http.MethodPost, e.ts.URL+"/api/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := e.Send(req)
	apitest.WantStatus(t, "create without a body", resp, b, http.StatusCreated)
	apitest.DecodeSession(t, b)
}

func TestListOldestFirstAndGet(t *testing.T) {
	e := newAPI(t)
	if got := e.List(); len(got) != 0 {
		t.Fatalf("fresh server lists %d sessions", len(got))
	}
	var want []string
	for _, name := range []string{"a", "b", "c"} {
		want = append(want, e.Create(`{"name":"`+name+`"}`).ID)
	}
	list := e.List()
	if !slices.Equal(apitest.IDs(list), want) {
		t.Fatalf("list ids %v, want creation order %v", apitest.IDs(list), want)
	}
	for i, name := range []string{"a", "b", "c"} {
		if list[i].Name != name {
			t.Errorf("list[%d].name = %q, want %q", i, list[i].Name, name)
		}
		if i > 0 && list[i].CreatedAt.Before(list[i-1].CreatedAt) {
			t.Errorf("list[%d] created before list[%d]", i, i-1)
		}
	}
	got := e.Get(want[1])
	if got.ID != want[1] || got.Name != "b" || got.Status != "active" {
		t.Errorf("get = %+v, want session b, active", got)
	}
}

func TestGetUnknownSession(t *testing.T) {
	e := newAPI(t)
	for _, id := range []string{uuid.NewString(), "not-a-uuid"} {
		resp, b := e.Do(http.MethodGet, "/api/sessions/"+id, "")
		apitest.WantError(t, "get "+id, resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	}
}

func TestCreateBadRequests(t *testing.T) {
	e := newAPI(t)
	if err := os.WriteFile(filepath.Join(e.dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", 129)
	for _, tc := range []struct {
		name, body string
		msg        string // in the error message
	}{
		{"malformed JSON", `{"name":`, "bad request body"},
		{"not an object", `[1,2]`, "bad request body"},
		{"unknown field", `{"nmae":"x"}`, "nmae"},
		{"wrong type", `{"cols":"80"}`, "cols"},
		{"command not a list", `{"command":"sh"}`, "command"},
		{"two JSON values", `{} {}`, "more than one"},
		{"trailing garbage", `{}x`, ""},
		{"cols too large", `{"cols":1001}`, "1001"},
		{"cols negative", `{"cols":-1}`, "-1"},
		{"rows too large", `{"rows":1001}`, "1001"},
		{"nonexistent cwd", `{"cwd":"no/such/dir"}`, "does not exist"},
		{"cwd is a file", `{"cwd":"file"}`, "not a directory"},
		{"empty program", `{"command":[""]}`, "program"},
		{"unknown agent", `{"agent":"nope"}`, "nope"},
		{"long name", `{"name":"` + long + `"}`, "128"},
		{"worktree without a branch", `{"worktree":{}}`, "branch"},
		{"worktree and cwd", `{"cwd":".","worktree":{"branch":"feature"}}`, "not both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.at(t)
			resp, b := e.Do(http.MethodPost, "/api/sessions", tc.body)
			msg := apitest.WantError(t, tc.body, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q does not mention %q", msg, tc.msg)
			}
		})
	}
	if n := len(e.List()); n != 0 {
		t.Errorf("after bad requests %d sessions are listed, want 0", n)
	}
}

func TestCreateSpawnFailure(t *testing.T) {
	e := newAPI(t)
	resp, b := e.Do(http.MethodPost, "/api/sessions", `{"command":["/nonexistent/x"]}`)
	msg := apitest.WantError(t, "nonexistent command", resp, b, http.StatusBadRequest, wire.CodePTYSpawnFailed)
	if !strings.Contains(msg, "/nonexistent/x") {
		t.Errorf("message %q does not name the command", msg)
	}
	if n := len(e.List()); n != 0 {
		t.Errorf("after a failed spawn %d sessions are listed, want 0", n)
	}

	t.Run("claude not installed", func(t *testing.T) {
		e := e.at(t)
		if _, err := exec.LookPath("claude"); err == nil {
			t.Skip("claude is installed here")
		}
		resp, b := e.Do(http.MethodPost, "/api/sessions", `{"agent":"claude"}`)
		msg := apitest.WantError(t, "agent claude", resp, b, http.StatusBadRequest, wire.CodePTYSpawnFailed)
		if !strings.Contains(msg, "not installed") {
			t.Errorf("message %q does not say claude is not installed", msg)
		}
		if n := len(e.List()); n != 0 {
			t.Errorf("%d sessions listed, want 0", n)
		}
	})
}

func TestSessionLimit(t *testing.T) {
	e := harness{maxSessions: 4}.start(t)
	var made []string
	for range 4 {
		made = append(made, e.Create("{}").ID)
	}
	resp, b := e.Do(http.MethodPost, "/api/sessions", "{}")
	apitest.WantError(t, "fifth session", resp, b, http.StatusConflict, wire.CodeSessionLimitReached)
	if got := apitest.IDs(e.List()); !slices.Equal(got, made) {
		t.Fatalf("after the refused create the list is %v, want %v", got, made)
	}
	// Destroying one makes room again.
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+made[0], "")
	apitest.WantStatus(t, "delete", resp, b, http.StatusNoContent)
	e.Create("{}")
	if n := len(e.List()); n != 4 {
		t.Errorf("%d sessions listed, want 4", n)
	}
}

func TestDeleteStopsProcess(t *testing.T) {
	e := newAPI(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := e.CreateCommand(apitest.PIDSleeper(pidFile))
	other := e.Create("{}")
	pid := testutil.ReadPID(t, waitTimeout, pidFile)

	resp, b := e.Do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	apitest.WantStatus(t, "delete", resp, b, http.StatusNoContent)
	if len(b) != 0 {
		t.Errorf("204 with body %q", b)
	}
	apitest.WaitGone(t, pid)

	resp, b = e.Do(http.MethodGet, "/api/sessions/"+s.ID, "")
	apitest.WantError(t, "get deleted", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	if got := apitest.IDs(e.List()); !slices.Equal(got, []string{other.ID}) {
		t.Errorf("list after delete = %v, want only %s", got, other.ID)
	}
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID, "")
	apitest.WantError(t, "delete twice", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}

func TestDeleteUnknown(t *testing.T) {
	e := newAPI(t)
	resp, b := e.Do(http.MethodDelete, "/api/sessions/"+uuid.NewString(), "")
	apitest.WantError(t, "delete unknown", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}

func TestResume(t *testing.T) {
	e := newAPI(t)

	running := e.Create("{}")
	resp, b := e.Do(http.MethodPost, "/api/sessions/"+running.ID+"/resume", "")
	apitest.WantStatus(t, "resume a running session", resp, b, http.StatusConflict)

	resp, b = e.Do(http.MethodPost, "/api/sessions/"+uuid.NewString()+"/resume", "")
	apitest.WantError(t, "resume unknown", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)

	// The first run exits 3 at once; the resumed run finds its marker and
	// keeps running, so the reply's status cannot race with its end.
	marker := filepath.Join(t.TempDir(), "marker")
	s := e.CreateCommand([]string{"sh", "-c", `if [ -e "$0" ]; then exec sleep 60; fi; : > "$0"; exit 3`, marker})
	var ended wire.Session
	testutil.Eventually(t, waitTimeout, "the first run to end", func() bool {
		ended = e.Get(s.ID)
		return ended.ExitCode != nil
	})
	if ended.Status != "error" || *ended.ExitCode != 3 {
		t.Errorf("after exit 3: status %q exitCode %d, want error and 3", ended.Status, *ended.ExitCode)
	}

	resp, b = e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/resume", "")
	apitest.WantStatus(t, "resume an exited session", resp, b, http.StatusOK)
	got := apitest.DecodeSession(t, b)
	if got.ID != s.ID || got.Status != "active" || got.ExitCode != nil {
		t.Errorf("resumed = %+v, want the same id, active, no exitCode", got)
	}
	resp, b = e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/resume", "")
	apitest.WantStatus(t, "resume again", resp, b, http.StatusConflict)
}

func TestUnknownAPIRoute(t *testing.T) {
	e := newAPI(t)
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/x"},
		{http.MethodPost, "/api/x/y"},
		{http.MethodGet, "/api/"},
	} {
		resp, b := e.Do(tc.method, tc.path, "")
		msg := apitest.WantError(t, tc.method+" "+tc.path, resp, b, http.StatusNotFound, wire.CodeNotFound)
		if !strings.Contains(msg, tc.path) {
			t.Errorf("%s %s: message %q does not name the path", tc.method, tc.path, msg)
		}
	}
}
