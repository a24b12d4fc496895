package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The abusive bodies are JSON of the sizes the server's limits are about:
// the command's fills the old 1 MiB limit exactly, the others stay under
// the 64 KiB one with their 60 KiB value where the old errors quoted it.
func TestAbuseBodies(t *testing.T) {
	big, small := abuseBodies()
	if len(big) != 1<<20 {
		t.Errorf("big body is %d bytes, want 1 MiB", len(big))
	}
	var cmd struct{ Command []string }
	if err := json.Unmarshal(big, &cmd); err != nil || len(cmd.Command) != 1 || len(cmd.Command[0]) != 1<<20-len(`{"command":[""]}`) ||
		strings.Trim(cmd.Command[0], "<") != "" {
		t.Errorf("big body: %v, command of %d", err, len(cmd.Command))
	}
	value := strings.Repeat("<", 60<<10)
	want := []map[string]any{
		{"cwd": value},
		{"agent": value},
		{"worktree": map[string]any{"branch": value}},
		{value: 1.0},
	}
	if len(small) != len(want) {
		t.Fatalf("%d small bodies, want %d", len(small), len(want))
	}
	for i, b := range small {
		if len(b) >= 64<<10 {
			t.Errorf("small body %d is %d bytes: the server's 64 KiB limit would refuse it before any handler", i, len(b))
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Errorf("small body %d: %v", i, err)
			continue
		}
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want[i])
		if !bytes.Equal(gb, wb) {
			t.Errorf("small body %d is %.80s..., want %.80s...", i, b, wb)
		}
	}
}

// The request head is a plain POST a server parses, with the body's length
// and the token.
func TestCreateRequestHead(t *testing.T) {
	body := []byte(`{"cwd":"<<<"}`)
	for _, token := range []string{"", "s3cret"} {
		head := createRequestHead("127.0.0.1:8080", token, len(body))
		req, err := http.ReadRequest(bufio.NewReader(io.MultiReader(bytes.NewReader(head), bytes.NewReader(body))))
		if err != nil {
			t.Fatalf("token %q: %v\n%s", token, err, head)
		}
		got, _ := io.ReadAll(req.Body)
		wantAuth := ""
		if token != "" {
			wantAuth = "Bearer " + token
		}
		if req.Method != http.MethodPost || req.URL.Path != "/api/sessions" || req.Host != "127.0.0.1:8080" ||
			req.Header.Get("Content-Type") != "application/json" || req.Header.Get("Origin") != "" ||
			req.Header.Get("Authorization") != wantAuth || !bytes.Equal(got, body) {
			t.Errorf("token %q: %s %s host %s, headers %v, body %q", token, req.Method, req.URL, req.Host, req.Header, got)
		}
	}
}

// Every abusive frame is JSON just under the 1 MiB read limit, with its
// big value where the server looks; the stuffing prompt's text is exactly
// the largest prompt taken.
func TestAbuseFrames(t *testing.T) {
	const id = "0b8f4a52-5a39-4c5e-9a52-1f0c7e1d2b3a"
	frames := abuseFrames(id)
	var kinds []string
	for i, b := range frames {
		if len(b) != abuseFrameBytes || len(b) >= 1<<20 {
			t.Errorf("frame %d is %d bytes, want %d, under 1 MiB", i, len(b), abuseFrameBytes)
		}
		var m struct{ Type, SessionID, Text string }
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("frame %d: %v", i, err)
			continue
		}
		switch {
		case len(m.Type) > 1<<19:
			kinds = append(kinds, "huge type")
		case m.Type == "session.attach" && len(m.SessionID) > 1<<19:
			kinds = append(kinds, "huge session id")
		case m.Type == "prompt.queue" && m.SessionID == id && len(m.Text) > 1<<19:
			kinds = append(kinds, "huge prompt")
		default:
			kinds = append(kinds, "other")
		}
	}
	if got := strings.Join(kinds, ", "); got != "huge type, huge session id, huge prompt" {
		t.Errorf("frames are %s", got)
	}

	var m struct{ Type, SessionID, Text string }
	if err := json.Unmarshal(promptFrame(id, stuffPromptBytes), &m); err != nil {
		t.Fatal(err)
	}
	if m.Type != "prompt.queue" || m.SessionID != id || m.Text != strings.Repeat("<", 65536) {
		t.Errorf("stuffing prompt: %s for %s, %d bytes of text", m.Type, m.SessionID, len(m.Text))
	}
}

