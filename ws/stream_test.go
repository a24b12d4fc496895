package ws_test

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// multiByteText returns about n bytes of text mixing 1- to 4-byte UTF-8
// characters, with line numbers so lost or reordered bytes show.
func multiByteText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%07d héllo wörld 日本語のテキスト ✓ 🎉🚀 ĀāĂă ÆØÅ\n", i)
	}
	return b.Bytes()
}

func TestOutputRoundTripIsByteExact(t *testing.T) {
	want := multiByteText(6 << 20)
	// The ring is larger than the data so a client slowed by the race
	// detector cannot fall behind it: this test is about exactness; the
	// benchmarks show a client keeps up with the default ring.
	e := newEnv(t, envOptions{scrollback: 16 << 20})
	s := e.session(rawCat(writeFile(t, want))...)
	c := e.dial(nil)
	att := c.attach(s.ID(), nil)
	if !att.Reset || att.Seq != 0 {
		t.Fatalf("fresh attach = %+v, want reset at seq 0", att)
	}
	st := c.start(s.ID())
	c.readUntil(s.ID(), st, exited)
	if st.resets != 0 {
		t.Fatalf("client was resynced %d times", st.resets)
	}
	if !bytes.Equal(st.data, want) {
		t.Fatalf("received %d bytes, want %d; first difference at %d", len(st.data), len(want), firstDiff(st.data, want))
	}
	if wantSeq := uint64(len(readyLine) + len(want)); st.seq != wantSeq {
		t.Fatalf("final seq = %d, want %d", st.seq, wantSeq)
	}
	if st.exit.ExitCode != 0 {
		t.Fatalf("exit = %+v", st.exit)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestCharacterSplitAcrossReadsStaysWhole(t *testing.T) {
	e := newEnv(t, envOptions{})
	// 日 is E6 97 A5; the program writes it in two parts with a pause, so
	// the PTY reader sees them in separate reads. Then an invalid byte.
	s := e.session("sh", "-c", `stty raw -echo; printf 'a\346\227'; sleep 0.3; printf '\245b\377c'`)
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	var st stream
	var frames []string
	for st.exit == nil {
		m := c.read()
		if st.apply(m, s.ID()) && m.Type == wire.TypeTerminalOutput {
			frames = append(frames, m.Data)
		}
	}
	if got := string(st.data); got != "a日b\uFFFDc" {
		t.Fatalf("output = %q, want %q", got, "a日b\uFFFDc")
	}
	for _, f := range frames {
		if strings.ContainsRune(f, utf8.RuneError) && !strings.HasPrefix(f, "b") && !strings.Contains(f, "b\uFFFDc") {
			t.Fatalf("frame %q has a replacement character where a split character was", f)
		}
	}
}

func TestTwoClientsSeeTheSameStream(t *testing.T) {
	want := multiByteText(512 << 10)
	e := newEnv(t, envOptions{scrollback: 4 << 20})
	s := e.session(rawCat(writeFile(t, want))...)
	a, b := e.dial(nil), e.dial(nil)
	a.attach(s.ID(), nil)
	b.attach(s.ID(), nil)
	sa := a.start(s.ID())
	a.readUntil(s.ID(), sa, exited)
	var sb stream
	b.readUntil(s.ID(), &sb, exited)
	sb.data = bytes.TrimPrefix(sb.data, []byte(readyLine))
	if !bytes.Equal(sa.data, want) || !bytes.Equal(sb.data, want) {
		t.Fatalf("clients got %d and %d bytes, want %d each", len(sa.data), len(sb.data), len(want))
	}
}

func TestReattachWithSinceReplaysOnlyTheRest(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty raw -echo; echo first; read x; echo second; read y`)
	a := e.dial(nil)
	a.attach(s.ID(), nil)
	var sa stream
	a.readUntil(s.ID(), &sa, contains("first\n"))
	seen := sa.seq
	a.conn.Close()

	// Output made while nobody watched.
	b := e.dial(nil)
	b.send(input(s.ID(), "\n"))
	testutil.Eventually(t, waitTimeout, "second line in the ring", func() bool { return s.StreamState().End > seen+6 })

	c := e.dial(nil)
	att := c.attach(s.ID(), &seen)
	if att.Reset || att.Seq != seen {
		t.Fatalf("attach since %d = %+v, want no reset at that seq", seen, att)
	}
	var sc stream
	sc.seq = att.Seq
	c.readUntil(s.ID(), &sc, contains("second\n"))
	if string(sc.data) != "second\n" {
		t.Fatalf("replay after since = %q, want only %q", sc.data, "second\n")
	}

	// A since the server never produced (a restarted server, a bad
	// client) gets the whole ring with reset.
	future := uint64(1 << 40)
	if att := c.attach(s.ID(), &future); !att.Reset || att.Seq != 0 {
		t.Fatalf("attach since the future = %+v, want a reset replay from 0", att)
	}
	var full stream
	full.resets = 1
	c.readUntil(s.ID(), &full, contains("second\n"))
	if string(full.data) != "first\nsecond\n" {
		t.Fatalf("full replay = %q", full.data)
	}
}

func TestClientThatStopsReadingSlowsNobody(t *testing.T) {
	const chunks = 200 // 12.5 MiB: far more than the ring and the stalled socket's buffers
	const ring = 1 << 20
	piece := multiByteText(64 << 10)
	path := writeFile(t, piece)
	// The program writes paced chunks, so a client that reads keeps up
	// even under the race detector.
	// A long write timeout: this client is slow, not dead.
	e := newEnv(t, envOptions{scrollback: ring, writeTimeout: time.Minute})
	s := e.session("sh", "-c", fmt.Sprintf(`stty raw -echo; echo ready; read go; i=0; while [ $i -lt %d ]; do cat "$0"; sleep 0.02; i=$((i+1)); done`, chunks), path)
	reader := e.dial(nil)
	// A fixed receive buffer turns off autotuning, which would otherwise
	// let the kernel absorb tens of MiB before the server's writes block.
	stalled, err := e.tryDial(nil, &websocket.Dialer{NetDial: func(network, addr string) (net.Conn, error) {
		c, err := net.Dial(network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(128 << 10)
		}
		return c, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	stalled.attach(s.ID(), nil)
	reader.attach(s.ID(), nil)
	sr := reader.start(s.ID())
	reader.readUntil(s.ID(), sr, exited)
	want := bytes.Repeat(piece, chunks)
	if sr.resets != 0 || !bytes.Equal(sr.data, want) {
		t.Fatalf("reading client: %d resyncs, %d bytes, want none and %d", sr.resets, len(sr.data), len(want))
	}

	// The stalled client now reads: it was resynced along the way and
	// ends with the ring's tail.
	var ss stream
	stalled.readUntil(s.ID(), &ss, exited)
	if ss.resets < 1 {
		t.Fatalf("stalled client was never resynced")
	}
	if !bytes.HasSuffix(want, ss.data) || len(ss.data) == 0 {
		t.Fatalf("stalled client's final screen (%d bytes) is not the stream's tail", len(ss.data))
	}
	if len(ss.data) > ring {
		t.Fatalf("stalled client got %d bytes after its resync, more than the ring", len(ss.data))
	}
}

func TestEventsReachEveryConnection(t *testing.T) {
	e := newEnv(t, envOptions{})
	watcher := e.dial(nil)
	// A heartbeat round trip proves the connection is registered before
	// the session is created.
	watcher.sync()

	s := e.session("sh", "-c", "exit 3")
	created := watcher.expect(wire.TypeSessionCreated, "")
	if created.Session == nil || created.Session.ID != s.ID() || created.Session.Status != "active" {
		t.Fatalf("session.created = %+v", created)
	}
	status := watcher.expect(wire.TypeSessionStatus, s.ID())
	if status.Status != "error" || !strings.Contains(status.Reason, "code 3") {
		t.Fatalf("session.status = %+v, want error with the exit code", status)
	}
	ctx, cancel := contextWithDeadline()
	defer cancel()
	if err := e.mgr.Destroy(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if m := watcher.expect(wire.TypeSessionDestroyed, s.ID()); m.SessionID != s.ID() {
		t.Fatalf("session.destroyed = %+v", m)
	}
}

func TestExitComesAfterTheLastOutput(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty raw -echo; echo ready; read go; printf 'last words'; kill -TERM $$`)
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	st := c.start(s.ID())
	c.readUntil(s.ID(), st, exited)
	if string(st.data) != "last words" {
		t.Fatalf("output before exit = %q", st.data)
	}
	if st.exit.Signal != 15 || st.exit.ExitCode != 128+15 {
		t.Fatalf("terminal.exit = %+v, want signal 15", st.exit)
	}
}

func TestInterruptWritesETX(t *testing.T) {
	e := newEnv(t, envOptions{})
	// Raw mode: the program reads ETX as a byte, as from a keyboard.
	raw := e.session("sh", "-c", `stty raw -echo; echo ready; head -c 1 | od -An -tx1`)
	// Cooked mode: the line discipline turns ETX into SIGINT.
	cooked := e.session("sh", "-c", `echo ready; exec cat`)
	c := e.dial(nil)
	for _, s := range []string{raw.ID(), cooked.ID()} {
		c.attach(s, nil)
		var st stream
		c.readUntil(s, &st, contains("ready"))
		c.send(map[string]any{"type": wire.TypeTerminalInterrupt, "sessionId": s})
		c.readUntil(s, &st, exited)
		if s == raw.ID() && !strings.Contains(string(st.data), "03") {
			t.Fatalf("raw program read %q, want byte 03", st.data)
		}
		if s == cooked.ID() && st.exit.Signal != 2 {
			t.Fatalf("cooked program exit = %+v, want SIGINT", st.exit)
		}
	}
}

// The rule of issue 27: a resize waits until its client types; then the
// last client to type has its size, as in tmux. (It used to be the last
// client to resize or type.)
func TestResizeLastClientToTypeWins(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty -echo; while read line; do echo "size $(stty size)"; done`)
	a, b := e.dial(nil), e.dial(nil)
	a.attach(s.ID(), nil)
	a.send(map[string]any{"type": wire.TypeTerminalResize, "sessionId": s.ID(), "cols": 100, "rows": 30})
	b.send(map[string]any{"type": wire.TypeTerminalResize, "sessionId": s.ID(), "cols": 120, "rows": 40})
	a.sync()
	b.sync()
	if info := s.Info(); info.Cols != 80 || info.Rows != 24 {
		t.Fatalf("resizes before anyone typed: session size = %dx%d, want 80x24", info.Cols, info.Rows)
	}
	// b types: its size wins.
	b.send(input(s.ID(), "x\r"))
	var st stream
	a.readUntil(s.ID(), &st, contains("size 40 120"))
	// a types: its size comes back.
	a.send(input(s.ID(), "x\r"))
	a.readUntil(s.ID(), &st, contains("size 30 100"))
	if info := s.Info(); info.Cols != 100 || info.Rows != 30 {
		t.Fatalf("session size = %dx%d, want 100x30", info.Cols, info.Rows)
	}
	// A reattach reports the size.
	if att := b.attach(s.ID(), nil); att.Cols != 100 || att.Rows != 30 {
		t.Fatalf("attached size = %dx%d", att.Cols, att.Rows)
	}
}

func TestResumeOverWebSocketContinuesTheStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `echo "run in $PWD"`)
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	var st stream
	c.readUntil(s.ID(), &st, exited)
	first := st.seq

	c.send(map[string]any{"type": wire.TypeSessionResume, "sessionId": s.ID()})
	st.exit = nil
	c.readUntil(s.ID(), &st, func(st *stream) bool { return exited(st) && slices.Contains(st.statuses, "active") })
	if strings.Count(string(st.data), "run in "+s.Info().Cwd) != 2 || st.seq <= first {
		t.Fatalf("stream after resume = %q (seq %d, was %d)", st.data, st.seq, first)
	}
	if st.resets != 0 {
		t.Fatalf("resume reset the client's stream %d times", st.resets)
	}
}

func TestReplayReentersTerminalModes(t *testing.T) {
	e := newEnv(t, envOptions{scrollback: 4096})
	// Enter the alternate screen, hide the cursor, turn on bracketed paste
	// and SGR mouse reporting, then print far more than the ring holds.
	s := e.session("sh", "-c", `printf '\033[?1049h\033[?25l\033[?2004h\033[?1002h\033[?1006h'; i=0; while [ $i -lt 1000 ]; do echo "line $i"; i=$((i+1)); done; exec sleep 60`)
	testutil.Eventually(t, waitTimeout, "output beyond the ring", func() bool { return s.StreamState().Start > 0 && strings.Contains(ringText(s), "line 999") })
	c := e.dial(nil)
	att := c.attach(s.ID(), nil)
	if !att.Reset {
		t.Fatalf("attach = %+v, want reset", att)
	}
	first := c.expect(wire.TypeTerminalOutput, s.ID())
	wantPrefix := "\x1b[?1049h\x1b[?25l\x1b[?1002h\x1b[?1006h\x1b[?2004h"
	if !strings.HasPrefix(first.Data, wantPrefix) {
		t.Fatalf("replay starts %q, want the modes %q first", first.Data[:min(60, len(first.Data))], wantPrefix)
	}
	// And then a whole line, not the middle of one.
	if rest := first.Data[len(wantPrefix):]; !strings.HasPrefix(rest, "line ") {
		t.Fatalf("replay text starts %q, want a line start", rest[:min(20, len(rest))])
	}
}

func ringText(s interface {
	ReadOutput([]byte, uint64) (int, error)
}) string {
	b := make([]byte, 8192)
	for off := uint64(0); ; off += 1024 {
		if n, err := s.ReadOutput(b, off); err == nil {
			return string(b[:n])
		}
	}
}

func TestDetachStopsTheStream(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty -echo; while read line; do echo "got $line"; done`)
	c, typist := e.dial(nil), e.dial(nil)
	c.attach(s.ID(), nil)
	typist.send(input(s.ID(), "one\n"))
	var st stream
	c.readUntil(s.ID(), &st, contains("got one\r\n"))
	seen := st.seq

	// The session is quiet, so nothing is in flight when the detach lands.
	// The heartbeat's reply shows the detach was handled before the next
	// line is typed on the other connection.
	c.send(map[string]any{"type": wire.TypeSessionDetach, "sessionId": s.ID()})
	c.sync()
	typist.send(input(s.ID(), "two\n"))
	testutil.Eventually(t, waitTimeout, "the second line", func() bool {
		return s.StreamState().End >= seen+uint64(len("got two\r\n"))
	})

	// Nothing of it reached the detached client: the next message for the
	// session is the reattach's reply, and the replay holds what it missed.
	c.send(map[string]any{"type": wire.TypeSessionAttach, "sessionId": s.ID(), "since": seen})
	for {
		m := c.read()
		if m.SessionID != s.ID() || m.Type == wire.TypePromptList || m.Type == wire.TypeReviewDraft || m.Type == wire.TypeSessionParticipants {
			continue // the attach's queue, review draft and who is there: not output
		}
		if m.Type != wire.TypeSessionAttached {
			t.Fatalf("detached client got %+v", m)
		}
		if m.Reset || m.Seq != seen {
			t.Fatalf("reattach = %+v, want since %d without reset", m, seen)
		}
		break
	}
	var rest stream
	c.readUntil(s.ID(), &rest, contains("got two\r\n"))
	if string(rest.data) != "got two\r\n" {
		t.Fatalf("replay after detach = %q", rest.data)
	}
}

