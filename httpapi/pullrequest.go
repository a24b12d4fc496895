package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// PullRequestReply is GET /api/sessions/:id/pull-request's: the forge
// the session's pull requests go to (or what is missing), and its pull
// request as it stands, null before it has one.
type PullRequestReply struct {
	Forge       pulls.Forge `json:"forge"`
	PullRequest *pulls.View `json:"pullRequest"`
}

// OpenedReply is POST /api/sessions/:id/pull-request's.
type OpenedReply struct {
	// Created is false when an open pull request of the branch was
	// linked instead.
	Created bool   `json:"created"`
	Number  int    `json:"number"`
	State   string `json:"state"`
	URL     string `json:"url"`
}

// AddressedReply is POST /api/sessions/:id/pull-request/address-review's.
type AddressedReply struct {
	// Comments were added to the session's review draft; Left did not
	// fit (the draft holds review.MaxComments) or were refused.
	Comments int `json:"comments"`
	Left     int `json:"left"`
}

// FixChecksReply is POST /api/sessions/:id/pull-request/fix-checks's:
// the prompt queued and the checks it names.
type FixChecksReply struct {
	Checks   []string `json:"checks"`
	Position int      `json:"position"`
	PromptID string   `json:"promptId"`
}

// openRequest is POST /api/sessions/:id/pull-request's body; what it
// leaves out is suggested.
type openRequest struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Draft bool   `json:"draft"`
}

// byRequest is the body of the pull request's actions: who asks.
type byRequest struct {
	By string `json:"by"`
}

// registerPullRequests adds the pull request's routes.
func (a *API) registerPullRequests(api *echo.Group) {
	api.GET("/sessions/:id/pull-request", a.getPullRequest, boundSessionID)
	api.GET("/sessions/:id/pull-request/draft", a.suggestPullRequest, boundSessionID)
	api.POST("/sessions/:id/pull-request", a.openPullRequest, boundSessionID)
	api.POST("/sessions/:id/pull-request/address-review", a.addressReview, boundSessionID)
	api.POST("/sessions/:id/pull-request/fix-checks", a.fixChecks, boundSessionID)
}

// pullsFor returns the session of the request, or answers why there is
// none to act on.
func (a *API) pullsFor(c echo.Context) (*sessions.Session, bool, error) {
	if a.opts.PullRequests == nil {
		return nil, false, errorJSON(c, http.StatusNotFound, wire.CodeNotFound, "pull requests are not served here")
	}
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return nil, false, sessionError(c, err)
	}
	return sess, true, nil
}

// pullAction reads an action on the session's pull request: the session
// and who asks (byRequest), or answers why not.
func (a *API) pullAction(c echo.Context) (*sessions.Session, string, bool, error) {
	sess, ok, err := a.pullsFor(c)
	if !ok {
		return nil, "", false, err
	}
	var req byRequest
	if ok, err := decodeBody(c, &req); !ok {
		return nil, "", false, err
	}
	by, err := checkAnswerer(req.By)
	if err != nil {
		return nil, "", false, sessionError(c, err)
	}
	return sess, by, true, nil
}

// forgeError answers a failure of a request to the forge: with
// Retry-After when its rate limit is spent.
func forgeError(c echo.Context, err error) error {
	var rl *forge.RateLimited
	if errors.As(err, &rl) {
		secs := max(int(time.Until(rl.Reset).Seconds()+1), 1)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	}
	return sessionError(c, err)
}

// getPullRequest answers the forge the session's pull request goes to,
// and how its pull request stands, asked of the forge now.
func (a *API) getPullRequest(c echo.Context) error {
	sess, ok, err := a.pullsFor(c)
	if !ok {
		return err
	}
	ctx := c.Request().Context()
	reply := PullRequestReply{Forge: a.opts.PullRequests.Forge(ctx, sess)}
	if sess.Info().PullRequest != nil {
		// A failed look answers what the last one saw, with its error.
		v, _ := a.opts.PullRequests.Refresh(ctx, sess)
		reply.PullRequest = &v
	}
	return c.JSON(http.StatusOK, reply)
}

// suggestPullRequest answers what the session's pull request could say.
func (a *API) suggestPullRequest(c echo.Context) error {
	sess, ok, err := a.pullsFor(c)
	if !ok {
		return err
	}
	sug, err := a.opts.PullRequests.Suggest(c.Request().Context(), sess)
	if err != nil {
		return forgeError(c, err)
	}
	return c.JSON(http.StatusOK, sug)
}

// openPullRequest pushes the session's branch and opens its pull request,
// or links the one open already.
func (a *API) openPullRequest(c echo.Context) error {
	sess, ok, err := a.pullsFor(c)
	if !ok {
		return err
	}
	var req openRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	opened, err := a.opts.PullRequests.Open(c.Request().Context(), sess, pulls.Request{Title: req.Title, Body: req.Body, Draft: req.Draft})
	if err != nil {
		return forgeError(c, err)
	}
	status := http.StatusOK
	if opened.Created {
		status = http.StatusCreated
	}
	return c.JSON(status, OpenedReply{Created: opened.Created, Number: opened.Number, State: opened.State, URL: opened.URL})
}

// addressReview puts the pull request's unresolved review comments in the
// session's review draft, for a person to edit and send to the agent.
func (a *API) addressReview(c echo.Context) error {
	sess, by, ok, err := a.pullAction(c)
	if !ok {
		return err
	}
	added, left, err := a.opts.PullRequests.AddressReview(c.Request().Context(), sess, by)
	if err != nil {
		return forgeError(c, err)
	}
	return c.JSON(http.StatusOK, AddressedReply{Comments: added, Left: left})
}

// fixChecks queues, for the agent, the pull request's failing checks and
// the end of their logs.
func (a *API) fixChecks(c echo.Context) error {
	sess, by, ok, err := a.pullAction(c)
	if !ok {
		return err
	}
	f, err := a.opts.PullRequests.FixChecks(c.Request().Context(), sess, by)
	if err != nil {
		return forgeError(c, err)
	}
	return c.JSON(http.StatusOK, FixChecksReply{Checks: f.Checks, Position: f.Position, PromptID: f.Prompt.ID})
}
