package ws_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// hello sends client.hello and returns the welcome.
func (c *client) hello(fields map[string]any) msg {
	c.t.Helper()
	m := map[string]any{"type": wire.TypeClientHello}
	for k, v := range fields {
		m[k] = v
	}
	c.send(m)
	return c.expect(wire.TypeClientWelcome, "")
}

// participants reads until a session.participants for sid satisfies ok,
// and returns it.
func (c *client) participants(sid string, what string, ok func([]wire.Participant) bool) []wire.Participant {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		m := c.expect(wire.TypeSessionParticipants, sid)
		if ok(m.Participants) {
			return m.Participants
		}
	}
	c.t.Fatalf("no session.participants with %s", what)
	return nil
}

func names(ps []wire.Participant) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

func namesAre(want ...string) func([]wire.Participant) bool {
	slices.Sort(want)
	return func(ps []wire.Participant) bool { return slices.Equal(names(ps), want) }
}

// TestParticipants: three clients on one session see each other arrive,
// type, leave cleanly and vanish without a close.
func TestParticipants(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", "stty -echo; cat")
	sid := s.ID()

	a := e.dial(nil)
	welcome := a.hello(nil)
	if !strings.HasPrefix(welcome.Name, "guest-") || welcome.ID == "" || welcome.AuthorID == "" {
		t.Fatalf("first welcome = %+v, want a guest name and ids", welcome)
	}
	w := a.hello(map[string]any{"name": "alice", "color": "#112233", "key": "alice-key-0123456789", "viewing": sid})
	if w.Name != "alice" || w.Color != "#112233" || w.ID != welcome.ID || w.AuthorID == welcome.AuthorID {
		t.Fatalf("welcome after hello = %+v, want alice with the same connection id and a key-derived author", w)
	}
	a.send(attachMsg(sid))
	ps := a.participants(sid, "alice", namesAre("alice"))
	if ps[0].Color != "#112233" || !ps[0].Viewing || ps[0].LastInputAt != 0 {
		t.Fatalf("alice = %+v, want her colour, viewing, not typed", ps[0])
	}

	b := e.dial(nil)
	b.hello(map[string]any{"name": "bob"})
	b.send(attachMsg(sid))
	a.participants(sid, "alice and bob", namesAre("alice", "bob"))

	// A newcomer learns who is where with its welcome, before it opens
	// the session.
	n := e.dial(nil)
	n.hello(nil)
	n.participants(sid, "alice and bob, for the newcomer", namesAre("alice", "bob"))
	n.conn.Close()

	c := e.dial(nil)
	cw := c.hello(nil)
	c.send(attachMsg(sid))
	ps = b.participants(sid, "three", namesAre("alice", "bob", cw.Name))
	for _, p := range ps {
		if p.Name == "bob" && p.Viewing {
			t.Fatalf("bob said nothing of what he views but shows as viewing: %+v", p)
		}
	}

	a.send(input(sid, "hi\n"))
	ps = c.participants(sid, "alice's typing", func(ps []wire.Participant) bool {
		for _, p := range ps {
			if p.Name == "alice" && p.LastInputAt > 0 {
				return true
			}
		}
		return false
	})
	for _, p := range ps {
		now := time.Now().UnixMilli()
		switch {
		case p.Name == "alice" && (p.LastInputAt > now || p.LastInputAt < now-waitTimeout.Milliseconds()):
			t.Fatalf("alice's lastInputAt %d is not about now (%d)", p.LastInputAt, now)
		case p.Name != "alice" && p.LastInputAt != 0:
			t.Fatalf("%s typed nothing but has lastInputAt %d", p.Name, p.LastInputAt)
		}
	}

	// A clean close, then a connection that drops without one.
	b.conn.Close()
	a.participants(sid, "bob gone", namesAre("alice", cw.Name))
	_ = c.conn.UnderlyingConn().Close()
	a.participants(sid, "the dropped client gone", namesAre("alice"))

	// Detaching leaves the session too.
	a.send(map[string]any{"type": wire.TypeSessionDetach, "sessionId": sid})
	d := e.dial(nil)
	dName := d.expectWelcomeName()
	d.send(attachMsg(sid))
	d.participants(sid, "alice detached", namesAre(dName))
}

// expectWelcomeName returns the name in the welcome the client already
// received (it is the first message on every connection).
func (c *client) expectWelcomeName() string {
	c.t.Helper()
	c.send(map[string]any{"type": wire.TypeClientHello})
	return c.expect(wire.TypeClientWelcome, "").Name
}

