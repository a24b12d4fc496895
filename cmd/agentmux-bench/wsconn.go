package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// Message types the benchmark sends and reads (docs/protocol.md; the
// authoritative list is wire/wire.go).
const (
	typeTerminalInput   = "terminal.input"
	typeSessionAttach   = "session.attach"
	typeTerminalAck     = "terminal.ack"
	typeTerminalOutput  = "terminal.output"
	typeTerminalExit    = "terminal.exit"
	typeSessionAttached = "session.attached"
	typeServerShutdown  = "server.shutdown"
	typeError           = "error"
)

// frameTimeout bounds the wait for any one frame: a server that sends
// nothing for this long while a measurement expects output is stuck.
const frameTimeout = 20 * time.Second

// idleFrameTimeout bounds the wait for a frame on a connection that
// expects no output for a while: the server sends a heartbeat every 30 s.
const idleFrameTimeout = 90 * time.Second

// writeTimeout bounds every write to the socket.
const writeTimeout = 10 * time.Second

// frame is the part of a server message the benchmark reads.
type frame struct {
	Type      string
	SessionID string
	// Seq is the stream offset: after the data of terminal.output, where
	// the output continues for session.attached.
	Seq uint64
	// Reset is session.attached's: what follows is a replay.
	Reset bool
	// DataBytes is how many UTF-8 bytes terminal.output's data decodes
	// to.
	DataBytes int
	// Data is the decoded data; it is filled in only when the connection
	// keeps data, and is valid until the next read.
	Data     []byte
	ExitCode int
	// Code and Message are an error message's.
	Code    string
	Message string
}

// jsonFrame is every field of frame that plain JSON decoding fills in.
type jsonFrame struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Seq       uint64 `json:"seq"`
	Reset     bool   `json:"reset"`
	Data      string `json:"data"`
	ExitCode  int    `json:"exitCode"`
	Code      string `json:"code"`
	Message   string `json:"message"`
}

// wsConn is one WebSocket connection to the server. One goroutine at a time
// may read it (next) and one at a time may write it (send); close may be
// called from anywhere.
type wsConn struct {
	conn *websocket.Conn
	// stopAfter unregisters the context hook that closes conn.
	stopAfter func() bool
	ctx       context.Context

	// keepData asks next to fill in frame.Data.
	keepData bool
	// acking makes readUntil acknowledge (terminal.ack) every
	// terminal.output and session.attached of the session it follows,
	// right after reading it: the client then paces the program, which
	// the server holds rather than overwrite output it has not consumed.
	// It is set by the goroutine that reads, which is then also the one
	// that writes.
	acking bool
	// idle makes readUntil wait up to idleFrameTimeout for each frame
	// rather than frameTimeout: the connection stays read while nothing
	// is expected, as a browser's does.
	idle bool

	// Owned by the reader.
	raw  bytes.Buffer
	data []byte
}

// dialWS opens a WebSocket to url, with the token as a Bearer header when
// set. The connection closes when ctx ends.
func dialWS(ctx context.Context, url, token string) (*wsConn, error) {
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	dialer := websocket.Dialer{HandshakeTimeout: frameTimeout, ReadBufferSize: 64 << 10}
	conn, resp, err := dialer.DialContext(ctx, url, header)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("open WebSocket %s: %w", url, statusError(resp.StatusCode, token, err))
		}
		return nil, fmt.Errorf("open WebSocket %s: %w", url, err)
	}
	// Replays and floods come in frames of up to 256 KiB of output, which
	// escapes can make several times larger.
	conn.SetReadLimit(64 << 20)
	c := &wsConn{conn: conn, ctx: ctx}
	c.stopAfter = context.AfterFunc(ctx, func() { conn.Close() })
	return c, nil
}

// close closes the connection; it is safe to call more than once.
func (c *wsConn) close() {
	c.stopAfter()
	_ = c.conn.Close()
}

// send writes v as one JSON text frame.
func (c *wsConn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	return c.sendRaw(b)
}

// sendRaw writes b, which must be JSON, as one text frame: for frames
// built by hand, which encoding/json would escape or copy.
func (c *wsConn) sendRaw(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
		return c.failed("send", err)
	}
	return nil
}

// attach sends session.attach for the session.
func (c *wsConn) attach(sessionID string) error {
	return c.send(map[string]any{"type": typeSessionAttach, "sessionId": sessionID})
}

// inputMessage is terminal.input. A struct, not a map: a map is encoded
// with its keys sorted, which a typed key's round trip would count
// against the server.
type inputMessage struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Data      string `json:"data"`
}

