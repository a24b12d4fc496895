package ws_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher/workflow"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/ws"
)

// TestErrorsDoNotEchoLongFields: an error reply quotes what the client
// sent only when it is small; an id longer than a UUID is never echoed,
// so a reply cannot grow with the request.
func TestErrorsDoNotEchoLongFields(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	long := strings.Repeat("A", 900<<10)
	for _, frame := range []string{
		fmt.Sprintf(`{"type":"terminal.input","sessionId":%q,"data":"x"}`, long),
		fmt.Sprintf(`{"type":"session.attach","sessionId":%q}`, long),
		fmt.Sprintf(`{"type":"terminal.resize","sessionId":%q,"cols":"wide","rows":1}`, long),
		fmt.Sprintf(`{"type":%q,"sessionId":"x"}`, long),
		fmt.Sprintf(`{"type":%q}`, strings.Repeat("é", 300<<10)),
	} {
		c.sendRaw(frame)
		_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			t.Fatalf("reply to a %d-byte frame: %v", len(frame), err)
		}
		var m msg
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("reply %q: %v", b, err)
		}
		if m.Type != wire.TypeError || m.Code != wire.CodeInvalidMessage || len(b) > 512 || len(m.SessionID) > wire.MaxSessionIDLen {
			t.Errorf("reply to a %d-byte frame: %d bytes, %.300s", len(frame), len(b), b)
		}
	}
	// An id of the right length is still named in the error.
	id := "00000000-0000-4000-8000-000000000000"
	c.send(input(id, "x"))
	if m := c.expect(wire.TypeError, id); m.Code != wire.CodeSessionNotFound {
		t.Errorf("unknown id: %+v", m)
	}
}

// bigWorkflow is a workflow whose workflow.updated message is about
// 100 KiB.
func bigWorkflow(n int) workflow.Workflow {
	wf := workflow.Workflow{}
	for i := range 1000 {
		wf.Steps = append(wf.Steps, workflow.Step{Name: fmt.Sprintf("story-%d-%d-%s", n, i, strings.Repeat("x", 60)), Status: workflow.StepPending})
	}
	return wf
}

// TestControlQueueBoundedInBytes: a client that stops reading holds at
// most a bounded number of bytes of queued messages, however few
// messages that is, and is then dropped with one log line.
func TestControlQueueBoundedInBytes(t *testing.T) {
	log := &testutil.SyncBuffer{}
	// A long write timeout: only the queue's bound may drop the client.
	e := newEnv(t, envOptions{sendBuffer: 32 << 10, writeTimeout: 2 * waitTimeout, log: log})
	stalled, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	stalled.sync() // registered; from now on it never reads
	// 30 messages of ~100 KiB: far below the count bound, above the
	// bytes bound and whatever the sockets' buffers take.
	for i := range 30 {
		e.app.OnWorkflow("", bigWorkflow(i))
	}
	testutil.Eventually(t, waitTimeout, "the stalled client dropped", func() bool { return e.hub.Connections() == 0 })
	if n := len(linesOf(log.String(), "client too slow")); n != 1 {
		t.Errorf("%d lines about the slow client, want 1:\n%s", n, log)
	}
}

// TestSlowClientIsLoggedOnceAndIgnoredFromThen: a client that floods
// requests and reads no replies is dropped with one log line, and no
// frame it sends after that decision is acted on.
func TestSlowClientIsLoggedOnceAndIgnoredFromThen(t *testing.T) {
	log := &testutil.SyncBuffer{}
	e := newEnv(t, envOptions{sendBuffer: 32 << 10, writeTimeout: 2 * waitTimeout, log: log})
	s := e.session("cat")
	stalled, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	stalled.sync()
	// Heartbeats, each asking for a reply it will not read, then an
	// input, all written at once so they are on their way before the
	// server drops the client somewhere among the heartbeats.
	var flood []byte
	for range 3000 {
		flood = appendClientFrame(flood, []byte(`{"type":"heartbeat"}`))
	}
	b, err := json.Marshal(input(s.ID(), "after-the-close\n"))
	if err != nil {
		t.Fatal(err)
	}
	flood = appendClientFrame(flood, b)
	_ = stalled.conn.NetConn().SetWriteDeadline(time.Now().Add(waitTimeout))
	if _, err := stalled.conn.NetConn().Write(flood); err != nil {
		t.Logf("the flood was cut short: %v", err) // the server may close first
	}
	testutil.Eventually(t, waitTimeout, "the flooding client gone", func() bool { return e.hub.Connections() == 0 })

	// Input is written in order: once this arrives, anything sent before
	// it would have too.
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	c.send(input(s.ID(), "control-line\n"))
	var st stream
	c.readUntil(s.ID(), &st, contains("control-line"))
	if strings.Contains(string(st.data), "after-the-close") {
		t.Errorf("a frame sent after the connection was condemned reached the terminal: %q", string(st.data))
	}
	if n := len(linesOf(log.String(), "client too slow")); n != 1 {
		t.Errorf("%d lines about the slow client, want 1", n)
	}
}

