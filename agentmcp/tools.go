package agentmcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentmux/agentmux/sessions"
)

// tools are one caller's tools.
type tools struct {
	mgr        *sessions.Manager
	caller     *sessions.Session
	maxStarted int
	log        *slog.Logger
}

// SessionItem is a session as list_sessions gives it.
type SessionItem struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Agent   string `json:"agent"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Branch  string `json:"branch,omitempty"`
	Running bool   `json:"running"`
	// You marks the calling session.
	You bool `json:"you,omitempty"`
}

// ListOutput is list_sessions' structured result.
type ListOutput struct {
	Sessions []SessionItem `json:"sessions"`
}

func (t *tools) listSessions(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ListOutput, error) {
	out := ListOutput{Sessions: []SessionItem{}}
	var b strings.Builder
	for _, s := range t.mgr.List() {
		info := s.Info()
		if info.RunOf != "" {
			continue // a run script's terminal, not an agent
		}
		item := SessionItem{ID: info.ID, Name: info.Name, Agent: info.Agent, Status: string(info.Status), Reason: info.Reason, Running: info.Running, You: info.ID == t.caller.ID()}
		if info.Worktree != nil {
			item.Branch = info.Worktree.Branch
		}
		out.Sessions = append(out.Sessions, item)
		fmt.Fprintf(&b, "- %s (id %s, %s): %s", item.Name, item.ID, item.Agent, item.Status)
		if item.Reason != "" {
			fmt.Fprintf(&b, ", %s", item.Reason)
		}
		if item.Branch != "" {
			fmt.Fprintf(&b, ", on branch %s", item.Branch)
		}
		if item.You {
			b.WriteString(" (this is you)")
		}
		b.WriteByte('\n')
	}
	return text(fmt.Sprintf("%d sessions:\n%s", len(out.Sessions), b.String())), out, nil
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

func (t *tools) sendPrompt(_ context.Context, _ *mcp.CallToolRequest, in PromptInput) (*mcp.CallToolResult, PromptOutput, error) {
	if in.SessionID == t.caller.ID() {
		return nil, PromptOutput{}, fmt.Errorf("that is your own session: a prompt to yourself would be typed into your own input")
	}
	s, err := t.mgr.Get(in.SessionID)
	if err != nil {
		return nil, PromptOutput{}, fmt.Errorf("no session %q: list_sessions gives the ids", in.SessionID)
	}
	name := t.caller.Info().Name
	p, pos, err := s.QueuePrompt(sessions.Author{ID: "agent:" + t.caller.ID(), Name: "agent " + name}, in.Text)
	if err != nil {
		return nil, PromptOutput{}, err
	}
	t.log.Info("an agent queued a prompt", "to", in.SessionID, "prompt", p.ID, "position", pos)
	return text(fmt.Sprintf("Queued for %s at position %d: it is typed in when its agent waits for input.", s.Info().Name, pos)), PromptOutput{PromptID: p.ID, Position: pos}, nil
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
	Outcome string `json:"outcome"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
}

