// Viewers: the clients that came through a read-only link (package
// share). Each watches one session and is sent only what a link grants:
// that session's status, size and end, besides the output its transport
// streams. They appear in the session's participants as viewers.

package collab

import (
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// viewerColor is every viewer's colour: a viewer names no one.
const viewerColor = "#8b949e"

// JoinViewer subscribes a client that came through link: it watches
// link's session only, and is told nothing else that happens.
func (a *App) JoinViewer(c Client, link share.Link) *Participant {
	p := newParticipant(c)
	p.view = &link
	p.name, p.color = "viewer", viewerColor
	a.mu.Lock()
	defer a.mu.Unlock()
	set := a.viewers[link.SessionID]
	if set == nil {
		set = make(map[*Participant]struct{})
		a.viewers[link.SessionID] = set
	}
	set[p] = struct{}{}
	return p
}

// leaveViewerLocked unsubscribes viewer p. mu must be held.
func (a *App) leaveViewerLocked(p *Participant) {
	sid := p.view.SessionID
	delete(a.viewers[sid], p)
	if len(a.viewers[sid]) == 0 {
		delete(a.viewers, sid)
	}
	a.leftLocked(p)
}

// Viewers counts the clients watching through the link shareID.
func (a *App) Viewers(sessionID, shareID string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for p := range a.viewers[sessionID] {
		if p.view.ID == shareID {
			n++
		}
	}
	return n
}

// tellViewers sends a session's viewers what they are shown of its
// event: its status (not what it asks, nor its permission or limit:
// those are the people's at the workspace), and its end.
func (a *App) tellViewers(ev sessions.Event) {
	var msg any
	switch ev.Kind {
	case sessions.EventStatus:
		msg = wire.StatusMessage{Type: wire.TypeSessionStatus, SessionID: ev.Session.ID, Status: string(ev.Session.Status), Running: ev.Session.Running}
	case sessions.EventDestroyed:
		msg = wire.DestroyedMessage{Type: wire.TypeSessionDestroyed, SessionID: ev.Session.ID}
	default:
		return
	}
	a.sendViewers(ev.Session.ID, msg)
}

// sendViewers sends msg to sessionID's viewers.
func (a *App) sendViewers(sessionID string, msg any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.viewers[sessionID]) == 0 {
		return
	}
	b, err := wire.Marshal(msg)
	if err != nil {
		a.log.Error("encode message for viewers", "session", sessionID, "err", err)
		return
	}
	for p := range a.viewers[sessionID] {
		p.client.Send(b)
	}
}
