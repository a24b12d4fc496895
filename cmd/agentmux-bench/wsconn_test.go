package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"
)

// outputFrame encodes a terminal.output message in the server's layout,
// with encoding/json's escaping of data (which escapes more than the
// server does: <, >, &, U+2028, U+2029, invalid UTF-8 as \ufffd).
func outputFrame(t testing.TB, sid, data string, seq uint64) []byte {
	t.Helper()
	d, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Appendf(nil, `{"type":"terminal.output","sessionId":"%s","data":%s,"seq":%d}`, sid, d, seq)
}

// checkParse decodes frame both by hand and with encoding/json and
// compares.
func checkParse(t *testing.T, frameBytes []byte) {
	t.Helper()
	var want jsonFrame
	if err := json.Unmarshal(frameBytes, &want); err != nil {
		t.Fatalf("test frame %q: %v", frameBytes, err)
	}
	for _, keep := range []bool{false, true} {
		var f frame
		if _, err := parseFrame(frameBytes, &f, nil, keep); err != nil {
			t.Fatalf("parseFrame(%q): %v", frameBytes, err)
		}
		if f.Type != want.Type || f.SessionID != want.SessionID || f.Seq != want.Seq || f.DataBytes != len(want.Data) {
			t.Errorf("parseFrame(%q) = %+v, want %+v (%d data bytes)", frameBytes, f, want, len(want.Data))
		}
		if keep && string(f.Data) != want.Data {
			t.Errorf("parseFrame(%q) data %q, want %q", frameBytes, f.Data, want.Data)
		}
	}
}

func TestParseOutputFrame(t *testing.T) {
	for _, data := range []string{
		"",
		"plain ascii line\r\n",
		"h\u00e9llo \u65e5\u672c\u8a9e \u2713 \U0001F600",
		"\x1b[32m$\x1b[0m \"quoted\" back\\slash\ttab\x00nul\x7f",
		"\xff\xfeinvalid",
		"<html>&amp;\u2028\u2029",
		`","seq":99}` + "\"," + `"seq":1`,
		strings.Repeat("x", 100000),
	} {
		checkParse(t, outputFrame(t, "5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17", data, 48213))
	}
	// Escapes encoding/json never writes but may read: surrogate pairs,
	// lone surrogates, \/ and \b.
	for _, raw := range []string{`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00x"`, `"\ud83d\u0041"`, `"a\/b\b\f"`} {
		checkParse(t, fmt.Appendf(nil, `{"type":"terminal.output","sessionId":"id","data":%s,"seq":1}`, raw))
	}
}

func TestParseOtherFrames(t *testing.T) {
	for _, b := range []string{
		`{"type":"session.attached","sessionId":"s","seq":7,"cols":80,"rows":24,"status":"active","reset":true}`,
		`{"type":"terminal.exit","sessionId":"s","exitCode":3}`,
		`{"type":"heartbeat","timestamp":1795298344363}`,
		// Output in another field order takes the slow path.
		`{"type":"terminal.output","seq":12,"sessionId":"s","data":"h\u00e9llo\n"}`,
	} {
		checkParse(t, []byte(b))
	}
	var f frame
	if _, err := parseFrame([]byte(`{"type":"terminal.output","sessionId":"s","data":"\q","seq":1}`), &f, nil, false); err == nil {
		t.Error("bad escape accepted")
	}
	if _, err := parseFrame([]byte(`{"type":"terminal.output","sessionId":"s","data":"x","seq":-1}`), &f, nil, false); err == nil {
		t.Error("bad seq accepted")
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"", "a\r\n", "\x1b[0m", "日本語", "\xff", `\u`, `\ud800\udc00`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, n, err := unescapeJSON(nil, b[1:len(b)-1], true)
		if err != nil || string(got) != want || n != len(want) {
			t.Fatalf("unescapeJSON(%s) = %q, %d, %v; want %q", b, got, n, err, want)
		}
		if !utf8.ValidString(want) {
			t.Fatalf("encoding/json gave invalid UTF-8 %q", want)
		}
	})
}