func (t *tools) waitFor(ctx context.Context, _ *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, WaitOutput, error) {
	if in.SessionID == t.caller.ID() {
		return nil, WaitOutput{}, fmt.Errorf("that is your own session: it waits for nobody while you wait for it")
	}
	limit := MaxWait
	if in.TimeoutSeconds > 0 && time.Duration(in.TimeoutSeconds)*time.Second < limit {
		limit = time.Duration(in.TimeoutSeconds) * time.Second
	}
	s, err := t.mgr.Get(in.SessionID)
	if err != nil {
		return nil, WaitOutput{}, fmt.Errorf("no session %q: list_sessions gives the ids", in.SessionID)
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
	for {
		info := s.Info()
		out := WaitOutput{Status: string(info.Status), Reason: info.Reason}
		switch {
		case !info.Running:
			out.Outcome = "exited"
		case info.Status == sessions.StatusWaiting:
			out.Outcome = "waiting"
		}
		if out.Outcome != "" {
			return text(fmt.Sprintf("%s %s: %s.", info.Name, map[string]string{"waiting": "waits for input", "exited": "is not running"}[out.Outcome], describe(info))), out, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			out.Outcome = "timeout"
			return text(fmt.Sprintf("%s still works after %s: %s.", info.Name, limit, describe(info))), out, nil
		case <-ctx.Done():
			return nil, WaitOutput{}, ctx.Err()
		}
	}
}

func describe(info sessions.Info) string {
	if info.Reason == "" {
		return string(info.Status)
	}
	return string(info.Status) + ", " + info.Reason
}

// text is a tool result of one text block.
func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// StartInput is start_session's input.
type StartInput struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent to run: claude, codex, aider or shell; the server's default when left out"`
	Name   string `json:"name,omitempty" jsonschema:"the session's name; the branch's, or the agent's and a number, when left out"`
	Prompt string `json:"prompt,omitempty" jsonschema:"the first prompt, typed in when the agent first waits for input"`
	Branch string `json:"branch,omitempty" jsonschema:"run it in a new git worktree on this branch (made from HEAD when it does not exist)"`
}

// StartOutput is start_session's structured result.
type StartOutput struct {
	SessionID string `json:"sessionId"`
	Name      string `json:"name"`
}

func (t *tools) startSession(_ context.Context, _ *mcp.CallToolRequest, in StartInput) (*mcp.CallToolResult, StartOutput, error) {
	me := t.caller.Info()
	if me.StartedBy != "" {
		return nil, StartOutput{}, fmt.Errorf("a session another agent started starts none: ask the session that started you")
	}
	n := 0
	for _, s := range t.mgr.List() {
		if s.Info().StartedBy == me.ID {
			n++
		}
	}
	if n >= t.maxStarted {
		return nil, StartOutput{}, fmt.Errorf("you have %d sessions you started, the most you may: stop one with stop_session first", n)
	}
	s, err := t.mgr.Create(sessions.CreateOptions{Name: in.Name, Agent: in.Agent, WorktreeBranch: in.Branch, StartedBy: me.ID})
	if err != nil {
		return nil, StartOutput{}, err
	}
	info := s.Info()
	if strings.TrimSpace(in.Prompt) != "" {
		if _, _, err := s.QueuePrompt(sessions.Author{ID: "agent:" + me.ID, Name: "agent " + me.Name}, in.Prompt); err != nil {
			return nil, StartOutput{}, fmt.Errorf("session %s started, but its prompt was refused: %w", info.ID, err)
		}
	}
	t.log.Info("an agent started a session", "started", info.ID, "name", info.Name, "branch", in.Branch)
	where := "in the workspace"
	if info.Worktree != nil {
		where = "in a worktree on branch " + info.Worktree.Branch
	}
	return text(fmt.Sprintf("Started %s (id %s, %s) %s.", info.Name, info.ID, info.Agent, where)), StartOutput{SessionID: info.ID, Name: info.Name}, nil
}

// StopInput is stop_session's input.
type StopInput struct {
	SessionID string `json:"sessionId" jsonschema:"the id of a session you started"`
}

// StopOutput is stop_session's structured result.
type StopOutput struct {
	Stopped bool `json:"stopped"`
}

func (t *tools) stopSession(ctx context.Context, _ *mcp.CallToolRequest, in StopInput) (*mcp.CallToolResult, StopOutput, error) {
	s, err := t.mgr.Get(in.SessionID)
	if err != nil {
		return nil, StopOutput{}, fmt.Errorf("no session %q: list_sessions gives the ids", in.SessionID)
	}
	if s.Info().StartedBy != t.caller.ID() {
		return nil, StopOutput{}, fmt.Errorf("you did not start %s: only the sessions you started are yours to stop", s.Info().Name)
	}
	if err := t.mgr.Destroy(ctx, in.SessionID); err != nil {
		return nil, StopOutput{}, err
	}
	t.log.Info("an agent stopped a session it started", "stopped", in.SessionID)
	return text("Stopped and deleted; its worktree and branch, if it had them, stay."), StopOutput{Stopped: true}, nil
}
