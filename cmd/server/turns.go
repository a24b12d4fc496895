package main

import (
	"sync"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/sessions"
)

// turns asks for a checkpoint each time a session's agent ends a turn
// (active to waiting), and drops a deleted session's. It runs under the
// manager's events, so it only hands over to the checkpointer.
type turns struct {
	auto      *checkpoint.Auto
	workspace string
	// mu protects last: each session's status when last seen.
	mu   sync.Mutex
	last map[string]sessions.Status
}

func (t *turns) onEvent(ev sessions.Event) {
	info := ev.Session
	switch ev.Kind {
	case sessions.EventDestroyed:
		t.mu.Lock()
		delete(t.last, info.ID)
		t.mu.Unlock()
		dir, _ := httpapi.SessionTree(info)
		if info.Worktree != nil {
			// The worktree may be removed with the session; the refs
			// live in the repository the workspace holds.
			dir = t.workspace
		}
		t.auto.Drop(info.ID, dir)
		return
	case sessions.EventStatus, sessions.EventCreated:
	default:
		return
	}
	t.mu.Lock()
	prev := t.last[info.ID]
	t.last[info.ID] = info.Status
	t.mu.Unlock()
	if prev == sessions.StatusActive && info.Status == sessions.StatusWaiting && (info.Worktree == nil || !info.Worktree.Archived) {
		dir, _ := httpapi.SessionTree(info)
		t.auto.Request(info.ID, dir)
	}
}
