package sessions_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/store"
)

// bellAgent is a stand-in agent that waits for a prompt the way many do
// without hooks: it rings the bell at its prompt, numbered by turn, and
// echoes each line it reads with the turn it came in, so a test can tell
// which waiting period each prompt arrived in.
const bellAgent = `n=0; sleep 0.3; printf 'ready%s\a' $n
while IFS= read -r l; do echo "got:$l@$n"; sleep 0.1; n=$((n+1)); printf 'turn%s\a' $n; done`

var (
	alice = sessions.Author{ID: "a11ce", Name: "alice"}
	bob   = sessions.Author{ID: "b0b", Name: "bob"}
)

func queue(t *testing.T, s *sessions.Session, who sessions.Author, text string) sessions.Prompt {
	t.Helper()
	p, _, err := s.QueuePrompt(who, text)
	if err != nil {
		t.Fatalf("QueuePrompt(%q): %v", text, err)
	}
	return p
}

// TestQueueDeliversOnePromptPerWaitingPeriod queues prompts from two
// authors before the agent first waits: they arrive in order, one per
// bell, each announced as delivered once.
func TestQueueDeliversOnePromptPerWaitingPeriod(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Command: shell(bellAgent)})
	out := follow(s)
	a := queue(t, s, alice, "first from alice")
	b := queue(t, s, bob, "then bob")
	if q := s.Queue(); len(q.Prompts) != 2 || q.Prompts[0].ID != a.ID || q.Prompts[1].ID != b.ID {
		t.Fatalf("queue before the agent waits = %+v, want alice's then bob's", q)
	}
	out.expect(t, "got:then bob@1")
	if !strings.Contains(out.buf.String(), "got:first from alice@0") {
		t.Fatalf("alice's prompt did not arrive in the first waiting period; output %q", out.buf.String())
	}
	_, ev := waitEvent(t, rec, 0, "alice's delivery", isKind(sessions.EventPromptDelivered))
	if ev.Prompt.ID != a.ID || ev.Prompt.Author != alice {
		t.Fatalf("first delivery = %+v, want alice's prompt", ev.Prompt)
	}
	testutil.Eventually(t, testTimeout, "both deliveries announced", func() bool {
		return count(rec, 0, isKind(sessions.EventPromptDelivered)) == 2
	})
	if q := s.Queue(); len(q.Prompts) != 0 {
		t.Fatalf("queue after delivery = %+v, want empty", q)
	}
	// One prompt per waiting period: the waits that delivered said
	// nothing; the one after the last delivery is the user's.
	waitEvent(t, rec, 0, "the agent waiting with an empty queue", isKind(sessions.EventNeedsInput))
	if n := count(rec, 0, isKind(sessions.EventNeedsInput)); n != 1 {
		t.Fatalf("needsInput events = %d, want 1 (after the queue emptied)", n)
	}
	// Yet each of the three waits ended a turn, told before the prompt
	// that answered it was typed: the checkpoints of turns follow these.
	evs := rec.snapshot()
	var turns []string
	for _, ev := range evs {
		switch ev.Kind {
		case sessions.EventTurnEnded, sessions.EventPromptDelivered:
			turns = append(turns, string(ev.Kind))
		}
	}
	want := []string{"turnEnded", "promptDelivered", "turnEnded", "promptDelivered", "turnEnded"}
	if !slices.Equal(turns, want) {
		t.Fatalf("turn ends and deliveries = %v, want %v", turns, want)
	}
}

// TestQueueDeliversOnQuestionFallback: an agent with no bell, whose
// prompt ends with a question mark, waits by the fallback guess; prompts
// from two authors arrive in order, one per question, and a prompt queued
// while it already waits is typed at once.
func TestQueueDeliversOnQuestionFallback(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Command: shell(`stty -echo; n=0; sleep 0.3
while :; do printf 'What next %s? ' $n; IFS= read -r l; echo "got:$l@$n"; n=$((n+1)); done`)})
	out := follow(s)
	queue(t, s, alice, "from alice")
	queue(t, s, bob, "from bob")
	out.expect(t, "got:from bob@1")
	if !strings.Contains(out.buf.String(), "got:from alice@0") {
		t.Fatalf("alice's prompt did not answer the first question; output %q", out.buf.String())
	}
	out.expect(t, "What next 2?")
	waitEvent(t, rec, 0, "waiting at the third question", statusIs(sessions.StatusWaiting))
	_, pos, err := s.QueuePrompt(alice, "carry on")
	if err != nil || pos != 1 {
		t.Fatalf("QueuePrompt = %d, %v; want position 1", pos, err)
	}
	out.expect(t, "got:carry on@2")
	testutil.Eventually(t, testTimeout, "three deliveries announced", func() bool {
		return count(rec, 0, isKind(sessions.EventPromptDelivered)) == 3
	})
}

