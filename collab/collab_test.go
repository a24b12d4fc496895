package collab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait; generous, for -race on a busy machine.
const waitTimeout = 20 * time.Second

// client records what collab sends it, as a transport's client would
// queue it.
type client struct {
	mu    sync.Mutex
	sent  []sent
	marks []mark
}

type sent struct {
	informational bool
	msg           map[string]any
	raw           []byte
}

type mark struct{ kind, sessionID string }

var _ collab.Client = (*client)(nil)

func (c *client) Send(b []byte)                    { c.record(false, b) }
func (c *client) SendInformational(b []byte)       { c.record(true, b) }
func (c *client) MarkState(kind, sessionID string) { c.add(mark{kind, sessionID}) }

func (c *client) record(informational bool, b []byte) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err) // collab sent something that is not JSON
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, sent{informational, m, slices.Clone(b)})
}

func (c *client) add(m mark) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marks = append(c.marks, m)
}

// types returns the types of the messages sent so far, and forgets them.
func (c *client) types() []string {
	var ts []string
	for _, s := range c.take() {
		ts = append(ts, s.msg["type"].(string))
	}
	return ts
}

// takeRaw returns the messages sent so far as they were encoded, and
// forgets them.
func (c *client) takeRaw() [][]byte {
	var raw [][]byte
	for _, s := range c.take() {
		raw = append(raw, s.raw)
	}
	return raw
}

// take returns the messages sent so far, and forgets them.
func (c *client) take() []sent { return drain(c, &c.sent) }

// takeMarks returns the states marked so far, and forgets them.
func (c *client) takeMarks() []mark { return drain(c, &c.marks) }

// drain returns what one of c's lists holds and empties it, under c's
// lock.
func drain[T any](c *client, list *[]T) []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := *list
	*list = nil
	return v
}

// env is an App over a real session manager.
type env struct {
	t   *testing.T
	mgr *sessions.Manager
	app *collab.App
}

