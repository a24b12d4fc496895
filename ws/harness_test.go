package ws_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/ws"
)

func TestMain(m *testing.M) {
	// The test binary doubles as a program that writes at a set pace, for
	// benchmarks that need a steady flood no shell loop can keep.
	if rate := os.Getenv(pacedWriterEnv); rate != "" {
		pacedWriter(rate)
		return
	}
	goleak.VerifyTestMain(m)
}

// pacedWriterEnv, set to a chunk size in KiB, makes the test binary write
// that many KiB of text to stdout every millisecond, forever.
const pacedWriterEnv = "AGENTMUX_TEST_PACED_WRITER_KIB"

func pacedWriter(kib string) {
	n, err := strconv.Atoi(kib)
	if err != nil || n <= 0 {
		fmt.Fprintln(os.Stderr, "paced writer: bad chunk size", kib)
		os.Exit(2)
	}
	line := []byte("paced output 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\n")
	chunk := bytes.Repeat(line, n<<10/len(line)+1)[:n<<10]
	tick := time.NewTicker(time.Millisecond)
	for range tick.C {
		if _, err := os.Stdout.Write(chunk); err != nil {
			os.Exit(0) // the terminal closed
		}
	}
}

// pacedFlood returns a command that, once its terminal is raw and a line
// of input arrives, writes kib KiB every millisecond.
func pacedFlood(kib int) []string {
	return []string{"sh", "-c", `stty raw -echo; echo ready; read go; exec env ` + pacedWriterEnv + `="$1" "$0"`, os.Args[0], strconv.Itoa(kib)}
}

// waitTimeout bounds every wait in these tests; generous, for -race on a
// busy two-core machine.
const waitTimeout = 20 * time.Second

// env is a running hub with its manager and application layer behind a
// real HTTP server.
type env struct {
	t   testing.TB
	mgr *sessions.Manager
	app *collab.App
	hub *ws.Hub
	srv *httptest.Server
	url string
}

