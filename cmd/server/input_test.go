package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// readOnce reads one line and says what it got, so that keys typed by a
// request show on the screen exactly once.
var readOnce = []string{"sh", "-c", "read x; echo \"got=$x\"; exec sleep 60"}

// TestInputEndpoint: POST /api/sessions/:id/input types into a session
// from the server's own page (a notification's Allow, with no page open),
// and from another web page it is refused before the keys reach anything.
func TestInputEndpoint(t *testing.T) {
	e := newAPI(t)
	s := e.createCommand(readOnce)
	path := "/api/sessions/" + s.ID + "/input"

	resp, b := e.browserRequest(http.MethodPost, path, "http://evil.test", "cross-site", "application/json", `{"data":"pwned\r"}`)
	wantError(t, "from another site", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	resp, b = e.browserRequest(http.MethodPost, path, "http://127.0.0.1:3000", "same-site", "application/json", `{"data":"pwned\r"}`)
	wantError(t, "from another port", resp, b, http.StatusForbidden, wire.CodePermissionDenied)

	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", `{"data":"yes\r"}`)
	wantStatus(t, "from the page", resp, b, http.StatusNoContent)
	e.waitScreen(s.ID, "got=yes")
	if got := screen(t, e, s.ID); strings.Contains(got, "pwned") {
		t.Errorf("a refused request's keys reached the session: %q", got)
	}

	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", `{"data":""}`)
	wantError(t, "no data", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", `{"keys":"x"}`)
	wantError(t, "an unknown field", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	big, _ := json.Marshal(map[string]string{"data": strings.Repeat("x", httpapi.MaxBodyBytes)})
	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", string(big))
	wantError(t, "a body over the limit", resp, b, http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge)
	resp, b = e.browserRequest(http.MethodPost, "/api/sessions/0d6e1c2a-0000-4000-8000-000000000000/input", e.ts.URL, "same-origin", "application/json", `{"data":"x"}`)
	wantError(t, "an unknown session", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}

// TestInputAnswersOnlyThePermissionAsked: with a permission, the keys go
// only while the session waits at that very request; an Allow from a
// notification of an earlier dialog must not type into the next one.
func TestInputAnswersOnlyThePermissionAsked(t *testing.T) {
	installClaude(t, "#!/bin/sh\nexec sleep 60\n")
	e := newAPI(t)
	next := statusEvents(t, e, nil)
	s := e.create(`{"agent":"claude","name":"perm"}`)
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/sessions/" + s.ID + "/input"
	answer := `{"data":"1","permission":{"tool":"Write","summary":"docs/plan.md"}}`

	resp, b := e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", answer)
	wantError(t, "no request pending", resp, b, http.StatusConflict, wire.CodeInvalidMessage)

	environ, _ := os.ReadFile("/proc/" + strconv.Itoa(sess.Pid()) + "/environ")
	secret, hookURL := envValue(environ, sessions.EnvHookSecret), envValue(environ, sessions.EnvHookURL)
	body, _ := json.Marshal(map[string]any{
		"hook_event_name": "PermissionRequest",
		"cwd":             s.Cwd,
		"tool_name":       "Write",
		"tool_input":      map[string]string{"file_path": filepath.Join(s.Cwd, "docs", "plan.md"), "content": "# Plan\n"},
	})
	req, _ := http.NewRequest(http.MethodPost, hookURL, bytes.NewReader(body))
	req.Header.Set(sessions.HookHeader, secret)
	if resp, b := e.send(req); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("PermissionRequest: status %d; body %s", resp.StatusCode, b)
	}
	if m := next("session.status", "waiting"); m.Permission == nil {
		t.Fatalf("waiting without a permission: %+v", m)
	}

	other := `{"data":"1","permission":{"tool":"Write","summary":"docs/other.md"}}`
	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", other)
	wantError(t, "another request's answer", resp, b, http.StatusConflict, wire.CodeInvalidMessage)
	if v := e.get(s.ID); v.Status != "waiting" {
		t.Fatalf("a refused answer ended the wait: %s", v.Status)
	}

	resp, b = e.browserRequest(http.MethodPost, path, e.ts.URL, "same-origin", "application/json", answer)
	wantStatus(t, "the answer", resp, b, http.StatusNoContent)
	if m := next("session.status", ""); m.Status != "active" || m.Permission != nil {
		t.Errorf("after the answer: %+v, permission %+v; want active and none", m, m.Permission)
	}
}
