package agentmcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/vtscreen"
	"github.com/agentmux/agentmux/sessions"
)

// Bounds of the tools' answers: an agent reads them into its context,
// which is smaller than what the UI shows.
const (
	// MaxScrollback bounds the scrollback lines read_screen gives.
	MaxScrollback = 1000
	// DefaultDiffBytes is how much patch get_diff gives when not told;
	// MaxDiffBytes is the most it gives.
	DefaultDiffBytes = 64 << 10
	MaxDiffBytes     = 1 << 20
	// screenBytes bounds the output read_screen plays through its
	// emulator, which parses about a megabyte a second: a program that
	// redraws without line breaks could otherwise make one call take
	// seconds.
	screenBytes = 256 << 10
)

// tools are one caller's tools.
type tools struct {
	srv *Server
	// req is the HTTP request's context, which ends when the caller
	// goes away.
	req    context.Context
	mgr    *sessions.Manager
	caller *sessions.Session
	log    *slog.Logger
}

// did is what a call did, for the activity feed: a line of text and the
// session it was about.
type did struct{ text, target string }

// handler is a tool's work for a caller: the reply an agent reads, its
// structured form, and what it did.
type handler[In, Out any] func(t *tools, ctx context.Context, in In) (reply string, out Out, d did, err error)

// toolDef is a tool as every caller's server lists it. Its schemas are
// inferred from In and Out, and the input's resolved for checking calls,
// once: the SDK's mcp.AddTool does both at every registration, which, with
// a server built for each request, was most of what a call cost.
type toolDef struct {
	tool *mcp.Tool
	bind func(t *tools) mcp.ToolHandler
}

// define makes the tool whose work is h, telling every call, done or
// refused, to the activity feed.
func define[In, Out any](tool *mcp.Tool, h handler[In, Out]) (toolDef, error) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return toolDef{}, fmt.Errorf("the input schema of %s: %w", tool.Name, err)
	}
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		return toolDef{}, fmt.Errorf("the output schema of %s: %w", tool.Name, err)
	}
	resolved, err := in.Resolve(nil)
	if err != nil {
		return toolDef{}, fmt.Errorf("the input schema of %s: %w", tool.Name, err)
	}
	tool.InputSchema, tool.OutputSchema = in, out
	return toolDef{tool: tool, bind: func(t *tools) mcp.ToolHandler {
		return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args In
			if err := decode(req.Params.Arguments, resolved, &args); err != nil {
				t.announce(tool.Name, did{}, err)
				return failed(err), nil
			}
			reply, out, d, err := h(t, ctx, args)
			t.announce(tool.Name, d, err)
			if err != nil {
				return failed(err), nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: reply}}, StructuredContent: out}, nil
		}
	}}, nil
}

// decode checks a call's arguments against the tool's input schema, then
// reads them into v.
func decode(args json.RawMessage, schema *jsonschema.Resolved, v any) error {
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = json.RawMessage("{}")
	}
	var m map[string]any
	if err := json.Unmarshal(args, &m); err != nil {
		return fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	if err := schema.Validate(m); err != nil {
		return fmt.Errorf("the arguments do not fit the tool's schema: %w", err)
	}
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("read the arguments: %w", err)
	}
	return nil
}