// TestQueueUsesBracketedPaste: a program that asked for bracketed paste
// gets a multi-line prompt as one paste, then Enter.
func TestQueueUsesBracketedPaste(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Command: shell(`stty -echo; printf '\033[?2004h> \a'; IFS= read -r l; printf '%s' "$l" | od -An -c | tr -d ' \n'; sleep 5`)})
	out := follow(s)
	queue(t, s, alice, "two words")
	out.expect(t, `033[200~twowords033[201~`)
}

// TestQueueRefusals covers bad prompts, a full queue, and removal by
// someone other than the author.
func TestQueueRefusals(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, sessions.CreateOptions{Command: shell(`sleep 30`)})
	for _, tc := range []struct {
		name, text string
		want       error
	}{
		{"empty", "", sessions.ErrInvalid},
		{"blank", " \n\t", sessions.ErrInvalid},
		{"65 KiB", strings.Repeat("x", 65<<10), sessions.ErrInvalid},
		{"escape", "ok\x1b[201~rm -rf", sessions.ErrInvalid},
		{"invalid UTF-8", "\xff", sessions.ErrInvalid},
		// Shown one way, read another by the agent.
		{"bidi override", "delete the \u202etset\u202c file", sessions.ErrInvalid},
		{"bidi isolate", "run \u2066rm -rf\u2069", sessions.ErrInvalid},
		{"zero-width space", "r\u200bm", sessions.ErrInvalid},
		{"Hangul filler", "ok\u3164", sessions.ErrInvalid},
		{"line separator", "one\u2028two", sessions.ErrInvalid},
	} {
		if _, _, err := s.QueuePrompt(alice, tc.text); !errors.Is(err, tc.want) {
			t.Errorf("%s: QueuePrompt = %v, want %v", tc.name, err, tc.want)
		}
	}
	// An emoji's zero-width joiner is prose, not a trick.
	if p, _, err := s.QueuePrompt(alice, "thank the family 👨\u200d👩\u200d👧"); err != nil {
		t.Fatalf("a prompt with an emoji sequence: %v", err)
	} else if err := s.DequeuePrompt(alice, p.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.QueuePrompt(alice, strings.Repeat("y", sessions.MaxPromptBytes)); err != nil {
		t.Fatalf("a prompt of exactly %d bytes: %v", sessions.MaxPromptBytes, err)
	}
	mine := queue(t, s, bob, "bob's")
	if err := s.DequeuePrompt(alice, mine.ID, false); !errors.Is(err, sessions.ErrNotQueueOwner) {
		t.Fatalf("alice removing bob's prompt = %v, want ErrNotQueueOwner", err)
	}
	if err := s.DequeuePrompt(alice, "no-such-prompt", true); !errors.Is(err, sessions.ErrPromptNotFound) {
		t.Fatalf("removing an unknown prompt = %v, want ErrPromptNotFound", err)
	}
	before := s.Queue().Rev
	if err := s.DequeuePrompt(bob, mine.ID, false); err != nil {
		t.Fatalf("bob removing his own prompt: %v", err)
	}
	if q := s.Queue(); len(q.Prompts) != 1 || q.Rev != before+1 {
		t.Fatalf("queue after the removal = %d prompts rev %d, want 1 prompt rev %d", len(q.Prompts), q.Rev, before+1)
	}
	waitEvent(t, rec, 0, "the removal announced", isKind(sessions.EventPromptDequeued))
	// A prompt whose author is gone for good: anyone may remove it, when
	// they say they mean to.
	orphan := queue(t, s, bob, "bob's, from a browser he no longer has")
	if err := s.DequeuePrompt(alice, orphan.ID, true); err != nil {
		t.Fatalf("alice removing bob's prompt with force: %v", err)
	}
	if q := s.Queue(); slices.ContainsFunc(q.Prompts, func(p sessions.Prompt) bool { return p.ID == orphan.ID }) {
		t.Fatalf("bob's prompt still queued after a forced removal: %+v", q.Prompts)
	}
	for i := 1; i < sessions.MaxQueuedPrompts; i++ {
		queue(t, s, alice, "filler")
	}
	if _, _, err := s.QueuePrompt(alice, "one too many"); !errors.Is(err, sessions.ErrQueueFull) {
		t.Fatalf("prompt %d = %v, want ErrQueueFull", sessions.MaxQueuedPrompts+1, err)
	}
}

