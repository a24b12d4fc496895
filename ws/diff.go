package ws

import (
	"encoding/json"

	"github.com/agentmux/agentmux/changes"
)

// TypeSessionDiff is the live summary of what a session changed.
const TypeSessionDiff = "session.diff"

// maxDiffFiles bounds the files one session.diff lists; the totals still
// count them all.
const maxDiffFiles = 1000

type (
	diffFileJSON struct {
		Path      string `json:"path"`
		OldPath   string `json:"oldPath,omitempty"`
		Status    string `json:"status"`
		Additions int    `json:"additions"`
		Deletions int    `json:"deletions"`
		Binary    bool   `json:"binary,omitempty"`
	}
	diffMessage struct {
		Type      string         `json:"type"`
		SessionID string         `json:"sessionId"`
		Base      string         `json:"base"`
		Files     []diffFileJSON `json:"files"`
		Additions int            `json:"additions"`
		Deletions int            `json:"deletions"`
		// Truncated reports that more files changed than are listed.
		Truncated bool `json:"truncated,omitempty"`
	}
)

// OnSessionDiff tells every connection what a session has changed, and
// keeps it for the connections that open later.
func (h *Hub) OnSessionDiff(sessionID string, s changes.Summarized) {
	if _, err := h.opts.Sessions.Get(sessionID); err != nil {
		return // destroyed meanwhile: nothing to keep for it
	}
	m := diffMessage{Type: TypeSessionDiff, SessionID: sessionID, Base: s.Base, Files: make([]diffFileJSON, 0, min(len(s.Files), maxDiffFiles)),
		Additions: s.Additions, Deletions: s.Deletions, Truncated: len(s.Files) > maxDiffFiles}
	for _, f := range s.Files[:min(len(s.Files), maxDiffFiles)] {
		m.Files = append(m.Files, diffFileJSON{Path: f.Path, OldPath: f.OldPath, Status: string(f.Status), Additions: f.Additions, Deletions: f.Deletions, Binary: f.Binary})
	}
	b, err := json.Marshal(m)
	if err != nil {
		h.log.Error("encode session.diff", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.diffs[sessionID] = b
	for c := range h.conns {
		c.sendInformational(b)
	}
}

// forgetDiffLocked drops a destroyed session's summary. mu must be held.
func (h *Hub) forgetDiffLocked(sessionID string) { delete(h.diffs, sessionID) }
