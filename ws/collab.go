// The connection as collab's client: what collab sends it, the states it
// renders, and the requests it hands over (client.hello, review.*).

package ws

import (
	"fmt"

	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

var _ collab.Client = (*conn)(nil)

// Send queues a message collab sends this client (sendControl).
func (c *conn) Send(b []byte) { c.sendControl(b) }

// SendInformational queues a message collab sends this client that it
// can do without (sendInformational).
func (c *conn) SendInformational(b []byte) { c.sendInformational(b) }

// MarkState marks a state collab changed (sendState).
func (c *conn) MarkState(kind, sessionID string) { c.sendState(kind, sessionID) }

// renderState encodes the state message k names as this connection is
// owed it; nil when it is owed nothing. Most states are the same for
// every connection (collab's RenderState); ports.changed is what changed
// since this connection's last one (portsChange). Only the writer calls
// it.
func (c *conn) renderState(k stateKey) ([]byte, error) {
	if k.kind == wire.TypePortsChanged {
		return c.portsChange()
	}
	return c.hub.opts.App.RenderState(k.kind, k.sessionID)
}

// portsChange renders the ports.changed this connection is owed: the whole
// listing the first time, then what changed since what it was sent last;
// nil when there is nothing to send (the listing went and came back as
// it was). Only the writer calls it: it owns c.ports.
func (c *conn) portsChange() ([]byte, error) {
	now, known := c.hub.opts.App.Ports()
	if !known {
		return nil, nil
	}
	msg := wire.PortsMessage{Type: wire.TypePortsChanged, Reset: !c.portsSent, More: now.More}
	switch {
	case msg.Reset:
		msg.Added, msg.Removed = now.Ports, []int{}
	case c.ports.Equal(now):
		return nil, nil
	default:
		msg.Added, msg.Removed = ports.Diff(c.ports.Ports, now.Ports)
	}
	b, err := wire.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode ports.changed: %w", err)
	}
	c.ports, c.portsSent = now, true
	return b, nil
}

// hello hands a client.hello to collab, which replies.
func (c *conn) hello(m *wire.ClientMessage) error {
	return c.hub.opts.App.Hello(c.who, collab.Hello{Name: m.Name, Color: m.Color, Key: m.Key, Viewing: m.Viewing})
}

// review hands one of the review.* messages of this connection to collab.
func (c *conn) review(m *wire.ClientMessage, s *sessions.Session) error {
	app, id := c.hub.opts.App, s.ID()
	switch m.Type {
	case wire.TypeReviewComment:
		cm := review.Comment{Path: *m.Path, Line: *m.Line, Text: *m.Text}
		if m.EndLine != nil {
			cm.EndLine = *m.EndLine
		}
		return app.Comment(c.who, id, cm)
	case wire.TypeReviewUncomment:
		return app.Uncomment(c.who, id, *m.CommentID)
	case wire.TypeReviewDiscard:
		app.Discard(id)
	case wire.TypeReviewSend:
		as := ""
		if m.As != nil {
			as = *m.As
		}
		return app.SendDraftAs(c.who, s, as)
	}
	return nil
}
