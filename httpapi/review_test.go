package httpapi_test

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/wire"
)

// TestSendReview: POST /api/sessions/:id/review queues one prompt that
// quotes the commented lines from the session's tree; bad comments are
// refused with what is wrong, and nothing is queued.
func TestSendReview(t *testing.T) {
	e := newAPI(t)
	if err := os.WriteFile(filepath.Join(e.dir, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", e.dir, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	s := e.CreateCommand(apitest.Sleeper())

	resp, b := e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/review",
		`{"author":"ci","comments":[{"path":"a.txt","line":2,"text":"Say 2."},{"path":"gone.go","line":1,"endLine":3,"text":"Why?"}]}`)
	apitest.WantStatus(t, "send a review", resp, b, http.StatusOK)
	if !strings.Contains(string(b), `"position":1`) || !strings.Contains(string(b), `"promptId":"`) {
		t.Fatalf("reply %s, want a promptId at position 1", b)
	}
	sess, err := e.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := sess.Queue()
	want := "A reviewer left 2 comments on your changes. Please address them:\n\n" +
		"1. a.txt:2\n   > two\n   Say 2.\n\n2. gone.go:1-3\n   Why?\n"
	if len(q.Prompts) != 1 || q.Prompts[0].Text != want || q.Prompts[0].Author.Name != "ci" {
		t.Fatalf("queue = %+v, want one prompt by ci:\n%s", q.Prompts, want)
	}

	for _, tc := range []struct{ what, body string }{
		{"no comments", `{"comments":[]}`},
		{"a path out of the tree", `{"comments":[{"path":"../etc/passwd","line":1,"text":"x"}]}`},
		{"line 0", `{"comments":[{"path":"a.txt","line":0,"text":"x"}]}`},
		{"a blank comment", `{"comments":[{"path":"a.txt","line":1,"text":"  "}]}`},
		{"an escape in the text", `{"comments":[{"path":"a.txt","line":1,"text":"x\u001b[201~"}]}`},
		{"an unknown field", `{"comments":[{"path":"a.txt","line":1,"text":"x","color":"red"}]}`},
		{"an author with a control character", `{"author":"a\u0007","comments":[{"path":"a.txt","line":1,"text":"x"}]}`},
	} {
		resp, b := e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/review", tc.body)
		apitest.WantError(t, tc.what, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}
	if n := len(sess.Queue().Prompts); n != 1 {
		t.Errorf("%d prompts queued after the refused requests, want 1", n)
	}
	resp, b = e.Do(http.MethodPost, "/api/sessions/"+uuid.NewString()+"/review", `{"comments":[{"path":"a","line":1,"text":"x"}]}`)
	apitest.WantError(t, "an unknown session", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
}
