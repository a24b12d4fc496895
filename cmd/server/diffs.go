package main

import (
	"github.com/agentmux/agentmux/sessions"
)

// followDiffs keeps the live change tracker following the manager's
// sessions. It is called with the manager's events, so it must not
// block: Follow and Forget only hand the session over.
func (s *server) followDiffs(ev sessions.Event) {
	switch ev.Kind {
	case sessions.EventCreated:
		s.followDiff(ev.Session)
	case sessions.EventUpdated:
		// A merge changes what the changes count from (Info.Tree);
		// following it again with the same counts is nothing.
		if wt := ev.Session.Worktree; wt != nil && wt.MergedTip != "" {
			s.followDiff(ev.Session)
		}
	case sessions.EventDestroyed:
		s.diffs.Forget(ev.Session.ID)
	}
}

// followDiff has the tracker follow one session's tree.
func (s *server) followDiff(info sessions.Info) {
	dir, from := info.Tree()
	s.diffs.Follow(info.ID, dir, from...)
}