// failed is a tool's error result, its reason as text, as the SDK gives
// a typed handler's error.
func failed(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// announce tells the feed of one call.
func (t *tools) announce(tool string, d did, err error) {
	name := t.caller.Info().Name
	c := Call{Caller: t.caller.ID(), Tool: tool, Text: d.text, Target: d.target, Time: time.Now()}
	if err != nil {
		c.Err = err.Error()
		if c.Text == "" {
			c.Text = fmt.Sprintf("%s's %s was refused", name, tool)
		}
		t.log.Info("an agent's call was refused", "tool", tool, "err", err)
	} else {
		t.log.Info("an agent called agentmux", "tool", tool, "target", d.target)
	}
	if t.srv.opts.OnCall != nil {
		t.srv.opts.OnCall(c)
	}
}

// name is the caller's name as lines of the feed give it.
func (t *tools) name() string { return t.caller.Info().Name }

// session finds a session by the id an agent gave.
func (t *tools) session(id string) (*sessions.Session, error) {
	s, err := t.mgr.Get(id)
	if err != nil {
		return nil, fmt.Errorf("no session %q: list_sessions gives the ids", id)
	}
	return s, nil
}

// SessionItem is a session as list_sessions gives it.
type SessionItem struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Agent  string `json:"agent"`
	Status string `json:"status" jsonschema:"active, waiting, idle, error or stopped"`
	// Reason says why it has its status: what it waits for, how it
	// ended.
	Reason  string `json:"reason,omitempty"`
	Running bool   `json:"running"`
	Branch  string `json:"branch,omitempty"`
	// Additions and Deletions count the lines it changed against its
	// base, as far as known.
	Additions int `json:"additions"`
	Deletions int `json:"deletions"`
	Files     int `json:"files"`
	// StartedBy is the id of the session whose agent started it.
	StartedBy string `json:"startedBy,omitempty"`
	// You marks the calling session.
	You bool `json:"you,omitempty"`
}

// ListOutput is list_sessions' structured result.
type ListOutput struct {
	Sessions []SessionItem `json:"sessions"`
}

func (t *tools) listSessions(_ context.Context, _ struct{}) (string, ListOutput, did, error) {
	out := ListOutput{Sessions: []SessionItem{}}
	names := map[string]string{}
	var infos []sessions.Info
	for _, s := range t.mgr.List() {
		info := s.Info()
		names[info.ID] = info.Name
		if info.RunOf == "" { // a run script's terminal is no agent's
			infos = append(infos, info)
		}
	}
	var b strings.Builder
	for _, info := range infos {
		item := SessionItem{ID: info.ID, Name: info.Name, Agent: info.Agent, Status: string(info.Status), Reason: info.Reason,
			Running: info.Running, StartedBy: info.StartedBy, You: info.ID == t.caller.ID()}
		if info.Worktree != nil {
			item.Branch = info.Worktree.Branch
		}
		item.Additions, item.Deletions, item.Files = t.srv.counts(info.ID)
		out.Sessions = append(out.Sessions, item)
		fmt.Fprintf(&b, "- %s (id %s, %s): %s", item.Name, item.ID, item.Agent, describe(info))
		if item.Branch != "" {
			fmt.Fprintf(&b, "; branch %s", item.Branch)
		}
		fmt.Fprintf(&b, "; %s changed, +%d -%d", plural(item.Files, "file"), item.Additions, item.Deletions)
		if item.StartedBy != "" {
			fmt.Fprintf(&b, "; started by %s", cmp.Or(names[item.StartedBy], "a session since deleted"))
		}
		if item.You {
			b.WriteString(" (this is you)")
		}
		b.WriteByte('\n')
	}
	return fmt.Sprintf("%s:\n%s", plural(len(out.Sessions), "session"), b.String()), out,
		did{text: t.name() + " listed the sessions"}, nil
}

// PromptInput is send_prompt's input.
type PromptInput struct {
	SessionID string `json:"sessionId" jsonschema:"the id of the session to send the prompt to, as list_sessions gives it"`
	Text      string `json:"text" jsonschema:"the prompt, as the agent is to read it"`
}

// PromptOutput is send_prompt's structured result.
type PromptOutput struct {
	PromptID string `json:"promptId"`
	// Position is the prompt's place in the queue: 1 is next.
	Position int `json:"position"`
}

func (t *tools) sendPrompt(_ context.Context, in PromptInput) (string, PromptOutput, did, error) {
	if in.SessionID == t.caller.ID() {
		return "", PromptOutput{}, did{}, errors.New("that is your own session: a prompt to yourself would be typed into your own input")
	}
	s, err := t.session(in.SessionID)
	if err != nil {
		return "", PromptOutput{}, did{}, err
	}
	target := s.Info().Name
	p, pos, err := s.QueuePrompt(t.author(), in.Text)
	if err != nil {
		return "", PromptOutput{}, did{target: s.ID()}, err
	}
	return fmt.Sprintf("Queued for %s at position %d: it is typed in when its agent waits for input.", target, pos),
		PromptOutput{PromptID: p.ID, Position: pos},
		did{text: fmt.Sprintf("%s sent a prompt to '%s'", t.name(), target), target: s.ID()}, nil
}

