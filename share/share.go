// Package share keeps the read-only links to sessions: a link shows one
// session's terminal to whoever holds it, and grants nothing else. It owns
// the links' secrets (only their SHA-256 is kept, in memory and on disk),
// their bounds, their expiry and their revocation; who watches through a
// link, and what a watcher may send, are the transports' (ws) and the
// application layer's (collab).
//
// A link ends in one of three ways, each told to the subscribers (Ended),
// which close the link's viewers at once: it is revoked, it expires (a
// timer on the clock for the earliest expiry, so nobody polls), or its
// session is deleted.
package share

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/agentmux/agentmux/internal/observe"
)

// Bounds of a link's life and of the links kept.
const (
	// DefaultExpiry is how long a link lives when its maker does not say.
	DefaultExpiry = 24 * time.Hour
	// MinExpiry and MaxExpiry bound the life a maker may ask for.
	MinExpiry = time.Minute
	MaxExpiry = 30 * 24 * time.Hour
	// MaxPerSession and MaxLinks bound the live links of one session and
	// of the workspace: each is a credential someone must keep track of.
	MaxPerSession = 8
	MaxLinks      = 64
)

// Why a request about links fails.
var (
	// ErrNotFound: no live link of that id on that session.
	ErrNotFound = errors.New("no such share link")
	// ErrTooMany: the session, or the workspace, has its most live links.
	ErrTooMany = errors.New("too many share links")
	// ErrInvalid: a request the rules refuse (an expiry out of bounds).
	ErrInvalid = errors.New("invalid share link request")
	// ErrDenied: a secret that opens no link: unknown, revoked or expired.
	// Which of them is not said.
	ErrDenied = errors.New("this read-only link is not valid: it expired, was revoked, or was mistyped")
	// ErrReadOnly: a viewer asked for something a link does not grant.
	ErrReadOnly = errors.New("read-only link")
)

// Why a link's viewers are closed, as they are told.
const (
	ReasonRevoked = "this read-only link was revoked"
	ReasonExpired = "this read-only link expired"
	ReasonDeleted = "the session was deleted"
)