// input sends terminal.input.
func (c *wsConn) input(sessionID, data string) error {
	return c.send(inputMessage{Type: typeTerminalInput, SessionID: sessionID, Data: data})
}

// ackMessage is terminal.ack: the client has consumed the session's
// output up to Seq. Without pace (true by default) it asks to pace the
// program.
type ackMessage struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Seq       uint64 `json:"seq"`
}

// ack sends terminal.ack for the session's output up to seq.
func (c *wsConn) ack(sessionID string, seq uint64) error {
	return c.send(ackMessage{Type: typeTerminalAck, SessionID: sessionID, Seq: seq})
}

// failed wraps an error of the connection, preferring the context's cause
// when it was the context that closed it.
func (c *wsConn) failed(op string, err error) error {
	if c.ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, context.Cause(c.ctx))
	}
	return fmt.Errorf("%s: %w", op, err)
}

// next reads the next message into f, waiting at most timeout.
func (c *wsConn) next(f *frame, timeout time.Duration) error {
	*f = frame{}
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	_, r, err := c.conn.NextReader()
	if err != nil {
		return c.failed("read", err)
	}
	c.raw.Reset()
	if _, err := c.raw.ReadFrom(r); err != nil {
		return c.failed("read", err)
	}
	c.data, err = parseFrame(c.raw.Bytes(), f, c.data[:0], c.keepData)
	if err != nil {
		return err
	}
	if f.Type == typeError {
		// Errors go only to the connection whose message failed: none of
		// the benchmark's messages should.
		return fmt.Errorf("server error %s: %s", f.Code, f.Message)
	}
	return nil
}

// The fixed layout of terminal.output frames (wire.AppendOutput),
// which parseFrame takes apart by hand: a benchmark client that spends the
// machine's cores on generic JSON decoding measures itself, not the
// server.
var (
	outputHead = []byte(`{"type":"terminal.output","sessionId":"`)
	dataKey    = []byte(`","data":"`)
	seqKey     = []byte(`","seq":`)
)

// parseFrame decodes one server message into f. terminal.output frames in
// the server's layout are decoded by hand: data is unescaped (into dst,
// which it returns, when keep is set) and its length counted; anything
// else goes through encoding/json.
func parseFrame(b []byte, f *frame, dst []byte, keep bool) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(b, outputHead); ok {
		id, rest, ok := bytes.Cut(rest, dataKey)
		end := bytes.LastIndex(rest, seqKey)
		if ok && end >= 0 {
			tail := bytes.TrimSuffix(rest[end+len(seqKey):], []byte("}"))
			seq, err := strconv.ParseUint(string(tail), 10, 64)
			if err != nil {
				return dst, fmt.Errorf("bad seq in output frame %.200q: %w", b, err)
			}
			start := len(dst)
			var n int
			dst, n, err = unescapeJSON(dst, rest[:end], keep)
			if err != nil {
				return dst, fmt.Errorf("bad data in output frame %.200q: %w", b, err)
			}
			f.Type, f.SessionID, f.Seq, f.DataBytes = typeTerminalOutput, string(id), seq, n
			if keep {
				f.Data = dst[start:]
			}
			return dst, nil
		}
	}
	var j jsonFrame
	if err := json.Unmarshal(b, &j); err != nil {
		return dst, fmt.Errorf("decode server message %.200q: %w", b, err)
	}
	*f = frame{
		Type: j.Type, SessionID: j.SessionID, Seq: j.Seq, Reset: j.Reset,
		DataBytes: len(j.Data), ExitCode: j.ExitCode, Code: j.Code, Message: j.Message,
	}
	if keep {
		dst = append(dst, j.Data...)
		f.Data = dst
	}
	return dst, nil
}

// unescapeJSON returns how many bytes the body of a JSON string (without
// its quotes) stands for in UTF-8, appending them to dst when keep is set.
// Lone surrogates become U+FFFD, as encoding/json makes them.
func unescapeJSON(dst, s []byte, keep bool) ([]byte, int, error) {
	n := 0
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			if keep {
				dst = append(dst, s...)
			}
			return dst, n + len(s), nil
		}
		if keep {
			dst = append(dst, s[:i]...)
		}
		n += i
		if i+1 >= len(s) {
			return dst, n, errors.New("string ends inside an escape")
		}
		var c byte
		switch s[i+1] {
		case '"', '\\', '/':
			c = s[i+1]
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, size, err := unicodeEscape(s[i:])
			if err != nil {
				return dst, n, err
			}
			if keep {
				dst = utf8.AppendRune(dst, r)
			}
			n += utf8.RuneLen(r)
			s = s[i+size:]
			continue
		default:
			return dst, n, fmt.Errorf("bad escape %q", s[i:i+2])
		}
		if keep {
			dst = append(dst, c)
		}
		n++
		s = s[i+2:]
	}
}

