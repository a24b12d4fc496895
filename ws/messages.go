package ws

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/sessions"
)

// Message types of the protocol (docs/protocol.md).
const (
	TypeTerminalInput     = "terminal.input"
	TypeTerminalInterrupt = "terminal.interrupt"
	TypeTerminalResize    = "terminal.resize"
	TypeSessionAttach     = "session.attach"
	TypeSessionDetach     = "session.detach"
	TypeSessionResume     = "session.resume"
	TypeTerminalAck       = "terminal.ack"
	TypeHeartbeat         = "heartbeat"

	TypeTerminalOutput    = "terminal.output"
	TypeTerminalExit      = "terminal.exit"
	TypeSessionAttached   = "session.attached"
	TypeSessionCreated    = "session.created"
	TypeSessionStatus     = "session.status"
	TypeSessionDestroyed  = "session.destroyed"
	TypeSessionNeedsInput = "session.needsInput"
	TypeSessionWarning    = "session.warning"
	TypeServerShutdown    = "server.shutdown"
	TypeError             = "error"
)

// Error codes of the protocol, used in error messages and HTTP error bodies.
const (
	CodeSessionNotFound     = "SESSION_NOT_FOUND"
	CodeSessionLimitReached = "SESSION_LIMIT_REACHED"
	CodePTYSpawnFailed      = "PTY_SPAWN_FAILED"
	CodePermissionDenied    = "PERMISSION_DENIED"
	CodeInvalidMessage      = "INVALID_MESSAGE"
	CodeMemoryCritical      = "MEMORY_CRITICAL"
	CodeInternal            = "INTERNAL_ERROR"
	// CodeWorktreeError: git refused a session's worktree (not a
	// repository, invalid branch name, branch checked out elsewhere).
	CodeWorktreeError = "WORKTREE_ERROR"
	// CodeWorktreeDirty: a worktree to remove has uncommitted changes.
	CodeWorktreeDirty = "WORKTREE_DIRTY"
	// CodeInputFull: the agent has not read the input already sent (1 MiB
	// waits); this input was refused whole and may be sent again.
	CodeInputFull = "INPUT_FULL"
)

// ErrMemoryCritical refuses to start an agent while memory is critical;
// ErrorCode maps it to MEMORY_CRITICAL.
var ErrMemoryCritical = errors.New("memory is critical: no new agents until some is freed")

// ErrorCode returns the protocol code for an error from the sessions
// package, so the WebSocket and the HTTP API name failures alike.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, ErrMemoryCritical):
		return CodeMemoryCritical
	case errors.Is(err, sessions.ErrNotFound):
		return CodeSessionNotFound
	case errors.Is(err, sessions.ErrLimitReached):
		return CodeSessionLimitReached
	case errors.Is(err, sessions.ErrSpawn):
		return CodePTYSpawnFailed
	case errors.Is(err, sessions.ErrShuttingDown):
		return CodePermissionDenied
	case errors.Is(err, sessions.ErrInputFull):
		return CodeInputFull
	case errors.Is(err, sessions.ErrWorktreeDirty):
		return CodeWorktreeDirty
	case errors.Is(err, sessions.ErrWorktree):
		return CodeWorktreeError
	case errors.Is(err, sessions.ErrInvalid),
		errors.Is(err, sessions.ErrRunning),
		errors.Is(err, sessions.ErrNotRunning):
		return CodeInvalidMessage
	}
	return CodeInternal
}

// clientMessage is every client-to-server message in one shape. Pointer
// fields tell "absent" from "zero", so validation can name what is missing;
// a field of the wrong JSON type fails decoding.
type clientMessage struct {
	Type      string   `json:"type"`
	SessionID *string  `json:"sessionId"`
	Data      *string  `json:"data"`
	Cols      *int     `json:"cols"`
	Rows      *int     `json:"rows"`
	Since     *uint64  `json:"since"`
	Lines     *int     `json:"lines"`
	Seq       *uint64  `json:"seq"`
	Pace      *bool    `json:"pace"`
	Timestamp *float64 `json:"timestamp"`
}

// protocolError is a failure to report to the client as an error message.
type protocolError struct {
	code      string
	sessionID string
	msg       string
}

func (e *protocolError) Error() string { return e.code + ": " + e.msg }

func invalid(sessionID, format string, args ...any) *protocolError {
	return &protocolError{code: CodeInvalidMessage, sessionID: sessionID, msg: fmt.Sprintf(format, args...)}
}

