// Viewers: connections opened through a read-only link (package share),
// with /ws?share=<secret> and no token. A viewer is told share.welcome,
// may attach to its link's one session and detach, and send heartbeats;
// everything else it sends is refused with READ_ONLY and changes nothing.
// Collab sends it only its session's status, size and end (JoinViewer),
// and its link's end closes it at once with CloseShareEnded.

package ws

import (
	"fmt"
	"net/http"

	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// CloseShareEnded is the close code (an application's, RFC 6455 7.4.2)
// of a viewer whose link was revoked, expired or lost its session; the
// reason says which. A page that gets it does not reconnect.
const CloseShareEnded = 4403

// shareSecret returns the secret of a read-only link an upgrade asks to
// watch through, and whether it asks at all: with ?share=, even empty, it
// is a viewer's and is never served as anything else.
func shareSecret(r *http.Request) (string, bool) {
	q := r.URL.Query()
	return q.Get("share"), q.Has("share")
}

// checkShare returns the live link secret opens.
func (h *Hub) checkShare(secret string) (share.Link, error) {
	if h.opts.Shares == nil {
		return share.Link{}, share.ErrDenied
	}
	return h.opts.Shares.Check(secret)
}

// welcome is a viewer's first message: its link, and what it is shown of
// the session.
func (h *Hub) welcome(link share.Link) wire.ShareWelcomeMessage {
	m := wire.ShareWelcomeMessage{Type: wire.TypeShareWelcome, ShareID: link.ID, ExpiresAt: link.ExpiresAt,
		Scrollback: link.Scrollback, Session: wire.ViewedSession{ID: link.SessionID}}
	if s, err := h.opts.Sessions.Get(link.SessionID); err == nil {
		m.Session = wire.ViewedSessionView(s.Info())
	}
	return m
}

// endShare closes the viewers of a link that ended, at once.
func (h *Hub) endShare(e share.Ended) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		if c.view != nil && c.view.ID == e.Link.ID {
			c.log.Info("closing a viewer: its link ended", "reason", e.Reason)
			c.close(CloseShareEnded, e.Reason)
		}
	}
}

// handleViewer acts on a viewer's message: what a link grants, and
// READ_ONLY for the rest, whatever it is (a type added later included).
func (c *conn) handleViewer(m *wire.ClientMessage) {
	sid := c.view.SessionID
	switch {
	case m.Type == wire.TypeHeartbeat:
		c.handleHeartbeat(m)
		return
	case m.Type == wire.TypeSessionAttach && *m.SessionID == sid:
		s, err := c.hub.opts.Sessions.Get(sid)
		if err != nil {
			c.sendError(&wire.ProtocolError{Code: wire.ErrorCode(err), SessionID: sid, Message: err.Error()})
			return
		}
		since, lines := m.Since, 0
		if m.Lines != nil {
			lines = *m.Lines
		}
		if !c.view.Scrollback {
			// Only the screen as it is: no offset into the history, and a
			// replay of the screen's lines at most.
			since, lines = nil, max(s.Info().Rows, 1)
		}
		c.attach(s, since, lines)
		return
	case m.Type == wire.TypeSessionDetach && *m.SessionID == sid:
		if st, ok := c.streams[sid]; ok {
			c.detach(sid, st)
			c.hub.opts.App.Present(c.who, sid, false)
		}
		return
	}
	c.log.Debug("refused a viewer's request", "type", m.Type)
	id := ""
	if m.SessionID != nil {
		id = *m.SessionID
	}
	c.sendError(&wire.ProtocolError{Code: wire.CodeReadOnly, SessionID: id,
		Message: fmt.Sprintf("%s: it can only watch session %s; %s is not allowed", share.ErrReadOnly, sid, m.Type)})
}