type envOptions struct {
	scrollback    int
	maxSessions   int
	batchInterval time.Duration
	pingInterval  time.Duration
	origins       []string
	writeTimeout  time.Duration
	// sendBuffer, when set, shrinks the server's socket send buffers so a
	// client that stops reading falls behind quickly.
	sendBuffer int
	// timing shortens status detection.
	timing sessions.Timing
	// log, when set, receives the hub's and the manager's logs at debug.
	log io.Writer
	// maxConnections and idleGrace are the hub's.
	maxConnections int
	idleGrace      time.Duration
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	switch {
	case o.log != nil:
		log = slog.New(slog.NewTextHandler(o.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case testing.Verbose():
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	e := &env{t: t}
	mgr, err := sessions.NewManager(sessions.Options{
		MaxSessions: o.maxSessions,
		Scrollback:  o.scrollback,
		Workspace:   t.TempDir(),
		StopGrace:   time.Second,
		Timing:      o.timing,
		Logger:      log,
	})
	if err != nil {
		t.Fatal(err)
	}
	origins, err := sameorigin.New(o.origins)
	if err != nil {
		t.Fatal(err)
	}
	app, err := collab.New(collab.Options{Sessions: mgr, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hub, err := ws.NewHub(ws.Options{
		Sessions:       mgr,
		App:            app,
		BatchInterval:  o.batchInterval,
		PingInterval:   o.pingInterval,
		WriteTimeout:   o.writeTimeout,
		Origins:        origins,
		Logger:         log,
		MaxConnections: o.maxConnections,
		IdleGrace:      o.idleGrace,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.mgr, e.app, e.hub = mgr, app, hub
	mgr.Subscribe(app.OnEvent)
	e.srv = httptest.NewUnstartedServer(hub)
	if o.sendBuffer > 0 {
		e.srv.Listener = smallBufferListener{e.srv.Listener, o.sendBuffer}
	}
	e.srv.Start()
	e.url = "ws" + strings.TrimPrefix(e.srv.URL, "http")
	t.Cleanup(e.close)
	return e
}

func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := e.mgr.Shutdown(ctx, time.Second); err != nil {
		e.t.Errorf("shutdown sessions: %v", err)
	}
	if err := e.hub.Close(ctx); err != nil {
		e.t.Errorf("close hub: %v", err)
	}
	e.srv.Close()
}

// session starts argv as a session.
func (e *env) session(argv ...string) *sessions.Session {
	e.t.Helper()
	s, err := e.mgr.Create(sessions.CreateOptions{Command: argv})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

type smallBufferListener struct {
	net.Listener
	size int
}

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// msg is any server message, with every field the protocol uses.
type msg struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Data      string `json:"data"`
	Seq       uint64 `json:"seq"`
	Reset     bool   `json:"reset"`
	Cols      int    `json:"cols"`
	Rows      int    `json:"rows"`
	// By names who set a session.resized's size.
	By       string `json:"by"`
	Status   string `json:"status"`
	Reason   string `json:"reason"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Severity string `json:"severity"`
	Path     string `json:"path"`
	Running  *bool  `json:"running"`
	ExitCode int    `json:"exitCode"`
	Signal   int    `json:"signal"`
	// Timestamp is a number in heartbeats and a string in file.changed.
	Timestamp     json.RawMessage `json:"timestamp"`
	Echo          *float64        `json:"echo"`
	Session       *wire.Session   `json:"session"`
	GracePeriodMs int64           `json:"gracePeriodMs"`
	// client.welcome, session.participants and the prompt queue.
	ID           string             `json:"id"`
	AuthorID     string             `json:"authorId"`
	Name         string             `json:"name"`
	Color        string             `json:"color"`
	Participants []wire.Participant `json:"participants"`
	Prompt       *wire.Prompt       `json:"prompt"`
	Prompts      []wire.Prompt      `json:"prompts"`
	PromptID     string             `json:"promptId"`
	Position     int                `json:"position"`
	Rev          uint64             `json:"rev"`
	// review.draft
	Comments []review.Comment `json:"comments"`
	// file.recent
	Files []wire.RecentFile `json:"files"`
}

// millis returns a heartbeat's timestamp.
func (m msg) millis() int64 {
	var n int64
	_ = json.Unmarshal(m.Timestamp, &n)
	return n
}

// client is a test's WebSocket connection. Only the test goroutine that
// made it may read from it.
type client struct {
	t    testing.TB
	conn *websocket.Conn
	// frames counts terminal.output frames received.
	frames int
}

func (e *env) dial(header http.Header) *client {
	e.t.Helper()
	c, err := e.tryDial(header, nil)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	return c
}

func (e *env) tryDial(header http.Header, dialer *websocket.Dialer) (*client, error) {
	if dialer == nil {
		dialer = websocket.DefaultDialer
	}
	conn, resp, err := dialer.Dial(e.url, header)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return nil, &dialError{status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	conn.SetReadLimit(-1)
	c := &client{t: e.t, conn: conn}
	e.t.Cleanup(func() { conn.Close() })
	return c, nil
}

type dialError struct {
	status int
	err    error
}

func (d *dialError) Error() string { return d.err.Error() }

func (c *client) send(v any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(v); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *client) sendRaw(s string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(s)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// expectClose reads past any messages until the server closes the
// connection, and fails the test unless it closed with code.
func (c *client) expectClose(what string, code int) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		if !isCloseCode(err, code) {
			c.t.Fatalf("%s: %v, want close %d", what, err, code)
		}
		return
	}
}

// read returns the next message, failing the test at the deadline.
func (c *client) read() msg {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("decode %q: %v", b, err)
	}
	if m.Type == wire.TypeTerminalOutput {
		c.frames++
	}
	return m
}

// expect reads until a message of type typ for session sid ("" for any)
// arrives, skipping others.
func (c *client) expect(typ, sid string) msg {
	c.t.Helper()
	for {
		m := c.read()
		if m.Type == typ && (sid == "" || m.SessionID == sid) {
			return m
		}
	}
}

// sync makes a heartbeat round trip and returns the messages that came
// before its reply. The hub registers a connection before it reads from it,
// so once sync returns every later broadcast reaches this client, and one
// made before the call has already arrived: a test that broadcasts right
// after dialing would otherwise race the registration.
func (c *client) sync() []msg {
	c.t.Helper()
	c.send(map[string]any{"type": wire.TypeHeartbeat, "timestamp": 1})
	var before []msg
	for {
		m := c.read()
		if m.Type == wire.TypeHeartbeat && m.Echo != nil {
			return before
		}
		before = append(before, m)
	}
}

// stream accumulates one session's output as a client sees it.
type stream struct {
	data   []byte
	seq    uint64
	resets int
	exit   *msg
	// statuses are the session.status values seen, in order.
	statuses []string
}

// apply folds a message into the stream; it reports whether it was one.
func (s *stream) apply(m msg, sid string) bool {
	if m.SessionID != sid {
		return false
	}
	switch m.Type {
	case wire.TypeSessionAttached:
		if m.Reset {
			s.resets++
			s.data = s.data[:0]
		}
		s.seq = m.Seq
	case wire.TypeTerminalOutput:
		s.data = append(s.data, m.Data...)
		s.seq = m.Seq
	case wire.TypeTerminalExit:
		s.exit = &m
	case wire.TypeSessionStatus:
		s.statuses = append(s.statuses, m.Status)
	default:
		return false
	}
	return true
}

// readUntil reads sid's stream until done reports true.
func (c *client) readUntil(sid string, st *stream, done func(*stream) bool) {
	c.t.Helper()
	for !done(st) {
		st.apply(c.read(), sid)
	}
}

func exited(s *stream) bool { return s.exit != nil }

func contains(sub string) func(*stream) bool {
	return func(s *stream) bool { return strings.Contains(string(s.data), sub) }
}

// attach sends session.attach and returns the session.attached reply.
func (c *client) attach(sid string, since *uint64) msg {
	c.t.Helper()
	m := map[string]any{"type": wire.TypeSessionAttach, "sessionId": sid}
	if since != nil {
		m["since"] = *since
	}
	c.send(m)
	return c.expect(wire.TypeSessionAttached, sid)
}

func input(sid, data string) map[string]any {
	return map[string]any{"type": wire.TypeTerminalInput, "sessionId": sid, "data": data}
}

// writeFile writes content into a new file in a temp dir and returns its
// path.
func writeFile(t testing.TB, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawCat runs cat of path on a raw terminal (no \n to \r\n, no echo). It
// prints readyLine once the terminal is raw and then waits for a line of
// input, so a client can attach before the flood starts; see start.
func rawCat(path string) []string {
	return []string{"sh", "-c", `stty raw -echo; echo ready; read go; exec cat "$0"`, path}
}

// readyLine is what rawCat and similar scripts print once their terminal
// is raw, before they wait for input.
const readyLine = "ready\n"

// start waits for sid's readyLine, then sends the line that starts the
// program, and returns the stream with what came before the flood removed.
func (c *client) start(sid string) *stream {
	c.t.Helper()
	st := &stream{}
	c.readUntil(sid, st, contains(readyLine))
	_, after, _ := strings.Cut(string(st.data), readyLine)
	st.data = []byte(after)
	c.send(input(sid, "\n"))
	return st
}

func isCloseCode(err error, code int) bool {
	var ce *websocket.CloseError
	return errors.As(err, &ce) && ce.Code == code
}

func contextWithDeadline() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), waitTimeout)
}
