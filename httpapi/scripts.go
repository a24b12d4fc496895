package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/wire"
)

// ScriptsReply is GET /api/scripts's and POST /api/scripts/approve's:
// the workspace scripts in force now, each with whether it may run.
type ScriptsReply struct {
	// File is the scripts file read, relative to the workspace
	// ("agentmux.json" or "conductor.json"); null when there is none.
	File *string `json:"file"`
	// RunMode is "concurrent" or "exclusive".
	RunMode scripts.Mode `json:"runMode"`
	// Scripts are those set, in the order setup, run, archive, check;
	// never null.
	Scripts []ScriptView `json:"scripts"`
	// Settings are the scripts set in the page's workspace settings
	// ("" for one not set there), which win over the file; the flags win
	// over them.
	Settings scripts.Overrides `json:"settings"`
}

// ScriptView is one script in force, as the API shows it.
type ScriptView struct {
	// Approved reports whether it may run: it came from the server's
	// flags, --trust-scripts is on, or a person approved this text.
	Approved bool   `json:"approved"`
	Hash     string `json:"hash"`
	Name     string `json:"name"`
	// Source is "agentmux.json", "conductor.json" or "flag".
	Source scripts.Source `json:"source"`
	Text   string         `json:"text"`
}

// ApproveScriptsRequest is POST /api/scripts/approve's body: one hash,
// or all that are in force.
type ApproveScriptsRequest struct {
	All  bool   `json:"all"`
	Hash string `json:"hash"`
}

func (a *API) scriptsReply(set scripts.Set) ScriptsReply {
	r := ScriptsReply{RunMode: set.RunMode, Scripts: []ScriptView{}}
	if o, err := a.opts.Scripts.Settings(); err == nil {
		r.Settings = o
	}
	if set.File != "" {
		r.File = &set.File
	}
	for _, s := range set.Scripts {
		r.Scripts = append(r.Scripts, ScriptView{Name: s.Name, Text: s.Text, Source: s.Source, Hash: s.Hash, Approved: a.opts.Scripts.Approved(s)})
	}
	return r
}

// getScripts answers with the scripts in force, reading the file again
// so that an edit shows at once.
func (a *API) getScripts(c echo.Context) error {
	set, err := a.opts.Scripts.Load()
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, a.scriptsReply(set))
}

// approveScripts approves one script by hash, or all in force, and
// answers with the scripts as they now stand. Only what is in force now
// can be approved: a hash the file no longer has is SCRIPT_CHANGED.
func (a *API) approveScripts(c echo.Context) error {
	var req ApproveScriptsRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	switch {
	case req.All == (req.Hash != ""):
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, `give "hash" (one script's) or "all": true, not both`)
	case req.All:
		set, err := a.opts.Scripts.ApproveAll()
		if err != nil {
			return sessionError(c, err)
		}
		a.log.Info("workspace scripts approved", "file", set.File, "scripts", len(set.Scripts))
		return c.JSON(http.StatusOK, a.scriptsReply(set))
	}
	if !scripts.IsHash(req.Hash) {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "hash: want a script's SHA-256, 64 lower-case hex digits")
	}
	s, err := a.opts.Scripts.Approve(req.Hash)
	if err != nil {
		return sessionError(c, err)
	}
	a.log.Info("workspace script approved", "script", s.Name, "source", s.Source, "hash", s.Hash)
	set, err := a.opts.Scripts.Load()
	if err != nil {
		return sessionError(c, err)
	}
	return c.JSON(http.StatusOK, a.scriptsReply(set))
}

// putScriptSettings keeps the scripts set in the page's workspace
// settings, every field given ("" to set none), and answers with the
// scripts then in force.
func (a *API) putScriptSettings(c echo.Context) error {
	var req scripts.Overrides
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	if err := a.opts.Scripts.SaveSettings(req); err != nil {
		return sessionError(c, err)
	}
	a.log.Info("workspace script settings saved", "setup", req.Setup != "", "run", req.Run != "", "archive", req.Archive != "", "check", req.Check != "", "runMode", req.RunMode)
	return a.getScripts(c)
}
