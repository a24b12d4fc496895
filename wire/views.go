package wire

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher/workflow"
)

// Session is a session as the API and the protocol show it.
type Session struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
	// Reason says why the session has its status: for a waiting one,
	// what its agent asks.
	Reason string `json:"reason,omitempty"`
	// WaitingSince is when a waiting session began to wait.
	WaitingSince   *time.Time `json:"waitingSince,omitempty"`
	Agent          string     `json:"agent"`
	Command        []string   `json:"command"`
	Cwd            string     `json:"cwd"`
	CreatedAt      time.Time  `json:"createdAt"`
	LastActivityAt time.Time  `json:"lastActivityAt"`
	ExitCode       *int       `json:"exitCode,omitempty"`
	Cols           int        `json:"cols"`
	Rows           int        `json:"rows"`
	// Running tells a silent but live idle session from one with no
	// process, which only a resume brings back.
	Running  bool               `json:"running"`
	Worktree *sessions.Worktree `json:"worktree,omitempty"`
	// Permission is what a waiting agent asks to be allowed, as in
	// session.status, for a page that loads while it waits.
	Permission *sessions.Permission `json:"permission,omitempty"`
	// Ports is the block of ports reserved for the session, the first of
	// which its agent finds in $AGENTMUX_PORT: where its dev servers
	// listen.
	Ports *sessions.Ports `json:"ports,omitempty"`
	// Check is the check of the session's last turn, running or ended,
	// as session.check gives it; absent before the first.
	Check *sessions.Check `json:"check,omitempty"`
	// SendFailures says whether a failed check is queued to the agent.
	SendFailures bool `json:"sendFailures"`
	// Archive is the archive script's run when the session's worktree
	// was removed; absent when none ran.
	Archive *scripts.Result `json:"archive,omitempty"`
	// Setup is a worktree session's setup script's latest run; absent
	// for a session without one.
	Setup *sessions.Setup `json:"setup,omitempty"`
	// RunOf is, for a run session, the session whose run script it runs.
	RunOf string `json:"runOf,omitempty"`
	// StartedBy is, for a session an agent started through agentmux's
	// MCP tools, the session whose agent started it.
	StartedBy string `json:"startedBy,omitempty"`
	// Usage is what the session's agent reported it spends; absent when
	// it reported nothing (see usage.updated).
	Usage *sessions.Usage `json:"usage,omitempty"`
	// Limit is the account's usage limit that stopped the session's
	// agent, while it waits for the reset (status limited).
	Limit *sessions.Limit `json:"limit,omitempty"`
	// PullRequest names the pull request of the session's branch, once
	// one was opened or found; how it stands comes in
	// session.pullRequest.
	PullRequest *sessions.PullRequest `json:"pullRequest,omitempty"`
}

// SessionView returns the wire form of a session.
func SessionView(info sessions.Info) Session {
	v := Session{
		ID:             info.ID,
		Name:           info.Name,
		Status:         string(info.Status),
		Reason:         info.Reason,
		Agent:          info.Agent,
		Command:        info.Command,
		Cwd:            info.Cwd,
		CreatedAt:      info.CreatedAt,
		LastActivityAt: info.LastActivityAt,
		Cols:           info.Cols,
		Rows:           info.Rows,
		Running:        info.Running,
		Worktree:       info.Worktree,
		Permission:     info.Permission,
		Ports:          info.Ports,
		Check:          info.Check,
		SendFailures:   info.SendFailures,
		Archive:        info.Archive,
		Setup:          info.Setup,
		RunOf:          info.RunOf,
		StartedBy:      info.StartedBy,
		Usage:          info.Usage,
		Limit:          info.Limit,
		PullRequest:    info.PullRequest,
	}
	if v.Command == nil {
		v.Command = []string{}
	}
	if !info.WaitingSince.IsZero() {
		since := info.WaitingSince
		v.WaitingSince = &since
	}
	if info.Exit != nil {
		code := info.Exit.Code
		v.ExitCode = &code
	}
	return v
}

