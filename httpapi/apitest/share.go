package apitest

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/wire"
)

// Share makes a read-only link to session id (POST
// /api/sessions/:id/shares with body) and returns it with the secret its
// URL carries.
func (c *Client) Share(id, body string) (httpapi.ShareReply, string) {
	c.T.Helper()
	resp, b := c.Do(http.MethodPost, "/api/sessions/"+id+"/shares", body)
	WantStatus(c.T, "make a read-only link", resp, b, http.StatusCreated)
	var r httpapi.ShareReply
	DecodeJSON(c.T, b, &r)
	u, err := url.Parse(r.URL)
	if err != nil || !strings.HasSuffix(u.Path, "/share.html") || len(u.Fragment) < 40 {
		c.T.Fatalf("the link's url %q is not share.html#<secret>", r.URL)
	}
	return r, u.Fragment
}

// Shares lists session id's live links.
func (c *Client) Shares(id string) []httpapi.ShareReply {
	c.T.Helper()
	resp, b := c.Do(http.MethodGet, "/api/sessions/"+id+"/shares", "")
	WantStatus(c.T, "list read-only links", resp, b, http.StatusOK)
	var r httpapi.SharesReply
	DecodeJSON(c.T, b, &r)
	return r.Shares
}

// ViewerURL is the WebSocket address a viewer of secret opens on the
// server at base (http://host:port).
func ViewerURL(base, secret string) string {
	return "ws" + strings.TrimPrefix(base, "http") + "/ws?share=" + url.QueryEscape(secret)
}

// DialViewer connects as a viewer of secret, with no token, and returns
// the connection and its share.welcome.
func DialViewer(t testing.TB, base, secret string) (*websocket.Conn, wire.ShareWelcomeMessage) {
	t.Helper()
	conn, status, err := DialWS(t, ViewerURL(base, secret), nil)
	if err != nil {
		t.Fatalf("dial as a viewer: %v (HTTP %d)", err, status)
	}
	_ = conn.SetReadDeadline(time.Now().Add(Timeout))
	_, b, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("read the viewer's first message: %v", err)
	}
	var w wire.ShareWelcomeMessage
	if err := json.Unmarshal(b, &w); err != nil || w.Type != wire.TypeShareWelcome {
		t.Fatalf("a viewer's first message is %s, want share.welcome (%v)", b, err)
	}
	return conn, w
}

// ExpectClose reads until the server closes conn, and returns the close
// frame's code and reason; it fails on anything but a close within
// Timeout.
func ExpectClose(t testing.TB, conn *websocket.Conn) (int, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(Timeout))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("waiting for the server to close: %v", err)
		}
		return ce.Code, ce.Text
	}
}