// TestStreamCount follows a stream with a mid-stream resync: the gap is
// counted as lost, and frames of other sessions are left out.
func TestStreamCount(t *testing.T) {
	st := &streamCount{}
	for _, f := range []frame{
		{Type: typeSessionAttached, SessionID: "s", Seq: 0, Reset: true},
		{Type: typeTerminalOutput, SessionID: "s", Seq: 100, DataBytes: 100},
		{Type: typeTerminalOutput, SessionID: "other", Seq: 5000, DataBytes: 5000},
		{Type: typeTerminalOutput, SessionID: "s", Seq: 250, DataBytes: 150},
		{Type: typeSessionAttached, SessionID: "s", Seq: 1000, Reset: true},
		{Type: typeTerminalOutput, SessionID: "s", Seq: 1400, DataBytes: 400},
		{Type: typeTerminalExit, SessionID: "s", ExitCode: 2},
	} {
		st.apply(&f, "s")
	}
	want := streamCount{seq: 1400, attached: true, frames: 3, dataBytes: 650, resyncs: 1, lostBytes: 750, exited: true, exitCode: 2}
	if *st != want {
		t.Errorf("count %+v, want %+v", *st, want)
	}
	if int64(st.lostBytes)+st.dataBytes != int64(st.seq) {
		t.Errorf("lost %d + received %d != stream %d", st.lostBytes, st.dataBytes, st.seq)
	}
}

// TestWriteFlood writes a paced total and continues the lines across
// writes.
func TestWriteFlood(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const total = 3*maxWriterChunk + 17
	done := make(chan error, 1)
	go func() {
		done <- writeFlood(w, 0, total)
		w.Close()
	}()
	var got bytes.Buffer
	if _, err := got.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat(writerLine, total/len(writerLine)+1)[:total]
	if got.String() != want {
		t.Errorf("wrote %d bytes, not the %d expected lines", got.Len(), total)
	}
}

// TestReadUntilAcks follows a stream as an acknowledging client, against
// a server that records what it is sent: the client acknowledges its
// position once before the program starts, then every output frame and
// resync of its session, with the frame's seq, and nothing of other
// sessions.
func TestReadUntilAcks(t *testing.T) {
	frames := []string{
		`{"type":"terminal.output","sessionId":"s","data":"` + strings.Repeat("x", 94) + `","seq":100}`,
		`{"type":"terminal.output","sessionId":"other","data":"y","seq":7}`,
		`{"type":"terminal.output","sessionId":"s","data":"` + strings.Repeat("x", 150) + `","seq":250}`,
		`{"type":"session.attached","sessionId":"s","seq":1000,"reset":true}`,
		`{"type":"terminal.output","sessionId":"s","data":"` + strings.Repeat("x", 400) + `","seq":1400}`,
		`{"type":"terminal.exit","sessionId":"s","exitCode":0}`,
	}
	got := make(chan []string, 1)
	upgrader := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		conn, err := upgrader.Upgrade(w, req, nil)
		if err != nil {
			got <- []string{err.Error()}
			return
		}
		defer conn.Close()
		var seen []string
		defer func() { got <- seen }()
		// The client's position ack comes first; then the stream.
		_, b, err := conn.ReadMessage()
		if err != nil {
			return
		}
		seen = append(seen, string(b))
		for _, f := range frames {
			if err := conn.WriteMessage(websocket.TextMessage, []byte(f)); err != nil {
				return
			}
		}
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return // the client closed
			}
			seen = append(seen, string(b))
		}
	}))
	defer srv.Close()

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := dialWS(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), "")
	if err != nil {
		t.Fatal(err)
	}
	st := &streamCount{seq: 6, attached: true}
	if err := c.startPacing("s", st); err != nil {
		t.Fatal(err)
	}
	if err := c.readUntil("s", st, exited); err != nil {
		t.Fatal(err)
	}
	c.close()
	ack := func(seq int) string { return fmt.Sprintf(`{"type":"terminal.ack","sessionId":"s","seq":%d}`, seq) }
	want := []string{ack(6), ack(100), ack(250), ack(1000), ack(1400)}
	if seen := <-got; !slices.Equal(seen, want) {
		t.Errorf("the server got\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if st.acks != len(want) || st.frames != 3 || st.resyncs != 1 {
		t.Errorf("count %+v, want %d acks, 3 frames, 1 resync", *st, len(want))
	}
}

// TestProcessMem reads this process's memory: the parts add up to the
// whole.
func TestProcessMem(t *testing.T) {
	m, err := processMem(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS == 0 || m.Anon == 0 || m.File == 0 || m.Anon+m.File > m.RSS+(1<<20) {
		t.Errorf("memory %+v", m)
	}
	if _, err := processMem(-1); err == nil {
		t.Error("process -1 read")
	}
}

// TestSettleRSS waits for this process's memory to hold still, briefly,
// and reports how long it waited.
func TestSettleRSS(t *testing.T) {
	m, took, settled, err := settleRSS(t.Context(), os.Getpid(), 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !settled || m.RSS == 0 || took < 200*time.Millisecond {
		t.Errorf("settled %v after %v at %+v; want settled after at least the window", settled, took, m)
	}
}
