package ws_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// gitRepo makes a git repository holding files, with a subdirectory sub,
// and returns its top.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	top := t.TempDir()
	for name, body := range files {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", top, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	return top
}

// TestReviewDraftToPrompt: two reviewers comment on a session's lines;
// each sees the draft with both comments and their authors; only an
// author takes a comment back; sending makes one queued prompt by the
// sender that names path:line, quotes the lines from the session's tree
// (paths from its top, though the session runs in a subdirectory) and
// gives the comments; the draft is then empty for everyone.
func TestReviewDraftToPrompt(t *testing.T) {
	top := gitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n", "sub/b.go": "package b\n"})
	e := newEnv(t, envOptions{})
	s, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "sleep 60"}, Cwd: filepath.Join(top, "sub")})
	if err != nil {
		t.Fatal(err)
	}
	sid := s.ID()
	a, b := e.dial(nil), e.dial(nil)
	a.hello(map[string]any{"name": "alice", "key": "alice-key-0123456789"})
	b.hello(map[string]any{"name": "bob", "key": "bob-key-0123456789ab"})
	a.attachList(sid)
	b.attachList(sid)
	if d := b.expect(wire.TypeReviewDraft, sid); len(d.Comments) != 0 {
		t.Fatalf("a new session's draft = %+v", d.Comments)
	}

	a.send(map[string]any{"type": wire.TypeReviewComment, "sessionId": sid, "path": "a.txt", "line": 2, "text": "Say 2."})
	for d := b.expect(wire.TypeReviewDraft, sid); len(d.Comments) < 1; d = b.expect(wire.TypeReviewDraft, sid) {
	}
	b.send(map[string]any{"type": wire.TypeReviewComment, "sessionId": sid, "path": "sub/b.go", "line": 1, "text": "Name it better."})
	var d msg
	for len(d.Comments) < 2 {
		d = a.expect(wire.TypeReviewDraft, sid)
	}
	if d.Comments[0].Author.Name != "alice" || d.Comments[1].Author.Name != "bob" || d.Comments[0].Path != "a.txt" || d.Comments[0].EndLine != 2 {
		t.Fatalf("draft = %+v", d.Comments)
	}
	for d := b.expect(wire.TypeReviewDraft, sid); len(d.Comments) < 2; d = b.expect(wire.TypeReviewDraft, sid) {
	}

	a.send(map[string]any{"type": wire.TypeReviewUncomment, "sessionId": sid, "commentId": d.Comments[1].ID})
	if m := a.expect(wire.TypeError, sid); m.Code != wire.CodeNotCommentAuthor {
		t.Fatalf("alice taking back bob's comment: %+v, want %s", m, wire.CodeNotCommentAuthor)
	}
	a.send(map[string]any{"type": wire.TypeReviewComment, "sessionId": sid, "path": "../x", "line": 1, "text": "out"})
	if m := a.expect(wire.TypeError, sid); m.Code != wire.CodeInvalidMessage {
		t.Fatalf("a comment outside the tree: %+v, want %s", m, wire.CodeInvalidMessage)
	}

	b.send(map[string]any{"type": wire.TypeReviewSend, "sessionId": sid})
	ack := b.expect(wire.TypePromptQueuedAck, sid)
	q := a.expect(wire.TypePromptQueued, sid)
	want := "A reviewer left 2 comments on your changes. Please address them:\n\n" +
		"1. a.txt:2\n   > two\n   Say 2.\n\n" +
		"2. sub/b.go:1\n   > package b\n   Name it better.\n"
	if q.Prompt == nil || q.Prompt.ID != ack.PromptID || q.Prompt.Author != "bob" || q.Prompt.Text != want {
		t.Fatalf("queued prompt = %+v, want bob's:\n%s", q.Prompt, want)
	}
	for d = a.expect(wire.TypeReviewDraft, sid); len(d.Comments) != 0; d = a.expect(wire.TypeReviewDraft, sid) {
	}
	b.send(map[string]any{"type": wire.TypeReviewSend, "sessionId": sid})
	if m := b.expect(wire.TypeError, sid); m.Code != wire.CodeInvalidMessage {
		t.Fatalf("sending an empty draft: %+v, want %s", m, wire.CodeInvalidMessage)
	}
}

// TestReviewDraftSurvivesAFailedSend: a send the queue refuses puts the
// comments back, so nothing written is lost.
func TestReviewDraftSurvivesAFailedSend(t *testing.T) {
	e := newEnv(t, envOptions{})
	s := e.session("sh", "-c", "sleep 60")
	sid := s.ID()
	a := e.dial(nil)
	a.attachList(sid)
	for range sessions.MaxQueuedPrompts {
		if _, _, err := s.QueuePrompt(sessions.Author{ID: "x", Name: "x"}, "filler"); err != nil {
			t.Fatal(err)
		}
	}
	a.send(map[string]any{"type": wire.TypeReviewComment, "sessionId": sid, "path": "a", "line": 1, "text": "keep me"})
	a.send(map[string]any{"type": wire.TypeReviewSend, "sessionId": sid})
	if m := a.expect(wire.TypeError, sid); m.Code != wire.CodeQueueFull {
		t.Fatalf("send to a full queue: %+v, want %s", m, wire.CodeQueueFull)
	}
	// The draft as a page that opens now finds it.
	late := e.dial(nil)
	late.attachList(sid)
	if d := late.expect(wire.TypeReviewDraft, sid); len(d.Comments) != 1 || d.Comments[0].Text != "keep me" {
		t.Fatalf("draft after a failed send = %+v", d.Comments)
	}
}
