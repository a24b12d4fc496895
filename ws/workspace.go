package ws

import (
	"fmt"
	"time"

	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/watcher/memory"
	"github.com/agentmux/agentmux/watcher/workflow"
)

// Message types of workspace and resource events.
const (
	TypeFileChanged     = "file.changed"
	TypeLayoutShift     = "layout.shift"
	TypeWorkflowUpdated = "workflow.updated"
	TypeResourceWarning = "resource.warning"
)

type (
	fileChangedMessage struct {
		Type      string `json:"type"`
		Path      string `json:"path"`
		Event     string `json:"event"`
		Timestamp string `json:"timestamp"`
	}
	layoutShiftMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId,omitempty"`
		Mode      string `json:"mode"`
		Trigger   string `json:"trigger"`
		Path      string `json:"path"`
	}
	workflowMessage struct {
		Type      string       `json:"type"`
		SessionID string       `json:"sessionId,omitempty"`
		Workflow  WorkflowJSON `json:"workflow"`
	}
	resourceWarningMessage struct {
		Type                   string  `json:"type"`
		Message                string  `json:"message"`
		MemoryUsagePercent     float64 `json:"memoryUsagePercent"`
		IsAcceptingNewSessions bool    `json:"isAcceptingNewSessions"`
		Level                  string  `json:"level"`
	}
)

// WorkflowJSON is a workflow as the protocol and the API show it.
type WorkflowJSON struct {
	CurrentStep    string     `json:"currentStep"`
	CompletedSteps []string   `json:"completedSteps"`
	Steps          []StepJSON `json:"steps"`
}

// StepJSON is one workflow step on the wire.
type StepJSON struct {
	Name        string `json:"name"`
	Status      string `json:"status"`
	DisplayName string `json:"displayName,omitempty"`
}

// WorkflowView returns the wire form of a workflow.
func WorkflowView(wf workflow.Workflow) WorkflowJSON {
	v := WorkflowJSON{CurrentStep: wf.CurrentStep, CompletedSteps: wf.CompletedSteps, Steps: make([]StepJSON, len(wf.Steps))}
	if v.CompletedSteps == nil {
		v.CompletedSteps = []string{}
	}
	for i, s := range wf.Steps {
		v.Steps[i] = StepJSON{Name: s.Name, Status: string(s.Status), DisplayName: s.DisplayName}
	}
	return v
}

// OnFile tells every connection about a file event, and suggests showing a
// document that was just written under docs/.
func (h *Hub) OnFile(ev watcher.FileEvent) {
	h.broadcastInformational(fileChangedMessage{
		Type:      TypeFileChanged,
		Path:      ev.Path,
		Event:     string(ev.Op),
		Timestamp: ev.Time.UTC().Format(time.RFC3339Nano),
	})
	if ev.Op != watcher.FileRemoved && watcher.IsDocFile(ev.Rel) {
		h.suggestDoc("", ev.Rel)
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
	h.broadcastInformational(layoutShiftMessage{Type: TypeLayoutShift, SessionID: sessionID, Mode: "split", Trigger: "file_write", Path: rel})
}

// OnWorkflow tells every connection about a newly read workflow.
func (h *Hub) OnWorkflow(_ string, wf workflow.Workflow) { h.OnSessionWorkflow("", wf) }

// OnSessionWorkflow tells every connection about a workflow read in a
// session's worktree; an empty id means the workspace's own.
func (h *Hub) OnSessionWorkflow(sessionID string, wf workflow.Workflow) {
	h.broadcast(workflowMessage{Type: TypeWorkflowUpdated, SessionID: sessionID, Workflow: WorkflowView(wf)})
}

// OnSessionDoc suggests showing a document just written in a session's
// worktree; rel is workspace-relative.
func (h *Hub) OnSessionDoc(sessionID, rel string) { h.suggestDoc(sessionID, rel) }

// OnMemory records a change of memory level and tells every connection;
// connections that open later are told at once while it is not ok.
func (h *Hub) OnMemory(st memory.Status) {
	msg := resourceMessage(st)
	h.mu.Lock()
	h.memory = st
	h.mu.Unlock()
	h.broadcast(msg)
}

// MemoryCritical reports whether memory is at the critical level, when new
// agents are refused.
func (h *Hub) MemoryCritical() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.memory.Level == memory.Critical
}

func resourceMessage(st memory.Status) resourceWarningMessage {
	pct := float64(int(st.Percent*10+0.5)) / 10
	msg := fmt.Sprintf("Memory back to normal: %.1f%%.", pct)
	switch st.Level {
	case memory.Warning:
		msg = fmt.Sprintf("High memory usage: %.1f%%. Consider closing idle sessions.", pct)
	case memory.Critical:
		msg = fmt.Sprintf("Memory critical: %.1f%%. New sessions blocked.", pct)
	}
	return resourceWarningMessage{
		Type:                   TypeResourceWarning,
		Message:                msg,
		MemoryUsagePercent:     pct,
		IsAcceptingNewSessions: st.Level != memory.Critical,
		Level:                  string(st.Level),
	}
}
