package ws

import (
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// The size rule, as in tmux: a session's terminal has one size, that of
// the connection that typed into it last or took the size on purpose
// (terminal.resize with take). Every other connection's terminal.resize is
// remembered (conn.sizes), not applied, so a page that only watches, on a
// phone or in a narrow window, never reflows the program for the person
// typing; it draws the session at the session's size, which reaches it in
// session.attached and, on every change, in session.resized.

// sizer is who sets a session's size, and the size it last set.
type sizer struct {
	c          *conn
	cols, rows int
}

// resize handles a terminal.resize from c's reader: remembered, and
// applied when c holds the session's size or takes it.
func (h *Hub) resize(c *conn, s *sessions.Session, cols, rows int, take bool) error {
	c.sizes[s.ID()] = [2]int{cols, rows}
	h.sizeMu.Lock()
	defer h.sizeMu.Unlock()
	if !take && h.sizers[s.ID()].c != c {
		return nil
	}
	return h.applySizeLocked(c, s, cols, rows)
}

// typedSize gives the session c's remembered size as c types into it:
// whoever types takes the size. A connection that never said its size
// leaves it as it is, and so does input that only answers the terminal's
// own queries (every watching xterm answers them): that is not typing.
func (h *Hub) typedSize(c *conn, s *sessions.Session, data []byte) error {
	size, ok := c.sizes[s.ID()]
	if !ok || sessions.IsTerminalReport(data) {
		return nil
	}
	h.sizeMu.Lock()
	defer h.sizeMu.Unlock()
	return h.applySizeLocked(c, s, size[0], size[1])
}

// applySizeLocked makes c the session's sizer at cols x rows and, when
// either changed, resizes it and tells every connection. sizeMu must be
// held: it keeps the announcements in the order of the resizes.
func (h *Hub) applySizeLocked(c *conn, s *sessions.Session, cols, rows int) error {
	id := s.ID()
	want := sizer{c, cols, rows}
	if h.sizers[id] == want {
		return nil // a keystroke from the sizer, as most are
	}
	if err := s.Resize(cols, rows); err != nil {
		return err
	}
	h.sizers[id] = want
	// who.id never changes, so it is read without the hub's mu.
	h.broadcast(wire.ResizedMessage{Type: wire.TypeSessionResized, SessionID: id, Cols: cols, Rows: rows, By: c.who.id})
	return nil
}

// dropSizes forgets c as a sizer once it is gone: the sessions keep their
// size, and whoever types next takes it. Called by c's reader as it ends.
func (h *Hub) dropSizes(c *conn) {
	h.sizeMu.Lock()
	defer h.sizeMu.Unlock()
	for id, sz := range h.sizers {
		if sz.c == c {
			delete(h.sizers, id)
		}
	}
}