// Workflow is a BMAD workflow as the protocol and the API show it.
type Workflow struct {
	CurrentStep    string   `json:"currentStep"`
	CompletedSteps []string `json:"completedSteps"`
	Steps          []Step   `json:"steps"`
}

// Step is one workflow step on the wire.
type Step struct {
	Name        string `json:"name"`
	Status      string `json:"status"`
	DisplayName string `json:"displayName,omitempty"`
}

// WorkflowView returns the wire form of a workflow.
func WorkflowView(wf workflow.Workflow) Workflow {
	v := Workflow{CurrentStep: wf.CurrentStep, CompletedSteps: wf.CompletedSteps, Steps: make([]Step, len(wf.Steps))}
	if v.CompletedSteps == nil {
		v.CompletedSteps = []string{}
	}
	for i, s := range wf.Steps {
		v.Steps[i] = Step{Name: s.Name, Status: string(s.Status), DisplayName: s.DisplayName}
	}
	return v
}

// DiffFile is one changed file of a session.diff.
type DiffFile struct {
	Path      string `json:"path"`
	OldPath   string `json:"oldPath,omitempty"`
	Status    string `json:"status"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
	Binary    bool   `json:"binary,omitempty"`
}

// DiffView returns the session.diff that announces a session's changes,
// listing at most MaxDiffFiles files.
func DiffView(sessionID string, s changes.Summarized) DiffMessage {
	n := min(len(s.Files), MaxDiffFiles)
	m := DiffMessage{
		Type: TypeSessionDiff, SessionID: sessionID, Base: s.Base, Files: make([]DiffFile, 0, n),
		Additions: s.Additions, Deletions: s.Deletions, Truncated: len(s.Files) > n,
	}
	for _, f := range s.Files[:n] {
		m.Files = append(m.Files, DiffFile{Path: f.Path, OldPath: f.OldPath, Status: string(f.Status), Additions: f.Additions, Deletions: f.Deletions, Binary: f.Binary})
	}
	return m
}

// Overlap is two sessions that change the same file in different trees
// of one repository (changes.Overlap).
type Overlap struct {
	// Sessions are the two sessions' ids.
	Sessions []string `json:"sessions"`
	Path     string   `json:"path"`
	// Lines reports that their changes of the file overlap or touch,
	// where a merge of both would conflict.
	Lines bool `json:"lines"`
	// BasesDiffer reports that the two count the file's change from
	// different versions of it, so their lines were not compared.
	BasesDiffer bool `json:"basesDiffer,omitempty"`
	// Hunks are the hunks of each session's change that meet the
	// other's, when Lines.
	Hunks []OverlapHunk `json:"hunks,omitempty"`
}

// OverlapHunk is a hunk of one session's change of an overlapping file
// that meets the other session's: oldLines lines from oldStart in the
// base, newLines from newStart in the session's tree (none: an insertion
// after the line before).
type OverlapHunk struct {
	SessionID string `json:"sessionId"`
	OldStart  int    `json:"oldStart"`
	OldLines  int    `json:"oldLines"`
	NewStart  int    `json:"newStart"`
	NewLines  int    `json:"newLines"`
}

// OverlapsView returns the wire form of a list of overlaps; none is an
// empty list.
func OverlapsView(os []changes.Overlap) []Overlap {
	out := make([]Overlap, 0, len(os))
	for _, o := range os {
		v := Overlap{Sessions: []string{o.Sessions[0], o.Sessions[1]}, Path: o.Path, Lines: o.Lines, BasesDiffer: o.BasesDiffer}
		for i, hs := range o.Hunks {
			for _, h := range hs {
				v.Hunks = append(v.Hunks, OverlapHunk{SessionID: o.Sessions[i], OldStart: h.OldStart, OldLines: h.OldLines, NewStart: h.NewStart, NewLines: h.NewLines})
			}
		}
		out = append(out, v)
	}
	return out
}

// ResourceWarningView returns the resource.warning that announces a memory
// level, with a sentence for people.
func ResourceWarningView(st memory.Status) ResourceWarningMessage {
	pct := float64(int(st.Percent*10+0.5)) / 10
	msg := fmt.Sprintf("Memory back to normal: %.1f%%.", pct)
	switch st.Level {
	case memory.Warning:
		msg = fmt.Sprintf("High memory usage: %.1f%%. Consider closing idle sessions.", pct)
	case memory.Critical:
		msg = fmt.Sprintf("Memory critical: %.1f%%. New sessions blocked.", pct)
	}
	return ResourceWarningMessage{
		Type:                   TypeResourceWarning,
		Message:                msg,
		MemoryUsagePercent:     pct,
		IsAcceptingNewSessions: st.Level != memory.Critical,
		Level:                  string(st.Level),
	}
}

// SaveStatusView returns the save.status that says st, with what failed
// and what to do in words for people.
func SaveStatusView(st sessions.SaveStatus) SaveStatusMessage {
	m := SaveStatusMessage{Type: TypeSaveStatus, Failing: st.Failing, Database: st.Database, Since: st.Since.UnixMilli()}
	if !st.Failing {
		m.Message = "Sessions are saved again."
		return m
	}
	why, advice := saveFailure(st.Err, filepath.Dir(st.Database))
	m.Message = "Sessions are not being saved: " + why + "."
	m.Advice = advice + "; saving resumes by itself. Until then, a restart loses what the sessions did since."
	if st.Err != nil {
		m.Error = st.Err.Error()
	}
	return m
}

// saveFailure says why the database in dir refused a write, and what to
// do. bbolt does not always wrap the system's error (a failed resize is
// formatted with %s), so its text is matched too.
func saveFailure(err error, dir string) (why, advice string) {
	is := func(errno syscall.Errno) bool {
		return err != nil && (errors.Is(err, errno) || strings.Contains(err.Error(), errno.Error()))
	}
	switch {
	case is(syscall.ENOSPC):
		return "the disk is full", "Free space on the file system that holds " + dir + " (df " + dir + ")"
	case is(syscall.EDQUOT):
		return "the disk quota is used up", "Free space in your quota on the file system that holds " + dir
	case is(syscall.EROFS):
		return "the file system is read-only", "Make the file system that holds " + dir + " writable again, or restart agentmux with another --data-dir"
	case is(syscall.EACCES), is(syscall.EPERM):
		return "agentmux may not write the database", "Give the user agentmux runs as write access to " + dir
	case is(syscall.EIO):
		return "the disk reports an I/O error", "Check the disk that holds " + dir + " (dmesg) and copy its agentmux.db somewhere safe"
	}
	return "the database refuses writes", "Check the file system that holds " + dir
}

// Participant is one connection in a session.
type Participant struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Color   string `json:"color"`
	Viewing bool   `json:"viewing"`
	// LastInputAt is when it last typed into the session, in Unix
	// milliseconds; 0 if it has not.
	LastInputAt int64 `json:"lastInputAt,omitempty"`
	// Viewer marks someone watching through a read-only link, who can
	// neither type nor size the session.
	Viewer bool `json:"viewer,omitempty"`
}

// Prompt is a queued prompt as the protocol shows it.
type Prompt struct {
	ID       string    `json:"id"`
	Author   string    `json:"author"`
	AuthorID string    `json:"authorId"`
	Text     string    `json:"text"`
	QueuedAt time.Time `json:"queuedAt"`
}

// PromptView returns the wire form of a queued prompt.
func PromptView(p sessions.Prompt) Prompt {
	return Prompt{ID: p.ID, Author: p.Author.Name, AuthorID: p.Author.ID, Text: p.Text, QueuedAt: p.QueuedAt}
}

// PromptListView returns a session's queue as prompt.list.
func PromptListView(sessionID string, q sessions.Queue) PromptListMessage {
	m := PromptListMessage{Type: TypePromptList, SessionID: sessionID, Prompts: make([]Prompt, 0, len(q.Prompts)), Rev: q.Rev}
	for _, p := range q.Prompts {
		m.Prompts = append(m.Prompts, PromptView(p))
	}
	return m
}

// ReviewDraftView returns a session's review draft as review.draft.
func ReviewDraftView(sessionID string, d review.Draft) ReviewDraftMessage {
	cs := d.Comments
	if cs == nil {
		cs = []review.Comment{}
	}
	return ReviewDraftMessage{Type: TypeReviewDraft, SessionID: sessionID, Comments: cs, Rev: d.Rev}
}

// EventMessage returns the message that announces a session event to every
// client.
func EventMessage(ev sessions.Event) any {
	switch ev.Kind {
	case sessions.EventCreated:
		return CreatedMessage{Type: TypeSessionCreated, Session: SessionView(ev.Session)}
	case sessions.EventDestroyed:
		return DestroyedMessage{Type: TypeSessionDestroyed, SessionID: ev.Session.ID}
	case sessions.EventNeedsInput:
		return NeedsInputMessage{Type: TypeSessionNeedsInput, SessionID: ev.Session.ID, Message: ev.Message, Permission: ev.Session.Permission}
	case sessions.EventWarning:
		return WarningMessage{Type: TypeSessionWarning, SessionID: ev.Session.ID, Message: ev.Message, Severity: string(ev.Severity)}
	case sessions.EventPromptQueued:
		return PromptQueuedMessage{Type: TypePromptQueued, SessionID: ev.Session.ID, Prompt: PromptView(*ev.Prompt), Rev: ev.Queue.Rev}
	case sessions.EventPromptDelivered:
		return PromptGoneMessage{Type: TypePromptDelivered, SessionID: ev.Session.ID, PromptID: ev.Prompt.ID, Rev: ev.Queue.Rev}
	case sessions.EventSetup:
		return SetupMessage{Type: TypeSessionSetup, SessionID: ev.Session.ID, Setup: ev.Session.Setup}
	case sessions.EventCheck:
		return CheckMessage{Type: TypeSessionCheck, SessionID: ev.Session.ID, Check: ev.Check, SendFailures: ev.Session.SendFailures}
	case sessions.EventUsage:
		var u sessions.Usage // an EventUsage always has one
		if ev.Session.Usage != nil {
			u = *ev.Session.Usage
		}
		return UsageMessage{Type: TypeUsageUpdated, SessionID: ev.Session.ID, Usage: u}
	case sessions.EventPromptDequeued:
		return PromptGoneMessage{Type: TypePromptDequeued, SessionID: ev.Session.ID, PromptID: ev.Prompt.ID, Rev: ev.Queue.Rev}
	default:
		return StatusMessage{Type: TypeSessionStatus, SessionID: ev.Session.ID, Status: string(ev.Session.Status), Reason: ev.Session.Reason, Running: ev.Session.Running, Permission: ev.Session.Permission, Limit: ev.Session.Limit}
	}
}

// ViewedSession is what a viewer, connected through a read-only link, is
// shown of its session: no command, directory, branch or prompt.
type ViewedSession struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Agent   string `json:"agent"`
	Status  string `json:"status"`
	Running bool   `json:"running"`
	Cols    int    `json:"cols"`
	Rows    int    `json:"rows"`
}

// ViewedSessionView is ViewedSession of info.
func ViewedSessionView(info sessions.Info) ViewedSession {
	return ViewedSession{ID: info.ID, Name: info.Name, Agent: info.Agent, Status: string(info.Status),
		Running: info.Running, Cols: info.Cols, Rows: info.Rows}
}
