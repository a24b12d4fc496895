// Package hub is agentmux's hub mode (agentmux hub): one inbox over the
// sessions of many agentmux workspaces, each in a dev container or pod of
// its own. It learns its workspaces from a list and from DNS (a
// Kubernetes headless Service), keeps one WebSocket to each with that
// workspace's token, which never leaves the hub, and reconnects with
// backoff; a workspace it cannot reach is shown with why, the others go
// on. It answers waiting sessions through their workspace's API
// (POST /api/sessions/:id/answer) and never proxies a terminal: Open is
// a link to the workspace's own UI.
//
// The Hub owns one goroutine per workspace (workspace.run), started and
// stopped by Run as the sources change, and the page connections it
// serves; Run returns once all have ended.
package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/wire"
)

// DefaultEvery is how often the sources are read again: the peers file,
// and DNS.
const DefaultEvery = 10 * time.Second

// Options configure a Hub.
type Options struct {
	// Peers are the workspaces given one by one (--peer).
	Peers []Peer
	// PeersFile, when set, lists workspaces one a line (ParsePeers); it is
	// read again every Every, so workspaces added or removed there come
	// and go.
	PeersFile string
	// Discover are the DNS names whose records are workspaces.
	Discover []Discovery
	// DiscoverTokenFile holds the token of the workspaces DNS finds.
	DiscoverTokenFile string
	// DiscoverOpenURL, when set, is where a browser reaches a discovered
	// workspace's UI, {name} replaced by the workspace's name.
	DiscoverOpenURL string
	// Every is how often the sources are read again; DefaultEvery when 0.
	Every time.Duration
	// Resolver answers the DNS questions; net.DefaultResolver when nil.
	Resolver Resolver
	// Logger receives the hub's logs; nil discards them.
	Logger *slog.Logger
}

// Hub follows the workspaces and serves their inbox.
type Hub struct {
	opts   Options
	log    *slog.Logger
	client *http.Client
	// quit is closed when Run ends, for the page connections, which
	// pages counts; stopping (under mu) says no page may join it.
	quit  chan struct{}
	pages sync.WaitGroup

	// mu guards the fields below and every workspace's state.
	mu         sync.Mutex
	workspaces map[string]*workspace
	// changed is closed at the next change and replaced: what page
	// connections wait on.
	changed chan struct{}
	// encoded is the inbox as a page's message, made at most once per
	// change however many pages are open, and compressed at most once
	// for all of them (a prepared message keeps its frames).
	encoded *websocket.PreparedMessage
	// discovered is the last good answer of each DNS name, kept while
	// the name fails to resolve for a moment.
	discovered map[string][]Peer
	filePeers  []Peer
	// failing is each source's error while it fails, so that a source
	// failing at every read is logged when it starts and when it ends.
	failing  map[string]string
	stopping bool
}

// New returns a hub with opts; Run starts it.
func New(opts Options) (*Hub, error) {
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Resolver == nil {
		opts.Resolver = defaultResolver
	}
	for _, p := range opts.Peers {
		if _, err := url.Parse(p.URL); err != nil {
			return nil, fmt.Errorf("peer %s: %w", p.URL, err)
		}
	}
	return &Hub{
		opts:       opts,
		log:        opts.Logger,
		quit:       make(chan struct{}),
		workspaces: map[string]*workspace{},
		changed:    make(chan struct{}),
		discovered: map[string][]Peer{},
		failing:    map[string]string{},
		client: &http.Client{
			Timeout: dialTimeout,
			// Straight to each workspace, as its WebSocket goes: a proxy
			// for the outside world has no business between them.
			Transport: &http.Transport{
				DialContext:         (&net.Dialer{Timeout: dialTimeout}).DialContext,
				TLSHandshakeTimeout: dialTimeout,
				MaxIdleConnsPerHost: 2,
				IdleConnTimeout:     90 * time.Second,
			},
		},
	}, nil
}

