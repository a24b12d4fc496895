package sessions

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/agentmux/agentmux/internal/clip"
)

// Permission is what an agent waits for its user to allow: the tool it
// wants to use and a short summary of that tool's input, enough for a
// person (or a UI offering Allow and Deny) to know what is asked.
type Permission struct {
	// Tool is the tool's name as the agent gives it (Write, Bash,
	// mcp__server__tool), cleaned and clipped.
	Tool string `json:"tool"`
	// Summary says what the tool would act on: a file's path (relative
	// to the agent's directory when inside it), a command, a URL, or
	// else the input as clipped JSON; empty when the input says nothing.
	Summary string `json:"summary,omitempty"`
}

// Bounds of what a Permission quotes: a tool's input can be a whole file
// (a Write's content), and it is shown in a tab's tooltip and a
// notification.
const (
	maxToolName = 64
	maxSummary  = 160
)

// summaryField names, per tool, the input field that says what the tool
// acts on, and whether it is a path. Tools not listed are summarised as
// JSON. The names are those of Claude Code's tools (2.1).
var summaryField = map[string]struct {
	field  string
	isPath bool
}{
	"Write":        {"file_path", true},
	"Edit":         {"file_path", true},
	"MultiEdit":    {"file_path", true},
	"Read":         {"file_path", true},
	"NotebookEdit": {"notebook_path", true},
	"Bash":         {"command", false},
	"WebFetch":     {"url", false},
	"WebSearch":    {"query", false},
	"Glob":         {"pattern", false},
	"Grep":         {"pattern", false},
}

// newPermission reads a permission request's tool and input, and says
// what it asks in a sentence for the session's status reason. dirs are
// the directories a path is shown relative to, first match wins: the
// agent's own (from its hook input) and the session's.
func newPermission(tool string, input json.RawMessage, dirs ...string) (Permission, string) {
	p := Permission{Tool: shorten(tool, maxToolName)}
	if sf, ok := summaryField[tool]; ok {
		var fields map[string]json.RawMessage
		var v string
		if json.Unmarshal(input, &fields) == nil && json.Unmarshal(fields[sf.field], &v) == nil && v != "" {
			if sf.isPath {
				v = relativePath(v, dirs)
			}
			p.Summary = shorten(v, maxSummary)
			if sf.isPath || tool == "WebFetch" {
				return p, "Claude wants to use " + p.Tool + " on " + p.Summary
			}
			return p, "Claude wants to use " + p.Tool + ": " + p.Summary
		}
	}
	// Any other tool: its input as compact JSON, clipped. Compacting a
	// large input costs a copy of at most the hook's body limit.
	var b bytes.Buffer
	if json.Compact(&b, input) != nil || b.String() == "{}" || b.String() == "null" {
		return p, "Claude wants to use " + p.Tool
	}
	p.Summary = shorten(b.String(), maxSummary)
	return p, "Claude wants to use " + p.Tool + ": " + p.Summary
}

// shorten makes s safe to show (see cleanText) in at most max bytes and
// an ellipsis. It clips before cleaning, so a huge input is not copied.
func shorten(s string, max int) string {
	return clip.String(cleanText(clip.String(s, 2*max, "…")), max, "…")
}

// relativePath returns p relative to the first of dirs it is inside, or p.
func relativePath(p string, dirs []string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	for _, d := range dirs {
		if !filepath.IsAbs(d) {
			continue
		}
		rel, err := filepath.Rel(d, p)
		if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return rel
		}
	}
	return p
}
