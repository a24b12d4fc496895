package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
)

// claudeLike stands in for Claude Code 2.1 as it was seen to behave: it
// saves the conversation as <config>/projects/<cwd, every character but
// letters and digits as '-'>/<id>.jsonl at the first prompt (left with
// /exit before one, it writes only a mode line there); --resume of an id
// with no message saved prints "No conversation found with session ID:
// <id>" and exits 1; --session-id of a saved one says it is in use; and
// it calls its hooks: SessionStart at its prompt (source startup or
// resume), UserPromptSubmit and Stop around a turn.
const claudeLike = `#!/bin/sh
mode= id= settings=
while [ $# -gt 0 ]; do
	case "$1" in
	--session-id) mode=new; id=$2; shift ;;
	--resume) mode=resume; id=$2; shift ;;
	--settings) settings=$2; shift ;;
	esac
	shift
done
cfg=${CLAUDE_CONFIG_DIR:-$HOME/.claude}
proj="$cfg/projects/$(pwd -P | sed 's/[^a-zA-Z0-9]/-/g')"
conv="$proj/$id.jsonl"
hook=$(sed -n 's/^ *"command": "\(.*\)",$/\1/p' "$settings" | head -n 1)
call() { printf '%s' "$1" | sh -c "$hook"; }
saved() { grep -q '"type":"user"' "$conv" 2>/dev/null; }
if [ "$mode" = resume ] && ! saved; then
	echo "No conversation found with session ID: $id" >&2
	exit 1
fi
if [ "$mode" = new ] && saved; then
	echo "Error: Session ID $id is already in use." >&2
	exit 1
fi
source=startup
[ "$mode" = resume ] && source=resume
echo "claude $mode $id"
call "{\"hook_event_name\":\"SessionStart\",\"source\":\"$source\",\"session_id\":\"$id\"}"
mkdir -p "$proj"
while IFS= read -r line; do
	if [ "$line" = /exit ]; then
		# Left before a first prompt, it still writes its mode lines.
		[ -f "$conv" ] || echo '{"type":"mode","mode":"normal"}' > "$conv"
		exit 0
	fi
	echo "{\"type\":\"user\",\"message\":\"$line\"}" >> "$conv"
	call '{"hook_event_name":"UserPromptSubmit"}'
	echo "reply to $line"
	call '{"hook_event_name":"Stop"}'
done
`

// codexLike stands in for Codex 0.169's TUI run with --no-daemon: at the
// first prompt it records the conversation, named by a fresh id, as
// $CODEX_HOME/sessions/<date>/rollout-<time>-<id>.jsonl and keeps the file
// open; "resume <id>" continues that one (or fails as Codex does),
// "resume --last" the newest.
const codexLike = `#!/bin/sh
echo "codex $*"
home=${CODEX_HOME:-$HOME/.codex}
if [ "$1" = resume ]; then
	if [ "$2" = --last ]; then
		echo "codex resumed the newest"
	else
		f=$(find "$home/sessions" -name "rollout-*-$2.jsonl" | head -n 1)
		if [ -z "$f" ]; then
			echo "ERROR: No saved session found with ID $2." >&2
			exit 1
		fi
		echo "codex resumed $2"
		exec 3>>"$f"
		opened=1
	fi
fi
while IFS= read -r line; do
	[ "$line" = /quit ] && exit 0
	if [ -z "$opened" ]; then
		id=$(cat /proc/sys/kernel/random/uuid)
		d="$home/sessions/$(date +%Y/%m/%d)"
		mkdir -p "$d"
		f="$d/rollout-$(date +%Y-%m-%dT%H-%M-%S)-$id.jsonl"
		echo "{\"type\":\"session_meta\",\"payload\":{\"id\":\"$id\",\"cwd\":\"$PWD\"}}" > "$f"
		exec 3>>"$f"
		opened=1
		echo "conversation $id"
	fi
	echo "reply to $line"
done
`