// TestSmallFrameNeverOvertakesALargeOne: each large block is followed by
// a short line after a pause, so the line's frame (an echo's size) is
// ready while the block may still be on its way to a client behind a
// small socket buffer: the line must wait for it.
func TestSmallFrameNeverOvertakesALargeOne(t *testing.T) {
	block := multiByteText(300 << 10)
	const rounds = 20
	var want []byte
	for i := range rounds {
		want = append(want, block...)
		want = append(want, fmt.Sprintf("line %d\n", i)...)
	}
	e := newEnv(t, envOptions{scrollback: 16 << 20, sendBuffer: 16 << 10})
	script := `stty raw -echo; echo ready; read go; i=0
while [ $i -lt ` + fmt.Sprint(rounds) + ` ]; do cat "$0"; sleep 0.01; printf 'line %d\n' $i; sleep 0.03; i=$((i+1)); done`
	s := e.session("sh", "-c", script, writeFile(t, block))
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	st := c.start(s.ID())
	c.readUntil(s.ID(), st, exited)
	if st.resets != 0 {
		t.Fatalf("client was resynced %d times", st.resets)
	}
	if !bytes.Equal(st.data, want) {
		i := firstDiff(st.data, want)
		t.Fatalf("received %d bytes, want %d; first difference at %d: got %q, want %q",
			len(st.data), len(want), i, clipAt(st.data, i), clipAt(want, i))
	}
}

