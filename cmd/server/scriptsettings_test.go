package main

import (
	"net/http"
	"testing"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/scripts"
)

// TestScriptSettings: scripts set in the page's workspace settings win
// over the file's and need no approval; the flags win over them; a
// setting that cannot be used is refused, saying why, and nothing is
// kept of it.
func TestScriptSettings(t *testing.T) {
	e := newShipAPI(t, "--run-script", "echo flag")
	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"check": "echo file", "setup": "echo file setup"}}`)

	resp, b := e.do(http.MethodPut, "/api/scripts/settings", `{"setup":"","run":"echo page run","archive":"","check":"echo page","runMode":"exclusive"}`)
	wantStatus(t, "save the settings", resp, b, http.StatusOK)
	var got httpapi.ScriptsReply
	decodeJSON(t, b, &got)
	want := map[string][2]string{
		"setup": {"echo file setup", string(scripts.SourceAgentmux)},
		"run":   {"echo flag", string(scripts.SourceFlag)},
		"check": {"echo page", string(scripts.SourceSettings)},
	}
	if len(got.Scripts) != len(want) {
		t.Fatalf("scripts in force: %+v", got.Scripts)
	}
	for _, s := range got.Scripts {
		w, ok := want[s.Name]
		if !ok || s.Text != w[0] || string(s.Source) != w[1] || s.Approved != (w[1] != string(scripts.SourceAgentmux)) {
			t.Errorf("%s: %+v, want %q from %s", s.Name, s, w[0], w[1])
		}
	}
	if got.RunMode != scripts.Exclusive || got.Settings.Check != "echo page" || got.Settings.Run != "echo page run" {
		t.Errorf("run mode %q, settings %+v", got.RunMode, got.Settings)
	}

	// Kept: read again.
	resp, b = e.do(http.MethodGet, "/api/scripts", "")
	wantStatus(t, "the scripts", resp, b, http.StatusOK)
	var again httpapi.ScriptsReply
	decodeJSON(t, b, &again)
	if again.Settings != got.Settings {
		t.Errorf("the settings read again: %+v, want %+v", again.Settings, got.Settings)
	}

	for _, bad := range []struct {
		body string
		code int
	}{
		{`{"setup":"","run":"","archive":"","check":"   ","runMode":""}`, http.StatusUnprocessableEntity},
		{`{"setup":"","run":"","archive":"","check":"","runMode":"sometimes"}`, http.StatusUnprocessableEntity},
		{`{"check":"x","mode":"exclusive"}`, http.StatusBadRequest},
	} {
		resp, b := e.do(http.MethodPut, "/api/scripts/settings", bad.body)
		wantStatus(t, "bad settings "+bad.body, resp, b, bad.code)
	}
	resp, b = e.do(http.MethodGet, "/api/scripts", "")
	wantStatus(t, "the scripts after refusals", resp, b, http.StatusOK)
	decodeJSON(t, b, &again)
	if again.Settings != got.Settings {
		t.Errorf("a refused setting changed them: %+v", again.Settings)
	}
}
