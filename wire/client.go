package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	textclip "github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/sessions"
)

// ClientMessage is every client-to-server message in one shape: its Type
// says which, and ClientFields which of the other fields that type
// carries. Pointer fields tell "absent" from "zero", so validation can
// name what is missing; a field of the wrong JSON type fails decoding.
type ClientMessage struct {
	Type      string  `json:"type"`
	SessionID *string `json:"sessionId"`
	Data      *string `json:"data"`
	Cols      *int    `json:"cols"`
	Rows      *int    `json:"rows"`
	// Take, on terminal.resize, applies the size now, as typing would.
	Take      *bool    `json:"take"`
	Since     *uint64  `json:"since"`
	Lines     *int     `json:"lines"`
	Seq       *uint64  `json:"seq"`
	Pace      *bool    `json:"pace"`
	Timestamp *float64 `json:"timestamp"`
	// client.hello
	Name    *string `json:"name"`
	Color   *string `json:"color"`
	Key     *string `json:"key"`
	Viewing *string `json:"viewing"`
	// prompt.queue and prompt.dequeue; text is review.comment's too
	Text     *string `json:"text"`
	PromptID *string `json:"promptId"`
	// Force, on prompt.dequeue, removes a prompt someone else queued: the
	// UI sends it only after its user confirmed whose prompt it is.
	Force *bool `json:"force"`
	// As, on review.send: "prompt" (the default) queues the review for
	// the agent; "comment" pastes it at a shell's prompt as comments.
	As *string `json:"as"`
	// review.comment and review.uncomment
	Path      *string `json:"path"`
	Line      *int    `json:"line"`
	EndLine   *int    `json:"endLine"`
	CommentID *string `json:"commentId"`
}

// Fields are the fields one message type carries besides "type", by
// their JSON names, in the order docs/protocol.md lists them.
type Fields struct {
	// Required must be present; an id among them (a name ending in
	// "Id") must not be empty either. The session's id, when required,
	// comes first.
	Required []string
	// Optional may be left out.
	Optional []string
}

// ClientFields is, for every client-to-server message type, the fields
// of ClientMessage it carries: DecodeClient refuses a type missing here
// and a message without its required fields, and tests hold
// docs/protocol.md and the UI's types to the same list.
var ClientFields = map[string]Fields{
	TypeTerminalInput:     {Required: []string{"sessionId", "data"}},
	TypeTerminalInterrupt: {Required: []string{"sessionId"}},
	TypeTerminalResize:    {Required: []string{"sessionId", "cols", "rows"}, Optional: []string{"take"}},
	TypeSessionAttach:     {Required: []string{"sessionId"}, Optional: []string{"since", "lines"}},
	TypeSessionDetach:     {Required: []string{"sessionId"}},
	TypeTerminalAck:       {Required: []string{"sessionId", "seq"}, Optional: []string{"pace"}},
	TypeSessionResume:     {Required: []string{"sessionId"}},
	TypeHeartbeat:         {Optional: []string{"timestamp"}},
	TypeClientHello:       {Optional: []string{"name", "color", "key", "viewing"}},
	TypePromptQueue:       {Required: []string{"sessionId", "text"}},
	TypePromptDequeue:     {Required: []string{"sessionId", "promptId"}, Optional: []string{"force"}},
	TypeReviewComment:     {Required: []string{"sessionId", "path", "line", "text"}, Optional: []string{"endLine"}},
	TypeReviewUncomment:   {Required: []string{"sessionId", "commentId"}},
	TypeReviewDiscard:     {Required: []string{"sessionId"}},
	TypeReviewSend:        {Required: []string{"sessionId"}, Optional: []string{"as"}},
}

// clientField maps each JSON name of ClientMessage to its field's index,
// so the required fields of ClientFields can be looked up by name.
var clientField = func() map[string]int {
	t := reflect.TypeFor[ClientMessage]()
	byName := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		byName[name] = i
	}
	return byName
}()