// TestInterruptHoldsTheQueue: the waiting period an interrupt causes is
// the user's; the queue waits for the one after the user's next turn.
func TestInterruptHoldsTheQueue(t *testing.T) {
	m, rec := newManager(t, sessions.Options{Timing: fastTiming})
	// Ctrl+C makes the agent ring its bell, as an agent back at its
	// prompt after an interrupt does.
	s := create(t, m, sessions.CreateOptions{Command: shell(`trap 'printf "interrupted\a"' INT; echo busy
while :; do IFS= read -r l && { echo "got:$l"; sleep 0.1; printf 'done\a'; }; done`)})
	out := follow(s)
	out.expect(t, "busy")
	p := queue(t, s, alice, "queued while busy")
	if err := s.Interrupt(); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "interrupted")
	waitEvent(t, rec, 0, "waiting after the interrupt", statusIs(sessions.StatusWaiting))
	if q := s.Queue(); len(q.Prompts) != 1 {
		t.Fatalf("the interrupt's waiting period delivered the queue: %+v", q)
	}
	if err := s.Write([]byte("mine\r")); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "got:queued while busy")
	_, ev := waitEvent(t, rec, 0, "the delivery", isKind(sessions.EventPromptDelivered))
	if ev.Prompt.ID != p.ID {
		t.Fatalf("delivered %+v, want the queued prompt", ev.Prompt)
	}
	if i, j := strings.Index(out.buf.String(), "got:mine"), strings.Index(out.buf.String(), "got:queued"); i < 0 || i > j {
		t.Fatalf("the queued prompt went before the user's own; output %q", out.buf.String())
	}
}

// restartable is a manager on a real bbolt file that a test can stop and
// start again, as the server does across a restart.
func restartable(t *testing.T, dir string, opts sessions.Options) (*sessions.Manager, *recorder, func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "agentmux.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	opts.Store = st
	opts.Workspace = dir
	opts.Logger = slog.New(slog.DiscardHandler)
	rec := &recorder{}
	m, err := sessions.NewManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(rec.add)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := m.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		m.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	}
	return m, rec, stop
}

// TestQueueSurvivesRestart: prompts queued before a restart are there
// after it and go to the agent once a resume brings it to its prompt.
func TestQueueSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	opts := sessions.Options{Timing: fastTiming}
	m, _, stop := restartable(t, dir, opts)
	s, err := m.Create(sessions.CreateOptions{Command: shell(bellAgent + "; sleep 30")})
	if err != nil {
		t.Fatal(err)
	}
	// Queued while the agent is still starting (it sleeps before its
	// first bell), then the server goes down.
	a := queue(t, s, alice, "survive me")
	queue(t, s, bob, "and me")
	if err := s.DequeuePrompt(bob, s.Queue().Prompts[1].ID, false); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	stop()

	m, rec, stop := restartable(t, dir, opts)
	defer stop()
	s, err = m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	q := s.Queue()
	if len(q.Prompts) != 1 || q.Prompts[0].ID != a.ID || q.Prompts[0].Author != alice || q.Prompts[0].Text != "survive me" {
		t.Fatalf("queue after the restart = %+v, want alice's prompt alone", q)
	}
	if _, err := m.Resume(id); err != nil {
		t.Fatal(err)
	}
	out := follow(s)
	out.expect(t, "got:survive me@0")
	waitEvent(t, rec, 0, "the delivery after the restart", isKind(sessions.EventPromptDelivered))
}

