package httpapi

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

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