// ProtocolError is a failure to report to the client as an error
// message.
type ProtocolError struct {
	// Code is one of the Code constants.
	Code string
	// SessionID names the session the failed message was about; empty
	// when it is not known.
	SessionID string
	// Message says what failed, for people.
	Message string
}

func (e *ProtocolError) Error() string { return e.Code + ": " + e.Message }

// Invalid returns an INVALID_MESSAGE error about the session sessionID
// ("" for none), its message formatted as fmt.Sprintf does.
func Invalid(sessionID, format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: CodeInvalidMessage, SessionID: sessionID, Message: fmt.Sprintf(format, args...)}
}

// DecodeClient parses and validates one client frame. It checks shape
// only; whether the session exists is the caller's question.
func DecodeClient(b []byte) (*ClientMessage, *ProtocolError) {
	var m ClientMessage
	if err := json.Unmarshal(b, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, Invalid(sessionIDHint(b), "field %q must be %s, not a JSON %s", typeErr.Field, fieldKind(typeErr.Field), clip(typeErr.Value))
		}
		return nil, Invalid("", "malformed JSON: %v", err)
	}
	sid := ""
	if m.SessionID != nil {
		sid = *m.SessionID
	}
	if len(sid) > MaxSessionIDLen {
		// Never echoed: a reply must not grow with what the client sent.
		return nil, Invalid("", "sessionId is %d bytes long; session ids are UUIDs of %d", len(sid), MaxSessionIDLen)
	}
	if m.Type == "" {
		return nil, Invalid(sid, "field \"type\" is required")
	}
	fields, known := ClientFields[m.Type]
	if !known {
		return nil, Invalid(sid, "unknown message type %q", clip(m.Type))
	}
	needs := fields.Required
	if len(needs) > 0 && needs[0] == "sessionId" {
		if sid == "" {
			return nil, Invalid("", "%s needs a sessionId", m.Type)
		}
		needs = needs[1:]
	}
	if !m.has(needs) {
		return nil, Invalid(sid, "%s needs %s", m.Type, listed(needs))
	}
	switch m.Type {
	case TypeSessionAttach:
		if m.Lines != nil && (*m.Lines < 1 || *m.Lines > MaxReplayLines) {
			return nil, Invalid(sid, "lines %d is outside 1..%d", *m.Lines, MaxReplayLines)
		}
	case TypeTerminalResize:
		if c, r := *m.Cols, *m.Rows; c < sessions.MinSize || c > sessions.MaxSize || r < sessions.MinSize || r > sessions.MaxSize {
			return nil, Invalid(sid, "terminal size %dx%d is outside %d..%d", c, r, sessions.MinSize, sessions.MaxSize)
		}
	}
	return &m, nil
}

// has reports whether m carries every one of fields, an id not empty.
func (m *ClientMessage) has(fields []string) bool {
	v := reflect.ValueOf(m).Elem()
	for _, name := range fields {
		f := v.Field(clientField[name])
		if f.IsNil() || strings.HasSuffix(name, "Id") && f.Elem().String() == "" {
			return false
		}
	}
	return true
}

// listed joins names as a sentence does: "a", "a and b", "a, b and c".
func listed(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// fieldKind names the JSON value a field of ClientMessage takes, for an
// error about one of another kind.
func fieldKind(field string) string {
	i, ok := clientField[field]
	if !ok {
		return "a string"
	}
	t := reflect.TypeFor[ClientMessage]().Field(i).Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int:
		return "an integer"
	case reflect.Uint64:
		return "a non-negative integer"
	case reflect.Bool:
		return "a boolean"
	case reflect.Float64:
		return "a number"
	}
	return "a string"
}

// sessionIDHint recovers the sessionId of a frame that failed to decode
// for another field's sake, so the error can name the session; one too
// long to be an id is not echoed.
func sessionIDHint(b []byte) string {
	var probe struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(b, &probe) // best effort: a bad id just leaves it empty
	if len(probe.SessionID) > MaxSessionIDLen {
		return ""
	}
	return probe.SessionID
}

// clip bounds client text quoted in an error, so replies stay small
// whatever the client sent.
func clip(s string) string { return textclip.String(s, 64, "...") }
