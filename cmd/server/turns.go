package main

import (
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/sessions"
)

// turns asks for a checkpoint each time a session's agent ends a turn,
// and drops a deleted session's. It runs under the manager's events, so
// it only hands over to the checkpointer.
//
// A turn's end is the manager's EventTurnEnded, not a status change to
// waiting: a turn answered at once by a queued prompt or by held keys is
// never announced waiting, and took no checkpoint when this watched the
// statuses.
type turns struct {
	auto      *checkpoint.Auto
	workspace string
}

func (t *turns) onEvent(ev sessions.Event) {
	info := ev.Session
	switch ev.Kind {
	case sessions.EventDestroyed:
		dir, _ := httpapi.SessionTree(info)
		if info.Worktree != nil {
			// The worktree may be removed with the session; the refs
			// live in the repository the workspace holds.
			dir = t.workspace
		}
		t.auto.Drop(info.ID, dir)
	case sessions.EventTurnEnded:
		if info.Worktree != nil && info.Worktree.Archived {
			return
		}
		dir, _ := httpapi.SessionTree(info)
		t.auto.Request(info.ID, dir)
	}
}