// author is the caller as the author of the prompts it queues.
func (t *tools) author() sessions.Author {
	return sessions.Author{ID: "agent:" + t.caller.ID(), Name: "agent " + t.name()}
}

// WaitInput is wait_for's input.
type WaitInput struct {
	SessionID      string `json:"sessionId" jsonschema:"the id of the session to wait for"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty" jsonschema:"how long to wait at most, in seconds; 600 at most, and 600 when left out"`
}

// WaitOutput is wait_for's structured result.
type WaitOutput struct {
	// Outcome is "waiting" (its agent waits for input), "exited" (its
	// agent is not running) or "timeout".
	Outcome string `json:"outcome" jsonschema:"waiting, exited or timeout"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
}

func (t *tools) waitFor(ctx context.Context, in WaitInput) (string, WaitOutput, did, error) {
	if in.SessionID == t.caller.ID() {
		return "", WaitOutput{}, did{}, errors.New("that is your own session: it waits for nobody while you wait for it")
	}
	if in.TimeoutSeconds < 0 {
		return "", WaitOutput{}, did{}, errors.New("timeoutSeconds is negative: give the seconds to wait, 600 at most")
	}
	limit := MaxWait
	if in.TimeoutSeconds > 0 && time.Duration(in.TimeoutSeconds)*time.Second < limit {
		limit = time.Duration(in.TimeoutSeconds) * time.Second
	}
	s, err := t.session(in.SessionID)
	if err != nil {
		return "", WaitOutput{}, did{}, err
	}
	changed := make(chan struct{}, 1)
	cancel := t.mgr.Subscribe(func(ev sessions.Event) {
		if ev.Session.ID == in.SessionID {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	defer cancel()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	t.log.Debug("waiting for a session", "target", in.SessionID, "timeout", limit)
	for {
		info := s.Info()
		out := WaitOutput{Status: string(info.Status), Reason: info.Reason}
		var reply string
		switch {
		case !info.Running:
			out.Outcome, reply = "exited", fmt.Sprintf("%s is not running: %s.", info.Name, describe(info))
		case info.Status == sessions.StatusWaiting:
			out.Outcome, reply = "waiting", fmt.Sprintf("%s waits for input: %s.", info.Name, describe(info))
		}
		if out.Outcome == "" {
			select {
			case <-changed:
				continue
			case <-deadline.C:
				out.Outcome, reply = "timeout", fmt.Sprintf("%s still works after %s: %s.", info.Name, limit, describe(info))
			case <-ctx.Done():
				return "", WaitOutput{}, did{target: info.ID}, fmt.Errorf("stopped waiting for %s: %w", info.Name, ctx.Err())
			case <-t.req.Done():
				return "", WaitOutput{}, did{target: info.ID}, fmt.Errorf("stopped waiting for %s: you went away", info.Name)
			case <-t.srv.closed.Done():
				return "", WaitOutput{}, did{target: info.ID}, fmt.Errorf("stopped waiting for %s: agentmux is shutting down", info.Name)
			}
		}
		return reply, out, did{text: fmt.Sprintf("%s waited for '%s': %s", t.name(), info.Name, out.Outcome), target: info.ID}, nil
	}
}

// describe says a session's status and why.
func describe(info sessions.Info) string {
	if info.Reason == "" {
		return string(info.Status)
	}
	return string(info.Status) + ", " + info.Reason
}

// ScreenInput is read_screen's input.
type ScreenInput struct {
	SessionID       string `json:"sessionId" jsonschema:"the id of the session whose screen to read"`
	ScrollbackLines int    `json:"scrollbackLines,omitempty" jsonschema:"how many lines that scrolled off the top to give as well; 0 when left out, 1000 at most"`
}

// ScreenOutput is read_screen's structured result.
type ScreenOutput struct {
	// Screen holds the rows, top first, without the blank ones below
	// the last written.
	Screen []string `json:"screen"`
	// Scrollback holds the lines above the screen, oldest first.
	Scrollback []string `json:"scrollback"`
	Cols       int      `json:"cols"`
	Rows       int      `json:"rows"`
	// AltScreen reports a full-screen program (an editor, a pager),
	// whose screen has no scrollback.
	AltScreen bool   `json:"altScreen"`
	Status    string `json:"status"`
}

func (t *tools) readScreen(_ context.Context, in ScreenInput) (string, ScreenOutput, did, error) {
	if in.ScrollbackLines < 0 || in.ScrollbackLines > MaxScrollback {
		return "", ScreenOutput{}, did{}, fmt.Errorf("scrollbackLines %d: give 0 to %d", in.ScrollbackLines, MaxScrollback)
	}
	s, err := t.session(in.SessionID)
	if err != nil {
		return "", ScreenOutput{}, did{}, err
	}
	info := s.Info()
	text := Screen(s, info.Cols, info.Rows, in.ScrollbackLines)
	out := ScreenOutput{Screen: text.Screen, Scrollback: text.History, Cols: info.Cols, Rows: info.Rows, AltScreen: text.AltScreen, Status: string(info.Status)}
	if out.Screen == nil {
		out.Screen = []string{}
	}
	if out.Scrollback == nil {
		out.Scrollback = []string{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s's screen (%dx%d; %s)", info.Name, info.Cols, info.Rows, describe(info))
	if len(out.Scrollback) > 0 {
		fmt.Fprintf(&b, ", after %s of scrollback", plural(len(out.Scrollback), "line"))
	}
	b.WriteString(":\n")
	for _, l := range append(out.Scrollback, out.Screen...) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), out, did{text: fmt.Sprintf("%s read the screen of '%s'", t.name(), info.Name), target: info.ID}, nil
}

// Screen returns what a terminal of cols by rows that played s's output
// shows, with scrollback lines of the history above it.
func Screen(s *sessions.Session, cols, rows, scrollback int) vtscreen.Text {
	for {
		off, prefix, _ := s.ReplayStart(rows + scrollback)
		st := s.StreamState()
		cut := st.End-off > screenBytes
		if cut {
			// The last screenBytes: the modes in force where they begin are
			// not known, but the screen is drawn after it.
			off, prefix = st.End-screenBytes, nil
		}
		data := make([]byte, st.End-off)
		n, err := s.ReadOutput(data, off)
		if err != nil {
			continue // the ring moved past off meanwhile: start again
		}
		data = data[:n]
		if cut {
			// From the first line feed or carriage return: a line's start,
			// not the middle of its text.
			if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
				data = data[i+1:]
			}
		}
		return vtscreen.Render(cols, rows, scrollback, prefix, data)
	}
}

// DiffInput is get_diff's input.
type DiffInput struct {
	SessionID string `json:"sessionId" jsonschema:"the id of the session whose change to read"`
	MaxBytes  int    `json:"maxBytes,omitempty" jsonschema:"how many bytes of patch to give at most; 65536 when left out, 1048576 at most"`
}

// DiffFile is one changed file in get_diff's result.
type DiffFile struct {
	Path      string `json:"path"`
	OldPath   string `json:"oldPath,omitempty"`
	Status    string `json:"status" jsonschema:"added, modified, deleted or renamed"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"`
}