// Link is one read-only link, as its owner and the API see it; its
// secret is not part of it.
type Link struct {
	ID        string    `json:"id"`
	SessionID string    `json:"sessionId"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Scrollback says whether a viewer is shown what the session printed
	// before its current screen; without it, only the screen on arrival.
	Scrollback bool `json:"scrollback"`
	// CreatedBy is the name of who made it, for the list of links.
	CreatedBy string `json:"createdBy,omitempty"`
}

// Ended is a link that ended, and why (one of the Reason constants).
type Ended struct {
	Link   Link
	Reason string
}

// Store keeps the links across restarts (sessions/store's Store).
type Store interface {
	PutShare(id string, record []byte) error
	DeleteShares(ids ...string) error
	Shares() (map[string][]byte, error)
}

// Options configure Links. Zero values are documented per field.
type Options struct {
	// Store keeps the links; nil keeps them in memory only.
	Store Store
	// Exists reports whether a session exists: the links of one that
	// does not are dropped as they are loaded. Nil keeps them all.
	Exists func(sessionID string) bool
	// Clock tells the time and times expiry; nil is the real clock.
	Clock clockwork.Clock
	// Logger receives what goes wrong; nil discards it.
	Logger *slog.Logger
}

// Links holds the live links. Its methods are safe for concurrent use.
type Links struct {
	store Store
	clock clockwork.Clock
	log   *slog.Logger
	ended observe.List[Ended]

	// mu protects the fields below. Subscribers are told with it not
	// held, so they may call back.
	mu sync.Mutex
	// links by id, and their ids by the hex SHA-256 of their secrets.
	links  map[string]*record
	byHash map[string]string
	// timer fires at the earliest expiry; nil when no link lives.
	timer  clockwork.Timer
	closed bool
}

// record is a link as it is kept: with its secret's hash.
type record struct {
	Link
	Hash string `json:"hash"`
}

// New returns the links opts.Store keeps, but those that expired or whose
// session is gone, which it deletes.
func New(opts Options) (*Links, error) {
	l := &Links{
		store:  opts.Store,
		clock:  cmp.Or[clockwork.Clock](opts.Clock, clockwork.NewRealClock()),
		log:    cmp.Or(opts.Logger, slog.New(slog.NewTextHandler(io.Discard, nil))),
		links:  make(map[string]*record),
		byHash: make(map[string]string),
	}
	if l.store == nil {
		return l, nil
	}
	kept, err := l.store.Shares()
	if err != nil {
		return nil, fmt.Errorf("read share links: %w", err)
	}
	now := l.clock.Now()
	var gone []string
	for id, b := range kept {
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.ID != id || r.Hash == "" {
			l.log.Warn("dropping a share link that cannot be read", "share", id, "err", err)
			gone = append(gone, id)
			continue
		}
		if !now.Before(r.ExpiresAt) || opts.Exists != nil && !opts.Exists(r.SessionID) {
			gone = append(gone, id)
			continue
		}
		l.links[id], l.byHash[r.Hash] = &r, id
	}
	if len(gone) > 0 {
		if err := l.store.DeleteShares(gone...); err != nil {
			return nil, fmt.Errorf("drop ended share links: %w", err)
		}
	}
	l.mu.Lock()
	l.armLocked()
	l.mu.Unlock()
	return l, nil
}

// Subscribe has fn told of every link that ends, from the goroutine that
// ended it; fn must not block.
func (l *Links) Subscribe(fn func(Ended)) (cancel func()) { return l.ended.Subscribe(fn) }

// Create makes a link to sessionID that lives for expiresIn (0 means
// DefaultExpiry), and returns it with its secret, which is never given
// again: only its hash is kept.
func (l *Links) Create(sessionID string, expiresIn time.Duration, scrollback bool, by string) (Link, string, error) {
	if expiresIn == 0 {
		expiresIn = DefaultExpiry
	}
	if expiresIn < MinExpiry || expiresIn > MaxExpiry {
		return Link{}, "", fmt.Errorf("%w: a link lives from %v to %v, not %v", ErrInvalid, MinExpiry, MaxExpiry, expiresIn)
	}
	secret := newSecret()
	now := l.clock.Now().UTC()
	r := &record{
		Link: Link{ID: "sh-" + randomHex(6), SessionID: sessionID, CreatedAt: now, ExpiresAt: now.Add(expiresIn),
			Scrollback: scrollback, CreatedBy: by},
		Hash: hash(secret),
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return Link{}, "", fmt.Errorf("%w: the server is stopping", ErrInvalid)
	}
	if len(l.links) >= MaxLinks {
		return Link{}, "", fmt.Errorf("%w: the workspace has %d live links, the most it keeps; revoke one first", ErrTooMany, MaxLinks)
	}
	if n := l.countLocked(sessionID); n >= MaxPerSession {
		return Link{}, "", fmt.Errorf("%w: session %s has %d live links, the most one session may; revoke one first", ErrTooMany, sessionID, n)
	}
	if l.store != nil {
		b, err := json.Marshal(r)
		if err != nil {
			return Link{}, "", fmt.Errorf("encode share link: %w", err)
		}
		// Under mu, so a revoke cannot delete the record before it is
		// written and leave it to come back after a restart.
		if err := l.store.PutShare(r.ID, b); err != nil {
			return Link{}, "", fmt.Errorf("keep share link: %w", err)
		}
	}
	l.links[r.ID], l.byHash[r.Hash] = r, r.ID
	l.armLocked()
	return r.Link, secret, nil
}

func (l *Links) countLocked(sessionID string) int {
	n := 0
	for _, r := range l.links {
		if r.SessionID == sessionID {
			n++
		}
	}
	return n
}

// Check returns the live link secret opens, or ErrDenied.
func (l *Links) Check(secret string) (Link, error) {
	if secret == "" {
		return Link{}, ErrDenied
	}
	h := hash(secret)
	l.mu.Lock()
	defer l.mu.Unlock()
	// The map is keyed by the secret's hash: a lookup's timing can tell
	// at most about hashes, and learning a hash gives no secret.
	r, ok := l.links[l.byHash[h]]
	if !ok || !l.clock.Now().Before(r.ExpiresAt) {
		return Link{}, ErrDenied
	}
	return r.Link, nil
}

// Get returns the live link id of sessionID.
func (l *Links) Get(sessionID, id string) (Link, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.links[id]
	if !ok || r.SessionID != sessionID || !l.clock.Now().Before(r.ExpiresAt) {
		return Link{}, fmt.Errorf("%w: session %s has no live link %s", ErrNotFound, sessionID, id)
	}
	return r.Link, nil
}

// List returns sessionID's live links, the oldest first.
func (l *Links) List(sessionID string) []Link {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	list := []Link{}
	for _, r := range l.links {
		if r.SessionID == sessionID && now.Before(r.ExpiresAt) {
			list = append(list, r.Link)
		}
	}
	slices.SortFunc(list, func(a, b Link) int { return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) })
	return list
}

// Revoke ends link id of sessionID now; its viewers are closed.
func (l *Links) Revoke(sessionID, id string) error {
	l.mu.Lock()
	r, ok := l.links[id]
	if !ok || r.SessionID != sessionID {
		l.mu.Unlock()
		return fmt.Errorf("%w: session %s has no live link %s", ErrNotFound, sessionID, id)
	}
	err := l.dropLocked(r)
	l.mu.Unlock()
	if err != nil {
		return err
	}
	l.ended.Notify(Ended{Link: r.Link, Reason: ReasonRevoked})
	return nil
}

// ForgetSession ends every link of sessionID, a session that was deleted.
func (l *Links) ForgetSession(sessionID string) {
	l.endWhere(func(r *record) bool { return r.SessionID == sessionID }, ReasonDeleted)
}

// expire ends the links whose time is up; the timer calls it.
func (l *Links) expire() {
	now := l.clock.Now()
	l.endWhere(func(r *record) bool { return !now.Before(r.ExpiresAt) }, ReasonExpired)
}

// endWhere ends the links match picks, for reason.
func (l *Links) endWhere(match func(*record) bool, reason string) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	var ended []Link
	for _, r := range l.links {
		if !match(r) {
			continue
		}
		if err := l.dropLocked(r); err != nil {
			// Dropped here all the same: the link no longer opens anything,
			// and its viewers go. Only a restart could bring it back, and
			// then New drops it once it expired.
			l.log.Error("forget share link", "share", r.ID, "session", r.SessionID, "err", err)
		}
		ended = append(ended, r.Link)
	}
	l.armLocked()
	l.mu.Unlock()
	for _, e := range ended {
		l.ended.Notify(Ended{Link: e, Reason: reason})
	}
}

// dropLocked forgets r, on disk first. mu must be held.
func (l *Links) dropLocked(r *record) error {
	var err error
	if l.store != nil {
		if err = l.store.DeleteShares(r.ID); err != nil {
			err = fmt.Errorf("forget share link %s: %w", r.ID, err)
		}
	}
	delete(l.links, r.ID)
	delete(l.byHash, r.Hash)
	return err
}

// armLocked sets the timer for the earliest expiry. mu must be held.
func (l *Links) armLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if l.closed || len(l.links) == 0 {
		return
	}
	var first time.Time
	for _, r := range l.links {
		if first.IsZero() || r.ExpiresAt.Before(first) {
			first = r.ExpiresAt
		}
	}
	l.timer = l.clock.AfterFunc(max(first.Sub(l.clock.Now()), 0), l.expire)
}

// Close stops the expiry timer; the links stay on disk for the next start.
func (l *Links) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// newSecret returns 256 random bits, URL-safe: what a link's holder shows.
func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return base64.RawURLEncoding.EncodeToString(b)
}

func hash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}
