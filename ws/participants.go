package ws

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// typingAnnounce is how often one participant's typing in one session is
// announced: the first key after a pause at once, then at most once per
// interval, so a fast typist does not send every client a message per key.
const typingAnnounce = time.Second

// participant is who a connection says it is and what it does in each
// session. The hub's mu protects it; the connection's reader changes it
// through the hub.
type participant struct {
	// id is the connection's, given by the server.
	id string
	// author identifies the person across reconnects (and so owns their
	// queued prompts): derived from the key the browser keeps, or random
	// for a connection that sent none.
	author  string
	name    string
	color   string
	viewing string
	// in holds the sessions this connection is attached to. One with
	// none is idle, and may be closed to make room for a newcomer.
	in map[string]*presence
}

// presence is one participant in one session.
type presence struct {
	lastInput time.Time // zero: has not typed
	announced time.Time // when its typing was last announced
}

// palette gives a participant who chose no colour one of these, by author.
var palette = []string{"#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#d19a66", "#be5046"}

var (
	colorPattern = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	keyPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{16,128}$`)
)

func newParticipant() *participant {
	author := randomHex(8)
	return &participant{
		id:     "c-" + randomHex(4),
		author: author,
		name:   "guest-" + author[:4],
		color:  palette[int(author[0])%len(palette)],
		in:     make(map[string]*presence),
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}

// apply takes what a client.hello says. Fields it leaves out keep their
// value; a bad one refuses the whole hello.
func (p *participant) apply(m *wire.ClientMessage) error {
	name, color, key := p.name, p.color, ""
	if m.Name != nil {
		name = strings.TrimSpace(*m.Name)
		if err := sessions.CheckName(name); err != nil {
			return fmt.Errorf("%w (names follow the rules of session names)", err)
		}
		if name == "" {
			return fmt.Errorf("%w: name must not be empty", sessions.ErrInvalid)
		}
	}
	if m.Color != nil {
		color = *m.Color
		if !colorPattern.MatchString(color) {
			return fmt.Errorf("%w: color must be #rrggbb", sessions.ErrInvalid)
		}
	}
	if m.Key != nil {
		key = *m.Key
		if !keyPattern.MatchString(key) {
			return fmt.Errorf("%w: key must be 16 to 128 letters, digits, '-' or '_'", sessions.ErrInvalid)
		}
	}
	if m.Viewing != nil && len(*m.Viewing) > wire.MaxSessionIDLen {
		return fmt.Errorf("%w: viewing must be a session id", sessions.ErrInvalid)
	}
	p.name, p.color = name, color
	if key != "" {
		// A hash, so that what others see cannot be replayed as a key.
		sum := sha256.Sum256([]byte("agentmux-author\x00" + key))
		p.author = hex.EncodeToString(sum[:8])
	}
	if m.Viewing != nil {
		p.viewing = *m.Viewing
	}
	return nil
}

func (p *participant) welcome() wire.WelcomeMessage {
	return wire.WelcomeMessage{Type: wire.TypeClientWelcome, ID: p.id, AuthorID: p.author, Name: p.name, Color: p.color}
}

// authorOf returns what a queued prompt records of who sent it.
func (h *Hub) authorOf(c *conn) sessions.Author {
	h.mu.Lock()
	defer h.mu.Unlock()
	return sessions.Author{ID: c.who.author, Name: c.who.name}
}

// hello applies a client.hello and announces the change to the sessions
// it touches. The reply goes to the client first.
func (h *Hub) hello(c *conn, m *wire.ClientMessage) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := c.who
	if err := p.apply(m); err != nil {
		return err
	}
	c.sendJSON(p.welcome())
	// Name, colour and what it views show only where it is present.
	for sid := range p.in {
		h.announceParticipantsLocked(sid)
	}
	// And the newcomer learns who is where, for the tabs it has not
	// opened yet.
	for other := range h.conns {
		for sid := range other.who.in {
			if p.in[sid] == nil {
				c.sendState(wire.TypeSessionParticipants, sid)
			}
		}
	}
	return nil
}

// present notes that c attached to sid (on) or left it.
func (h *Hub) present(c *conn, sid string, on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, was := c.who.in[sid]
	if was == on {
		return
	}
	if on {
		c.who.in[sid] = &presence{}
	} else {
		delete(c.who.in, sid)
	}
	h.announceParticipantsLocked(sid)
}

// typed notes that c typed into sid.
func (h *Hub) typed(c *conn, sid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pr := c.who.in[sid]
	if pr == nil {
		// Typing without watching is allowed; it counts from the attach.
		return
	}
	now := time.Now()
	pr.lastInput = now
	if now.Sub(pr.announced) < typingAnnounce && h.lastTypist[sid] == c.who.id {
		return
	}
	pr.announced = now
	h.lastTypist[sid] = c.who.id
	h.announceParticipantsLocked(sid)
}

// leftLocked announces that c is gone from every session it was in. mu
// must be held.
func (h *Hub) leftLocked(c *conn) {
	for sid := range c.who.in {
		delete(c.who.in, sid)
		h.announceParticipantsLocked(sid)
	}
}

// forgetSessionLocked drops a destroyed session from every participant.
// mu must be held.
func (h *Hub) forgetSessionLocked(sid string) {
	for c := range h.conns {
		delete(c.who.in, sid)
	}
	delete(h.lastTypist, sid)
}

// announceParticipantsLocked tells every client who is in sid now: the
// list as it is when each client's writer sends it, so a burst of changes
// (a client sending hellos in a loop) costs others one message, not one
// each. mu must be held.
func (h *Hub) announceParticipantsLocked(sid string) {
	for c := range h.conns {
		c.sendState(wire.TypeSessionParticipants, sid)
	}
}

// renderState encodes a state message as it is now; a session that is
// gone has none.
func (h *Hub) renderState(k stateKey) ([]byte, error) {
	s, err := h.opts.Sessions.Get(k.sessionID)
	if err != nil {
		return nil, err
	}
	switch k.kind {
	case wire.TypeSessionParticipants:
		h.mu.Lock()
		m := h.participantsLocked(k.sessionID)
		h.mu.Unlock()
		return wire.Marshal(m)
	case wire.TypePromptList:
		return wire.Marshal(wire.PromptListView(k.sessionID, s.Queue()))
	case wire.TypeReviewDraft:
		return wire.Marshal(wire.ReviewDraftView(k.sessionID, h.reviews.Get(k.sessionID)))
	}
	return nil, fmt.Errorf("no state %q", k.kind)
}

// participantsLocked says who is in sid now. mu must be held.
func (h *Hub) participantsLocked(sid string) wire.ParticipantsMessage {
	list := []wire.Participant{}
	for c := range h.conns {
		p := c.who
		pr, ok := p.in[sid]
		if !ok {
			continue
		}
		v := wire.Participant{ID: p.id, Name: p.name, Color: p.color, Viewing: p.viewing == sid}
		if !pr.lastInput.IsZero() {
			v.LastInputAt = pr.lastInput.UnixMilli()
		}
		list = append(list, v)
	}
	slices.SortFunc(list, func(a, b wire.Participant) int { return strings.Compare(a.ID, b.ID) })
	return wire.ParticipantsMessage{Type: wire.TypeSessionParticipants, SessionID: sid, Participants: list}
}