// installAgent puts script first on PATH as name.
func installAgent(t *testing.T, name, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// screen returns everything the session has written that the ring holds.
func screen(t *testing.T, e *apiEnv, id string) string {
	t.Helper()
	s, err := e.srv.mgr.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	st := s.StreamState()
	b := make([]byte, st.End-st.Start)
	n, _ := s.ReadOutput(b, st.Start)
	return string(b[:n])
}

func (e *apiEnv) waitScreen(id, want string) {
	e.t.Helper()
	testutil.Eventually(e.t, waitTimeout, "the screen to show "+want, func() bool {
		return strings.Contains(screen(e.t, e, id), want)
	})
}

func (e *apiEnv) typeInto(id, text string) {
	e.t.Helper()
	s, err := e.srv.mgr.Get(id)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := s.Write([]byte(text)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *apiEnv) resume(id string) {
	e.t.Helper()
	resp, b := e.do(http.MethodPost, "/api/sessions/"+id+"/resume", "")
	wantStatus(e.t, "resume", resp, b, http.StatusOK)
}

// TestClaudeResumeWithoutConversation: a Claude session that never got a
// first prompt has no conversation to resume; Resume starts a new one
// with the same id and says so, and Claude waits at its prompt each time.
// Once a prompt was saved, Resume continues it; and when Claude says it
// found none after all, the next Resume starts afresh.
func TestClaudeResumeWithoutConversation(t *testing.T) {
	installAgent(t, "claude", claudeLike)
	t.Setenv("CLAUDE_CONFIG_DIR", t.TempDir())
	e := newAPI(t)
	next := statusEvents(t, e, nil)

	s := e.create(`{"agent":"claude"}`)
	if m := next("session.status", "waiting"); !strings.Contains(m.Reason, "ready for your first prompt") {
		t.Errorf("a fresh Claude at its prompt: %+v, want waiting for a first prompt", m)
	}
	e.typeInto(s.ID, "/exit\r")
	next("session.status", "stopped")

	e.resume(s.ID)
	if m := next("session.status", "waiting"); !strings.Contains(m.Reason, "first prompt") {
		t.Errorf("after a resume with nothing saved: %+v, want waiting for a first prompt", m)
	}
	e.waitScreen(s.ID, "claude new "+s.ID)
	if got := screen(t, e, s.ID); !strings.Contains(got, "[agentmux] Claude has no saved conversation for this session") {
		t.Errorf("the terminal does not say why the conversation starts afresh:\n%q", got)
	}
	if cmd := e.get(s.ID).Command; !slices.Contains(cmd, "--session-id") {
		t.Errorf("the resume ran %q, want a new conversation (--session-id)", cmd)
	}

	e.typeInto(s.ID, "hello\r")
	next("session.status", "active")  // the prompt
	next("session.status", "waiting") // the turn's end
	e.typeInto(s.ID, "/exit\r")
	next("session.status", "stopped")
	e.resume(s.ID)
	if m := next("session.status", "waiting"); !strings.Contains(m.Reason, "resumed the conversation") {
		t.Errorf("a resumed conversation: %+v", m)
	}
	e.waitScreen(s.ID, "claude resume "+s.ID)
	if cmd := e.get(s.ID).Command; !slices.Contains(cmd, "--resume") {
		t.Errorf("the resume ran %q, want --resume", cmd)
	}

	// The conversation is saved somewhere Claude does not look from here
	// (the workspace moved): Claude says so, and the next resume starts
	// afresh instead of failing the same way forever.
	e.typeInto(s.ID, "/exit\r")
	next("session.status", "stopped")
	projects := filepath.Join(os.Getenv("CLAUDE_CONFIG_DIR"), "projects")
	entries, err := os.ReadDir(projects)
	if err != nil || len(entries) != 1 {
		t.Fatalf("projects: %v %v", entries, err)
	}
	if err := os.Rename(filepath.Join(projects, entries[0].Name()), filepath.Join(projects, "-somewhere-else")); err != nil {
		t.Fatal(err)
	}
	e.resume(s.ID)
	next("session.status", "error")
	e.waitScreen(s.ID, "Claude found no saved conversation for this session: Resume starts a new one")
	e.resume(s.ID)
	next("session.status", "waiting")
	if cmd := e.get(s.ID).Command; !slices.Contains(cmd, "--session-id") {
		t.Errorf("after Claude found nothing, the resume ran %q, want a new conversation", cmd)
	}
}

// TestCodexResumesItsOwnConversation: two Codex sessions in one workspace
// each resume the conversation they recorded, not the newest; one whose
// conversation was never seen resumes the newest and says so.
func TestCodexResumesItsOwnConversation(t *testing.T) {
	installAgent(t, "codex", codexLike)
	t.Setenv("CODEX_HOME", t.TempDir())
	e := newAPI(t)
	a, b, never := e.create(`{"agent":"codex","name":"a"}`), e.create(`{"agent":"codex","name":"b"}`), e.create(`{"agent":"codex","name":"never"}`)
	for _, s := range []string{a.ID, b.ID, never.ID} {
		e.waitScreen(s, "codex --no-daemon")
	}
	conv := map[string]string{}
	idRe := regexp.MustCompile(`conversation ([0-9a-f-]{36})`)
	for _, s := range []string{a.ID, b.ID} {
		e.typeInto(s, "hi\r")
		e.waitScreen(s, "reply to hi")
		m := idRe.FindStringSubmatch(screen(t, e, s))
		if m == nil {
			t.Fatalf("no conversation id on the screen of %s", s)
		}
		conv[s] = m[1]
	}
	if conv[a.ID] == conv[b.ID] {
		t.Fatal("both sessions recorded the same conversation")
	}
	for _, s := range []string{a.ID, b.ID} {
		sess, err := e.srv.mgr.Get(s)
		if err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, waitTimeout, "the conversation of "+s+" learned", func() bool {
			return sess.Info().Conversation == conv[s]
		})
	}
	for _, s := range []string{a.ID, b.ID, never.ID} {
		e.typeInto(s, "/quit\r")
		testutil.Eventually(t, waitTimeout, s+" to end", func() bool { return !e.get(s).Running })
	}
	// b's conversation is now the newest: a must still get its own.
	for _, s := range []string{a.ID, b.ID} {
		e.resume(s)
		e.waitScreen(s, "codex resumed "+conv[s])
		if cmd := e.get(s).Command; !slices.Contains(cmd, conv[s]) || !slices.Contains(cmd, "--no-daemon") {
			t.Errorf("%s resumed as %q, want its conversation %s without the daemon", s, cmd, conv[s])
		}
	}
	e.resume(never.ID)
	e.waitScreen(never.ID, "codex resumed the newest")
	if got := screen(t, e, never.ID); !strings.Contains(got, "[agentmux] this session's Codex conversation was never identified") {
		t.Errorf("the fallback to --last is not explained:\n%q", got)
	}
}

// TestProfilesRecordTheirConversations checks the built-in profiles'
// command lines against what the real CLIs accept.
func TestProfilesRecordTheirConversations(t *testing.T) {
	p := sessions.BuiltinProfiles()
	if c := p[sessions.ProfileCodex]; !slices.Equal(c.Start, []string{"codex", "--no-daemon"}) || c.Conversation != sessions.ConversationCodex ||
		!bytes.Contains([]byte(strings.Join(c.Resume, " ")), []byte("resume {conversation} --no-daemon")) {
		t.Errorf("codex profile %+v", c)
	}
	if c := p[sessions.ProfileClaude]; c.Conversation != sessions.ConversationClaude || !c.Hooks {
		t.Errorf("claude profile %+v", c)
	}
}