// TestInvalidUTF8ClosesWith1007: RFC 6455 says a text frame that is not
// UTF-8 fails the connection with 1007; other connections carry on.
func TestInvalidUTF8ClosesWith1007(t *testing.T) {
	e := newEnv(t, envOptions{})
	other := e.dial(nil)
	c := e.dial(nil)
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"heartbeat","x":"`+"\xff\xfe"+`"}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, b, err := c.conn.ReadMessage()
		if err == nil {
			t.Logf("before the close: %s", b)
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseInvalidFramePayloadData) {
			t.Fatalf("got %v, want close 1007", err)
		}
		break
	}
	other.sync()
}

// appendClientFrame appends payload as one masked text frame, as a client
// sends it, with a zero mask (RFC 6455 5.3 allows any key), so frames can
// be written in one go.
func appendClientFrame(dst, payload []byte) []byte {
	dst = append(dst, 0x81) // FIN, text
	switch n := len(payload); {
	case n < 126:
		dst = append(dst, 0x80|byte(n))
	case n < 1<<16:
		dst = append(dst, 0x80|126, byte(n>>8), byte(n))
	default:
		panic("frame too long for this helper")
	}
	dst = append(dst, 0, 0, 0, 0) // the mask
	return append(dst, payload...)
}

// linesOf returns the lines of s that contain sub.
func linesOf(s, sub string) []string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return out
}

// TestQueueStuffingLeavesTheSessionOpenable: prompts made of what JSON
// escapes most cannot make a session's queue larger than a connection may
// take: past MaxQueueBytes the queue refuses with QUEUE_FULL, and a fresh
// attach gets session.attached and the whole queue, with the connection
// left open.
func TestQueueStuffingLeavesTheSessionOpenable(t *testing.T) {
	e := newEnv(t, envOptions{})
	sid := e.session("sh", "-c", "exec sleep 60").ID()
	stuffer := e.dial(nil)
	text := strings.Repeat("<", sessions.MaxPromptBytes)
	queued := 0
	for range 7 {
		stuffer.send(map[string]any{"type": wire.TypePromptQueue, "sessionId": sid, "text": text})
		for {
			m := stuffer.read()
			if m.Type == wire.TypePromptQueuedAck {
				queued++
				break
			}
			if m.Type == wire.TypeError {
				if m.Code != wire.CodeQueueFull || !strings.Contains(m.Message, "at most") {
					t.Fatalf("queue refused with %+v, want QUEUE_FULL naming the bound", m)
				}
				break
			}
		}
	}
	if want := sessions.MaxQueueBytes / sessions.MaxPromptBytes; queued != want {
		t.Fatalf("%d prompts of %d bytes queued, want %d", queued, len(text), want)
	}

	for i := range 3 { // every attach, not only the first
		c := e.dial(nil)
		c.send(attachMsg(sid))
		// Both, in either order: the list is sent as state, when the
		// writer gets to it, and may come before session.attached.
		attached, listed := false, false
		_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
		for !attached || !listed {
			_, b, err := c.conn.ReadMessage()
			if err != nil {
				t.Fatalf("attach %d: waiting for session.attached (%v) and prompt.list (%v): %v", i, attached, listed, err)
			}
			var m msg
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			switch m.Type {
			case wire.TypeSessionAttached:
				attached = true
			case wire.TypePromptList:
				listed = true
				if len(m.Prompts) != queued || len(b) > 2*sessions.MaxQueueBytes+64<<10 {
					t.Fatalf("attach %d: prompt.list of %d prompts in %d bytes, want %d in at most about twice their text", i, len(m.Prompts), len(b), queued)
				}
			}
		}
		c.sync() // still open
	}
}

