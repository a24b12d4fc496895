package ws_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// numberedLines returns n bytes of numbered lines, so any byte lost or
// repeated shows.
func numberedLines(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 16)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%09d\n", i)
	}
	return b.Bytes()[:n]
}

// slowReader consumes a session's stream at rate bytes a second, as a
// browser parsing into xterm.js does, acknowledging each frame once
// consumed when ack is set.
type slowReader struct {
	c    *client
	sid  string
	rate float64
	ack  bool
	st   stream
}

// consumeUntil reads until done; for each output frame it takes its time,
// then acknowledges it.
func (r *slowReader) consumeUntil(done func(*stream) bool) {
	r.c.t.Helper()
	for !done(&r.st) {
		m := r.c.read()
		if !r.st.apply(m, r.sid) || m.Type != wire.TypeTerminalOutput {
			continue
		}
		// The consumer's own work: a workload, not a wait.
		time.Sleep(time.Duration(float64(len(m.Data)) / r.rate * float64(time.Second)))
		if r.ack {
			r.c.send(map[string]any{"type": wire.TypeTerminalAck, "sessionId": r.sid, "seq": m.Seq})
		}
	}
}

// neverStall is a Timing under which no pacer in a test run counts as
// stalled, for tests about pacing that a slow machine must not trip.
var neverStall = sessions.Timing{StallAfter: time.Hour}

func ackMsg(sid string, seq uint64, pace bool) map[string]any {
	return map[string]any{"type": wire.TypeTerminalAck, "sessionId": sid, "seq": seq, "pace": pace}
}

// TestAckingClientGetsEveryByte: a client that reads slower than the
// program writes, but acknowledges what it consumed, receives every byte
// of a 64 MiB flood in order, with no resync: the program waits for it.
// A stalled client beside it, which acknowledged once and then stopped
// reading, holds nothing up, even before it counts as stalled. A pacer
// stalls here only after an hour: on a loaded machine the reader may go
// seconds without acking, and a stall would read as a resync.
func TestAckingClientGetsEveryByte(t *testing.T) {
	want := numberedLines(64 << 20)
	e := newEnv(t, envOptions{sendBuffer: 64 << 10, timing: neverStall})
	s := e.session(rawCat(writeFile(t, want))...)

	stalled, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	att := stalled.attach(s.ID(), nil)
	stalled.send(ackMsg(s.ID(), att.Seq, true)) // then never reads again

	r := &slowReader{c: e.dial(nil), sid: s.ID(), rate: 60e6, ack: true}
	ra := r.c.attach(s.ID(), nil)
	r.c.send(ackMsg(s.ID(), ra.Seq, true))
	r.st = *r.c.start(s.ID())
	start := time.Now()
	r.consumeUntil(func(st *stream) bool { return len(st.data) >= len(want) || st.exit != nil })
	took := time.Since(start)
	if r.st.resets != 0 {
		t.Errorf("the acknowledging client was resynced %d times", r.st.resets)
	}
	if !bytes.Equal(r.st.data, want) {
		i := 0
		for i < min(len(r.st.data), len(want)) && r.st.data[i] == want[i] {
			i++
		}
		t.Fatalf("got %d bytes, want %d; first difference at %d", len(r.st.data), len(want), i)
	}
	t.Logf("64 MiB to a client consuming at 60 MB/s: %v (%.1f MB/s)", took.Round(time.Millisecond), float64(len(want))/took.Seconds()/1e6)
}

// TestStalledPacerReleasesTheProgram: a client that acknowledged once and
// then stopped, alone, holds the program only until it counts as stalled
// (2 s without progress); then the program runs free and finishes.
func TestStalledPacerReleasesTheProgram(t *testing.T) {
	e := newEnv(t, envOptions{sendBuffer: 32 << 10})
	s := e.session(rawCat(writeFile(t, numberedLines(16<<20)))...)
	stalled, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	att := stalled.attach(s.ID(), nil)
	stalled.send(ackMsg(s.ID(), att.Seq, true))
	stalled.start(s.ID()) // the flood begins; the client reads no more
	start := time.Now()
	testutil.Eventually(t, waitTimeout, "the program to finish with a stalled pacer attached", func() bool {
		return !s.Info().Running
	})
	t.Logf("16 MiB with a stalled pacer: the program finished after %v", time.Since(start).Round(time.Millisecond))
	// The stalled client was not answered with errors: acks are understood.
	_ = stalled.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, b, err := stalled.conn.ReadMessage()
		if err != nil {
			t.Fatalf("the stalled client's stream: %v", err)
		}
		var m msg
		_ = json.Unmarshal(b, &m)
		if m.Type == wire.TypeError {
			t.Fatalf("terminal.ack answered with %s", b)
		}
		if m.Type == wire.TypeTerminalExit {
			return
		}
	}
}

