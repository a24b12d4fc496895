package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/wire"
)

func (e *apiEnv) scripts(t *testing.T) httpapi.ScriptsReply {
	t.Helper()
	resp, b := e.Do(http.MethodGet, "/api/scripts", "")
	apitest.WantStatus(t, "GET /api/scripts", resp, b, http.StatusOK)
	var r httpapi.ScriptsReply
	apitest.DecodeJSON(t, b, &r)
	return r
}

func writeScripts(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The scripts in force, read again on each request; approving one by
// hash, a stale hash refused, a changed script unapproved again, and
// approving all.
func TestScriptsAndTheirApproval(t *testing.T) {
	e := harness{scripts: scripts.Overrides{Check: "make check"}}.start(t)

	if r := e.scripts(t); r.File != nil || r.RunMode != scripts.Concurrent || len(r.Scripts) != 1 || r.Scripts[0].Source != scripts.SourceFlag || !r.Scripts[0].Approved {
		t.Fatalf("without a file: %+v, want only the flag's check, approved", r)
	}

	writeScripts(t, e.dir, scripts.FileName, `{"scripts": {"setup": "npm ci", "run": "npm run dev"}, "runMode": "exclusive"}`)
	r := e.scripts(t)
	if r.File == nil || *r.File != scripts.FileName || r.RunMode != scripts.Exclusive || len(r.Scripts) != 3 {
		t.Fatalf("after writing agentmux.json: %+v", r)
	}
	setup := r.Scripts[0]
	if setup.Name != scripts.Setup || setup.Text != "npm ci" || setup.Source != scripts.SourceAgentmux || setup.Hash != scripts.Hash("npm ci") || setup.Approved {
		t.Fatalf("setup: %+v, want npm ci from agentmux.json, unapproved", setup)
	}

	resp, b := e.Do(http.MethodPost, "/api/scripts/approve", `{"hash":"`+setup.Hash+`"}`)
	apitest.WantStatus(t, "approve setup", resp, b, http.StatusOK)
	var approved httpapi.ScriptsReply
	apitest.DecodeJSON(t, b, &approved)
	if !approved.Scripts[0].Approved || approved.Scripts[1].Approved {
		t.Fatalf("after approving setup: %+v", approved.Scripts)
	}
	if !e.store.Approved(setup.Hash) {
		t.Fatal("the approval is not in the store")
	}

	// The file changes: the new text is unapproved, and the old hash no
	// longer approves anything.
	writeScripts(t, e.dir, scripts.FileName, `{"scripts": {"setup": "npm ci && sh ./more.sh", "run": "npm run dev"}}`)
	r = e.scripts(t)
	if r.Scripts[0].Approved || r.Scripts[0].Hash == setup.Hash {
		t.Fatalf("a changed setup: %+v, want a new hash, unapproved", r.Scripts[0])
	}
	stale := scripts.Hash("npm run dev --stale")
	resp, b = e.Do(http.MethodPost, "/api/scripts/approve", `{"hash":"`+stale+`"}`)
	apitest.WantError(t, "approve a hash not in force", resp, b, http.StatusConflict, wire.CodeScriptChanged)
	if e.store.Approved(stale) {
		t.Fatal("a hash not in force was approved")
	}

	resp, b = e.Do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	apitest.WantStatus(t, "approve all", resp, b, http.StatusOK)
	for _, s := range e.scripts(t).Scripts {
		if !s.Approved {
			t.Errorf("%s not approved after approving all", s.Name)
		}
	}
}

func TestApproveScriptsBadRequests(t *testing.T) {
	e := newAPI(t)
	writeScripts(t, e.dir, scripts.FileName, `{"scripts": {"setup": "npm ci"}}`)
	for _, tc := range []struct{ name, body string }{
		{"neither", `{}`},
		{"both", `{"all":true,"hash":"` + scripts.Hash("npm ci") + `"}`},
		{"not a hash", `{"hash":"npm ci"}`},
		{"upper-case hash", `{"hash":"` + strings.ToUpper(scripts.Hash("npm ci")) + `"}`},
		{"unknown field", `{"hashes":["x"]}`},
	} {
		resp, b := e.Do(http.MethodPost, "/api/scripts/approve", tc.body)
		apitest.WantError(t, tc.name, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}
	if e.store.Approved(scripts.Hash("npm ci")) {
		t.Fatal("a bad request approved a script")
	}
}

// A scripts file that cannot be used is answered with what is wrong in
// it, for GET and for approving.
func TestScriptsFileInvalid(t *testing.T) {
	e := newAPI(t)
	writeScripts(t, e.dir, scripts.FileName, `{"scripts": {"setup": "npm ci"}, "mode": "exclusive"}`)
	resp, b := e.Do(http.MethodGet, "/api/scripts", "")
	msg := apitest.WantError(t, "GET with a bad agentmux.json", resp, b, http.StatusUnprocessableEntity, wire.CodeScriptsInvalid)
	if !strings.Contains(msg, "agentmux.json") || !strings.Contains(msg, `"mode"`) {
		t.Errorf("message %q does not name the file and the field", msg)
	}
	resp, b = e.Do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	apitest.WantError(t, "approve all with a bad agentmux.json", resp, b, http.StatusUnprocessableEntity, wire.CodeScriptsInvalid)
}

// A repository set up for Conductor: its scripts, from conductor.json.
func TestScriptsFromConductor(t *testing.T) {
	e := newAPI(t)
	writeScripts(t, e.dir, scripts.ConductorFileName, `{"scripts": {"setup": "npm install", "run": "npm run dev"}, "runScriptMode": "nonconcurrent"}`)
	r := e.scripts(t)
	if r.File == nil || *r.File != scripts.ConductorFileName || r.RunMode != scripts.Exclusive || len(r.Scripts) != 2 {
		t.Fatalf("%+v", r)
	}
	for _, s := range r.Scripts {
		if s.Source != scripts.SourceConductor || s.Approved {
			t.Errorf("%+v, want from conductor.json, unapproved", s)
		}
	}
}
