package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// inputRequest is the body of POST /api/sessions/:id/input.
type inputRequest struct {
	// Data goes to the session's terminal as if typed, as terminal.input's.
	Data string `json:"data"`
	// Permission, when given, makes the input an answer to that
	// permission request: it is refused unless the session still waits
	// at a request for the same tool and summary. A notification's Allow
	// clicked long after the dialog went must not type into whatever the
	// agent shows now.
	Permission *sessions.Permission `json:"permission"`
}

// sessionInput types keys into a session without a WebSocket: what a
// notification's Allow or Deny does when no page is open to send them.
// It goes through the same path as terminal.input (a session with no
// process is woken), but never takes the session's size: answering from a
// notification is not sitting down at the terminal.
func (a *API) sessionInput(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	var req inputRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	if req.Data == "" {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "data: give the keys to type")
	}
	if req.Permission != nil {
		// Checked, then typed: a new request could come in between, but
		// the agent draws its dialog well after its hook has told us.
		asked := sess.Info().Permission
		if asked == nil || *asked != *req.Permission {
			return errorJSON(c, http.StatusConflict, wire.CodeInvalidMessage,
				fmt.Sprintf("session %s no longer waits at that permission request (%s)", sess.ID(), clip(req.Permission.Tool)))
		}
	}
	if err := a.mgr.Type(sess, []byte(req.Data)); err != nil {
		return sessionError(c, err)
	}
	return c.NoContent(http.StatusNoContent)
}

// answerRequest is the body of POST /api/sessions/:id/answer.
type answerRequest struct {
	// Answer is "allow", "deny", or {"text": "..."}, a reply.
	Answer json.RawMessage `json:"answer"`
	// Permission is the request an allow or deny answers, as the
	// session showed it.
	Permission *sessions.Permission `json:"permission"`
	// By is who answers, as they name themselves; "api" when empty.
	By string `json:"by"`
}

// maxAnswerer bounds By: a person's name and where they answer from
// (or make a link from).
const maxAnswerer = 100

// parse returns the answer the request gives, and who gives it.
func (r answerRequest) parse() (sessions.Answer, string, error) {
	var a sessions.Answer
	var word string
	var reply struct {
		Text *string `json:"text"`
	}
	switch {
	case len(r.Answer) == 0:
		return a, "", fmt.Errorf("%w: answer: give \"allow\", \"deny\" or {\"text\": \"...\"}", sessions.ErrInvalid)
	case json.Unmarshal(r.Answer, &word) == nil:
		if word != sessions.AnswerAllow && word != sessions.AnswerDeny {
			return a, "", fmt.Errorf("%w: answer: %q is neither \"allow\" nor \"deny\"", sessions.ErrInvalid, clip(word))
		}
		a.Kind = word
	case json.Unmarshal(r.Answer, &reply) == nil && reply.Text != nil:
		a.Kind, a.Text = sessions.AnswerReply, *reply.Text
	default:
		return a, "", fmt.Errorf("%w: answer: give \"allow\", \"deny\" or {\"text\": \"...\"}", sessions.ErrInvalid)
	}
	a.Permission = r.Permission
	by, err := checkAnswerer(r.By)
	if err != nil {
		return a, "", err
	}
	return a, by, a.Check()
}

// checkAnswerer returns who a request says made it (an answer, a link),
// trimmed, "api" when it does not say; a name too long or with what a
// line of text may not hold is refused.
func checkAnswerer(by string) (string, error) {
	by = strings.TrimSpace(by)
	if by == "" {
		by = "api"
	}
	if len(by) > maxAnswerer || !utf8.ValidString(by) {
		return "", fmt.Errorf("%w: by: a name of at most %d bytes", sessions.ErrInvalid, maxAnswerer)
	}
	if r, bad := textrule.FirstNotLine(by); bad {
		return "", fmt.Errorf("%w: by: a name may not hold %q", sessions.ErrInvalid, r)
	}
	return by, nil
}

// answer answers a session that waits for its user without its
// terminal, as a hub over many workspaces does: an Allow or Deny is
// typed as the agent's own dialog takes it, a reply as the user would
// type it. Every client is told who answered (session.answered), and
// the log keeps it.
func (a *API) answer(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	var req answerRequest
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	ans, by, err := req.parse()
	if err != nil {
		return sessionError(c, err)
	}
	if err := sess.Answer(ans); err != nil {
		return sessionError(c, err)
	}
	a.log.Info("session answered", "session", sess.ID(), "answer", ans.Kind, "by", by)
	a.opts.Announce.OnAnswered(wire.AnsweredMessage{
		SessionID:  sess.ID(),
		Answer:     ans.Kind,
		By:         by,
		Permission: ans.Permission,
		Text:       ans.Text,
		Timestamp:  time.Now().UTC().Format(time.RFC3339Nano),
	})
	return c.NoContent(http.StatusNoContent)
}
