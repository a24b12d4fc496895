package ws_test

import (
	"strings"
	"testing"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// sizeLoop prints the terminal's size for each line it reads.
var sizeLoop = []string{"sh", "-c", `stty -echo; while read line; do echo "size $(stty size)"; done`}

func resize(sid string, cols, rows int) map[string]any {
	return map[string]any{"type": wire.TypeTerminalResize, "sessionId": sid, "cols": cols, "rows": rows}
}

// expectResized reads until a session.resized for sid and checks it.
func (c *client) expectResized(sid string, cols, rows int, by string) {
	c.t.Helper()
	m := c.expect(wire.TypeSessionResized, sid)
	if m.Cols != cols || m.Rows != rows || m.By != by {
		c.t.Fatalf("session.resized = %dx%d by %q, want %dx%d by %q", m.Cols, m.Rows, m.By, cols, rows, by)
	}
}

func wantSize(t *testing.T, s *sessions.Session, cols, rows int, why string) {
	t.Helper()
	if info := s.Info(); info.Cols != cols || info.Rows != rows {
		t.Fatalf("%s: session size = %dx%d, want %dx%d", why, info.Cols, info.Rows, cols, rows)
	}
}

// A page that only watches (a phone, a narrow window) must not reflow the
// program for the person typing: its size waits until it types, or takes
// the size on purpose.
func TestAResizeAppliesOnlyFromWhoTypesOrTakes(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session(sizeLoop...)
	sid := s.ID()
	a, b := e.dial(nil), e.dial(nil)
	aID, bID := a.hello(nil).ID, b.hello(nil).ID
	a.attach(sid, nil)
	b.attach(sid, nil)

	// Neither has typed: both sizes are remembered, none applied.
	a.send(resize(sid, 100, 30))
	b.send(resize(sid, 60, 20))
	a.sync()
	b.sync()
	wantSize(t, s, 80, 24, "resizes from clients that have not typed")

	// a types: its size applies before its keys, and everyone hears of it.
	a.send(input(sid, "x\r"))
	var st stream
	a.readUntil(sid, &st, contains("size 30 100"))
	b.expectResized(sid, 100, 30, aID)

	// The answers every watching xterm gives to a terminal's queries are
	// not typing.
	b.send(input(sid, "\x1b[I\x1b[?1;2c"))
	b.sync()
	wantSize(t, s, 100, 30, "a watcher's terminal reports")

	// The one who typed resizes at once.
	a.send(resize(sid, 110, 35))
	a.expectResized(sid, 110, 35, aID)
	b.expectResized(sid, 110, 35, aID)
	wantSize(t, s, 110, 35, "a resize from the client that typed")

	// take: b fits the session to its window on purpose.
	b.send(map[string]any{"type": wire.TypeTerminalResize, "sessionId": sid, "cols": 60, "rows": 20, "take": true})
	a.expectResized(sid, 60, 20, bID)
	b.expectResized(sid, 60, 20, bID)
	wantSize(t, s, 60, 20, "a resize with take")

	// Now a only watches: its resizes wait again.
	a.send(resize(sid, 120, 40))
	a.sync()
	wantSize(t, s, 60, 20, "a resize from the client that no longer holds the size")
	a.send(input(sid, "y\r"))
	a.readUntil(sid, &st, contains("size 40 120"))
	b.expectResized(sid, 120, 40, aID)
}

// A keystroke from the client that holds the size changes nothing and
// announces nothing.
func TestTypingAtTheSameSizeAnnouncesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session(sizeLoop...)
	sid := s.ID()
	a := e.dial(nil)
	aID := a.hello(nil).ID
	a.attach(sid, nil)
	a.send(resize(sid, 100, 30))
	a.send(input(sid, "1\r"))
	a.expectResized(sid, 100, 30, aID)
	a.send(input(sid, "2\r"))
	a.send(input(sid, "3\r"))
	var st stream
	for strings.Count(string(st.data), "size 30 100") < 3 {
		m := a.read()
		if m.Type == wire.TypeSessionResized {
			t.Fatalf("a keystroke at the same size announced %+v", m)
		}
		st.apply(m, sid)
	}
}