// DiffOutput is get_diff's structured result.
type DiffOutput struct {
	// Base is the commit the change is counted from.
	Base      string     `json:"base"`
	Files     []DiffFile `json:"files"`
	Additions int        `json:"additions"`
	Deletions int        `json:"deletions"`
	// Patch is the unified diff, cut at maxBytes.
	Patch string `json:"patch"`
	// Truncated reports that the patch was cut.
	Truncated bool `json:"truncated"`
}

func (t *tools) getDiff(ctx context.Context, in DiffInput) (string, DiffOutput, did, error) {
	if in.MaxBytes < 0 || in.MaxBytes > MaxDiffBytes {
		return "", DiffOutput{}, did{}, fmt.Errorf("maxBytes %d: give 0 to %d", in.MaxBytes, MaxDiffBytes)
	}
	limit := cmp.Or(in.MaxBytes, DefaultDiffBytes)
	s, err := t.session(in.SessionID)
	if err != nil {
		return "", DiffOutput{}, did{}, err
	}
	info := s.Info()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	dir, from := info.Tree()
	d, err := changes.TreeDiff(ctx, dir, from, nil, changes.Limits{File: limit, Total: limit})
	if errors.Is(err, gitexec.ErrNotRepo) {
		return "", DiffOutput{}, did{target: info.ID}, fmt.Errorf("%s works in %s, which is in no git repository: it has no diff", info.Name, dir)
	}
	if err != nil {
		return "", DiffOutput{}, did{target: info.ID}, err
	}
	out := DiffOutput{Base: d.Base, Files: []DiffFile{}, Truncated: d.Truncated}
	var patch strings.Builder
	for _, f := range d.Files {
		out.Files = append(out.Files, DiffFile{Path: f.Path, OldPath: f.OldPath, Status: string(f.Status), Additions: f.Additions, Deletions: f.Deletions, Binary: f.Binary})
		out.Additions += f.Additions
		out.Deletions += f.Deletions
		patch.WriteString(f.Patch)
		if f.Note != "" {
			fmt.Fprintf(&patch, "[%s: %s]\n", f.Path, f.Note)
		}
	}
	out.Patch = patch.String()
	var b strings.Builder
	where := "its workspace"
	if info.Worktree != nil {
		where = "branch " + info.Worktree.Branch
	}
	fmt.Fprintf(&b, "%s on %s changed %s against %.12s, +%d -%d:\n", info.Name, where, plural(len(out.Files), "file"), out.Base, out.Additions, out.Deletions)
	for _, f := range out.Files {
		fmt.Fprintf(&b, "  %s %s +%d -%d\n", f.Status, f.Path, f.Additions, f.Deletions)
	}
	if out.Patch != "" {
		b.WriteString("\n")
		b.WriteString(out.Patch)
	}
	if out.Truncated {
		fmt.Fprintf(&b, "\n[the patch was cut at %d bytes: ask with a larger maxBytes for more]\n", limit)
	}
	return b.String(), out, did{text: fmt.Sprintf("%s read the diff of '%s'", t.name(), info.Name), target: info.ID}, nil
}

