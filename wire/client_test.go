package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/sessions"
)

// clientSeeds holds, for every client-to-server message type, frames the
// decoder must take and frames it must refuse, plus frames that are no
// message at all. TestClientSeeds checks each verdict; the fuzzer starts
// from them.
var clientSeeds = []struct {
	frame string
	valid bool
}{
	{`{"type":"terminal.input","sessionId":"a","data":"ls\r"}`, true},
	{`{"type":"terminal.input","sessionId":"a","data":""}`, true},
	{`{"type":"terminal.input","sessionId":"a"}`, false},
	{`{"type":"terminal.input","data":"ls\r"}`, false},
	{`{"type":"terminal.interrupt","sessionId":"a"}`, true},
	{`{"type":"terminal.interrupt","sessionId":""}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":80,"rows":24}`, true},
	{`{"type":"terminal.resize","sessionId":"a","cols":1000,"rows":1,"take":true}`, true},
	{`{"type":"terminal.resize","sessionId":"a","cols":"80","rows":24}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":80}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":0,"rows":24}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":80,"rows":1001}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":80,"rows":24,"take":1}`, false},
	{`{"type":"terminal.resize","sessionId":"a","cols":1` + strings.Repeat("0", 300) + `,"rows":24}`, false},
	{`{"type":"terminal.ack","sessionId":"a","seq":1048576}`, true},
	{`{"type":"terminal.ack","sessionId":"a","seq":0,"pace":true}`, true},
	{`{"type":"terminal.ack","sessionId":"a"}`, false},
	{`{"type":"terminal.ack","sessionId":"a","seq":-1}`, false},
	{`{"type":"terminal.ack","sessionId":"a","seq":1,"pace":"yes"}`, false},
	{`{"type":"session.attach","sessionId":"a"}`, true},
	{`{"type":"session.attach","sessionId":"a","since":123,"lines":100000}`, true},
	{`{"type":"session.attach","sessionId":"a","lines":0}`, false},
	{`{"type":"session.attach","sessionId":"a","lines":100001}`, false},
	{`{"type":"session.attach","sessionId":"a","since":-1}`, false},
	{`{"type":"session.detach","sessionId":"a"}`, true},
	{`{"type":"session.detach"}`, false},
	{`{"type":"session.resume","sessionId":"5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17"}`, true},
	{`{"type":"session.resume","sessionId":"5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17x"}`, false},
	{`{"type":"client.hello"}`, true},
	{`{"type":"client.hello","name":"alice","color":"#61afef","key":"b3c1f0a9d2e84f6c9a7e","viewing":"a"}`, true},
	{`{"type":"client.hello","name":7}`, false},
	{`{"type":"client.hello","sessionId":"5b0c7c1e-2f43-4d8e-9a51-0e6f3c2a9b17x"}`, false},
	{`{"type":"prompt.queue","sessionId":"a","text":"Now add tests."}`, true},
	{`{"type":"prompt.queue","sessionId":"a","text":""}`, true},
	{`{"type":"prompt.queue","sessionId":"a"}`, false},
	{`{"type":"prompt.dequeue","sessionId":"a","promptId":"p"}`, true},
	{`{"type":"prompt.dequeue","sessionId":"a","promptId":""}`, false},
	{`{"type":"prompt.dequeue","sessionId":"a"}`, false},
	{`{"type":"review.comment","sessionId":"a","path":"a.txt","line":3,"text":"Say 3."}`, true},
	{`{"type":"review.comment","sessionId":"a","path":"a.txt","line":3,"endLine":5,"text":""}`, true},
	{`{"type":"review.comment","sessionId":"a","path":"a.txt","text":"no line"}`, false},
	{`{"type":"review.comment","sessionId":"a","path":"a.txt","line":"3","text":"x"}`, false},
	{`{"type":"review.comment","sessionId":"a","line":3,"text":"no path"}`, false},
	{`{"type":"review.uncomment","sessionId":"a","commentId":"c"}`, true},
	{`{"type":"review.uncomment","sessionId":"a","commentId":""}`, false},
	{`{"type":"review.discard","sessionId":"a"}`, true},
	{`{"type":"review.discard"}`, false},
	{`{"type":"review.send","sessionId":"a"}`, true},
	{`{"type":"review.send","sessionId":""}`, false},
	{`{"type":"heartbeat","timestamp":1.5}`, true},
	{`{"type":"heartbeat"}`, true},
	{`{"type":"heartbeat","timestamp":"now"}`, false},
	{`{"type":"x"}`, false},
	{`{"sessionId":"a"}`, false},
	{`{"type":`, false},
	{`null`, false},
	{`[]`, false},
	{"\xff", false},
}