// TestHelloFloodSparesQuietViewers: 20 connections sending 200
// client.hello each, all attached to one session, cost a quiet viewer of
// that session one participants message per change it has not yet been
// sent, never a backlog: it stays connected and ends up with everyone's
// last names.
func TestHelloFloodSparesQuietViewers(t *testing.T) {
	e := newEnv(t, envOptions{})
	sid := e.session("sh", "-c", "exec sleep 60").ID()
	viewer := e.dial(nil)
	viewer.send(attachMsg(sid))
	viewer.expect(wire.TypeSessionAttached, sid)

	const conns, hellos = 20, 200
	var (
		wg       sync.WaitGroup
		flooders []*client
	)
	defer func() {
		for _, f := range flooders {
			f.conn.Close()
		}
		wg.Wait()
	}()
	for i := range conns {
		f := e.dial(nil)
		flooders = append(flooders, f)
		f.send(attachMsg(sid))
		f.expect(wire.TypeSessionAttached, sid)
		wg.Go(func() {
			// Read everything, so the flooders themselves keep up.
			for {
				if _, _, err := f.conn.ReadMessage(); err != nil {
					return
				}
			}
		})
		for j := range hellos {
			if err := f.conn.WriteJSON(map[string]any{"type": wire.TypeClientHello, "name": fmt.Sprintf("flood-%d-%d", i, j)}); err != nil {
				t.Fatalf("flooder %d: %v", i, err)
			}
		}
	}
	// The viewer reads only now: everything the flood made waits for it.
	want := make([]string, 0, conns+1)
	for i := range conns {
		want = append(want, fmt.Sprintf("flood-%d-%d", i, hellos-1))
	}
	slices.Sort(want)
	got, final := 0, false
	for deadline := time.Now().Add(waitTimeout); !final && time.Now().Before(deadline); {
		m := viewer.read()
		if m.Type != wire.TypeSessionParticipants {
			continue
		}
		got++
		var names []string
		for _, p := range m.Participants {
			if strings.HasPrefix(p.Name, "flood-") {
				names = append(names, p.Name)
			}
		}
		slices.Sort(names)
		final = slices.Equal(names, want)
	}
	if !final {
		t.Fatalf("the viewer never saw every flooder's last name")
	}
	viewer.sync() // still connected
	if got >= conns*hellos {
		t.Errorf("the viewer was sent %d participants messages for %d hellos: not coalesced", got, conns*hellos)
	}
	t.Logf("%d hellos reached the quiet viewer as %d participants messages", conns*hellos, got)
}

// TestOversizedFramesLogRateLimited: every connection that sends a frame
// over ReadLimit is closed with 1009, but the log gets one line for the
// lot, not one each.
func TestOversizedFramesLogRateLimited(t *testing.T) {
	var log testutil.SyncBuffer
	e := newEnv(t, envOptions{log: &log})
	huge := `{"type":"heartbeat","padding":"` + strings.Repeat("x", ws.ReadLimit) + `"}`
	const conns = 8
	for i := range conns {
		c := e.dial(nil)
		c.sendRaw(huge)
		c.expectClose(fmt.Sprintf("connection %d after an oversized frame", i), websocket.CloseMessageTooBig)
	}
	testutil.Eventually(t, waitTimeout, "the first line about it", func() bool {
		return strings.Contains(log.String(), "over the read limit")
	})
	// Each closed connection has left by the time its reader logged; one
	// more round trip on a live connection orders the log after them.
	e.dial(nil).sync()
	if n := strings.Count(log.String(), "over the read limit"); n != 1 {
		t.Fatalf("%d log lines for %d oversized frames, want 1:\n%s", n, conns, log.String())
	}
}