// TestUnpacedClientsAreSkippedAhead: without acknowledgements (or with
// pace false, as a hidden tab sends), a slow client paces nothing: the
// program runs free and the client is resynced when it falls a ring
// behind, as before.
func TestUnpacedClientsAreSkippedAhead(t *testing.T) {
	for _, mode := range []string{"no acks", "pace false"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t, envOptions{scrollback: 256 << 10})
			s := e.session(rawCat(writeFile(t, numberedLines(16<<20)))...)
			r := &slowReader{c: e.dial(nil), sid: s.ID(), rate: 8e6}
			att := r.c.attach(s.ID(), nil)
			if mode == "pace false" {
				r.c.send(ackMsg(s.ID(), att.Seq, false))
			}
			r.st = *r.c.start(s.ID())
			r.consumeUntil(func(st *stream) bool { return st.resets > 0 || st.exit != nil })
			if r.st.resets == 0 {
				t.Fatal("a client reading at 8 MB/s was never resynced: something paced the program")
			}
			testutil.Eventually(t, waitTimeout, "the program to finish", func() bool { return !s.Info().Running })
		})
	}
}

// TestAckErrors: an acknowledgement needs a seq and an attachment.
func TestAckErrors(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("cat")
	c := e.dial(nil)
	c.send(map[string]any{"type": wire.TypeTerminalAck, "sessionId": s.ID()})
	if m := c.expect(wire.TypeError, s.ID()); m.Code != wire.CodeInvalidMessage {
		t.Errorf("ack without seq: %+v", m)
	}
	c.send(ackMsg(s.ID(), 0, true))
	if m := c.expect(wire.TypeError, s.ID()); m.Code != wire.CodeInvalidMessage {
		t.Errorf("ack before attaching: %+v", m)
	}
	c.send(map[string]any{"type": wire.TypeTerminalAck, "sessionId": s.ID(), "seq": 0, "pace": "yes"})
	if m := c.expect(wire.TypeError, s.ID()); m.Code != wire.CodeInvalidMessage {
		t.Errorf("pace not a boolean: %+v", m)
	}
}

// TestReloadFindsTheOutputWhereItLeft: a page that paced a flood and
// reloads (its connection closes; the new page takes a moment to load)
// resumes from the last seq it had and receives every byte, with no
// resync: the program waited for it rather than running a ring ahead.
// The left pacer's hold lasts an hour here, so however slowly the new page
// comes, it is the hold being taken over that is tested, not a race with
// the 2 s default.
func TestReloadFindsTheOutputWhereItLeft(t *testing.T) {
	want := numberedLines(16 << 20)
	e := newEnv(t, envOptions{sendBuffer: 64 << 10, timing: neverStall})
	s := e.session(rawCat(writeFile(t, want))...)

	before := &slowReader{c: e.dial(nil), sid: s.ID(), rate: 200e6, ack: true}
	att := before.c.attach(s.ID(), nil)
	before.c.send(ackMsg(s.ID(), att.Seq, true))
	before.st = *before.c.start(s.ID())
	before.consumeUntil(func(st *stream) bool { return len(st.data) >= 2<<20 })
	seq := before.st.seq
	if err := before.c.conn.Close(); err != nil {
		t.Fatal(err)
	}
	// The page's load: the program is a ring past the last ack by now
	// unless something holds it.
	time.Sleep(300 * time.Millisecond)

	after := &slowReader{c: e.dial(nil), sid: s.ID(), rate: 200e6, ack: true}
	if att := after.c.attach(s.ID(), &seq); att.Reset || att.Seq != seq {
		t.Fatalf("reattached at seq %d (reset %v), want a resume from %d", att.Seq, att.Reset, seq)
	}
	after.c.send(ackMsg(s.ID(), seq, true))
	after.consumeUntil(func(st *stream) bool { return st.exit != nil })
	got := append(before.st.data, after.st.data...)
	if after.st.resets != 0 || !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("across the reload: %d resyncs, %d bytes of %d, first difference at %d", after.st.resets, len(got), len(want), i)
	}
}