// decodeClientMessage parses and validates one client frame. It checks
// shape only; whether the session exists is the caller's question.
func decodeClientMessage(b []byte) (*clientMessage, *protocolError) {
	var m clientMessage
	if err := json.Unmarshal(b, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, invalid(sessionIDHint(b), "field %q must be %s, not a JSON %s", typeErr.Field, fieldKind(typeErr.Field), typeErr.Value)
		}
		return nil, invalid("", "malformed JSON: %v", err)
	}
	sid := ""
	if m.SessionID != nil {
		sid = *m.SessionID
	}
	if len(sid) > MaxSessionIDLen {
		// Never echoed: a reply must not grow with what the client sent.
		return nil, invalid("", "sessionId is %d bytes long; session ids are UUIDs of %d", len(sid), MaxSessionIDLen)
	}
	switch m.Type {
	case "":
		return nil, invalid(sid, "field \"type\" is required")
	case TypeHeartbeat:
		return &m, nil
	case TypeTerminalInput, TypeTerminalInterrupt, TypeTerminalResize,
		TypeSessionAttach, TypeSessionDetach, TypeSessionResume, TypeTerminalAck:
	default:
		return nil, invalid(sid, "unknown message type %q", clip(m.Type))
	}
	if sid == "" {
		return nil, invalid("", "%s needs a sessionId", m.Type)
	}
	switch m.Type {
	case TypeTerminalInput:
		if m.Data == nil {
			return nil, invalid(sid, "terminal.input needs data")
		}
	case TypeTerminalAck:
		if m.Seq == nil {
			return nil, invalid(sid, "terminal.ack needs seq")
		}
	case TypeSessionAttach:
		if m.Lines != nil && (*m.Lines < 1 || *m.Lines > MaxReplayLines) {
			return nil, invalid(sid, "lines %d is outside 1..%d", *m.Lines, MaxReplayLines)
		}
	case TypeTerminalResize:
		if m.Cols == nil || m.Rows == nil {
			return nil, invalid(sid, "terminal.resize needs cols and rows")
		}
		if c, r := *m.Cols, *m.Rows; c < sessions.MinSize || c > sessions.MaxSize || r < sessions.MinSize || r > sessions.MaxSize {
			return nil, invalid(sid, "terminal size %dx%d is outside %d..%d", c, r, sessions.MinSize, sessions.MaxSize)
		}
	}
	return &m, nil
}

