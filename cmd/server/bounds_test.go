package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// maxReply is what any error reply may weigh, whatever the request.
const maxReply = 64 << 10

// TestRequestsAndRepliesAreBounded: a body over the API's bound is refused
// with 413 before it is parsed, and no field of a body under it, however
// JSON and %q grow it, makes the error reply large.
func TestRequestsAndRepliesAreBounded(t *testing.T) {
	e := newAPI(t)
	// '<' and '"' are what grow most: six bytes each in JSON's escaping of
	// HTML, two in %q.
	meg := strings.Repeat(`<"`, 1<<19)
	big, err := json.Marshal(map[string]any{"command": []string{meg}})
	if err != nil {
		t.Fatal(err)
	}
	resp, b := e.do(http.MethodPost, "/api/sessions", string(big))
	wantError(t, "1 MiB command", resp, b, http.StatusRequestEntityTooLarge, wire.CodeBodyTooLarge)
	if len(b) > maxReply {
		t.Errorf("1 MiB command: reply of %d bytes", len(b))
	}

	// Just under the body's bound, in every field that is quoted back.
	// ('<' needs no escaping in JSON, so the body stays under the bound.)
	q := `"` + strings.Repeat("<", 60<<10) + `"`
	for _, body := range []string{
		fmt.Sprintf(`{"command":[%s]}`, q),
		fmt.Sprintf(`{"command":["sh",%s]}`, q),
		fmt.Sprintf(`{%s:1}`, q), // an unknown field, named in the decoder's error
		fmt.Sprintf(`{"cwd":%s}`, q),
		fmt.Sprintf(`{"agent":%s}`, q),
		fmt.Sprintf(`{"worktree":{"branch":%s}}`, q),
		fmt.Sprintf(`{"name":%s}`, q),
		fmt.Sprintf(`{"cwd":"%s"}`, strings.Repeat("a/", 2100)),
	} {
		what := body[:min(len(body), 30)]
		resp, b := e.do(http.MethodPost, "/api/sessions", body)
		msg := wantError(t, what, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
		if len(b) > maxReply || len(msg) > 1024 {
			t.Errorf("%s: reply of %d bytes, message of %d", what, len(b), len(msg))
		}
	}
	// A long argv of short strings is refused as such.
	argv, _ := json.Marshal(append([]string{"true"}, strings.Split(strings.Repeat("x,", 300), ",")...))
	resp, b = e.do(http.MethodPost, "/api/sessions", fmt.Sprintf(`{"command":%s}`, argv))
	if msg := wantError(t, "301 arguments", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage); !strings.Contains(msg, "at most 256") {
		t.Errorf("301 arguments: message %q does not give the bound", msg)
	}
	// Nothing of that started a session.
	if n := len(e.list()); n != 0 {
		t.Errorf("%d sessions after refused requests, want 0", n)
	}
	// A query value is quoted clipped too.
	resp, b = e.do(http.MethodDelete, "/api/sessions/x?force="+strings.Repeat("y", 60<<10), "")
	if msg := wantError(t, "long query", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage); len(msg) > 1024 {
		t.Errorf("long query: message of %d bytes", len(msg))
	}
}

// TestKeptSessionsBound: with the default --keep-sessions, the 51st
// session is refused with 409 SESSION_STORE_FULL although none runs, and
// nothing is deleted.
func TestKeptSessionsBound(t *testing.T) {
	e := newAPI(t)
	for i := range 50 {
		s := e.createCommand([]string{"true"})
		testutil.Eventually(t, waitTimeout, fmt.Sprintf("session %d to end", i), func() bool { return !e.get(s.ID).Running })
	}
	resp, b := e.do(http.MethodPost, "/api/sessions", `{"command":["true"]}`)
	if msg := wantError(t, "51st session", resp, b, http.StatusConflict, wire.CodeSessionStoreFull); !strings.Contains(msg, "delete ended sessions") {
		t.Errorf("51st session: message %q does not say what to do", msg)
	}
	if n := len(e.list()); n != 50 {
		t.Errorf("%d sessions listed, want the 50 kept", n)
	}
}

// TestStuffedQueueOpensAfterRestart: a queue filled to its bound with
// what JSON escapes most is restored at start, and attaching to its
// session still works, for every client.
func TestStuffedQueueOpensAfterRestart(t *testing.T) {
	args := serverArgs(t.TempDir(), t.TempDir())
	r1 := startRun(t, noEnv, args...)
	hc := newHTTPClient(t)
	s := createAt(t, hc, "http://"+r1.addr, map[string]any{"command": sleeper()})
	conn, _ := attach(t, r1.addr, s.ID)
	text := strings.Repeat("<", sessions.MaxPromptBytes)
	queued := 0
	for range 7 {
		if err := conn.WriteJSON(map[string]any{"type": wire.TypePromptQueue, "sessionId": s.ID, "text": text}); err != nil {
			t.Fatal(err)
		}
		for m := (wsMsg{}); m.Type != wire.TypePromptQueuedAck && m.Type != wire.TypeError; {
			var err error
			if m, _, err = readWS(conn); err != nil {
				t.Fatal(err)
			}
			if m.Type == wire.TypePromptQueuedAck {
				queued++
			}
		}
	}
	if queued == 0 || queued*len(text) > sessions.MaxQueueBytes {
		t.Fatalf("%d prompts of %d bytes queued; want some, within %d bytes", queued, len(text), sessions.MaxQueueBytes)
	}
	r1.signal(syscall.SIGTERM)
	r1.wait()

	r2 := startRun(t, noEnv, args...)
	for range 2 {
		conn, _, err := dialWS(t, "ws://"+r2.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.WriteJSON(map[string]any{"type": wire.TypeSessionAttach, "sessionId": s.ID}); err != nil {
			t.Fatal(err)
		}
		// Both, in either order: the list is sent as state, when the
		// writer gets to it, and may come before session.attached.
		attached, listed := false, false
		for !attached || !listed {
			m, b, err := readWS(conn)
			if err != nil {
				t.Fatalf("after the restart, waiting for session.attached (%v) and prompt.list (%v): %v", attached, listed, err)
			}
			switch m.Type {
			case wire.TypeSessionAttached:
				attached = true
			case wire.TypePromptList:
				listed = true
				var list struct {
					Prompts []wire.Prompt `json:"prompts"`
				}
				if err := json.Unmarshal(b, &list); err != nil || len(list.Prompts) != queued {
					t.Fatalf("after the restart prompt.list has %d prompts (%v), want %d", len(list.Prompts), err, queued)
				}
			}
		}
		roundTrip(t, conn)
	}
}