// TestHelloRefusals: bad names, colours and keys are refused with a clear
// error and change nothing.
func TestHelloRefusals(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := e.dial(nil)
	first := c.hello(nil)
	for _, bad := range []map[string]any{
		{"name": "evil\x1b[2J"},
		{"name": "ghost\u200b"},
		{"name": strings.Repeat("n", 129)},
		{"name": "   "},
		{"color": "red"},
		{"key": "short"},
		{"viewing": strings.Repeat("v", 37)},
		{"name": 7},
	} {
		c.send(map[string]any{"type": wire.TypeClientHello, "name": bad["name"], "color": bad["color"], "key": bad["key"], "viewing": bad["viewing"]})
		m := c.expect(wire.TypeError, "")
		if m.Code != wire.CodeInvalidMessage {
			t.Errorf("hello %v: error %+v, want %s", bad, m, wire.CodeInvalidMessage)
		}
	}
	if w := c.hello(nil); w.Name != first.Name || w.Color != first.Color || w.AuthorID != first.AuthorID {
		t.Fatalf("after refused hellos the identity is %+v, want the first %+v", w, first)
	}
}

// bellAgent waits for prompts by ringing the bell, and echoes each with
// the turn it arrived in.
const bellAgent = `stty -echo; n=0; sleep 1; printf 'ready%s\a' $n
while IFS= read -r l; do echo "got:$l@$n"; sleep 0.1; n=$((n+1)); printf 'turn%s\a' $n; done`

// TestPromptQueue: two authors queue prompts while the agent starts; both
// clients see them queued and delivered in order, one per waiting period;
// only an author may remove a prompt, also after reconnecting.
func TestPromptQueue(t *testing.T) {
	e := newEnv(t, envOptions{timing: sessions.Timing{QuestionQuiet: 150 * time.Millisecond}})
	s := e.session("sh", "-c", bellAgent)
	sid := s.ID()
	a, b := e.dial(nil), e.dial(nil)
	a.hello(map[string]any{"name": "alice", "key": "alice-key-0123456789"})
	b.hello(map[string]any{"name": "bob", "key": "bob-key-0123456789ab"})
	if l := a.attachList(sid); len(l.Prompts) != 0 {
		t.Fatalf("prompt.list of a new session = %+v", l)
	}
	b.attachList(sid)

	a.send(map[string]any{"type": wire.TypePromptQueue, "sessionId": sid, "text": "from alice"})
	ack := a.expect(wire.TypePromptQueuedAck, sid)
	if ack.Position != 1 || ack.PromptID == "" {
		t.Fatalf("ack = %+v, want position 1", ack)
	}
	q := b.expect(wire.TypePromptQueued, sid)
	if q.Prompt == nil || q.Prompt.ID != ack.PromptID || q.Prompt.Author != "alice" || q.Prompt.Text != "from alice" || q.Prompt.QueuedAt.IsZero() {
		t.Fatalf("bob sees %+v, want alice's prompt", q.Prompt)
	}

	// Bob may not remove it.
	b.send(map[string]any{"type": wire.TypePromptDequeue, "sessionId": sid, "promptId": ack.PromptID})
	if m := b.expect(wire.TypeError, sid); m.Code != wire.CodeNotQueueOwner {
		t.Fatalf("bob removing alice's prompt: %+v, want %s", m, wire.CodeNotQueueOwner)
	}
	b.send(map[string]any{"type": wire.TypePromptQueue, "sessionId": sid, "text": "from bob"})
	if ack := b.expect(wire.TypePromptQueuedAck, sid); ack.Position != 2 {
		t.Fatalf("bob's ack = %+v, want position 2", ack)
	}

	st := &stream{}
	var delivered []string
	for len(delivered) < 2 || !strings.Contains(string(st.data), "got:from bob@1") {
		m := a.read()
		if m.Type == wire.TypePromptDelivered && m.SessionID == sid {
			delivered = append(delivered, m.PromptID)
			continue
		}
		st.apply(m, sid)
	}
	if delivered[0] != ack.PromptID || !strings.Contains(string(st.data), "got:from alice@0") {
		t.Fatalf("delivered %v, output %q: want alice's first, in the first waiting period", delivered, st.data)
	}
	for _, m := range b.until(wire.TypePromptDelivered, sid, 2) {
		if !slices.Contains(delivered, m.PromptID) {
			t.Fatalf("bob saw %s delivered; alice saw %v", m.PromptID, delivered)
		}
	}

	// A prompt outlives its author's connection: alice comes back with
	// her key and removes it.
	s2 := e.session("sh", "-c", "sleep 30")
	a.attachList(s2.ID())
	a.send(map[string]any{"type": wire.TypePromptQueue, "sessionId": s2.ID(), "text": "later"})
	mine := a.expect(wire.TypePromptQueuedAck, s2.ID())
	a.conn.Close()
	a2 := e.dial(nil)
	a2.hello(map[string]any{"name": "alice again", "key": "alice-key-0123456789"})
	if l := a2.attachList(s2.ID()); len(l.Prompts) != 1 || l.Prompts[0].ID != mine.PromptID || l.Prompts[0].Author != "alice" {
		t.Fatalf("prompt.list on reattach = %+v, want alice's prompt", l)
	}
	a2.send(map[string]any{"type": wire.TypePromptDequeue, "sessionId": s2.ID(), "promptId": mine.PromptID})
	if m := b.expect(wire.TypePromptDequeued, s2.ID()); m.PromptID != mine.PromptID {
		t.Fatalf("bob saw %+v, want alice's prompt dequeued", m)
	}
}