// clipAt returns up to 40 bytes of b from i.
func clipAt(b []byte, i int) []byte { return b[i:min(len(b), i+40)] }

// TestEveryEchoArrivesInOrder types keys one at a time, each waiting for
// its echo, as a person types: every echo arrives, at once and in order.
func TestEveryEchoArrivesInOrder(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", `stty raw -echo; echo ready; exec cat`)
	c := e.dial(nil)
	c.attach(s.ID(), nil)
	st := &stream{}
	c.readUntil(s.ID(), st, contains(readyLine))
	_, after, _ := strings.Cut(string(st.data), readyLine)
	st.data = []byte(after)

	const keys = 60
	var want strings.Builder
	for i := range keys {
		key := string(rune('a' + i%26))
		want.WriteString(key)
		c.send(input(s.ID(), key))
		c.readUntil(s.ID(), st, func(st *stream) bool { return len(st.data) >= want.Len() })
	}
	if string(st.data) != want.String() {
		t.Fatalf("echoes = %q, want %q", st.data, want.String())
	}
}

// TestWatchingMoreSessionsStartsNoGoroutines attaches one connection to
// one session and then to seven more, all printing: the connection's
// writer pulls every one of them, so the process holds no more goroutines
// for the seven (a goroutine per attachment would add seven).
func TestWatchingMoreSessionsStartsNoGoroutines(t *testing.T) {
	const more = 7
	const slack = 2 // what the runtime and the sessions' helpers come and go with
	e := newEnv(t, envOptions{maxSessions: 1 + more})
	var ids []string
	for range 1 + more {
		s := e.session("sh", "-c", `stty raw -echo; while :; do echo tick; sleep 0.05; done`)
		ids = append(ids, s.ID())
	}
	c := e.dial(nil)
	// watch attaches to sessions and reads until each has printed twice
	// since, so every attachment is streaming when the goroutines are
	// counted.
	watch := func(ids []string) {
		t.Helper()
		streams := make(map[string]*stream)
		for _, id := range ids {
			c.attach(id, nil)
			streams[id] = &stream{}
		}
		for {
			done := true
			for _, st := range streams {
				done = done && strings.Count(string(st.data), "tick") >= 2
			}
			if done {
				return
			}
			m := c.read()
			if st, ok := streams[m.SessionID]; ok {
				st.apply(m, m.SessionID)
			}
		}
	}
	watch(ids[:1])
	c.sync()
	base := runtime.NumGoroutine()

	watch(ids[1:])
	c.sync()
	var now int
	if !holdsWithin(waitTimeout, func() bool {
		now = runtime.NumGoroutine()
		return now <= base+slack
	}) {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Fatalf("attached to %d sessions the process holds %d goroutines, %d with one; want at most %d more; goroutines:\n%s",
			1+more, now, base, slack, dump.String())
	}
	t.Logf("goroutines attached to 1 session: %d; to %d: %d", base, 1+more, now)
}
