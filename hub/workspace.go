package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/regfile"
	"github.com/agentmux/agentmux/wire"
)

// Peer is a workspace as the hub's sources name it.
type Peer struct {
	// URL is the workspace's address, scheme, host and port, and the
	// path it is served under if any, without a trailing slash.
	URL string
	// TokenFile holds the workspace's token on its first line, read at
	// each connection, so a rotated Secret is picked up; empty for a
	// workspace without a token.
	TokenFile string
	// OpenURL is where a browser reaches the workspace's own UI; empty
	// means URL.
	OpenURL string
}

// Timings of a workspace's connection.
const (
	// dialTimeout bounds a connection and its WebSocket handshake, and
	// each API request: a workspace that does not answer within it is
	// marked "timeout" and tried again later, the others unaffected.
	dialTimeout = 5 * time.Second
	// readWait is how long a connection may go without a message or a
	// ping: agentmux pings every 30 s.
	readWait = 75 * time.Second
	// minBackoff and maxBackoff bound the wait before a reconnection; it
	// doubles from the first to the second while a workspace stays
	// unreachable, with a quarter of jitter so many workspaces behind
	// one failure do not come back in step.
	minBackoff = 250 * time.Millisecond
	maxBackoff = 15 * time.Second
	// stableAfter is how long a connection must have lasted for the
	// next failure to start the backoff afresh.
	stableAfter = 10 * time.Second
	// maxMessage bounds a message read from a workspace: its largest are
	// session lists and diffs of bounded length.
	maxMessage = 4 << 20
	// activityEvery is how often a connected workspace's sessions are
	// listed again for their last activity, which its events do not
	// carry: a session printing for an hour changes no status.
	activityEvery = 30 * time.Second
)

// workspace is one workspace the hub follows: its peer, and the one
// goroutine (run) that keeps a connection to it. Its state lives in the
// Hub, under the Hub's lock, so a snapshot of the inbox is consistent.
type workspace struct {
	peer   Peer
	cancel context.CancelFunc
	done   chan struct{}

	// The fields below are guarded by Hub.mu.
	name      string
	reachable bool
	err       string
	since     time.Time
	sessions  map[string]*remote
}

// remote is one session of a workspace as the hub knows it.
type remote struct {
	s         wire.Session
	additions int
	deletions int
}

