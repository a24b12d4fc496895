// Package collab is agentmux's application layer: the state the people
// at a workspace share that is neither a transport's nor a domain
// package's, and the announcements of what happens to it.
//
// It owns who is connected and where (participants, the last typist),
// which viewer's size a session's terminal has (size.go), the sessions'
// review drafts and their send (review.go), and what a client that
// connects is told at once: each session's last diff, the memory level,
// whether saving fails, the ports a browser is shown. It turns the events
// of the sessions and the watchers (the On* methods) into the protocol's
// messages.
//
// It does not own connections, sockets or their queues: a transport
// (package ws) joins each of its clients (Join) as a Client, which takes
// messages without ever blocking, and collab sends every change once to
// the clients joined when it happens. It does not own sessions, diffs,
// workflows or ports either; it is told of them. The HTTP API calls it
// for what it shares with the WebSocket (a review comment's send).
package collab

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// Client is one connected client as collab sees it: where its messages
// go. None of its methods may block: a client too slow for what it is
// sent is the transport's to drop, not collab's to wait for.
type Client interface {
	// Send queues an encoded message the client must get; a client that
	// cannot take it is dropped.
	Send(msg []byte)
	// SendInformational queues an encoded message the client can do
	// without; a client whose queue is filling up misses it.
	SendInformational(msg []byte)
	// MarkState marks a state message (kind, and the session it is of) as
	// changed: the client is sent it once, rendered by RenderState when
	// its turn comes, however often it changes meanwhile.
	MarkState(kind, sessionID string)
}

// Options configure an App. Zero values are documented per field.
type Options struct {
	// Sessions finds sessions. Required.
	Sessions *sessions.Manager
	// Logger receives the logs; nil means slog.Default().
	Logger *slog.Logger
}

// App holds the shared state and sends its changes to the joined clients.
//
// Lock order: sizeMu, then a session's locks, then mu. The review drafts
// lock themselves, and a Client's methods take only the client's own
// leaf locks, so mu may be held while sending.
type App struct {
	sessions *sessions.Manager
	log      *slog.Logger
	// reviews are the sessions' review drafts; they lock themselves.
	reviews *review.Drafts
	// portsWanted asks the ports poller for a listing (PortsWanted).
	portsWanted chan struct{}

	// sizeMu protects sizers: by session, the participant whose size the
	// session has (see size.go). Taken before a session's lock and mu,
	// never while either is held; so a destroyed session's entry is not
	// dropped by OnEvent, which runs under the session's lock, but when
	// its sizer leaves.
	sizeMu sync.Mutex
	sizers map[string]sizer

	// mu protects the fields below and the participants' (participant.go).
	// It is taken inside a session's event (OnEvent runs under the
	// session's locks) and never blocks.
	mu      sync.Mutex
	clients map[*Participant]struct{}
	// viewers are the clients that came through a read-only link, by the
	// session they watch. They are kept apart from clients so that
	// nothing announced reaches them unless it is sent them on purpose
	// (viewers.go): a message added later is not shown to a link by
	// mistake.
	viewers map[string]map[*Participant]struct{}
	memory  memory.Status // the last level announced
	// saving is the last save status announced.
	saving sessions.SaveStatus
	// shifted is when each document was last suggested (layout.shift).
	shifted map[string]time.Time
	// diffs is each session's last session.diff, for clients that join,
	// and its counts (DiffCounts).
	diffs map[string]sessionDiff
	// overlaps is the last overlaps.changed, and its list (Overlaps).
	overlaps    []wire.Overlap
	overlapsMsg []byte
	// ports is what a browser is shown of the listening ports, when
	// portsKnown (OnPorts).
	ports      ports.Listing
	portsKnown bool
	// lastTypist is, by session, the participant who typed there last.
	lastTypist map[string]string
	// recent are the last file events, for clients that join.
	recent recentFiles
	// sent are, by session, the review comments sent to its agent
	// (review.go).
	sent map[string][]review.Comment
	// pulls are, by session, its pull request's last
	// session.pullRequest, encoded, for clients that join.
	pulls map[string][]byte
}

