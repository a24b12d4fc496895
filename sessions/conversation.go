package sessions

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/sessions/output"

	"github.com/agentmux/agentmux/pty"
)

// How an agent's own conversation is found, to resume it (Profile's
// Conversation).
const (
	// ConversationClaude: Claude Code is started with the session's id as
	// its conversation id, and saves the conversation, at its first
	// prompt, as <config>/projects/<encoded cwd>/<id>.jsonl. Until then
	// there is nothing to resume, and --resume fails.
	ConversationClaude = "claude"
	// ConversationCodex: Codex names each conversation itself and records
	// it as <CODEX_HOME>/sessions/<y>/<m>/<d>/rollout-<time>-<id>.jsonl,
	// which its TUI holds open while it runs (with --no-daemon); the id is
	// learned from there.
	ConversationCodex = "codex"
)

// conversation is what a session knows of its agent's own conversation,
// for the next resume to continue it.
//
// Its mu is a leaf: taken alone or under the Session's mu, never while
// taking another lock. Changes that are announced are made under the
// Session's mu as well, which orders the announcements.
type conversation struct {
	// mu protects the fields below.
	mu sync.Mutex
	// id is the agent's own conversation id, once learned; none reports
	// that the agent said it has none to resume.
	id   string
	none bool
	// resumed reports whether the current (or last) run was a resume.
	resumed bool
}

// current returns the agent's conversation id, or "" until it is learned.
func (c *conversation) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id
}

// learn records the agent's conversation id and reports whether it is new.
func (c *conversation) learn(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id == id {
		return false
	}
	c.id = id
	return true
}

// runStarted notes whether the run that starts now is a resume.
func (c *conversation) runStarted(resumed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resumed = resumed
}

// resumeOf returns what a resume must know: the conversation id, and
// whether the agent said there is none.
func (c *conversation) resumeOf() (id string, none bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id, c.none
}

// wasResumed reports whether the current (or last) run was a resume.
func (c *conversation) wasResumed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resumed
}

// markNone records that the agent has no conversation to resume.
func (c *conversation) markNone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.none = true
}

// claudeNoConversation is what Claude Code prints, and exits 1 with, when
// asked to resume a conversation it has not saved.
const claudeNoConversation = "No conversation found with session ID"

// resumePlan returns the command line that resumes s's agent and, when it
// cannot continue the conversation the profile would, a line for the
// terminal saying what it does instead.
func (s *Session) resumePlan() (argv []string, note string) {
	p := s.profile
	if u := s.setup.last; u != nil && !u.AgentStarted {
		// Its setup never let it start: this is its first run.
		note := ""
		if u.Status != SetupPassed {
			note = fmt.Sprintf("Starting the agent without the setup (it %s).", setupWords(u))
		}
		if s.setup.agentArgv != nil {
			return s.setup.agentArgv, note
		}
		return p.StartArgv(s.id), note
	}
	conv, none := s.conv.resumeOf()
	switch p.Conversation {
	case ConversationClaude:
		if !none && claudeConversationSaved(s.env, s.id) {
			return p.ResumeArgv(s.id), ""
		}
		return p.StartArgv(s.id), "Claude has no saved conversation for this session (it never got a first prompt): starting a new one with the same id."
	case ConversationCodex:
		if conv != "" {
			return expandConversation(p.ResumeArgv(s.id), conv), ""
		}
		return expandConversation(p.ResumeArgv(s.id), "--last"),
			"this session's Codex conversation was never identified (no prompt reached it while agentmux watched): resuming the newest Codex conversation in this directory."
	}
	return p.ResumeArgv(s.id), ""
}

// claudeConversationSaved reports whether Claude Code has saved a
// conversation with this id, under the configuration directory the agent's
// environment gives it ($CLAUDE_CONFIG_DIR, else ~/.claude). Any project
// directory counts: the name Claude derives from the working directory is
// its own business. A file without a message is no conversation: Claude
// writes one with only its mode lines when it is left (/exit) before a
// first prompt, and then refuses to resume it.
func claudeConversationSaved(env []string, id string) bool {
	dir := envValue(env, "CLAUDE_CONFIG_DIR")
	if dir == "" {
		home := envValue(env, "HOME")
		if home == "" {
			return false
		}
		dir = filepath.Join(home, ".claude")
	}
	found, _ := filepath.Glob(filepath.Join(dir, "projects", "*", id+".jsonl"))
	for _, f := range found {
		if hasMessage(f) {
			return true
		}
	}
	return false
}

// hasMessage reports whether a Claude Code conversation file holds a user
// or assistant message: a JSON line whose type is one of them.
func hasMessage(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20) // a line holds a whole message
	for sc.Scan() {
		var line struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && (line.Type == "user" || line.Type == "assistant") {
			return true
		}
	}
	return false
}

// envValue returns the value of key in env, or "".
func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

// noteRunEnd looks at how a run ended for what the next resume must know:
// a Claude resume that found no saved conversation means the next one
// starts afresh. Only the run's end calls it.
func (s *Session) noteRunEnd(st output.ExitStatus) {
	if s.profile.Conversation != ConversationClaude || !s.conv.wasResumed() || st.Code != 1 {
		return
	}
	if strings.Contains(string(s.ring.Since(s.ring.State().RunStart, 4096)), claudeNoConversation) {
		s.conv.markNone()
		s.ring.Write([]byte(noteLine("Claude found no saved conversation for this session: Resume starts a new one with the same id.")))
	}
}

// noteLine is a line agentmux writes into a session's terminal, dimmed, so
// it reads as the server's, not the agent's.
func noteLine(text string) string {
	return "\x1b[2m[agentmux] " + text + "\x1b[22m\r\n"
}

// codexRollout matches the file Codex records a conversation in, and
// captures the conversation's id.
var codexRollout = regexp.MustCompile(`/sessions/\d{4}/\d{2}/\d{2}/rollout-[^/]*-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.jsonl$`)

// conversationPoll is how often a Codex run's open files are looked at for
// its conversation. Codex creates the file at the first prompt, which a
// person types: two seconds late is soon enough.
const conversationPoll = 2 * time.Second

// followConversation learns which conversation a Codex run records, from
// the rollout file its processes hold open, until stop closes; a run that
// switches conversations (/new) is followed to the newest. The run's
// reader starts it and waits for it.
func (s *Session) followConversation(proc *pty.Process, stop <-chan struct{}) {
	t := time.NewTicker(conversationPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if id := openConversation(proc); id != "" {
			s.learnedConversation(id)
		}
	}
}

// openConversation returns the id of the conversation a Codex run records
// now: of the rollout files its processes hold open, the newest. It
// returns "" when they hold none.
func openConversation(proc *pty.Process) string {
	if m := codexRollout.FindStringSubmatch(openRollout(proc)); m != nil {
		return m[1]
	}
	return ""
}

// learnedConversation records the agent's conversation id, and saves it.
func (s *Session) learnedConversation(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.conv.learn(id) {
		return
	}
	s.log.Info("learned the agent's conversation", "conversation", id)
	s.emit(Event{Kind: EventUpdated, Session: s.infoLocked()})
}
