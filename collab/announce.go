// Announcements: what happens in the workspace and its sessions' trees
// (files written, workflows read, memory levels, session diffs, branches,
// checkpoints, ports), told to every client.

package collab

import (
	"time"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/watcher/workflow"
	"github.com/agentmux/agentmux/wire"
)

// OnFile tells every client about a file event, and suggests showing a
// document that was just written under docs/.
func (a *App) OnFile(ev watcher.FileEvent) { a.OnSessionFile("", "", ev) }

// OnSessionFile is OnFile for a session's worktree, which lies at prefix
// ("<dir>/", relative to the workspace) and whose watcher reports ev.Rel
// relative to itself: a document suggestion carries the session's id and
// a workspace-relative path, and file.changed goes out as for the
// workspace, so a client showing one of its documents reloads it when the
// agent writes it again. The event is kept among the recent ones that a
// client joining later is sent (file.recent).
func (a *App) OnSessionFile(sessionID, prefix string, ev watcher.FileEvent) {
	f := wire.RecentFile{Path: ev.Path, Event: string(ev.Op), Timestamp: ev.Time.UTC().Format(time.RFC3339Nano)}
	b, err := wire.Marshal(wire.FileChangedMessage{Type: wire.TypeFileChanged, Path: f.Path, Event: f.Event, Timestamp: f.Timestamp})
	if err != nil {
		a.log.Error("encode file.changed", "err", err)
		return
	}
	a.mu.Lock()
	a.recent.add(f)
	a.sendAllLocked(b, Client.SendInformational)
	a.mu.Unlock()
	if ev.Op != watcher.FileRemoved && watcher.IsDocFile(ev.Rel) {
		a.suggestDoc(sessionID, prefix+ev.Rel)
	}
}

// shiftQuiet is how long after suggesting a document the same document is
// not suggested again: a write reported as an add and then, once its
// burst settles, as a change is one write, and a second suggestion would
// pull the view back after the user (or another document) moved it.
const shiftQuiet = 2 * time.Second

// suggestDoc sends layout.shift for a document just written, once per
// write burst.
func (a *App) suggestDoc(sessionID, rel string) {
	now := time.Now()
	a.mu.Lock()
	if last, ok := a.shifted[rel]; ok && now.Sub(last) < shiftQuiet {
		a.mu.Unlock()
		return
	}
	if len(a.shifted) >= 64 {
		for p, t := range a.shifted {
			if now.Sub(t) >= shiftQuiet {
				delete(a.shifted, p)
			}
		}
	}
	a.shifted[rel] = now
	a.mu.Unlock()
	// Split, not artifact: the agent that wrote it stays in view.
	a.broadcastInformational(wire.LayoutShiftMessage{Type: wire.TypeLayoutShift, SessionID: sessionID, Mode: "split", Trigger: "file_write", Path: rel})
}

// OnWorkflow tells every client about a newly read workflow of the
// workspace and the status file (workspace-relative) it came from.
func (a *App) OnWorkflow(rel string, wf workflow.Workflow) {
	a.broadcast(wire.WorkflowMessage{Type: wire.TypeWorkflowUpdated, Workflow: wire.WorkflowView(wf), File: rel})
}

// OnSessionWorkflow tells every client about a workflow read in a
// session's worktree.
func (a *App) OnSessionWorkflow(sessionID string, wf workflow.Workflow) {
	a.broadcast(wire.WorkflowMessage{Type: wire.TypeWorkflowUpdated, SessionID: sessionID, Workflow: wire.WorkflowView(wf)})
}

// OnMemory records a change of memory level and tells every client;
// clients that join later are told at once while it is not ok.
func (a *App) OnMemory(st memory.Status) {
	msg := wire.ResourceWarningView(st)
	a.mu.Lock()
	a.memory = st
	a.mu.Unlock()
	a.broadcast(msg)
}

// OnSaveStatus records whether the sessions are being saved and tells
// every client; clients that join later are told at once while saving
// fails.
func (a *App) OnSaveStatus(st sessions.SaveStatus) {
	msg := wire.SaveStatusView(st)
	a.mu.Lock()
	a.saving = st
	a.mu.Unlock()
	a.broadcast(msg)
}