// unicodeEscape decodes the \uXXXX escape at the start of s, with the low
// half that follows a high surrogate, and returns the rune and how many
// bytes of s it took.
func unicodeEscape(s []byte) (rune, int, error) {
	r, ok := hex4(s)
	if !ok {
		return 0, 0, fmt.Errorf("bad escape %.6q", s)
	}
	if !utf16.IsSurrogate(r) {
		return r, 6, nil
	}
	if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if lo, ok := hex4(s[6:]); ok {
			if both := utf16.DecodeRune(r, lo); both != utf8.RuneError {
				return both, 12, nil
			}
		}
	}
	return utf8.RuneError, 6, nil
}

// hex4 reads the four hex digits of the \uXXXX at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 6 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s[2:6]), 16, 16)
	return rune(v), err == nil
}

// streamCount follows one session's stream as one client sees it.
type streamCount struct {
	// seq is where the client is in the stream.
	seq uint64
	// attached reports whether the first session.attached has come; a
	// later one with reset is a resync.
	attached bool

	frames    int
	dataBytes int64
	resyncs   int
	// lostBytes is the stream the client skipped when resynced: the gap
	// between where it was and where the replay started.
	lostBytes uint64
	exited    bool
	exitCode  int
	// acks counts the terminal.ack messages sent for the session.
	acks int
}

// apply folds one message about the session into the count; messages
// about other sessions are left out.
func (s *streamCount) apply(f *frame, sessionID string) {
	if f.SessionID != sessionID {
		return
	}
	switch f.Type {
	case typeSessionAttached:
		if s.attached && f.Reset {
			s.resyncs++
			if f.Seq > s.seq {
				s.lostBytes += f.Seq - s.seq
			}
		}
		s.attached = true
		s.seq = f.Seq
	case typeTerminalOutput:
		s.frames++
		s.dataBytes += int64(f.DataBytes)
		s.seq = f.Seq
	case typeTerminalExit:
		s.exited = true
		s.exitCode = f.ExitCode
	}
}

// readUntil reads messages, folding those about the session into st,
// until done reports true. With c.acking it acknowledges the session's
// output as it goes.
func (c *wsConn) readUntil(sessionID string, st *streamCount, done func(*streamCount, *frame) bool) error {
	wait := frameTimeout
	if c.idle {
		wait = idleFrameTimeout
	}
	var f frame
	for {
		if err := c.next(&f, wait); err != nil {
			return err
		}
		st.apply(&f, sessionID)
		if c.acking && f.SessionID == sessionID && (f.Type == typeTerminalOutput || f.Type == typeSessionAttached) {
			// A resync's session.attached is acknowledged too, as the
			// browser does: the client has what precedes its seq.
			if err := c.ack(sessionID, f.Seq); err != nil {
				return fmt.Errorf("acknowledge output up to %d: %w", f.Seq, err)
			}
			st.acks++
		}
		if done(st, &f) {
			return nil
		}
	}
}

// startPacing acknowledges the stream's position, so the client paces the
// program from the start, and makes readUntil acknowledge what follows.
func (c *wsConn) startPacing(sessionID string, st *streamCount) error {
	if err := c.ack(sessionID, st.seq); err != nil {
		return fmt.Errorf("acknowledge output up to %d: %w", st.seq, err)
	}
	st.acks++
	c.acking = true
	return nil
}

// attachReady attaches to a session that prints readyLine and then waits
// for a line of input, and reads until the ready line has arrived. It
// returns the stream positioned just after it, with nothing counted yet.
func (c *wsConn) attachReady(sessionID string) (*streamCount, error) {
	if err := c.attach(sessionID); err != nil {
		return nil, err
	}
	st := &streamCount{}
	err := c.readUntil(sessionID, st, func(st *streamCount, _ *frame) bool {
		return st.seq >= uint64(len(readyLine)) || st.exited
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the ready line of session %s: %w", sessionID, err)
	}
	if st.exited {
		return nil, fmt.Errorf("session %s ended (exit code %d) before it was ready", sessionID, st.exitCode)
	}
	return &streamCount{seq: st.seq, attached: true}, nil
}
