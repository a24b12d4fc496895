package ws

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unicode/utf8"

	textclip "github.com/agentmux/agentmux/internal/clip"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// clientMessage is every client-to-server message in one shape. Pointer
// fields tell "absent" from "zero", so validation can name what is missing;
// a field of the wrong JSON type fails decoding.
type clientMessage struct {
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
	// review.comment and review.uncomment
	Path      *string `json:"path"`
	Line      *int    `json:"line"`
	EndLine   *int    `json:"endLine"`
	CommentID *string `json:"commentId"`
}

// protocolError is a failure to report to the client as an error message.
type protocolError struct {
	code      string
	sessionID string
	msg       string
}

func (e *protocolError) Error() string { return e.code + ": " + e.msg }

func invalid(sessionID, format string, args ...any) *protocolError {
	return &protocolError{code: wire.CodeInvalidMessage, sessionID: sessionID, msg: fmt.Sprintf(format, args...)}
}

// decodeClientMessage parses and validates one client frame. It checks
// shape only; whether the session exists is the caller's question.
func decodeClientMessage(b []byte) (*clientMessage, *protocolError) {
	var m clientMessage
	if err := json.Unmarshal(b, &m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return nil, invalid(sessionIDHint(b), "field %q must be %s, not a JSON %s", typeErr.Field, fieldKind(typeErr.Field), clip(typeErr.Value))
		}
		return nil, invalid("", "malformed JSON: %v", err)
	}
	sid := ""
	if m.SessionID != nil {
		sid = *m.SessionID
	}
	if len(sid) > wire.MaxSessionIDLen {
		// Never echoed: a reply must not grow with what the client sent.
		return nil, invalid("", "sessionId is %d bytes long; session ids are UUIDs of %d", len(sid), wire.MaxSessionIDLen)
	}
	switch m.Type {
	case "":
		return nil, invalid(sid, "field \"type\" is required")
	case wire.TypeHeartbeat, wire.TypeClientHello:
		return &m, nil
	case wire.TypeTerminalInput, wire.TypeTerminalInterrupt, wire.TypeTerminalResize,
		wire.TypeSessionAttach, wire.TypeSessionDetach, wire.TypeSessionResume, wire.TypeTerminalAck,
		wire.TypePromptQueue, wire.TypePromptDequeue,
		wire.TypeReviewComment, wire.TypeReviewUncomment, wire.TypeReviewDiscard, wire.TypeReviewSend:
	default:
		return nil, invalid(sid, "unknown message type %q", clip(m.Type))
	}
	if sid == "" {
		return nil, invalid("", "%s needs a sessionId", m.Type)
	}
	switch m.Type {
	case wire.TypeTerminalInput:
		if m.Data == nil {
			return nil, invalid(sid, "terminal.input needs data")
		}
	case wire.TypePromptQueue:
		if m.Text == nil {
			return nil, invalid(sid, "prompt.queue needs text")
		}
	case wire.TypePromptDequeue:
		if m.PromptID == nil || *m.PromptID == "" {
			return nil, invalid(sid, "prompt.dequeue needs promptId")
		}
	case wire.TypeReviewComment:
		if m.Path == nil || m.Line == nil || m.Text == nil {
			return nil, invalid(sid, "review.comment needs path, line and text")
		}
	case wire.TypeReviewUncomment:
		if m.CommentID == nil || *m.CommentID == "" {
			return nil, invalid(sid, "review.uncomment needs commentId")
		}
	case wire.TypeTerminalAck:
		if m.Seq == nil {
			return nil, invalid(sid, "terminal.ack needs seq")
		}
	case wire.TypeSessionAttach:
		if m.Lines != nil && (*m.Lines < 1 || *m.Lines > wire.MaxReplayLines) {
			return nil, invalid(sid, "lines %d is outside 1..%d", *m.Lines, wire.MaxReplayLines)
		}
	case wire.TypeTerminalResize:
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
	case "cols", "rows", "lines", "line", "endLine":
		return "an integer"
	case "since", "seq":
		return "a non-negative integer"
	case "pace", "take":
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
	if len(probe.SessionID) > wire.MaxSessionIDLen {
		return ""
	}
	return probe.SessionID
}

// clip bounds client text quoted in an error, so replies stay small
// whatever the client sent.
func clip(s string) string { return textclip.String(s, 64, "...") }

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
