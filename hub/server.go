package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// The hub API's own error codes, beside wire's.
const (
	// CodeWorkspaceNotFound (404): the hub follows no workspace at that
	// address.
	CodeWorkspaceNotFound = "WORKSPACE_NOT_FOUND"
	// CodeWorkspaceUnreachable (502): the workspace could not be reached,
	// or answered what is not agentmux's.
	CodeWorkspaceUnreachable = "WORKSPACE_UNREACHABLE"
)

// Bounds of the hub's page connections.
const (
	// maxPages caps the page WebSockets open at once.
	maxPages = 64
	// coalesce is how long a page connection waits after a change for
	// the changes that come with it: statuses of many workspaces change
	// together, and one message carries them all.
	coalesce = 25 * time.Millisecond
	// pingEvery is how often a page is pinged, so a proxy keeps the
	// connection and a dead page is found; it must answer within
	// 2*pingEvery.
	pingEvery = 30 * time.Second
	// writeWait bounds writing one message to a page.
	writeWait = 10 * time.Second
	// maxAnswerBody bounds POST /api/inbox/answer's body.
	maxAnswerBody = 16 << 10
)

// Register adds the hub's API routes to g, the router's /api group.
func (h *Hub) Register(g *echo.Group) {
	g.GET("/health", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok", "mode": "hub"})
	})
	g.GET("/inbox", func(c echo.Context) error { return c.JSON(http.StatusOK, h.Inbox()) })
	g.POST("/inbox/answer", h.answer)
}

// answerRequest is POST /api/inbox/answer's body.
type answerRequest struct {
	Workspace string          `json:"workspace"`
	SessionID string          `json:"sessionId"`
	Answer    json.RawMessage `json:"answer"`
	// Permission is the request an allow or deny answers, as the page
	// showed it; the hub's own view when absent.
	Permission *sessions.Permission `json:"permission"`
	// By is the name the person gave; the workspace records them as
	// "<by> (hub)".
	By string `json:"by"`
}

// maxBy bounds the name a person gives, leaving room for " (hub)" within
// the workspace's bound.
const maxBy = 80

// answer sends a person's answer to the session's workspace.
func (h *Hub) answer(c echo.Context) error {
	var req answerRequest
	dec := json.NewDecoder(http.MaxBytesReader(c.Response(), c.Request().Body, maxAnswerBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return refuse(c, http.StatusBadRequest, wire.CodeInvalidMessage, "the body must be JSON: {workspace, sessionId, answer, permission?, by?}: "+err.Error())
	}
	by := strings.TrimSpace(req.By)
	if len(by) > maxBy {
		return refuse(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("by: at most %d bytes", maxBy))
	}
	if r, bad := textrule.FirstNotLine(by); bad {
		return refuse(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("by: a name may not hold %q", r))
	}
	if by == "" {
		by = "someone"
	}
	h.mu.Lock()
	w := h.workspaces[req.Workspace]
	var peer Peer
	var perm *sessions.Permission
	known := false
	if w != nil {
		peer = w.peer
		if r := w.sessions[req.SessionID]; r != nil {
			known, perm = true, r.s.Permission
		}
	}
	h.mu.Unlock()
	switch {
	case w == nil:
		return refuse(c, http.StatusNotFound, CodeWorkspaceNotFound, "the hub follows no workspace at "+clip.Quote(req.Workspace))
	case !known:
		return refuse(c, http.StatusNotFound, wire.CodeSessionNotFound, "workspace "+clip.Quote(req.Workspace)+" has no session "+clip.Quote(req.SessionID)+" that the hub knows of")
	}
	if req.Permission != nil {
		perm = req.Permission
	}
	body, err := json.Marshal(map[string]any{"answer": req.Answer, "permission": perm, "by": by + " (hub)"})
	if err != nil {
		return err
	}
	status, out, err := h.post(c.Request().Context(), peer, "/api/sessions/"+url.PathEscape(req.SessionID)+"/answer", body)
	if err != nil {
		return refuse(c, http.StatusBadGateway, CodeWorkspaceUnreachable, err.Error())
	}
	if status == http.StatusNoContent {
		h.log.Info("answered from the hub", "workspace", peer.URL, "session", req.SessionID, "by", by)
		return c.NoContent(http.StatusNoContent)
	}
	// The workspace's refusal, as it said it: 409 NOT_WAITING and the
	// others are the person's to read.
	var e wire.ErrorBody
	if json.Unmarshal(out, &e) != nil || e.Error.Code == "" {
		return refuse(c, http.StatusBadGateway, CodeWorkspaceUnreachable, fmt.Sprintf("the workspace answered HTTP %d", status))
	}
	if status == http.StatusUnauthorized {
		return refuse(c, http.StatusBadGateway, CodeWorkspaceUnreachable, "token rejected: "+e.Error.Message)
	}
	return c.JSON(status, e)
}

// post sends body to the workspace's API at path, with its token, and
// returns the status and body of its answer.
func (h *Hub) post(ctx context.Context, p Peer, path string, body []byte) (int, []byte, error) {
	token, err := p.token()
	if err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, nil, describe(err, nil, token != "")
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return 0, nil, fmt.Errorf("connection lost: %w", err)
	}
	return resp.StatusCode, out, nil
}

