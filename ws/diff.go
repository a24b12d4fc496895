package ws

import (
	"encoding/json"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/wire"
)

// OnSessionDiff tells every connection what a session has changed, and
// keeps it for the connections that open later.
func (h *Hub) OnSessionDiff(sessionID string, s changes.Summarized) {
	if _, err := h.opts.Sessions.Get(sessionID); err != nil {
		return // destroyed meanwhile: nothing to keep for it
	}
	b, err := json.Marshal(wire.DiffView(sessionID, s))
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
