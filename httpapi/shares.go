package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/share"
)

// ViewerCounter counts who watches through a read-only link (collab).
type ViewerCounter interface {
	Viewers(sessionID, shareID string) int
}

// shareRequest is POST /api/sessions/:id/shares's body; both fields may
// be left out.
type shareRequest struct {
	// ExpiresIn is the link's life in seconds; share.DefaultExpiry when 0.
	ExpiresIn int64 `json:"expiresIn"`
	// Scrollback, when false, shows a viewer only the screen it arrives
	// at; true when left out.
	Scrollback *bool `json:"scrollback"`
	// By names who makes the link, for the list; the token's holder
	// otherwise.
	By string `json:"by"`
}

// registerShares adds the read-only links' routes.
func (a *API) registerShares(api *echo.Group) {
	api.POST("/sessions/:id/shares", a.createShare, boundSessionID)
	api.GET("/sessions/:id/shares", a.listShares, boundSessionID)
	api.DELETE("/sessions/:id/shares/:share", a.revokeShare, boundSessionID)
}

// createShare makes a read-only link to a session and answers it with its
// URL, the only time its secret is given.
func (a *API) createShare(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	var req shareRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	by, err := checkAnswerer(req.By)
	if err != nil {
		return sessionError(c, err)
	}
	// Bounded before it is made a Duration, which seconds past the bound
	// could overflow into one the bounds let through; share.Create says
	// what the bounds are.
	life := time.Duration(min(req.ExpiresIn, int64(share.MaxExpiry/time.Second)+1)) * time.Second
	link, secret, err := a.opts.Shares.Create(sess.ID(), life, req.Scrollback == nil || *req.Scrollback, by)
	if err != nil {
		return sessionError(c, err)
	}
	a.log.Info("read-only link made", "session", sess.ID(), "share", link.ID, "expires", link.ExpiresAt, "by", by)
	r := a.shareReply(link)
	r.URL = shareURL(c.Request(), secret)
	return c.JSON(http.StatusCreated, r)
}

// shareURL is the viewer page's address for secret, as the browser that
// asked reaches this server. The secret is in the fragment, which no
// browser sends to a server, a log or a Referer. A page served under a
// path prefix (a proxy's) builds the address itself from its own.
func shareURL(req *http.Request, secret string) string {
	scheme := "http"
	if guard.CameOverHTTPS(req) {
		scheme = "https"
	}
	return scheme + "://" + req.Host + "/share.html#" + secret
}

// listShares answers a session's live links.
func (a *API) listShares(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	links := a.opts.Shares.List(sess.ID())
	reply := SharesReply{Shares: make([]ShareReply, 0, len(links))}
	for _, l := range links {
		reply.Shares = append(reply.Shares, a.shareReply(l))
	}
	return c.JSON(http.StatusOK, reply)
}

// revokeShare ends a link now; its viewers are closed at once.
func (a *API) revokeShare(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	id := c.Param("share")
	if err := a.opts.Shares.Revoke(sess.ID(), id); err != nil {
		return sessionError(c, err)
	}
	a.log.Info("read-only link revoked", "session", sess.ID(), "share", id)
	return c.NoContent(http.StatusNoContent)
}

func (a *API) shareReply(l share.Link) ShareReply {
	return ShareReply{CreatedAt: l.CreatedAt, CreatedBy: l.CreatedBy, ExpiresAt: l.ExpiresAt, ID: l.ID,
		Scrollback: l.Scrollback, SessionID: l.SessionID, Viewers: a.opts.Viewers.Viewers(l.SessionID, l.ID)}
}
