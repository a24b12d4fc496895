package collab

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// typingAnnounce is how often one participant's typing in one session is
// announced: the first key after a pause at once, then at most once per
// interval, so a fast typist does not send every client a message per key.
const typingAnnounce = time.Second

// Participant is who a joined client says it is and what it does in each
// session. The App's mu protects its fields but for those noted; the
// client's transport changes them through the App.
type Participant struct {
	client Client
	// id is the client's, given by the server; it never changes, so it
	// is read without the lock.
	id string
	// author identifies the person across reconnects (and so owns their
	// queued prompts): derived from the key the browser keeps, or random
	// for a client that sent none.
	author  string
	name    string
	color   string
	viewing string
	// named and colored say the client chose its name or colour; until
	// it does, both follow from the author, so a browser that keeps its
	// key keeps them across reloads.
	named, colored bool
	// in holds the sessions this client is attached to.
	in map[string]*presence
	// attached is len(in), for IsAttached, which the transport asks
	// without the App's lock.
	attached atomic.Int32
	// view is the read-only link a viewer came through; nil for everyone
	// else. Set at join and never changed, so read without the lock.
	view *share.Link
	// sizes is the size this client last asked for, by session (size.go).
	// Owned by the goroutine that reads the client's requests: only
	// Resize and TypedSize use it.
	sizes map[string][2]int
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

func newParticipant(c Client) *Participant {
	p := &Participant{
		client: c,
		id:     "c-" + randomHex(4),
		in:     make(map[string]*presence),
		sizes:  make(map[string][2]int),
	}
	p.setAuthor(randomHex(8))
	return p
}

// setAuthor makes author the participant's, with the guest name and the
// colour it gives unless the client chose its own.
func (p *Participant) setAuthor(author string) {
	p.author = author
	if !p.named {
		p.name = "guest-" + author[:4]
	}
	if !p.colored {
		p.color = palette[int(author[0])%len(palette)]
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}

// ID returns the participant's id, the one others see.
func (p *Participant) ID() string { return p.id }

// IsAttached reports whether the participant is in any session. One that
// is not is idle, and its transport may close it to make room for a
// newcomer.
func (p *Participant) IsAttached() bool { return p.attached.Load() > 0 }

// enterLocked and leaveLocked keep in and attached together. mu must be
// held.
func (p *Participant) enterLocked(sid string) {
	p.in[sid] = &presence{}
	p.attached.Store(int32(len(p.in)))
}

func (p *Participant) leaveLocked(sid string) {
	delete(p.in, sid)
	p.attached.Store(int32(len(p.in)))
}

// Hello is what a client.hello says; a nil field is left out.
type Hello struct {
	Name, Color, Key, Viewing *string
}

// apply takes what a client.hello says. Fields it leaves out keep their
// value; a bad one refuses the whole hello.
func (p *Participant) apply(m Hello) error {
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
	p.named = p.named || m.Name != nil
	p.colored = p.colored || m.Color != nil
	if key != "" {
		// A hash, so that what others see cannot be replayed as a key.
		sum := sha256.Sum256([]byte("agentmux-author\x00" + key))
		p.setAuthor(hex.EncodeToString(sum[:8]))
	}
	if m.Viewing != nil {
		p.viewing = *m.Viewing
	}
	return nil
}

func (p *Participant) welcome() wire.WelcomeMessage {
	return wire.WelcomeMessage{Type: wire.TypeClientWelcome, ID: p.id, AuthorID: p.author, Name: p.name, Color: p.color}
}

// Author returns what a queued prompt or a review comment records of who
// sent it.
func (a *App) Author(p *Participant) sessions.Author {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sessions.Author{ID: p.author, Name: p.name}
}

// Hello applies a client.hello and announces the change to the sessions
// it touches. The reply (client.welcome) goes to the client first.
func (a *App) Hello(p *Participant, m Hello) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := p.apply(m); err != nil {
		return err
	}
	if b, err := wire.Marshal(p.welcome()); err != nil {
		a.log.Error("encode message", "err", err)
	} else {
		p.client.Send(b)
	}
	// Name, colour and what it views show only where it is present.
	for sid := range p.in {
		a.announceParticipantsLocked(sid)
	}
	// And the newcomer learns who is where, for the tabs it has not
	// opened yet.
	for other := range a.clients {
		for sid := range other.in {
			if p.in[sid] == nil {
				p.client.MarkState(wire.TypeSessionParticipants, sid)
			}
		}
	}
	for sid := range a.viewers {
		if p.in[sid] == nil {
			p.client.MarkState(wire.TypeSessionParticipants, sid)
		}
	}
	return nil
}

// Present notes that p attached to sid (on) or left it.
func (a *App) Present(p *Participant, sid string, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, was := p.in[sid]
	if was == on {
		return
	}
	if on {
		p.enterLocked(sid)
	} else {
		p.leaveLocked(sid)
	}
	a.announceParticipantsLocked(sid)
}

// Typed notes that p typed into sid.
func (a *App) Typed(p *Participant, sid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	pr := p.in[sid]
	if pr == nil {
		// Typing without watching is allowed; it counts from the attach.
		return
	}
	now := time.Now()
	pr.lastInput = now
	if now.Sub(pr.announced) < typingAnnounce && a.lastTypist[sid] == p.id {
		return
	}
	pr.announced = now
	a.lastTypist[sid] = p.id
	a.announceParticipantsLocked(sid)
}

// leftLocked announces that p is gone from every session it was in. mu
// must be held.
func (a *App) leftLocked(p *Participant) {
	for sid := range p.in {
		p.leaveLocked(sid)
		a.announceParticipantsLocked(sid)
	}
}

// forgetSessionLocked drops a destroyed session from every participant.
// mu must be held.
func (a *App) forgetSessionLocked(sid string) {
	for p := range a.clients {
		p.leaveLocked(sid)
	}
	for p := range a.viewers[sid] {
		p.leaveLocked(sid)
	}
	delete(a.lastTypist, sid)
}

// announceParticipantsLocked tells every client who is in sid now: the
// list as it is when each client is sent it, so a burst of changes (a
// client sending hellos in a loop) costs others one message, not one
// each. mu must be held.
func (a *App) announceParticipantsLocked(sid string) {
	a.markAllLocked(wire.TypeSessionParticipants, sid)
}

// participantsLocked says who is in sid now. mu must be held.
func (a *App) participantsLocked(sid string) wire.ParticipantsMessage {
	list := []wire.Participant{}
	for p := range a.clients {
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
	for p := range a.viewers[sid] {
		if _, ok := p.in[sid]; ok {
			list = append(list, wire.Participant{ID: p.id, Name: p.name, Color: p.color, Viewing: true, Viewer: true})
		}
	}
	slices.SortFunc(list, func(a, b wire.Participant) int { return strings.Compare(a.ID, b.ID) })
	return wire.ParticipantsMessage{Type: wire.TypeSessionParticipants, SessionID: sid, Participants: list}
}

// Attached reports whether a client (not a read-only link's viewer) is
// attached to session sid: what is shown only to the people at the
// workspace, a pull request's state, is looked after only then.
func (a *App) Attached(sid string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for p := range a.clients {
		if _, ok := p.in[sid]; ok {
			return true
		}
	}
	return false
}