// required lists, for each client-to-server message type, the fields
// docs/protocol.md says it must carry; a type missing here is unknown.
var required = map[string][]string{
	TypeTerminalInput:     {"sessionId", "data"},
	TypeTerminalInterrupt: {"sessionId"},
	TypeTerminalResize:    {"sessionId", "cols", "rows"},
	TypeTerminalAck:       {"sessionId", "seq"},
	TypeSessionAttach:     {"sessionId"},
	TypeSessionDetach:     {"sessionId"},
	TypeSessionResume:     {"sessionId"},
	TypeClientHello:       {},
	TypePromptQueue:       {"sessionId", "text"},
	TypePromptDequeue:     {"sessionId", "promptId"},
	TypeReviewComment:     {"sessionId", "path", "line", "text"},
	TypeReviewUncomment:   {"sessionId", "commentId"},
	TypeReviewDiscard:     {"sessionId"},
	TypeReviewSend:        {"sessionId"},
	TypeHeartbeat:         {},
}

// followsProtocol reports whether m, a frame whose fields all had the
// right JSON types, is a message docs/protocol.md allows: a known type,
// its required fields present (sessionId and promptId not empty), a
// sessionId no longer than a UUID, sizes within the session's bounds and
// lines within 1..MaxReplayLines. It restates the rules from the document,
// apart from the decoder's code, so that the two can disagree.
func followsProtocol(m *ClientMessage) bool {
	fields, known := required[m.Type]
	if !known || m.SessionID != nil && len(*m.SessionID) > MaxSessionIDLen {
		return false
	}
	present := map[string]bool{
		"sessionId": m.SessionID != nil && *m.SessionID != "",
		"data":      m.Data != nil,
		"cols":      m.Cols != nil,
		"rows":      m.Rows != nil,
		"seq":       m.Seq != nil,
		"text":      m.Text != nil,
		"promptId":  m.PromptID != nil && *m.PromptID != "",
		"path":      m.Path != nil,
		"line":      m.Line != nil,
		"commentId": m.CommentID != nil && *m.CommentID != "",
	}
	for _, f := range fields {
		if !present[f] {
			return false
		}
	}
	inSize := func(n *int) bool { return n == nil || *n >= sessions.MinSize && *n <= sessions.MaxSize }
	if m.Type == TypeTerminalResize && !(inSize(m.Cols) && inSize(m.Rows)) {
		return false
	}
	if m.Type == TypeSessionAttach && m.Lines != nil && (*m.Lines < 1 || *m.Lines > MaxReplayLines) {
		return false
	}
	return true
}

// checkDecode decodes b and fails t unless the verdict is the protocol's:
// a frame that is not a JSON object of well-typed fields is refused, and
// one that is is taken exactly when followsProtocol says so. A refusal is
// an INVALID_MESSAGE whose reply cannot grow with what the client sent.
func checkDecode(t *testing.T, b []byte) (accepted bool) {
	t.Helper()
	m, perr := DecodeClient(b)
	if (m == nil) == (perr == nil) {
		t.Fatalf("decode %q: message %v and error %v", b, m, perr)
	}
	if perr != nil {
		if perr.Code != CodeInvalidMessage || perr.Message == "" {
			t.Fatalf("decode %q: error %+v", b, perr)
		}
		if len(perr.SessionID) > MaxSessionIDLen {
			t.Fatalf("decode %q: the error echoes a %d-byte sessionId", b, len(perr.SessionID))
		}
		// 64 bytes of quoted client text at most, plus the message's own words.
		if len(perr.Message) > 64+len("...")+128 {
			t.Fatalf("decode %q: error message of %d bytes: %q", b, len(perr.Message), perr.Message)
		}
	}
	var parsed ClientMessage
	want := json.Unmarshal(b, &parsed) == nil && followsProtocol(&parsed)
	if got := perr == nil; got != want {
		t.Fatalf("decode %q: accepted %v, but the protocol says %v (error %v)", b, got, want, perr)
	}
	return want
}

// TestClientSeeds checks the decoder's verdict on each seed and that the
// seeds cover every client-to-server message type, taken and refused.
func TestClientSeeds(t *testing.T) {
	taken, refused := map[string]bool{}, map[string]bool{}
	for _, s := range clientSeeds {
		if got := checkDecode(t, []byte(s.frame)); got != s.valid {
			t.Errorf("seed %s: valid %v, want %v", s.frame, got, s.valid)
		}
		var probe struct{ Type string }
		_ = json.Unmarshal([]byte(s.frame), &probe) // frames that are no object have no type
		if s.valid {
			taken[probe.Type] = true
		} else {
			refused[probe.Type] = true
		}
	}
	for typ := range required {
		if !taken[typ] || !refused[typ] {
			t.Errorf("no seed of type %s is taken (%v) or none refused (%v)", typ, taken[typ], refused[typ])
		}
	}
}

// FuzzDecodeClientMessage checks that no input crashes the decoder and
// that it takes exactly the frames the protocol allows.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range clientSeeds {
		f.Add([]byte(s.frame))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecode(t, b)
	})
}