func newEnv(t *testing.T) *env {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	mgr, err := sessions.NewManager(sessions.Options{Workspace: t.TempDir(), StopGrace: time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	app, err := collab.New(collab.Options{Sessions: mgr, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	mgr.Subscribe(app.OnEvent)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if err := mgr.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("shutdown sessions: %v", err)
		}
	})
	return &env{t: t, mgr: mgr, app: app}
}

// session starts a shell that waits, in dir when it is not "".
func (e *env) session(dir string) *sessions.Session {
	e.t.Helper()
	s, err := e.mgr.Create(sessions.CreateOptions{Command: []string{"sh", "-c", "stty raw -echo; cat >/dev/null"}, Cwd: dir})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// state renders a state message and decodes it into v.
func (e *env) state(kind, sid string, v any) {
	e.t.Helper()
	b, err := e.app.RenderState(kind, sid)
	if err != nil {
		e.t.Fatalf("render %s of %s: %v", kind, sid, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("decode %s: %v", kind, err)
	}
}

func TestNewRequiresSessions(t *testing.T) {
	if _, err := collab.New(collab.Options{}); err == nil {
		t.Fatal("New with no Sessions: no error")
	}
}

// A client that joins is sent what the others were told and still
// holds: the memory level while it is not ok, each live session's last
// diff, and the ports listing; a destroyed session's diff is not.
func TestJoinSendsTheCurrentState(t *testing.T) {
	e := newEnv(t)
	first := &client{}
	p := e.app.Join(first)
	select {
	case <-e.app.PortsWanted():
	default:
		t.Fatal("the first client joined with no ports listing, and the poller was not asked for one")
	}
	if got := first.types(); len(got) != 0 {
		t.Fatalf("a client joining a quiet workspace was sent %v", got)
	}

	kept, gone := e.session(""), e.session("")
	e.app.OnMemory(memory.Status{Level: memory.Warning, Percent: 91})
	e.app.OnSessionDiff(kept.ID(), changes.Summarized{Base: "abc", Additions: 3})
	e.app.OnSessionDiff(gone.ID(), changes.Summarized{Base: "def", Deletions: 1})
	e.app.OnPorts(ports.Listing{Ports: []ports.Port{{Port: 5173}}})
	if err := e.mgr.Destroy(context.Background(), gone.ID()); err != nil {
		t.Fatal(err)
	}
	if got := first.types(); !slices.Contains(got, wire.TypeResourceWarning) || !slices.Contains(got, wire.TypeSessionDiff) {
		t.Fatalf("the joined client was sent %v; want the warning and the diffs as they came", got)
	}

	late := &client{}
	q := e.app.Join(late)
	defer e.app.Leave(q)
	msgs := late.take()
	var diffs []string
	var warned bool
	for _, m := range msgs {
		switch m.msg["type"] {
		case wire.TypeResourceWarning:
			warned = !m.informational && m.msg["level"] == string(memory.Warning)
		case wire.TypeSessionDiff:
			diffs = append(diffs, m.msg["sessionId"].(string))
		default:
			t.Errorf("a joining client was sent %v", m.msg)
		}
	}
	if !warned {
		t.Errorf("a joining client was not told the memory warning: %v", msgs)
	}
	if !slices.Equal(diffs, []string{kept.ID()}) {
		t.Errorf("a joining client was sent the diffs of %v; want only %s's", diffs, kept.ID())
	}
	if marks := late.takeMarks(); !slices.Contains(marks, mark{wire.TypePortsChanged, ""}) {
		t.Errorf("a joining client was not marked for the ports listing: %v", marks)
	}
	select {
	case <-e.app.PortsWanted():
		t.Error("the poller was asked for a listing collab had")
	default:
	}

	// Back to ok: a client that joins now is not warned.
	e.app.OnMemory(memory.Status{Level: memory.OK, Percent: 20})
	calm := &client{}
	r := e.app.Join(calm)
	if got := calm.types(); slices.Contains(got, wire.TypeResourceWarning) {
		t.Errorf("a client joining at ok memory was sent %v", got)
	}
	e.app.Leave(r)
	e.app.Leave(p)
}

// The ports listing is kept only while someone is there to be shown it,
// and each change marks every client once.
func TestPortsKeptWhileClientsAre(t *testing.T) {
	e := newEnv(t)
	l := ports.Listing{Ports: []ports.Port{{Port: 3000}}}
	e.app.OnPorts(l)
	if _, known := e.app.Ports(); known {
		t.Fatal("a listing was kept with nobody to show it")
	}
	c := &client{}
	p := e.app.Join(c)
	e.app.OnPorts(l)
	e.app.OnPorts(l) // unchanged: no mark
	if got := c.takeMarks(); !slices.Equal(got, []mark{{wire.TypePortsChanged, ""}}) {
		t.Fatalf("marks after a listing and the same again: %v; want one ports.changed", got)
	}
	if now, known := e.app.Ports(); !known || !now.Equal(l) {
		t.Fatalf("Ports() = %v, %v; want %v", now, known, l)
	}
	e.app.OnPorts(ports.Listing{})
	if now, _ := e.app.Ports(); now.Ports == nil {
		t.Error("an empty listing is kept as nil ports; clients are sent a list, never null")
	}
	e.app.Leave(p)
	if _, known := e.app.Ports(); known {
		t.Error("the listing was kept after the last client left")
	}
}

// A hello that breaks a rule changes nothing and sends nothing; a good
// one is welcomed, and the same key is the same author on every client.
func TestHello(t *testing.T) {
	e := newEnv(t)
	c1, c2 := &client{}, &client{}
	p1, p2 := e.app.Join(c1), e.app.Join(c2)
	defer e.app.Leave(p1)
	defer e.app.Leave(p2)
	str := func(s string) *string { return &s }
	before := e.app.Author(p1)
	for _, bad := range []collab.Hello{
		{Color: str("red")},
		{Name: str("   ")},
		{Key: str("short")},
		{Viewing: str(strings.Repeat("x", wire.MaxSessionIDLen+1))},
		{Name: str("ok"), Color: str("#12345g")},
	} {
		if err := e.app.Hello(p1, bad); !errors.Is(err, sessions.ErrInvalid) {
			t.Errorf("hello %+v: %v; want ErrInvalid", bad, err)
		}
	}
	if got := c1.types(); len(got) != 0 {
		t.Errorf("refused hellos sent %v", got)
	}
	if after := e.app.Author(p1); after != before {
		t.Errorf("a refused hello changed the participant: %v, then %v", before, after)
	}
	key := "0123456789abcdef-key"
	if err := e.app.Hello(p1, collab.Hello{Name: str(" Ada "), Color: str("#aabbcc"), Key: &key}); err != nil {
		t.Fatal(err)
	}
	msgs := c1.take()
	if len(msgs) != 1 || msgs[0].msg["type"] != wire.TypeClientWelcome || msgs[0].msg["name"] != "Ada" ||
		msgs[0].msg["color"] != "#aabbcc" || msgs[0].msg["id"] != p1.ID() || msgs[0].informational {
		t.Fatalf("welcome: %v", msgs)
	}
	if err := e.app.Hello(p2, collab.Hello{Key: &key}); err != nil {
		t.Fatal(err)
	}
	a1, a2 := e.app.Author(p1), e.app.Author(p2)
	if a1.ID != a2.ID || a1.ID == before.ID || strings.Contains(a1.ID, key) {
		t.Errorf("authors with one key: %q and %q (before %q); want one id, not the key", a1.ID, a2.ID, before.ID)
	}

	// A guest who chose nothing keeps its name and colour with its key:
	// a reload (a new connection, the same key) is the same person to
	// the others; one who chose keeps the choice.
	guestKey := "guest-key-0123456789"
	var first wire.WelcomeMessage
	for i := range 3 {
		c := &client{}
		p := e.app.Join(c)
		c.take()
		if err := e.app.Hello(p, collab.Hello{Key: &guestKey}); err != nil {
			t.Fatal(err)
		}
		msgs := c.take()
		if len(msgs) != 1 || msgs[0].msg["type"] != wire.TypeClientWelcome {
			t.Fatalf("connection %d: welcome %v", i+1, msgs)
		}
		w := wire.WelcomeMessage{Name: msgs[0].msg["name"].(string), Color: msgs[0].msg["color"].(string), AuthorID: msgs[0].msg["authorId"].(string)}
		if i == 0 {
			first = w
		} else if w != first {
			t.Errorf("connection %d with the same key: %+v; connection 1 was %+v", i+1, w, first)
		}
		e.app.Leave(p)
	}
	if !strings.HasPrefix(first.Name, "guest-") || first.Name != "guest-"+first.AuthorID[:4] {
		t.Errorf("a guest's name %q; want guest- and its author's first four", first.Name)
	}
	if err := e.app.Hello(p2, collab.Hello{Key: &guestKey}); err != nil {
		t.Fatal(err)
	}
	if got := e.app.Author(p2); got.Name != "guest-"+got.ID[:4] {
		t.Errorf("a new key gave a guest the name %q; want guest-%s", got.Name, got.ID[:4])
	}
	if err := e.app.Hello(p1, collab.Hello{Key: &guestKey}); err != nil {
		t.Fatal(err)
	}
	if got := e.app.Author(p1); got.Name != "Ada" {
		t.Errorf("a new key renamed a participant who chose Ada: %q", got.Name)
	}
}

// participants decodes a session.participants.
type participants struct {
	Participants []struct {
		ID          string `json:"id"`
		Viewing     bool   `json:"viewing"`
		LastInputAt int64  `json:"lastInputAt"`
	} `json:"participants"`
}

// Who is in a session, who typed there, and who is attached at all: each
// change marks every client, once per typing burst, and a client's leave
// or the session's end drops it.
func TestPresenceAndTyping(t *testing.T) {
	e := newEnv(t)
	s := e.session("")
	sid := s.ID()
	c1, c2 := &client{}, &client{}
	p1, p2 := e.app.Join(c1), e.app.Join(c2)
	defer e.app.Leave(p2)
	if p1.IsAttached() {
		t.Fatal("a participant in no session is attached")
	}
	e.app.Present(p1, sid, true)
	e.app.Present(p1, sid, true) // no change, no mark
	if !p1.IsAttached() {
		t.Fatal("a participant in a session is not attached")
	}
	want := []mark{{wire.TypeSessionParticipants, sid}}
	if m1, m2 := c1.takeMarks(), c2.takeMarks(); !slices.Equal(m1, want) || !slices.Equal(m2, want) {
		t.Fatalf("marks after one attach: %v and %v; want %v each", m1, m2, want)
	}

	// A newcomer's hello learns who is where, for tabs it has not opened.
	if err := e.app.Hello(p2, collab.Hello{}); err != nil {
		t.Fatal(err)
	}
	if got := c2.takeMarks(); !slices.Equal(got, want) {
		t.Errorf("a newcomer's hello marked %v; want %v", got, want)
	}

	e.app.Typed(p2, sid) // not attached: not shown
	e.app.Typed(p1, sid)
	e.app.Typed(p1, sid) // the same burst: announced once
	if got := c2.takeMarks(); !slices.Equal(got, want) {
		t.Errorf("marks after a burst of typing: %v; want one", got)
	}
	var ps participants
	e.state(wire.TypeSessionParticipants, sid, &ps)
	if len(ps.Participants) != 1 || ps.Participants[0].ID != p1.ID() || ps.Participants[0].LastInputAt == 0 {
		t.Fatalf("participants after typing: %+v", ps)
	}

	e.app.Leave(p1)
	if got := c2.takeMarks(); !slices.Equal(got, want) {
		t.Errorf("marks after a participant left: %v; want %v", got, want)
	}
	e.state(wire.TypeSessionParticipants, sid, &ps)
	if len(ps.Participants) != 0 {
		t.Errorf("participants after the only one left: %+v", ps)
	}

	e.app.Present(p2, sid, true)
	if err := e.mgr.Destroy(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	if p2.IsAttached() {
		t.Error("a participant of a destroyed session is still attached")
	}
	if _, err := e.app.RenderState(wire.TypeSessionParticipants, sid); err == nil {
		t.Error("a destroyed session still has participants to render")
	}
}

// resized decodes a session.resized.
func resized(t *testing.T, msgs []sent) []string {
	t.Helper()
	var by []string
	for _, m := range msgs {
		if m.msg["type"] == wire.TypeSessionResized {
			by = append(by, m.msg["by"].(string))
		}
	}
	return by
}

// The size rule: a resize is remembered, applied only by whoever holds
// the size or takes it, and whoever types takes it; a terminal's answer
// to a query is not typing.
func TestSizeRule(t *testing.T) {
	e := newEnv(t)
	s := e.session("")
	watcher1, typist := &client{}, &client{}
	w, ty := e.app.Join(watcher1), e.app.Join(typist)
	defer e.app.Leave(w)
	defer e.app.Leave(ty)
	// step checks that a call succeeded and left the session at want.
	step := func(what string, err error, want [2]int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if i := s.Info(); [2]int{i.Cols, i.Rows} != want {
			t.Fatalf("size after %s: %dx%d; want %v", what, i.Cols, i.Rows, want)
		}
	}

	step("a take", e.app.Resize(ty, s, 100, 30, true), [2]int{100, 30})
	if by := resized(t, watcher1.take()); !slices.Equal(by, []string{ty.ID()}) {
		t.Fatalf("session.resized by %v; want %s once", by, ty.ID())
	}
	typist.take()
	step("a watcher's resize", e.app.Resize(w, s, 40, 20, false), [2]int{100, 30})
	step("a terminal report", e.app.TypedSize(w, s, []byte("\x1b[3;1R")), [2]int{100, 30})
	step("the watcher typed", e.app.TypedSize(w, s, []byte("x")), [2]int{40, 20})
	if by := resized(t, typist.take()); !slices.Equal(by, []string{w.ID()}) {
		t.Fatalf("session.resized by %v; want %s once", by, w.ID())
	}
	step("the sizer's next key", e.app.TypedSize(w, s, []byte("y")), [2]int{40, 20})
	if by := resized(t, typist.take()); len(by) != 0 {
		t.Errorf("the sizer's next key announced a resize: %v", by)
	}

	// Once the sizer is gone, the other's resize still waits for a key.
	e.app.DropSizes(w)
	step("a resize without the size", e.app.Resize(ty, s, 90, 25, false), [2]int{40, 20})
	step("typing after the sizer left", e.app.TypedSize(ty, s, []byte("z")), [2]int{90, 25})
}

// draft decodes a review.draft.
type draft struct {
	Comments []struct {
		ID     string `json:"id"`
		Path   string `json:"path"`
		Text   string `json:"text"`
		Author struct {
			ID string `json:"id"`
		} `json:"author"`
	} `json:"comments"`
}

// A draft is the session's, shown to its participants only; its send
// queues one prompt quoting the tree, replies to the sender, and leaves
// the draft empty. The HTTP route's send leaves the draft alone.
func TestReviewDraftAndSend(t *testing.T) {
	e := newEnv(t)
	repo := testutil.NewRepo(t, "Ada", map[string]string{"main.go": "package main\n\nfunc main() {}\n"})
	s := e.session(repo)
	sid := s.ID()
	in, out := &client{}, &client{}
	pi, po := e.app.Join(in), e.app.Join(out)
	defer e.app.Leave(pi)
	defer e.app.Leave(po)
	e.app.Present(pi, sid, true)
	in.takeMarks()
	out.takeMarks()

	if err := e.app.Comment(pi, sid, review.Comment{Path: "main.go", Line: 3, Text: "name it"}); err != nil {
		t.Fatal(err)
	}
	if err := e.app.Comment(pi, sid, review.Comment{Path: "../etc/passwd", Line: 1, Text: "no"}); err == nil {
		t.Error("a comment outside the tree was taken")
	}
	if got := in.takeMarks(); !slices.Equal(got, []mark{{wire.TypeReviewDraft, sid}}) {
		t.Errorf("the participant's marks after a comment: %v", got)
	}
	if got := out.takeMarks(); len(got) != 0 {
		t.Errorf("a client not in the session was marked %v", got)
	}
	var d draft
	e.state(wire.TypeReviewDraft, sid, &d)
	if len(d.Comments) != 1 || d.Comments[0].Text != "name it" || d.Comments[0].Author.ID != e.app.Author(pi).ID {
		t.Fatalf("draft: %+v", d)
	}
	if err := e.app.Uncomment(po, sid, d.Comments[0].ID); err == nil {
		t.Error("another author removed the comment")
	}

	if err := e.app.SendDraft(pi, s); err != nil {
		t.Fatal(err)
	}
	var acks []sent
	for _, m := range in.take() {
		if m.msg["type"] == wire.TypePromptQueuedAck {
			acks = append(acks, m)
		}
	}
	if len(acks) != 1 || acks[0].msg["sessionId"] != sid || acks[0].msg["position"] != 1.0 {
		t.Fatalf("replies to the send: %v", acks)
	}
	for _, m := range out.take() {
		if m.msg["type"] == wire.TypePromptQueuedAck {
			t.Errorf("a client that did not send was replied to: %v", m.msg)
		}
	}
	e.state(wire.TypeReviewDraft, sid, &d)
	if len(d.Comments) != 0 {
		t.Errorf("draft after its send: %+v", d)
	}
	q := s.Queue()
	if len(q.Prompts) != 1 || !strings.Contains(q.Prompts[0].Text, "func main() {}") || !strings.Contains(q.Prompts[0].Text, "name it") {
		t.Fatalf("queued after a send: %+v", q)
	}
	if err := e.app.SendDraft(pi, s); err == nil {
		t.Error("an empty draft was sent")
	}

	// The HTTP route's comments: checked, queued, the draft untouched.
	if err := e.app.Comment(pi, sid, review.Comment{Path: "main.go", Line: 1, Text: "kept"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.app.SendReview(sid, sessions.Author{ID: "api", Name: "ci"}, make([]review.Comment, review.MaxComments+1)); !errors.Is(err, review.ErrInvalid) {
		t.Errorf("too many comments: %v", err)
	}
	if _, _, err := e.app.SendReview("nope", sessions.Author{ID: "api", Name: "ci"}, []review.Comment{{Path: "main.go", Line: 1, Text: "x"}}); !errors.Is(err, sessions.ErrNotFound) {
		t.Errorf("a review of no session: %v", err)
	}
	if _, pos, err := e.app.SendReview(sid, sessions.Author{ID: "api", Name: "ci"}, []review.Comment{{Path: "main.go", Line: 1, Text: "from ci"}}); err != nil || pos != 2 {
		t.Fatalf("SendReview: position %d, %v; want 2", pos, err)
	}
	e.state(wire.TypeReviewDraft, sid, &d)
	if len(d.Comments) != 1 || d.Comments[0].Text != "kept" {
		t.Errorf("draft after the route's send: %+v", d)
	}
	// Sent as neither a prompt nor a comment, or pasted into a program
	// that asked for no marked pastes (cat: its line breaks would be
	// Enters), the draft stays as it was.
	if err := e.app.SendDraftAs(pi, s, "email"); !errors.Is(err, review.ErrInvalid) {
		t.Errorf("a send as email: %v, want review.ErrInvalid", err)
	}
	if err := e.app.SendDraftAs(pi, s, "comment"); !errors.Is(err, sessions.ErrNoPaste) {
		t.Errorf("a paste into cat: %v, want sessions.ErrNoPaste", err)
	}
	e.state(wire.TypeReviewDraft, sid, &d)
	if len(d.Comments) != 1 || d.Comments[0].Text != "kept" {
		t.Errorf("draft after the refused sends: %+v", d)
	}
	e.app.Discard(sid)
	e.state(wire.TypeReviewDraft, sid, &d)
	if len(d.Comments) != 0 {
		t.Errorf("draft after a discard: %+v", d)
	}
}

// A document written under docs/ is suggested once per write burst, with
// the session's id and a workspace-relative path; every file event goes
// out as informational.
func TestDocumentSuggestedOncePerBurst(t *testing.T) {
	e := newEnv(t)
	c := &client{}
	p := e.app.Join(c)
	defer e.app.Leave(p)
	now := time.Now()
	e.app.OnSessionFile("s1", ".worktrees/a/", watcher.FileEvent{Path: "/w/.worktrees/a/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileAdded, Time: now})
	e.app.OnSessionFile("s1", ".worktrees/a/", watcher.FileEvent{Path: "/w/.worktrees/a/docs/prd.md", Rel: "docs/prd.md", Op: watcher.FileChanged, Time: now})
	e.app.OnFile(watcher.FileEvent{Path: "/w/docs/gone.md", Rel: "docs/gone.md", Op: watcher.FileRemoved, Time: now})
	var shifts []string
	files := 0
	for _, m := range c.take() {
		if !m.informational {
			t.Errorf("sent as a must-have: %v", m.msg)
		}
		switch m.msg["type"] {
		case wire.TypeFileChanged:
			files++
		case wire.TypeLayoutShift:
			shifts = append(shifts, m.msg["sessionId"].(string)+" "+m.msg["path"].(string))
		}
	}
	if files != 3 || !slices.Equal(shifts, []string{"s1 .worktrees/a/docs/prd.md"}) {
		t.Errorf("file events %d (want 3), suggestions %v (want one, of the worktree's prd.md)", files, shifts)
	}
}

// The recent file events a client joining is sent (file.recent): the
// last MaxRecentFiles, oldest first, with file.changed's fields, in
// under MaxRecentFileBytes however long their paths; an event after the
// join reaches the client as file.changed only.
func TestRecentFilesForJoiners(t *testing.T) {
	e := newEnv(t)
	quiet := &client{}
	q := e.app.Join(quiet)
	if got := quiet.types(); len(got) != 0 {
		t.Fatalf("a client joining before any file event was sent %v", got)
	}
	e.app.Leave(q)

	start := time.Date(2026, 11, 21, 22, 40, 0, 0, time.UTC)
	at := func(i int) time.Time { return start.Add(time.Duration(i) * time.Millisecond) }
	const n = collab.MaxRecentFiles + 50
	for i := range n {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/f%d.txt", i), Rel: fmt.Sprintf("f%d.txt", i), Op: watcher.FileChanged, Time: at(i)})
	}
	late := &client{}
	p := e.app.Join(late)
	msgs := late.take()
	if len(msgs) != 1 || msgs[0].msg["type"] != wire.TypeFileRecent || msgs[0].informational {
		t.Fatalf("a client joining after %d file events was sent %v; want one file.recent", n, msgs)
	}
	files := msgs[0].msg["files"].([]any)
	if len(files) != collab.MaxRecentFiles {
		t.Fatalf("file.recent lists %d events, want the last %d", len(files), collab.MaxRecentFiles)
	}
	for j, f := range files {
		i := n - collab.MaxRecentFiles + j
		want := map[string]any{"path": fmt.Sprintf("/w/f%d.txt", i), "event": "change", "timestamp": at(i).Format(time.RFC3339Nano)}
		if !reflect.DeepEqual(f, want) {
			t.Fatalf("file.recent's event %d is %v, want %v (the last ones, oldest first)", j, f, want)
		}
	}

	e.app.OnFile(watcher.FileEvent{Path: "/w/after.txt", Rel: "after.txt", Op: watcher.FileAdded, Time: at(n)})
	if got := late.take(); len(got) != 1 || got[0].msg["type"] != wire.TypeFileChanged || got[0].msg["path"] != "/w/after.txt" {
		t.Errorf("an event after the join reached the client as %v; want one file.changed", got)
	}
	e.app.Leave(p)

	// Long paths: fewer events, the list in its bytes, the newest kept.
	long := strings.Repeat("d", 2000)
	for i := range collab.MaxRecentFiles {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/%s/%d", long, i), Rel: fmt.Sprintf("%s/%d", long, i), Op: watcher.FileAdded, Time: at(n + 1 + i)})
	}
	big := &client{}
	r := e.app.Join(big)
	defer e.app.Leave(r)
	raw := big.takeRaw()
	if len(raw) != 1 {
		t.Fatalf("a client joining was sent %d messages, want one file.recent", len(raw))
	}
	if len(raw[0]) > collab.MaxRecentFileBytes {
		t.Errorf("file.recent is %d bytes, more than MaxRecentFileBytes (%d)", len(raw[0]), collab.MaxRecentFileBytes)
	}
	var m wire.FileRecentMessage
	if err := json.Unmarshal(raw[0], &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) < 2 || len(m.Files) >= collab.MaxRecentFiles {
		t.Errorf("file.recent of long paths lists %d events, want fewer than %d and more than one", len(m.Files), collab.MaxRecentFiles)
	} else if last := m.Files[len(m.Files)-1].Path; last != fmt.Sprintf("/w/%s/%d", long, collab.MaxRecentFiles-1) {
		t.Errorf("file.recent's last event is %.40q..., want the newest", last)
	}
}

// Overlaps are told to every client, kept for those that join and for
// Overlaps, without the ones of a session that is gone; an empty list
// is told to the clients there and to nobody who joins.
func TestOverlaps(t *testing.T) {
	e := newEnv(t)
	a, b := e.session(""), e.session("")
	first := &client{}
	p := e.app.Join(first)
	defer e.app.Leave(p)
	first.take()
	e.app.OnOverlaps([]changes.Overlap{
		{Sessions: [2]string{a.ID(), b.ID()}, Path: "x.go", Lines: true, Hunks: [2][]changes.Hunk{{{OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1}}, {{OldStart: 4, OldLines: 0, NewStart: 5, NewLines: 2}}}},
		{Sessions: [2]string{a.ID(), "gone"}, Path: "y.go"},
	})
	want := []wire.Overlap{{Sessions: []string{a.ID(), b.ID()}, Path: "x.go", Lines: true, Hunks: []wire.OverlapHunk{
		{SessionID: a.ID(), OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1},
		{SessionID: b.ID(), OldStart: 4, OldLines: 0, NewStart: 5, NewLines: 2},
	}}}
	if got := e.app.Overlaps(); !reflect.DeepEqual(got, want) {
		t.Errorf("Overlaps: %+v, want %+v", got, want)
	}
	if got := first.types(); !slices.Equal(got, []string{wire.TypeOverlapsChanged}) {
		t.Errorf("a joined client was sent %v; want overlaps.changed", got)
	}
	late := &client{}
	q := e.app.Join(late)
	msgs := late.take()
	if len(msgs) != 1 || msgs[0].msg["type"] != wire.TypeOverlapsChanged || msgs[0].informational {
		t.Errorf("a joining client was sent %v; want the overlaps, not as informational", msgs)
	}
	e.app.Leave(q)

	e.app.OnOverlaps(nil)
	if got := first.types(); !slices.Equal(got, []string{wire.TypeOverlapsChanged}) {
		t.Errorf("after the overlaps went, a joined client was sent %v", got)
	}
	if got := e.app.Overlaps(); got == nil || len(got) != 0 {
		t.Errorf("Overlaps with none: %#v, want an empty list", got)
	}
	calm := &client{}
	r := e.app.Join(calm)
	defer e.app.Leave(r)
	if got := calm.types(); len(got) != 0 {
		t.Errorf("a client joining with no overlap was sent %v", got)
	}
}