// New returns an App with no clients.
func New(opts Options) (*App, error) {
	if opts.Sessions == nil {
		return nil, errors.New("collab: Options.Sessions is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &App{
		sessions:    opts.Sessions,
		log:         opts.Logger,
		reviews:     review.NewDrafts(),
		portsWanted: make(chan struct{}, 1),
		sizers:      make(map[string]sizer),
		clients:     make(map[*Participant]struct{}),
		viewers:     make(map[string]map[*Participant]struct{}),
		sent:        make(map[string][]review.Comment),
		pulls:       make(map[string][]byte),
		shifted:     make(map[string]time.Time),
		diffs:       make(map[string]sessionDiff),
		lastTypist:  make(map[string]string),
	}, nil
}

// Join subscribes a client that connected, as a participant of its own,
// and sends it the current state: the recent file events if any, the memory
// level when it is not ok, that saving fails when it does, each session's
// last diff, the overlaps when there are any, and the ports listing (or asks the poller for one). Every
// change after Join reaches it; Leave ends that.
func (a *App) Join(c Client) *Participant {
	p := newParticipant(c)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clients[p] = struct{}{}
	// Under mu, as OnSessionFile keeps and sends each event: every event
	// is in this list or reaches the client after it, never both.
	if len(a.recent.files) > 0 {
		if b, err := wire.Marshal(a.recent.message()); err == nil {
			c.Send(b)
		} else {
			a.log.Error("encode file.recent", "err", err)
		}
	}
	if lvl := a.memory.Level; lvl != "" && lvl != memory.OK {
		if b, err := wire.Marshal(wire.ResourceWarningView(a.memory)); err == nil {
			c.Send(b)
		}
	}
	if a.saving.Failing {
		if b, err := wire.Marshal(wire.SaveStatusView(a.saving)); err == nil {
			c.Send(b)
		}
	}
	for _, d := range a.diffs {
		c.SendInformational(d.msg)
	}
	for _, b := range a.pulls {
		c.Send(b)
	}
	if len(a.overlaps) > 0 {
		c.Send(a.overlapsMsg)
	}
	if a.portsKnown {
		c.MarkState(wire.TypePortsChanged, "")
	} else {
		select {
		case a.portsWanted <- struct{}{}:
		default: // already asked
		}
	}
	return p
}

// Leave unsubscribes a client that is gone, and tells the sessions it was
// in.
func (a *App) Leave(p *Participant) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.view != nil {
		a.leaveViewerLocked(p)
		return
	}
	delete(a.clients, p)
	if len(a.clients) == 0 {
		// The poller stops looking: a listing kept would be stale by the
		// time someone comes.
		a.ports, a.portsKnown = ports.Listing{}, false
	}
	a.leftLocked(p)
}

// OnEvent tells every client about a session event, and forgets what it
// kept of a destroyed session. It never blocks.
func (a *App) OnEvent(ev sessions.Event) {
	if ev.Kind == sessions.EventUpdated || ev.Kind == sessions.EventTurnEnded {
		return // nothing clients show
	}
	if ev.Kind == sessions.EventDestroyed {
		a.mu.Lock()
		delete(a.diffs, ev.Session.ID)
		delete(a.sent, ev.Session.ID)
		delete(a.pulls, ev.Session.ID)
		a.forgetSessionLocked(ev.Session.ID)
		a.mu.Unlock()
		a.reviews.Forget(ev.Session.ID)
	}
	a.broadcast(wire.EventMessage(ev))
	a.tellViewers(ev)
}

// broadcast sends msg to every client.
func (a *App) broadcast(msg any) { a.broadcastWith(msg, Client.Send) }

// broadcastInformational sends a message every client can do without; a
// client whose queue is filling up misses it rather than being dropped.
func (a *App) broadcastInformational(msg any) { a.broadcastWith(msg, Client.SendInformational) }

func (a *App) broadcastWith(msg any, send func(Client, []byte)) {
	b, err := wire.Marshal(msg)
	if err != nil {
		a.log.Error("encode broadcast", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sendAllLocked(b, send)
}

// sendAllLocked sends b to every client. mu must be held.
func (a *App) sendAllLocked(b []byte, send func(Client, []byte)) {
	for p := range a.clients {
		send(p.client, b)
	}
}

// markAllLocked marks a state as changed for every client. mu must be
// held.
func (a *App) markAllLocked(kind, sessionID string) {
	for p := range a.clients {
		p.client.MarkState(kind, sessionID)
	}
}

// RenderState encodes the state message kind of a session as it is now;
// a session that is gone has none. The transport calls it for what it
// was marked (Client.MarkState), but for ports.changed, which it renders
// against what each client was sent last (Ports).
func (a *App) RenderState(kind, sessionID string) ([]byte, error) {
	s, err := a.sessions.Get(sessionID)
	if err != nil {
		return nil, err
	}
	switch kind {
	case wire.TypeSessionParticipants:
		a.mu.Lock()
		m := a.participantsLocked(sessionID)
		a.mu.Unlock()
		return wire.Marshal(m)
	case wire.TypePromptList:
		return wire.Marshal(wire.PromptListView(sessionID, s.Queue()))
	case wire.TypeReviewDraft:
		return wire.Marshal(wire.ReviewDraftView(sessionID, a.reviews.Get(sessionID)))
	}
	return nil, fmt.Errorf("no state %q", kind)
}