// TestTypingWakesStoppedSession: keys typed into a session restored idle
// resume it and reach the new run once, in order, with what was typed
// while it started.
func TestTypingWakesStoppedSession(t *testing.T) {
	dir := t.TempDir()
	opts := sessions.Options{Timing: fastTiming}
	m, _, stop := restartable(t, dir, opts)
	// The agent sets up its terminal before it reads, as real ones do:
	// keys that arrived earlier would be echoed by the line discipline.
	agent := `sleep 0.3; stty -echo; echo ready; while IFS= read -r l; do echo "line:$l"; done`
	s, err := m.Create(sessions.CreateOptions{Command: shell(agent)})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	stop()

	m, _, stop = restartable(t, dir, opts)
	defer stop()
	s, err = m.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Info().Running {
		t.Fatal("a restored session is running before a resume")
	}
	out := follow(s)
	if err := m.Type(s, []byte("hello")); err != nil {
		t.Fatalf("typing into the stopped session: %v", err)
	}
	if err := m.Type(s, []byte(" world\r")); err != nil {
		t.Fatalf("typing while it starts: %v", err)
	}
	out.expect(t, "line:hello world")
	if err := m.Type(s, []byte("again\r")); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "line:again")
	if n := strings.Count(out.buf.String(), "hello"); n != 1 {
		t.Fatalf("the held keys arrived %d times; output %q", n, out.buf.String())
	}
	if i := strings.Index(out.buf.String(), "ready"); i < 0 || i > strings.Index(out.buf.String(), "line:hello") {
		t.Fatalf("the held keys arrived before the program read its terminal; output %q", out.buf.String())
	}
}

// TestTypingIntoStoppedSessionBounded: held keys are bounded in bytes and
// a refused write sends nothing, and a resume that fails drops what was
// held and says so.
func TestTypingIntoStoppedSessionBounded(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	cwd := t.TempDir()
	s := create(t, m, sessions.CreateOptions{Command: shell(`exit 0`), Cwd: cwd})
	waitRunEnded(t, s)
	if err := m.Type(s, []byte(strings.Repeat("k", sessions.MaxHeldInput+1))); !errors.Is(err, sessions.ErrInputFull) {
		t.Fatalf("typing %d bytes into a stopped session = %v, want ErrInputFull", sessions.MaxHeldInput+1, err)
	}
	if s.Info().Running {
		t.Fatal("refused keys resumed the session")
	}
	// A working directory gone: the resume fails, and the keys with it.
	if err := os.RemoveAll(cwd); err != nil {
		t.Fatal(err)
	}
	err := m.Type(s, []byte("lost\r"))
	if !errors.Is(err, sessions.ErrSpawn) || !strings.Contains(err.Error(), "5 bytes typed were dropped") {
		t.Fatalf("typing into a session that cannot resume = %v, want ErrSpawn saying the keys were dropped", err)
	}
}

// TestControlKeysDoNotWake: Ctrl+C, Ctrl+D or a terminal's own report
// typed into an ended session leave it ended; Enter wakes it.
func TestControlKeysDoNotWake(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	marker := filepath.Join(t.TempDir(), "ran")
	s := create(t, m, sessions.CreateOptions{Command: []string{"sh", "-c", `test -e "$0" || { touch "$0"; exit 0; }; stty -echo; echo ready; cat -v`, marker}})
	waitRunEnded(t, s)
	for _, keys := range []string{"\x03", "\x04", "\x03\x03", "\x1b", "\x1b[I", "\x1b[O", "\x7f"} {
		if err := m.Type(s, []byte(keys)); !errors.Is(err, sessions.ErrNotRunning) {
			t.Errorf("typing %q into an ended session = %v, want ErrNotRunning", keys, err)
		}
	}
	if s.Info().Running {
		t.Fatal("a control key woke the session")
	}
	out := follow(s)
	if err := m.Type(s, []byte("\r")); err != nil {
		t.Fatalf("Enter into an ended session: %v", err)
	}
	out.expect(t, "ready")
	if !s.Info().Running {
		t.Fatal("Enter did not wake the session")
	}
}

// TestHeldKeysReachASilentProgram: a resumed program that reads without
// printing anything first, and never signals waiting, still gets the held
// keys, once the bound on waiting for it has passed.
func TestHeldKeysReachASilentProgram(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	marker := filepath.Join(t.TempDir(), "ran")
	s := create(t, m, sessions.CreateOptions{Command: []string{"sh", "-c", `test -e "$0" || { touch "$0"; exit 0; }; stty -echo; IFS= read -r l; echo "got:$l"; sleep 5`, marker}})
	waitRunEnded(t, s)
	out := follow(s)
	start := time.Now()
	if err := m.Type(s, []byte("quiet\r")); err != nil {
		t.Fatal(err)
	}
	out.expect(t, "got:quiet")
	if waited := time.Since(start); waited < 2*time.Second {
		t.Fatalf("the keys went in after %v, before the program could have set up its terminal by any sign", waited)
	}
}