// A connection added once the set has closed is closed at once, and
// closing twice closes each connection once.
func TestConnSet(t *testing.T) {
	var s connSet
	closed := map[string]int{}
	if !s.add(func() { closed["a"]++ }) {
		t.Error("an open set refused a connection")
	}
	s.closeAll()
	s.closeAll()
	if s.add(func() { closed["b"]++ }) {
		t.Error("a closed set kept a connection")
	}
	if closed["a"] != 1 || closed["b"] != 1 {
		t.Errorf("closes %v, want each once", closed)
	}
}

// TestAbuseRows states the goals and what was sent, and says when a fresh
// client could not attach or the abuse created sessions.
func TestAbuseRows(t *testing.T) {
	a := &abuseResult{
		BigRequests: 250, BigRequestBytes: 1 << 20, SmallRequests: 250, SmallValueBytes: 60 << 10,
		RequestsWritten: 500, RequestsSeconds: 1.5, WSConns: 20, WSFramesPerConn: 50, WSFrameBytes: abuseFrameBytes,
		WSFramesWritten: 990, FramesSeconds: 4.2, WSConnsCut: 1, WSError: "frame 41 of 50: send: broken pipe",
		StuffPrompts: 7, StuffPromptBytes: 64 << 10, StuffAccepted: 4, StuffRefused: 3, StuffRefusal: "QUEUE_FULL: the prompt queue is full",
		AttachError: "open WebSocket: i/o timeout", AttachedAfter: true, AttachAfterMs: 2,
		AbuseSeconds: 21, Echo: echoStats{Keys: 400, P50Micros: 400, P99Micros: 150e3, MeanMicros: 9e3, MaxMicros: 300e3}, KeyPauseMs: 20,
		HealthProbes: 200, HealthP50Ms: 1.2, HealthMaxMs: 350, BeforeMiB: 11.7, PeakMiB: 45.3, AfterMiB: 25, GrowthMiB: 33.6,
		BeforeSettled: true, AfterSettled: true, GrowthGoalMiB: 64, EchoGoalMs: 100, SessionsCreated: 2,
	}
	var b bytes.Buffer
	if err := (&report{Abuse: a}).writeTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	t.Logf("table:\n%s", table)
	for what, wants := range map[string][]string{
		"abuse: 250 POST /api/sessions of 1 MiB (command) and 250 with 60 KiB values, 20 WebSockets × 50 frames of 1023.9 KiB, all unread; 7 prompts of 64 KiB to one session": {
			"server RSS 11.7 before / peak 45.3 / 25.0 MiB after", "growth at peak 33.6 MiB (goal under 64 MiB: met)",
			"500/500 requests written whole in 1.5 s, 990/1000 frames in 4.2 s (1 connections cut (first: frame 41 of 50: send: broken pipe))",
			"the abuse CREATED 2 sessions",
		},
		"the same: a client's keystroke echo, 400 keys typed 20 ms apart": {
			"p50 400 µs, p99 150.00 ms", "(goal p99 under 100 ms: MISSED)", "GET /api/health p50 1 ms, max 350 ms over 200 probes",
		},
		"the same: a fresh client attaching after 7 prompts of 64 KiB": {
			"during the abuse NOT attached: open WebSocket: i/o timeout", "once its connections closed session.attached after 2 ms",
			"4 queued, 3 refused (first: QUEUE_FULL: the prompt queue is full)",
		},
	} {
		var line string
		for l := range strings.Lines(table) {
			if strings.HasPrefix(l, "| "+what) {
				line = l
			}
		}
		if line == "" {
			t.Errorf("no row %q", what)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(line, want) {
				t.Errorf("row %q lacks %q:\n%s", what, want, line)
			}
		}
	}
}
