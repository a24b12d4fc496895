// Announcements: the Hub tells every connection what happens in the
// workspace and its sessions' trees (files written, workflows read,
// memory levels, session diffs), the workspace events of the protocol.

package ws

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/watcher/memory"
	"github.com/agentmux/agentmux/watcher/workflow"
	"github.com/agentmux/agentmux/wire"
)

// OnFile tells every connection about a file event, and suggests showing a
// document that was just written under docs/.
func (h *Hub) OnFile(ev watcher.FileEvent) { h.OnSessionFile("", "", ev) }

// OnSessionFile is OnFile for a session's worktree, which lies at prefix
// ("<dir>/", relative to the workspace) and whose watcher reports ev.Rel
// relative to itself: a document suggestion carries the session's id and
// a workspace-relative path, and file.changed goes out as for the
// workspace, so a client showing one of its documents reloads it when the
// agent writes it again.
func (h *Hub) OnSessionFile(sessionID, prefix string, ev watcher.FileEvent) {
	h.broadcastInformational(wire.FileChangedMessage{
		Type:      wire.TypeFileChanged,
		Path:      ev.Path,
		Event:     string(ev.Op),
		Timestamp: ev.Time.UTC().Format(time.RFC3339Nano),
	})
	if ev.Op != watcher.FileRemoved && watcher.IsDocFile(ev.Rel) {
		h.suggestDoc(sessionID, prefix+ev.Rel)
	}
}

// shiftQuiet is how long after suggesting a document the same document is
// not suggested again: a write reported as an add and then, once its
// burst settles, as a change is one write, and a second suggestion would
// pull the view back after the user (or another document) moved it.
const shiftQuiet = 2 * time.Second

// suggestDoc sends layout.shift for a document just written, once per
// write burst.
func (h *Hub) suggestDoc(sessionID, rel string) {
	now := time.Now()
	h.mu.Lock()
	if last, ok := h.shifted[rel]; ok && now.Sub(last) < shiftQuiet {
		h.mu.Unlock()
		return
	}
	if len(h.shifted) >= 64 {
		for p, t := range h.shifted {
			if now.Sub(t) >= shiftQuiet {
				delete(h.shifted, p)
			}
		}
	}
	h.shifted[rel] = now
	h.mu.Unlock()
	// Split, not artifact: the agent that wrote it stays in view.
	h.broadcastInformational(wire.LayoutShiftMessage{Type: wire.TypeLayoutShift, SessionID: sessionID, Mode: "split", Trigger: "file_write", Path: rel})
}

// OnWorkflow tells every connection about a newly read workflow of the
// workspace and the status file (workspace-relative) it came from.
func (h *Hub) OnWorkflow(rel string, wf workflow.Workflow) {
	h.broadcast(wire.WorkflowMessage{Type: wire.TypeWorkflowUpdated, Workflow: wire.WorkflowView(wf), File: rel})
}

// OnSessionWorkflow tells every connection about a workflow read in a
// session's worktree.
func (h *Hub) OnSessionWorkflow(sessionID string, wf workflow.Workflow) {
	h.broadcast(wire.WorkflowMessage{Type: wire.TypeWorkflowUpdated, SessionID: sessionID, Workflow: wire.WorkflowView(wf)})
}

// OnMemory records a change of memory level and tells every connection;
// connections that open later are told at once while it is not ok.
func (h *Hub) OnMemory(st memory.Status) {
	msg := wire.ResourceWarningView(st)
	h.mu.Lock()
	h.memory = st
	h.mu.Unlock()
	h.broadcast(msg)
}

// OnSessionDiff tells every connection what a session has changed, and
// keeps it for the connections that open later.
func (h *Hub) OnSessionDiff(sessionID string, s changes.Summarized) {
	if _, err := h.opts.Sessions.Get(sessionID); err != nil {
		return // destroyed meanwhile: nothing to keep for it
	}
	b, err := wire.Marshal(wire.DiffView(sessionID, s))
	if err != nil {
		h.log.Error("encode session.diff", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.diffs[sessionID] = b
	for c := range h.conns {
		c.sendInformational(b)
	}
}

// forgetDiffLocked drops a destroyed session's summary. mu must be held.
func (h *Hub) forgetDiffLocked(sessionID string) { delete(h.diffs, sessionID) }

// OnBranch tells every connection what was done to a session's branch
// and where it stands (session.branch).
func (h *Hub) OnBranch(m wire.BranchMessage) {
	m.Type = wire.TypeSessionBranch
	h.broadcast(m)
}

// OnCheckpoint tells every connection of a new checkpoint of a session's
// tree (session.checkpoint).
func (h *Hub) OnCheckpoint(sessionID string, cp checkpoint.Checkpoint) {
	h.broadcast(wire.CheckpointMessage{Type: wire.TypeSessionCheckpoint, SessionID: sessionID, Checkpoint: cp})
}

// OnPorts records what a browser is shown of the listening ports and,
// when it changed, tells every connection (ports.changed).
//
// Each connection is sent what changed since what it was sent last,
// which its writer works out when it gets to it (see portsChange): a mark
// per connection, as for the other states, not a message queued per
// change. So a connection never misses a change, which would leave its
// list wrong for good, nor piles changes up: however often the ports
// change, it gets at most one message per call, of at most
// ports.MaxListed ports added and as many removed. A connection that
// opens is sent the whole listing at once (register) when there is one,
// and otherwise with the first the poller gives; both come through the
// same mark, so neither can cross a change. With no connection the
// listing is not kept: nobody would keep it fresh (see PortsWanted).
func (h *Hub) OnPorts(l ports.Listing) {
	if l.Ports == nil {
		l.Ports = []ports.Port{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.conns) == 0 || h.portsKnown && h.ports.Equal(l) {
		return
	}
	h.ports, h.portsKnown = l, true
	for c := range h.conns {
		c.sendState(wire.TypePortsChanged, "")
	}
}

// PortsWanted receives when a connection opens and the hub has no listing
// of the ports to send it: the poller, which looks only while someone is
// connected, looks then rather than at its next tick.
func (h *Hub) PortsWanted() <-chan struct{} { return h.portsWanted }

// renderState encodes the state message k names as this connection is
// owed it; nil when it is owed nothing. Most states are the same for
// every connection (Hub.renderState); ports.changed is what changed
// since this connection's last one (portsChange). Only the writer calls
// it.
func (c *conn) renderState(k stateKey) ([]byte, error) {
	if k.kind == wire.TypePortsChanged {
		return c.portsChange()
	}
	return c.hub.renderState(k)
}

// portsChange renders the ports.changed this connection is owed: the whole
// listing the first time, then what changed since what it was sent last;
// nil when there is nothing to send (the listing went and came back as
// it was). Only the writer calls it: it owns c.ports.
func (c *conn) portsChange() ([]byte, error) {
	c.hub.mu.Lock()
	now, known := c.hub.ports, c.hub.portsKnown
	c.hub.mu.Unlock()
	if !known {
		return nil, nil
	}
	msg := wire.PortsMessage{Type: wire.TypePortsChanged, Reset: !c.portsSent, More: now.More}
	switch {
	case msg.Reset:
		msg.Added, msg.Removed = now.Ports, []int{}
	case c.ports.Equal(now):
		return nil, nil
	default:
		msg.Added, msg.Removed = ports.Diff(c.ports.Ports, now.Ports)
	}
	b, err := wire.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("encode ports.changed: %w", err)
	}
	c.ports, c.portsSent = now, true
	return b, nil
}