func refuse(c echo.Context, status int, code, msg string) error {
	return c.JSON(status, wire.NewErrorBody(code, msg))
}

// Pages serves the page's WebSocket: the inbox at once and at every
// change. origins is the same-origin policy every state change passes.
func (h *Hub) Pages(origins *sameorigin.Policy) http.Handler {
	slots := make(chan struct{}, maxPages)
	up := websocket.Upgrader{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   1 << 10,
		WriteBufferSize:  16 << 10,
		// The inbox is JSON that repeats itself, a tenth of its size
		// compressed: a phone left open on the hub all day pays for each
		// message. Compressed once for every page (watch).
		EnableCompression: true,
		CheckOrigin:       func(r *http.Request) bool { return origins.Check(r) == nil },
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := origins.Check(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		default:
			http.Error(w, fmt.Sprintf("too many pages are open (%d); close one", maxPages), http.StatusServiceUnavailable)
			return
		}
		h.mu.Lock()
		stopping := h.stopping
		if !stopping {
			h.pages.Add(1) // under mu: never after Run began to wait
		}
		h.mu.Unlock()
		if stopping {
			http.Error(w, "the hub is stopping", http.StatusServiceUnavailable)
			return
		}
		defer h.pages.Done()
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return // the upgrader answered
		}
		h.servePage(conn)
	})
}

// servePage writes the inbox to a page at every change until the page
// leaves or the hub stops. A reader of its own takes the page's control
// frames (pongs, close) and discards the rest: the page sends nothing.
func (h *Hub) servePage(conn *websocket.Conn) {
	defer conn.Close()
	gone := make(chan struct{})
	conn.SetReadLimit(1 << 10)
	_ = conn.SetReadDeadline(time.Now().Add(2 * pingEvery))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(2 * pingEvery)) })
	go func() {
		defer close(gone)
		for {
			if _, _, err := conn.NextReader(); err != nil {
				return
			}
		}
	}()
	defer func() {
		conn.Close() // ends the reader
		<-gone
	}()
	ping := time.NewTicker(pingEvery)
	defer ping.Stop()
	for {
		msg, changed := h.watch()
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		if err := conn.WritePreparedMessage(msg); err != nil {
			return
		}
		if !h.awaitChange(conn, changed, ping.C, gone) {
			return
		}
		// Changes come in bursts: one message for the burst.
		t := time.NewTimer(coalesce)
		select {
		case <-t.C:
		case <-gone:
			t.Stop()
			return
		case <-h.quit:
			t.Stop()
			return
		}
	}
}

// awaitChange pings the page until the inbox changes; false when the
// page left or the hub stops.
func (h *Hub) awaitChange(conn *websocket.Conn, changed <-chan struct{}, ping <-chan time.Time, gone <-chan struct{}) bool {
	for {
		select {
		case <-changed:
			return true
		case <-ping:
			if err := conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				return false
			}
		case <-gone:
			return false
		case <-h.quit:
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "the hub is stopping"), time.Now().Add(time.Second))
			return false
		}
	}
}
