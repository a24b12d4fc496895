package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/wire"
)

// diffBody is GET /api/sessions/:id/diff's answer, as apitest reads it.
type diffBody = apitest.Diff

func (e *apiEnv) diff(id, query string) diffBody {
	e.t.Helper()
	return e.api().Diff(id, query)
}

// sessionDiffMsg is a session.diff message.
type sessionDiffMsg struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Files     []struct {
		Path      string `json:"path"`
		Status    string `json:"status"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
	} `json:"files"`
	Additions int `json:"additions"`
	Deletions int `json:"deletions"`
}

// nextDiff reads conn until a session.diff for id that satisfies ok.
func nextDiff(t *testing.T, conn *websocket.Conn, id string, ok func(sessionDiffMsg) bool) sessionDiffMsg {
	t.Helper()
	for {
		_, raw, err := readWS(conn)
		if err != nil && raw == nil {
			t.Fatalf("waiting for session.diff: %v", err)
		}
		var m sessionDiffMsg
		if json.Unmarshal(raw, &m) == nil && m.Type == wire.TypeSessionDiff && m.SessionID == id && ok(m) {
			return m
		}
	}
}

// TestSessionDiff: the API serves a session's changes with their patches,
// one file with ?path=, and says plainly when there is no repository.
func TestSessionDiff(t *testing.T) {
	e := newRepoAPI(t)
	s := e.createCommand(sleeper())
	if err := os.WriteFile(filepath.Join(e.dir, "README.md"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeWS(t, e.dir, "src/new.go", "package src\n")
	d := e.diff(s.ID, "")
	if len(d.Files) != 2 || d.Base == "" || d.Truncated {
		t.Fatalf("diff %+v", d)
	}
	for _, f := range d.Files {
		switch f.Path {
		case "README.md":
			if f.Status != "modified" || f.Additions != 1 || !strings.Contains(f.Patch, "+world\n") {
				t.Errorf("README.md: %+v", f)
			}
		case "src/new.go":
			if f.Status != "added" || f.Additions != 1 || !strings.Contains(f.Patch, "+package src") {
				t.Errorf("src/new.go: %+v", f)
			}
		default:
			t.Errorf("unexpected file %+v", f)
		}
	}
	if one := e.diff(s.ID, "?path=src/new.go"); len(one.Files) != 1 || one.Files[0].Path != "src/new.go" {
		t.Errorf("?path=src/new.go: %+v", one)
	}
	for _, bad := range []string{"../etc/passwd", "/etc/passwd", "."} {
		resp, b := e.do(http.MethodGet, "/api/sessions/"+s.ID+"/diff?path="+bad, "")
		wantError(t, "path "+bad, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}

	plain := newAPI(t)
	ps := plain.createCommand(sleeper())
	resp, b := plain.do(http.MethodGet, "/api/sessions/"+ps.ID+"/diff", "")
	if msg := wantError(t, "not a repository", resp, b, http.StatusConflict, wire.CodeNotARepository); !strings.Contains(msg, "not inside a git repository") {
		t.Errorf("message %q", msg)
	}

	// Another page cannot make the server diff.
	resp, b = e.browserRequest(http.MethodGet, "/api/sessions/"+s.ID+"/diff", "http://evil.test", "cross-site", "", "")
	wantError(t, "a diff asked by another page", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
}

// TestSessionDiffLive: a write in the session's tree reaches every
// connection as session.diff, and a connection opened later gets the last
// one at once.
func TestSessionDiffLive(t *testing.T) {
	e := newRepoAPI(t)
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	conn, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, conn)
	s := e.createCommand(sleeper())
	nextDiff(t, conn, s.ID, func(m sessionDiffMsg) bool { return len(m.Files) == 0 }) // the clean tree
	writeWS(t, e.dir, "notes/plan.txt", "one\ntwo\nthree\n")
	m := nextDiff(t, conn, s.ID, func(m sessionDiffMsg) bool { return len(m.Files) > 0 })
	if len(m.Files) != 1 || m.Files[0].Path != "notes/plan.txt" || m.Files[0].Status != "added" || m.Additions != 3 {
		t.Errorf("session.diff %+v", m)
	}
	later, _, err := dialWS(t, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	nextDiff(t, later, s.ID, func(m sessionDiffMsg) bool { return m.Additions == 3 })
	// A commit moves the base: the change is no longer the session's.
	git(t, e.dir, "add", "-A")
	git(t, e.dir, "commit", "-q", "-m", "plan")
	nextDiff(t, conn, s.ID, func(m sessionDiffMsg) bool { return len(m.Files) == 0 })
}
