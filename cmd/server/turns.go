package main

import (
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/checks"
	"github.com/agentmux/agentmux/sessions"
)

// turns asks for a checkpoint each time a session's agent ends a turn
// (whose check starts once it is taken), stops a check whose agent works
// again, and drops a deleted session's checkpoints and checks. It runs
// under the manager's events, so it only hands over.
//
// A turn's end is the manager's EventTurnEnded, not a status change to
// waiting: a turn answered at once by a queued prompt or by held keys is
// never announced waiting, and took no checkpoint when this watched the
// statuses.
type turns struct {
	auto      *checkpoint.Auto
	checks    *checks.Runner
	workspace string
}

func (t *turns) onEvent(ev sessions.Event) {
	info := ev.Session
	switch ev.Kind {
	case sessions.EventStatus:
		if info.Status == sessions.StatusActive {
			// The agent works again: the tree being checked is changing.
			t.checks.Supersede(info.ID)
		}
	case sessions.EventDestroyed:
		t.checks.Forget(info.ID)
		dir, _ := info.Tree()
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
		dir, _ := info.Tree()
		t.auto.Request(info.ID, dir)
	}
}

// forgetDeleted drops what a deleted session leaves beside its record:
// its read-only links, whose viewers are closed, what was seen of its
// pull request, and its attachments in its tree. It runs under the manager's events, before a worktree
// deleted with the session is removed; see attachments.Store.Drop for
// why it may.
func (s *server) forgetDeleted(ev sessions.Event) {
	if ev.Kind != sessions.EventDestroyed {
		return
	}
	s.shares.ForgetSession(ev.Session.ID)
	s.pulls.Forget(ev.Session.ID)
	dir, _ := ev.Session.Tree()
	s.attachments.Drop(ev.Session.ID, dir)
}