// TestPromptQueueRefusals covers bad input over the wire.
func TestPromptQueueRefusals(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", "sleep 30")
	sid := s.ID()
	c := e.dial(nil)
	for _, tc := range []struct {
		name string
		msg  map[string]any
		code string
	}{
		{"no text", map[string]any{"type": wire.TypePromptQueue, "sessionId": sid}, wire.CodeInvalidMessage},
		{"empty", map[string]any{"type": wire.TypePromptQueue, "sessionId": sid, "text": ""}, wire.CodeInvalidMessage},
		{"65 KiB", map[string]any{"type": wire.TypePromptQueue, "sessionId": sid, "text": strings.Repeat("x", 65<<10)}, wire.CodeInvalidMessage},
		{"unknown session", map[string]any{"type": wire.TypePromptQueue, "sessionId": "00000000-0000-0000-0000-000000000000", "text": "hi"}, wire.CodeSessionNotFound},
		{"no session", map[string]any{"type": wire.TypePromptQueue, "text": "hi"}, wire.CodeInvalidMessage},
		{"no prompt id", map[string]any{"type": wire.TypePromptDequeue, "sessionId": sid}, wire.CodeInvalidMessage},
		{"unknown prompt", map[string]any{"type": wire.TypePromptDequeue, "sessionId": sid, "promptId": "nope"}, wire.CodePromptNotFound},
	} {
		c.send(tc.msg)
		if m := c.expect(wire.TypeError, ""); m.Code != tc.code {
			t.Errorf("%s: %+v, want %s", tc.name, m, tc.code)
		}
	}
	if q := s.Queue(); len(q.Prompts) != 0 {
		t.Fatalf("refused prompts were queued: %+v", q)
	}
}

// TestTypingResumesStoppedSession: keys typed into a session whose agent
// exited resume it and reach the new run once.
func TestTypingResumesStoppedSession(t *testing.T) {
	e := newEnv(t, envOptions{})
	marker := filepath.Join(t.TempDir(), "ran")
	// The first run exits; a resume runs the same command, which now
	// reads its terminal.
	s := e.session("sh", "-c", `test -e "$0" || { touch "$0"; exit 0; }; stty -echo; echo ready; while IFS= read -r l; do echo "line:$l"; done`, marker)
	sid := s.ID()
	c := e.dial(nil)
	st := &stream{}
	c.attach(sid, nil)
	c.readUntil(sid, st, exited)
	if _, err := os.Stat(marker); err != nil {
		t.Fatal(err)
	}
	c.send(input(sid, "wake up\r"))
	c.readUntil(sid, st, contains("line:wake up"))
	if n := strings.Count(string(st.data), "wake up"); n != 1 {
		t.Fatalf("the keys arrived %d times; output %q", n, st.data)
	}
	if !slices.Contains(st.statuses, string(sessions.StatusActive)) {
		t.Fatalf("statuses %v: the resume was not announced", st.statuses)
	}
}

// attachList attaches and returns the prompt.list that comes with it.
func (c *client) attachList(sid string) msg {
	c.t.Helper()
	c.send(map[string]any{"type": wire.TypeSessionAttach, "sessionId": sid})
	return c.expect(wire.TypePromptList, sid)
}

// until reads until n messages of type typ for sid have arrived.
func (c *client) until(typ, sid string, n int) []msg {
	c.t.Helper()
	var got []msg
	for len(got) < n {
		got = append(got, c.expect(typ, sid))
	}
	return got
}