// StartInput is start_session's input.
type StartInput struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent to run: claude, codex, aider or shell; the server's default when left out"`
	Name   string `json:"name,omitempty" jsonschema:"the session's name; the branch's, or the agent's and a number, when left out"`
	Prompt string `json:"prompt,omitempty" jsonschema:"the first prompt: queued for an agent, typed in when it first waits for input; for a shell, typed in as commands once it shows its prompt"`
	Branch string `json:"branch,omitempty" jsonschema:"run it in a new git worktree on this branch (the existing branch, or a new one)"`
	Base   string `json:"base,omitempty" jsonschema:"where a new branch starts: a branch, tag or commit; the workspace's HEAD when left out"`
}

// StartOutput is start_session's structured result.
type StartOutput struct {
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
	Branch    string `json:"branch,omitempty"`
	// Prompt says what becomes of the first prompt. The agents read
	// the structured content rather than the text, so it is said here
	// too.
	Prompt string `json:"prompt,omitempty" jsonschema:"what becomes of the first prompt"`
}

func (t *tools) startSession(_ context.Context, in StartInput) (string, StartOutput, did, error) {
	me := t.caller.Info()
	if depth := t.depth(me); depth >= t.srv.opts.MaxDepth {
		if t.srv.opts.MaxDepth == 1 {
			return "", StartOutput{}, did{}, errors.New("a session another agent started starts none: ask the session that started you")
		}
		return "", StartOutput{}, did{}, fmt.Errorf("you are %d levels below the session a person started, the most that may start sessions is %d: ask the session that started you", depth, t.srv.opts.MaxDepth-1)
	}
	n := 0
	for _, s := range t.mgr.List() {
		if s.Info().StartedBy == me.ID {
			n++
		}
	}
	if n >= t.srv.opts.MaxStarted {
		return "", StartOutput{}, did{}, fmt.Errorf("you have %d sessions you started, the most you may: stop one with stop_session first", n)
	}
	if in.Base != "" && in.Branch == "" {
		return "", StartOutput{}, did{}, errors.New("a base is where a new branch starts: give the branch too")
	}
	opts := sessions.CreateOptions{Name: in.Name, Agent: in.Agent, WorktreeBranch: in.Branch, WorktreeBase: in.Base, StartedBy: me.ID}
	shell := in.Agent == sessions.ProfileShell
	if shell {
		opts.FirstInput = in.Prompt
	}
	s, err := t.mgr.Create(opts)
	if errors.Is(err, sessions.ErrLimitReached) {
		return "", StartOutput{}, did{}, fmt.Errorf("agentmux runs as many sessions as it may (--max-sessions): %w", err)
	}
	if err != nil {
		return "", StartOutput{}, did{}, err
	}
	info := s.Info()
	d := did{text: fmt.Sprintf("%s started '%s'", me.Name, info.Name), target: info.ID}
	where := "in the workspace"
	out := StartOutput{SessionID: info.ID, Name: info.Name}
	if info.Worktree != nil {
		out.Branch = info.Worktree.Branch
		where = "in a worktree on branch " + info.Worktree.Branch
		d.text += " on " + info.Worktree.Branch
	}
	reply := fmt.Sprintf("Started %s (id %s, %s) %s.", info.Name, info.ID, info.Agent, where)
	switch {
	case strings.TrimSpace(in.Prompt) == "":
	case shell:
		out.Prompt = "typed into the shell once it shows its prompt; a shell never waits for input as an agent does, so wait_for only times out on it: read_screen tells when its commands are done"
	default:
		if _, _, err := s.QueuePrompt(sessions.Author{ID: "agent:" + me.ID, Name: "agent " + me.Name}, in.Prompt); err != nil {
			return "", StartOutput{}, d, fmt.Errorf("%s started, but its prompt was refused: %w", info.Name, err)
		}
		out.Prompt = "queued: typed in when its agent first waits for input"
	}
	if out.Prompt != "" {
		reply += " Its prompt is " + out.Prompt + "."
	}
	return reply, out, d, nil
}