// Run follows the workspaces until ctx ends: it reads the sources now and
// every Every, starts a connection to each new workspace and stops those
// of the workspaces gone. It returns once every connection, and every
// page connection, has ended.
func (h *Hub) Run(ctx context.Context) {
	defer func() {
		h.mu.Lock()
		h.stopping = true
		all := slices.Collect(maps.Values(h.workspaces))
		h.mu.Unlock()
		close(h.quit)
		for _, w := range all {
			w.cancel()
			<-w.done
		}
		h.pages.Wait()
	}()
	t := time.NewTicker(h.opts.Every)
	defer t.Stop()
	for {
		h.reconcile(ctx, h.wanted(ctx))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// wanted is every workspace the sources name now, by URL. A source that
// fails keeps what it last named: a DNS server slow for a moment must not
// empty the inbox.
func (h *Hub) wanted(ctx context.Context) map[string]Peer {
	want := map[string]Peer{}
	for _, p := range h.opts.Peers {
		want[p.URL] = p
	}
	if h.opts.PeersFile != "" {
		peers, err := ReadPeers(h.opts.PeersFile)
		if err == nil {
			h.filePeers = peers
		}
		h.note("peers file", err)
		for _, p := range h.filePeers {
			want[p.URL] = p
		}
	}
	for _, d := range h.opts.Discover {
		peers, err := d.resolve(ctx, h.opts.Resolver, h.opts.DiscoverTokenFile, h.opts.DiscoverOpenURL)
		if err != nil {
			peers = h.discovered[d.String()]
		} else {
			h.discovered[d.String()] = peers
		}
		h.note(d.String(), err)
		for _, p := range peers {
			if _, ok := want[p.URL]; !ok {
				want[p.URL] = p
			}
		}
	}
	return want
}

// note logs a source that begins to fail (its workspaces stay as they
// were), and one that works again; not every read of a source that goes
// on failing.
func (h *Hub) note(source string, err error) {
	was, failed := h.failing[source]
	switch {
	case err != nil && was != err.Error():
		h.failing[source] = err.Error()
		h.log.Warn("workspace source failing: its workspaces stay as they were", "source", source, "err", err)
	case err == nil && failed:
		delete(h.failing, source)
		h.log.Info("workspace source works again", "source", source)
	}
}

// reconcile starts a connection to each workspace wanted and not
// followed, and stops each followed and no longer wanted, or wanted with
// another token file or address for its UI.
func (h *Hub) reconcile(ctx context.Context, want map[string]Peer) {
	h.mu.Lock()
	var stop []*workspace
	for u, w := range h.workspaces {
		if p, ok := want[u]; !ok || p != w.peer {
			stop = append(stop, w)
			delete(h.workspaces, u)
		}
	}
	var start []*workspace
	var run []func()
	for u, p := range want {
		if _, ok := h.workspaces[u]; ok {
			continue
		}
		wctx, cancel := context.WithCancel(ctx)
		w := &workspace{peer: p, cancel: cancel, done: make(chan struct{}), since: time.Now(), err: "connecting", sessions: map[string]*remote{}}
		h.workspaces[u] = w
		start = append(start, w)
		run = append(run, func() { w.run(wctx, h) })
	}
	if len(stop)+len(start) > 0 {
		h.changedLocked()
	}
	h.mu.Unlock()
	for _, w := range stop {
		w.cancel()
		<-w.done
		h.log.Info("workspace no longer followed", "workspace", w.peer.URL)
	}
	for i, w := range start {
		h.log.Info("following workspace", "workspace", w.peer.URL)
		go run[i]()
	}
}

// reached records that w answered, with its name and sessions.
func (h *Hub) reached(w *workspace, name string, list []wire.Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w.name, w.reachable, w.err, w.since = name, true, "", time.Now()
	w.sessions = make(map[string]*remote, len(list))
	for _, s := range list {
		w.sessions[s.ID] = &remote{s: s}
	}
	h.changedLocked()
}

// active takes the sessions' last activity from a listing of w's; the
// rest of their state comes from its events, in order.
func (h *Hub) active(w *workspace, list []wire.Session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed := false
	for _, s := range list {
		if r := w.sessions[s.ID]; r != nil && s.LastActivityAt.After(r.s.LastActivityAt) {
			r.s.LastActivityAt = s.LastActivityAt
			changed = true
		}
	}
	if changed {
		h.changedLocked()
	}
}

// lost records that w cannot be reached, and why. Its sessions go from
// the inbox: what they show now is not known.
func (h *Hub) lost(w *workspace, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	msg := err.Error()
	if w.reachable || w.err != msg {
		w.since = time.Now()
	}
	w.reachable, w.err = false, msg
	clear(w.sessions)
	h.changedLocked()
}

// apply applies one of w's events.
func (h *Hub) apply(w *workspace, data []byte) {
	var head struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(data, &head) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := w.sessions[head.SessionID]
	switch head.Type {
	case wire.TypeSessionCreated:
		var m wire.CreatedMessage
		if json.Unmarshal(data, &m) != nil {
			return
		}
		w.sessions[m.Session.ID] = &remote{s: m.Session}
	case wire.TypeSessionStatus:
		var m wire.StatusMessage
		if r == nil || json.Unmarshal(data, &m) != nil {
			return
		}
		now := time.Now().UTC()
		if m.Status == "waiting" && r.s.Status != "waiting" {
			r.s.WaitingSince = &now
		} else if m.Status != "waiting" {
			r.s.WaitingSince = nil
		}
		r.s.Status, r.s.Reason, r.s.Running = m.Status, m.Reason, m.Running
		r.s.Permission, r.s.Limit = m.Permission, m.Limit
		r.s.LastActivityAt = now
	case wire.TypeSessionDestroyed:
		if r == nil {
			return
		}
		delete(w.sessions, head.SessionID)
	case wire.TypeSessionDiff:
		var m wire.DiffMessage
		if r == nil || json.Unmarshal(data, &m) != nil {
			return
		}
		if r.additions == m.Additions && r.deletions == m.Deletions {
			return // a new diff of the same size changes nothing shown
		}
		r.additions, r.deletions = m.Additions, m.Deletions
	case wire.TypeSessionBranch:
		var m wire.BranchMessage
		if r == nil || json.Unmarshal(data, &m) != nil || r.s.Worktree == nil || r.s.Worktree.Branch == m.Branch {
			return
		}
		wt := *r.s.Worktree
		wt.Branch = m.Branch
		r.s.Worktree = &wt
	default:
		return
	}
	h.changedLocked()
}

// changedLocked wakes whoever waits for a change. mu must be held.
func (h *Hub) changedLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
	h.encoded = nil
}

// Inbox returns every workspace and every session of those reached.
func (h *Hub) Inbox() Inbox {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inboxLocked()
}

func (h *Hub) inboxLocked() Inbox {
	in := Inbox{Workspaces: make([]WorkspaceView, 0, len(h.workspaces)), Sessions: []SessionView{}}
	for _, w := range h.workspaces {
		name := w.name
		if name == "" {
			name = hostOf(w.peer.URL)
		}
		open := w.peer.openURL(name)
		in.Workspaces = append(in.Workspaces, WorkspaceView{
			URL: w.peer.URL, Name: name, OpenURL: open, Reachable: w.reachable,
			Error: w.err, Since: w.since, Sessions: len(w.sessions),
		})
		for _, r := range w.sessions {
			v := SessionView{
				Workspace: w.peer.URL, WorkspaceName: name,
				ID: r.s.ID, Name: r.s.Name, Agent: r.s.Agent, Status: r.s.Status, Running: r.s.Running,
				NeedsInput: r.s.Status == "waiting", Permission: r.s.Permission, Reason: r.s.Reason,
				WaitingSince: r.s.WaitingSince, Limit: r.s.Limit,
				Additions: r.additions, Deletions: r.deletions, LastActivityAt: r.s.LastActivityAt,
				OpenURL: sessionURL(open, r.s.ID),
			}
			if r.s.Worktree != nil {
				v.Branch = r.s.Worktree.Branch
			}
			in.Sessions = append(in.Sessions, v)
		}
	}
	slices.SortFunc(in.Workspaces, func(a, b WorkspaceView) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		if a.URL < b.URL {
			return -1
		}
		return 1
	})
	sortSessions(in.Sessions)
	return in
}

// watch returns the inbox as a page's message, and what closes at the
// next change.
func (h *Hub) watch() (*websocket.PreparedMessage, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.encoded == nil {
		msg := struct {
			Type string `json:"type"`
			Inbox
		}{"inbox", h.inboxLocked()}
		b, err := json.Marshal(msg)
		if err != nil {
			panic(err) // plain values: cannot fail
		}
		if h.encoded, err = websocket.NewPreparedMessage(websocket.TextMessage, b); err != nil {
			panic(err) // a text message of JSON: cannot fail
		}
	}
	return h.encoded, h.changed
}

// sessionURL opens the workspace's UI at the session: open with
// ?session=<id>, or &session=<id> after a query it has.
func sessionURL(open, id string) string {
	sep := "?"
	if strings.Contains(open, "?") {
		sep = "&"
	}
	return open + sep + "session=" + url.QueryEscape(id)
}

// hostOf is a URL's host, what names a workspace not reached yet.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return raw
}