func fieldKind(field string) string {
	switch field {
	case "cols", "rows", "lines":
		return "an integer"
	case "since", "seq":
		return "a non-negative integer"
	case "pace":
		return "a boolean"
	case "timestamp":
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

// MaxReplayLines bounds session.attach's lines: more than any terminal's
// scrollback, and the replay's search for them stays small.
const MaxReplayLines = 100_000

// MaxSessionIDLen is the length of a session id, a UUID in its usual
// form; a longer one names no session and is refused before any reply
// echoes it.
const MaxSessionIDLen = 36

// clip bounds client text quoted in an error, so replies stay small
// whatever the client sent.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	// Cut at a character boundary: the reply is JSON text.
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Session is a session as the API and the protocol show it.
type Session struct {
	ID             string    `json:"id"`
	Name           string    `json:"name"`
	Status         string    `json:"status"`
	Agent          string    `json:"agent"`
	Command        []string  `json:"command"`
	Cwd            string    `json:"cwd"`
	CreatedAt      time.Time `json:"createdAt"`
	LastActivityAt time.Time `json:"lastActivityAt"`
	ExitCode       *int      `json:"exitCode,omitempty"`
	Cols           int       `json:"cols"`
	Rows           int       `json:"rows"`
	// Running tells a silent but live idle session from one with no
	// process, which only a resume brings back.
	Running  bool               `json:"running"`
	Worktree *sessions.Worktree `json:"worktree,omitempty"`
}

// SessionView returns the wire form of a session.
func SessionView(info sessions.Info) Session {
	v := Session{
		ID:             info.ID,
		Name:           info.Name,
		Status:         string(info.Status),
		Agent:          info.Agent,
		Command:        info.Command,
		Cwd:            info.Cwd,
		CreatedAt:      info.CreatedAt,
		LastActivityAt: info.LastActivityAt,
		Cols:           info.Cols,
		Rows:           info.Rows,
		Running:        info.Running,
		Worktree:       info.Worktree,
	}
	if v.Command == nil {
		v.Command = []string{}
	}
	if info.Exit != nil {
		code := info.Exit.Code
		v.ExitCode = &code
	}
	return v
}

// Server-to-client messages other than terminal.output, which is encoded
// by appendOutput for speed.
type (
	errorMessage struct {
		Type      string `json:"type"`
		Message   string `json:"message"`
		Code      string `json:"code,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}
	attachedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Seq       uint64 `json:"seq"`
		Cols      int    `json:"cols"`
		Rows      int    `json:"rows"`
		Status    string `json:"status"`
		Reset     bool   `json:"reset"`
		// Live is where output new to every client begins: a client
		// answers the terminal queries at or after it, and none before
		// (they were answered, or nobody can answer them). No frame
		// spans it.
		Live uint64 `json:"live"`
		// Partial reports that a replay left out older lines than the
		// attach's lines asked for: a client that showed a screen first
		// can attach again for its scrollback.
		Partial bool `json:"partial,omitempty"`
	}
	exitMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		ExitCode  int    `json:"exitCode"`
		Signal    int    `json:"signal,omitempty"`
	}
	createdMessage struct {
		Type    string  `json:"type"`
		Session Session `json:"session"`
	}
	statusMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Status    string `json:"status"`
		Reason    string `json:"reason,omitempty"`
		Running   bool   `json:"running"`
	}
	needsInputMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Message   string `json:"message"`
	}
	warningMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Message   string `json:"message"`
		Severity  string `json:"severity"`
	}
	destroyedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	heartbeatMessage struct {
		Type      string   `json:"type"`
		Timestamp int64    `json:"timestamp"`
		Echo      *float64 `json:"echo,omitempty"`
	}
	shutdownMessage struct {
		Type          string `json:"type"`
		Message       string `json:"message"`
		GracePeriodMs int64  `json:"gracePeriodMs"`
	}
)

// eventMessage returns the message that announces a session event to every
// connection.
func eventMessage(ev sessions.Event) any {
	switch ev.Kind {
	case sessions.EventCreated:
		return createdMessage{Type: TypeSessionCreated, Session: SessionView(ev.Session)}
	case sessions.EventDestroyed:
		return destroyedMessage{Type: TypeSessionDestroyed, SessionID: ev.Session.ID}
	case sessions.EventNeedsInput:
		return needsInputMessage{Type: TypeSessionNeedsInput, SessionID: ev.Session.ID, Message: ev.Message}
	case sessions.EventWarning:
		return warningMessage{Type: TypeSessionWarning, SessionID: ev.Session.ID, Message: ev.Message, Severity: string(ev.Severity)}
	default:
		return statusMessage{Type: TypeSessionStatus, SessionID: ev.Session.ID, Status: string(ev.Session.Status), Reason: ev.Session.Reason, Running: ev.Session.Running}
	}
}

// appendOutput appends a terminal.output message carrying prefix and then
// data, both of which must end on a character boundary of the stream.
// Invalid UTF-8 becomes U+FFFD, as a terminal shows it.
func appendOutput(b []byte, sessionID string, prefix, data []byte, seq uint64) []byte {
	b = append(b, `{"type":"terminal.output","sessionId":`...)
	b = strconv.AppendQuote(b, sessionID) // a UUID: plain ASCII, quoted alike in Go and JSON
	b = append(b, `,"data":"`...)
	b = appendJSONString(b, prefix)
	b = appendJSONString(b, data)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '}')
}

// jsonSafe marks the ASCII bytes that stand for themselves inside a JSON
// string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Word-at-a-time constants: every byte 0x01, every byte 0x80.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// escapeMask returns a mask with the high bit set in each byte of x (a
// word of valid UTF-8) that JSON needs escaped: a control character, a
// quote or a backslash; bytes above 0x7F pass. Borrows can set bits above
// a flagged byte, but the lowest set bit is always exact, which is all
// the caller uses.
func escapeMask(x uint64) uint64 {
	ctrl := (x - 0x20*lsb) & ^x    // high bit where an ASCII byte < 0x20
	quote := x ^ ('"' * lsb)       // zero byte where a byte == '"'
	slash := x ^ ('\\' * lsb)      // zero byte where a byte == '\\'
	quote = (quote - lsb) & ^quote // high bit where it was zero
	slash = (slash - lsb) & ^slash // likewise
	return (ctrl | quote | slash) & msb
}

// appendJSONString appends the JSON string body for s without quotes.
// Valid UTF-8, the usual case, is scanned eight bytes at a time, jumping
// straight to each byte JSON needs escaped; otherwise every invalid byte
// becomes U+FFFD.
func appendJSONString(b []byte, s []byte) []byte {
	valid := utf8.Valid(s)
	start := 0
	for i := 0; i < len(s); {
		if valid {
			for i+8 <= len(s) {
				if m := escapeMask(binary.LittleEndian.Uint64(s[i:])); m != 0 {
					i += bits.TrailingZeros64(m) / 8
					break
				}
				i += 8
			}
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			if valid {
				i++
				continue
			}
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				start = i + 1
			}
			i += size
			continue
		}
		if jsonSafe[c] {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	return append(b, s[start:]...)
}

// completeUTF8 returns the length of the longest prefix of p that does not
// end inside a UTF-8 sequence which later bytes could still complete. Bytes
// that can never form a character are left in, to become U+FFFD.
func completeUTF8(p []byte) int {
	// A character is at most 4 bytes, so only the last 3 can be an
	// unfinished one; FullRune counts an impossible sequence as complete.
	for back := 1; back <= min(utf8.UTFMax-1, len(p)); back++ {
		if utf8.RuneStart(p[len(p)-back]) {
			if !utf8.FullRune(p[len(p)-back:]) {
				return len(p) - back
			}
			return len(p)
		}
	}
	return len(p)
}