// depth is how many agents' starts led to a session: 0 for one a person
// started. A starter no longer listed counts as deep as may be, since how
// it was started is no longer known.
func (t *tools) depth(info sessions.Info) int {
	d := 0
	for id := info.StartedBy; id != ""; d++ {
		s, err := t.mgr.Get(id)
		if err != nil || d >= t.srv.opts.MaxDepth {
			return t.srv.opts.MaxDepth
		}
		id = s.Info().StartedBy
	}
	return d
}

// StopInput is stop_session's input.
type StopInput struct {
	SessionID string `json:"sessionId" jsonschema:"the id of a session you started"`
}

// StopOutput is stop_session's structured result.
type StopOutput struct {
	Stopped bool `json:"stopped"`
}

func (t *tools) stopSession(ctx context.Context, in StopInput) (string, StopOutput, did, error) {
	s, err := t.session(in.SessionID)
	if err != nil {
		return "", StopOutput{}, did{}, err
	}
	info := s.Info()
	if info.StartedBy != t.caller.ID() {
		return "", StopOutput{}, did{target: info.ID}, fmt.Errorf("you did not start %s: only the sessions you started are yours to stop", info.Name)
	}
	if err := t.mgr.Destroy(ctx, in.SessionID); err != nil {
		return "", StopOutput{}, did{target: info.ID}, err
	}
	return "Stopped and deleted; its worktree and branch, if it had them, stay.", StopOutput{Stopped: true},
		did{text: fmt.Sprintf("%s stopped '%s'", t.name(), info.Name)}, nil
}

// plural says n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