// run keeps a connection to the workspace until ctx ends, reconnecting
// with backoff.
func (w *workspace) run(ctx context.Context, h *Hub) {
	defer close(w.done)
	log := h.log.With("workspace", w.peer.URL)
	backoff := minBackoff
	for {
		began := time.Now()
		err := w.connect(ctx, h, log)
		if ctx.Err() != nil {
			return
		}
		h.lost(w, err)
		if time.Since(began) > stableAfter {
			backoff = minBackoff
		}
		wait := backoff + time.Duration(rand.Int64N(int64(backoff/4)+1))
		log.Debug("workspace unreachable", "err", err, "retry", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// connect opens the workspace's WebSocket, reads its name and sessions,
// and applies its events until the connection fails or ctx ends.
func (w *workspace) connect(ctx context.Context, h *Hub, log *slog.Logger) error {
	token, err := w.peer.token()
	if err != nil {
		return err
	}
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	wsURL, err := w.peer.wsURL()
	if err != nil {
		return err
	}
	dialer := websocket.Dialer{
		NetDialContext:   (&net.Dialer{Timeout: dialTimeout}).DialContext,
		HandshakeTimeout: dialTimeout,
		ReadBufferSize:   16 << 10,
		WriteBufferSize:  1 << 10,
	}
	conn, resp, err := dialer.DialContext(ctx, wsURL, header)
	if err != nil {
		return describe(err, resp, token != "")
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	conn.SetReadLimit(maxMessage)

	// The snapshot is asked for after the WebSocket opened, and its
	// events are read after it: every change is in the snapshot or in an
	// event after it, and the events, applied in order, end at the
	// sessions' state.
	var cfg struct {
		Name string `json:"name"`
	}
	if err := h.get(ctx, w.peer, token, "/api/config", &cfg); err != nil {
		return err
	}
	var list struct {
		Sessions []wire.Session `json:"sessions"`
	}
	if err := h.get(ctx, w.peer, token, "/api/sessions", &list); err != nil {
		return err
	}
	h.reached(w, cfg.Name, list.Sessions)
	log.Info("workspace reached", "name", cfg.Name, "sessions", len(list.Sessions))
	stopListing := w.listActivity(ctx, h, token, log)
	defer stopListing()

	conn.SetPingHandler(func(data string) error {
		if err := conn.SetReadDeadline(time.Now().Add(readWait)); err != nil {
			return err
		}
		err := conn.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(dialTimeout))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
	for {
		if err := conn.SetReadDeadline(time.Now().Add(readWait)); err != nil {
			return fmt.Errorf("connection lost: %w", err)
		}
		_, data, err := conn.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("timeout: the workspace sent nothing, not even a ping, for %s", readWait)
			}
			return fmt.Errorf("connection lost: %w", err)
		}
		h.apply(w, data)
	}
}

// listActivity lists the workspace's sessions every activityEvery, for
// their last activity, until the function it returns is called; that
// function returns once the lister has ended.
func (w *workspace) listActivity(ctx context.Context, h *Hub, token string, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(activityEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var list struct {
				Sessions []wire.Session `json:"sessions"`
			}
			if err := h.get(ctx, w.peer, token, "/api/sessions", &list); err != nil {
				log.Debug("list the sessions for their activity", "err", err)
				continue // the WebSocket says when the workspace is gone
			}
			h.active(w, list.Sessions)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// token reads the peer's token file's first line; empty without one.
func (p Peer) token() (string, error) {
	if p.TokenFile == "" {
		return "", nil
	}
	f, _, err := regfile.Open(p.TokenFile)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<10))
	if err != nil {
		return "", fmt.Errorf("token file %s: %w", p.TokenFile, err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("token file %s is empty", p.TokenFile)
	}
	return tok, nil
}

// wsURL is the workspace's WebSocket address.
func (p Peer) wsURL() (string, error) {
	u, err := url.Parse(p.URL)
	if err != nil {
		return "", fmt.Errorf("workspace address %s: %w", clip.Quote(p.URL), err)
	}
	u.Scheme = map[string]string{"http": "ws", "https": "wss"}[u.Scheme]
	u.Path += "/ws"
	return u.String(), nil
}

// describe says why a connection could not be made, beginning with one
// of the words the inbox shows: refused, token rejected, timeout.
func describe(err error, resp *http.Response, hadToken bool) error {
	if resp != nil {
		var body wire.ErrorBody
		_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&body)
		msg := body.Error.Message
		switch {
		case resp.StatusCode == http.StatusUnauthorized && hadToken:
			return fmt.Errorf("token rejected: the workspace refused the hub's token for it (HTTP 401: %s)", clip.String(msg, 120, "..."))
		case resp.StatusCode == http.StatusUnauthorized:
			return errors.New("token rejected: the workspace needs a token and the hub has none for it (give it in --peers or --discover-token-file)")
		}
		return fmt.Errorf("refused: the workspace answered HTTP %d to the WebSocket (%s)", resp.StatusCode, clip.String(msg, 120, "..."))
	}
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("refused: nothing listens there (%w)", err)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("refused: no such host %s", dnsErr.Name)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("timeout: no answer within %s", dialTimeout)
	}
	return fmt.Errorf("refused: %w", err)
}

// get asks the workspace's API for path and decodes its answer into v.
func (h *Hub) get(ctx context.Context, p Peer, token, path string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+path, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return describe(err, nil, token != "")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return describe(fmt.Errorf("GET %s", path), resp, token != "")
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxMessage)).Decode(v); err != nil {
		return fmt.Errorf("refused: GET %s answered what is not agentmux's JSON: %w", path, err)
	}
	return nil
}
