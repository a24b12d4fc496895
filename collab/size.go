package collab

import (
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// The size rule, as in tmux: a session's terminal has one size, that of
// the participant that typed into it last or took the size on purpose
// (terminal.resize with take). Every other participant's terminal.resize
// is remembered (Participant.sizes), not applied, so a page that only
// watches, on a phone or in a narrow window, never reflows the program
// for the person typing; it draws the session at the session's size,
// which reaches it in session.attached and, on every change, in
// session.resized.

// sizer is who sets a session's size, and the size it last set.
type sizer struct {
	p          *Participant
	cols, rows int
}

// Resize handles a terminal.resize from p: remembered, and applied when
// p holds the session's size or takes it. Only the goroutine that reads
// p's requests calls it.
func (a *App) Resize(p *Participant, s *sessions.Session, cols, rows int, take bool) error {
	p.sizes[s.ID()] = [2]int{cols, rows}
	a.sizeMu.Lock()
	defer a.sizeMu.Unlock()
	if !take && a.sizers[s.ID()].p != p {
		return nil
	}
	return a.applySizeLocked(p, s, cols, rows)
}

// TypedSize gives the session p's remembered size as p types data into
// it: whoever types takes the size. A participant that never said its
// size leaves it as it is, and so does input that only answers the
// terminal's own queries (every watching xterm answers them): that is not
// typing. Only the goroutine that reads p's requests calls it.
func (a *App) TypedSize(p *Participant, s *sessions.Session, data []byte) error {
	size, ok := p.sizes[s.ID()]
	if !ok || sessions.IsTerminalReport(data) {
		return nil
	}
	a.sizeMu.Lock()
	defer a.sizeMu.Unlock()
	return a.applySizeLocked(p, s, size[0], size[1])
}

// applySizeLocked makes p the session's sizer at cols x rows and, when
// either changed, resizes it and tells every client. sizeMu must be held:
// it keeps the announcements in the order of the resizes.
func (a *App) applySizeLocked(p *Participant, s *sessions.Session, cols, rows int) error {
	id := s.ID()
	want := sizer{p, cols, rows}
	if a.sizers[id] == want {
		return nil // a keystroke from the sizer, as most are
	}
	if err := s.Resize(cols, rows); err != nil {
		return err
	}
	a.sizers[id] = want
	msg := wire.ResizedMessage{Type: wire.TypeSessionResized, SessionID: id, Cols: cols, Rows: rows, By: p.id}
	a.broadcast(msg)
	// A viewer draws the session at its size, as every watcher does.
	a.sendViewers(id, msg)
	return nil
}

// DropSizes forgets p as a sizer once it is gone: the sessions keep their
// size, and whoever types next takes it. Its transport calls it as p's
// requests end.
func (a *App) DropSizes(p *Participant) {
	a.sizeMu.Lock()
	defer a.sizeMu.Unlock()
	for id, sz := range a.sizers {
		if sz.p == p {
			delete(a.sizers, id)
		}
	}
}