// OnSessionDiff tells every client what a session has changed, and keeps
// it for the clients that join later.
func (a *App) OnSessionDiff(sessionID string, s changes.Summarized) {
	if _, err := a.sessions.Get(sessionID); err != nil {
		return // destroyed meanwhile: nothing to keep for it
	}
	b, err := wire.Marshal(wire.DiffView(sessionID, s))
	if err != nil {
		a.log.Error("encode session.diff", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.diffs[sessionID] = sessionDiff{msg: b, additions: s.Additions, deletions: s.Deletions, files: len(s.Files)}
	a.sendAllLocked(b, Client.SendInformational)
}

// OnOverlaps tells every client the overlaps between sessions' changes
// (overlaps.changed, the whole list), and keeps them for the clients
// that join and for Overlaps. An overlap with a session destroyed
// meanwhile is left out: the next list will not have it either.
func (a *App) OnOverlaps(list []changes.Overlap) {
	kept := list[:0:0]
	for _, o := range list {
		if a.exists(o.Sessions[0]) && a.exists(o.Sessions[1]) {
			kept = append(kept, o)
		}
	}
	msg := wire.OverlapsMessage{Type: wire.TypeOverlapsChanged, Overlaps: wire.OverlapsView(kept)}
	b, err := wire.Marshal(msg)
	if err != nil {
		a.log.Error("encode overlaps.changed", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.overlaps, a.overlapsMsg = msg.Overlaps, b
	// Not informational: a client that missed it would show a warning
	// that is no longer true until the next change.
	a.sendAllLocked(b, Client.Send)
}

func (a *App) exists(sessionID string) bool {
	_, err := a.sessions.Get(sessionID)
	return err == nil
}

// Overlaps returns the last overlaps told (OnOverlaps); none is an empty
// list.
func (a *App) Overlaps() []wire.Overlap {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]wire.Overlap{}, a.overlaps...)
}

// sessionDiff is a session's last session.diff, encoded, with its counts.
type sessionDiff struct {
	msg                         []byte
	additions, deletions, files int
}

// DiffCounts returns the lines a session's change adds and removes and
// the files it touches, as its last session.diff said; zero before the
// first.
func (a *App) DiffCounts(sessionID string) (additions, deletions, files int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d := a.diffs[sessionID]
	return d.additions, d.deletions, d.files
}

// OnBranch tells every client what was done to a session's branch and
// where it stands (session.branch).
func (a *App) OnBranch(m wire.BranchMessage) {
	m.Type = wire.TypeSessionBranch
	a.broadcast(m)
}

// OnAgentCall tells every client of a call an agent made to agentmux's
// MCP tools (agent.call): a line of the activity feed. Like the other
// lines of the feed it is informational, so a slow client may go without.
func (a *App) OnAgentCall(m wire.AgentCallMessage) {
	m.Type = wire.TypeAgentCall
	a.broadcastInformational(m)
}

// OnContinued tells every client that agentmux sent on a session a usage
// limit stopped (session.continued): a line of the activity feed, and
// informational like the others.
func (a *App) OnContinued(m wire.ContinuedMessage) {
	m.Type = wire.TypeSessionContinued
	a.broadcastInformational(m)
}

// OnAnswered tells every client that a person answered a waiting
// session without its terminal (session.answered): a line of the
// activity feed, informational like the others.
func (a *App) OnAnswered(m wire.AnsweredMessage) {
	m.Type = wire.TypeSessionAnswered
	a.broadcastInformational(m)
}

// OnCheckpoint tells every client of a new checkpoint of a session's tree
// (session.checkpoint).
func (a *App) OnCheckpoint(sessionID string, cp checkpoint.Checkpoint) {
	a.broadcast(wire.CheckpointMessage{Type: wire.TypeSessionCheckpoint, SessionID: sessionID, Checkpoint: cp})
}

// OnPorts records what a browser is shown of the listening ports and,
// when it changed, tells every client (ports.changed).
//
// Each client is sent what changed since what it was sent last, which
// its transport works out when it gets to it (from Ports): a mark per
// client, as for the other states, not a message queued per change. So a
// client never misses a change, which would leave its list wrong for
// good, nor piles changes up: however often the ports change, it gets at
// most one message per call, of at most ports.MaxListed ports added and
// as many removed. A client that joins is marked at once when there is a
// listing (Join), and otherwise with the first the poller gives; both
// come through the same mark, so neither can cross a change. With no
// client the listing is not kept: nobody would keep it fresh (see
// PortsWanted).
func (a *App) OnPorts(l ports.Listing) {
	if l.Ports == nil {
		l.Ports = []ports.Port{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.clients) == 0 || a.portsKnown && a.ports.Equal(l) {
		return
	}
	a.ports, a.portsKnown = l, true
	a.markAllLocked(wire.TypePortsChanged, "")
}

// Ports returns what a browser is shown of the listening ports, and
// whether there is a listing at all.
func (a *App) Ports() (ports.Listing, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ports, a.portsKnown
}

// Watched reports whether any client is joined: the ports poller looks
// only then, since OnPorts keeps no listing for nobody.
func (a *App) Watched() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.clients) > 0
}

// PortsWanted receives when a client joins and there is no listing of
// the ports to send it: the poller, which looks only while someone is
// connected, looks then rather than at its next tick.
func (a *App) PortsWanted() <-chan struct{} { return a.portsWanted }

// OnPullRequest tells every client how a session's pull request stands
// (session.pullRequest), and keeps it for the clients that join.
func (a *App) OnPullRequest(sessionID string, v pulls.View) {
	if _, err := a.sessions.Get(sessionID); err != nil {
		return // deleted meanwhile
	}
	b, err := wire.Marshal(wire.PullRequestMessage{Type: wire.TypeSessionPullRequest, SessionID: sessionID, PullRequest: v})
	if err != nil {
		a.log.Error("encode session.pullRequest", "err", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.pulls[sessionID] = b
	a.sendAllLocked(b, Client.Send)
}
