package httpapi

import (
	"time"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
	"github.com/agentmux/agentmux/wire"
)

// The API's replies. Each was a map until issue 39, which encoding/json
// wrote with its keys sorted: the fields are declared in that order, so
// the bytes a client gets are the same.

// HealthReply is GET /api/health's: `agentmux health` and container
// health checks read it.
type HealthReply struct {
	// Reason says, while Status is "degraded", what is wrong, where,
	// since when and what to do, in words.
	Reason string `json:"reason,omitempty"`
	// Status is "ok", or "degraded" while the server serves but cannot
	// do all of its job (saving the sessions fails).
	Status   string `json:"status"`
	UptimeMs int64  `json:"uptimeMs"`
	Version  string `json:"version"`
}

// ConfigReply is GET /api/config's: what the UI cannot know otherwise.
type ConfigReply struct {
	// GitRefusal is, when git refuses the workspace for its owner, why,
	// in words for the UI to show instead of "not a repository".
	GitRefusal string `json:"gitRefusal,omitempty"`
	// GitRepository reports whether the workspace is a git repository git
	// will work in; without one the UI offers no worktree.
	GitRepository bool `json:"gitRepository"`
	KeepSessions  int  `json:"keepSessions"`
	MaxSessions   int  `json:"maxSessions"`
	// Name is the workspace's, as a hub over many shows it (--name).
	Name    string `json:"name"`
	Version string `json:"version"`
	// Workspace is absolute, as file.changed's paths are.
	Workspace string `json:"workspace"`
}

// SessionsReply is GET /api/sessions's, oldest first.
type SessionsReply struct {
	Sessions []wire.Session `json:"sessions"`
}

// SessionReply is the reply of the routes that answer with one session:
// get, create, resume and archive.
type SessionReply struct {
	Session wire.Session `json:"session"`
}

// QueuedReply names a prompt a request queued and its place in the queue.
type QueuedReply struct {
	Position int    `json:"position"`
	PromptID string `json:"promptId"`
}

// DocumentsReply is GET /api/documents's, newest first; never null.
type DocumentsReply struct {
	Documents []Document `json:"documents"`
}

// WorkflowReply is GET /api/workflow's: the workflow as workflow.updated
// carries it and the file it was read from, both null when there is none.
type WorkflowReply struct {
	File     *string        `json:"file"`
	Workflow *wire.Workflow `json:"workflow"`
}

// ResourcesReply is GET /api/resources's: the memory reading and each
// running session's process-tree resident set.
type ResourcesReply struct {
	AcceptingNewSessions bool          `json:"acceptingNewSessions"`
	Level                memory.Level  `json:"level"`
	LimitBytes           uint64        `json:"limitBytes"`
	Percent              float64       `json:"percent"`
	Sessions             []SessionRSS  `json:"sessions"`
	Source               memory.Source `json:"source"`
	UsedBytes            uint64        `json:"usedBytes"`
}

// PortsReply is GET /api/ports's: the same bounded listing as
// ports.changed, each port with its preview's address.
type PortsReply struct {
	More  int        `json:"more"`
	Ports []PortView `json:"ports"`
}

// URLReply is POST /api/ports/:port/preview's: the address that opens
// the preview signed in.
type URLReply struct {
	URL string `json:"url"`
}

// MessageReply is GET /api/sessions/:id/commit's: a proposed message.
type MessageReply struct {
	Message string `json:"message"`
}

// CommitReply is POST /api/sessions/:id/commit's.
type CommitReply struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
}

// BranchReply is GET /api/sessions/:id/branch's: where a worktree
// session's branch stands against its base.
type BranchReply struct {
	Ahead  int    `json:"ahead"`
	Base   string `json:"base"`
	Behind int    `json:"behind"`
	Branch string `json:"branch"`
	// Merged is the commit that merged the branch, "" until it is.
	Merged string `json:"merged"`
}

// MergePreviewReply is GET /api/sessions/:id/merge's: what a merge of
// the branch into its base would do (ship.Preview).
type MergePreviewReply struct {
	Base   string `json:"base"`
	Branch string `json:"branch"`
	// Conflicts are the files the merge itself would conflict in.
	Conflicts []string `json:"conflicts"`
	// Others are the sessions whose branches would conflict with the
	// base once it is merged, and in which files.
	Others []ship.Predicted `json:"others"`
}

// OverlapsReply is GET /api/overlaps's: every overlap between sessions'
// changes, as overlaps.changed tells them.
type OverlapsReply struct {
	Overlaps []wire.Overlap `json:"overlaps"`
}

// MergeReply is POST /api/sessions/:id/merge's: the commit the base now
// points at.
type MergeReply struct {
	Commit string `json:"commit"`
}

// UpdateReply is POST /api/sessions/:id/update's. Conflicts is null when
// nothing conflicted; then no prompt was queued, and Position and
// PromptID are left out.
type UpdateReply struct {
	Commit    string   `json:"commit"`
	Conflicts []string `json:"conflicts"`
	Position  *int     `json:"position,omitempty"`
	PromptID  string   `json:"promptId,omitempty"`
}

// PushReply is POST /api/sessions/:id/push's; PullRequestURL is "" when
// the remote's host is not one whose pull request page is known.
type PushReply struct {
	Branch         string `json:"branch"`
	PullRequestURL string `json:"pullRequestUrl"`
	Remote         string `json:"remote"`
}

// CheckpointsReply is GET /api/sessions/:id/checkpoints's; never null.
type CheckpointsReply struct {
	Checkpoints []CheckpointView `json:"checkpoints"`
}

// CheckpointView is a checkpoint as the list gives it: with what the
// agent's turns that ended since the checkpoint before spent, when the
// agent reports it (sessions.TurnUsage).
type CheckpointView struct {
	checkpoint.Checkpoint
	Usage *sessions.Spent `json:"usage,omitempty"`
}

// CheckpointReply is POST /api/sessions/:id/checkpoints's: the checkpoint
// taken, or the last one when the tree had not changed since (Created
// false).
type CheckpointReply struct {
	Checkpoint checkpoint.Checkpoint `json:"checkpoint"`
	Created    bool                  `json:"created"`
	ID         int                   `json:"id"`
}

// RestoredReply is POST /api/sessions/:id/checkpoints/:cp/restore's: the
// checkpoint restored and the one that saved the tree before it (0 when
// none was needed).
type RestoredReply struct {
	Restored int `json:"restored"`
	Saved    int `json:"saved"`
}

// ShareReply is a read-only link: POST /api/sessions/:id/shares answers
// one, with its URL, and GET lists them, without (the secret in it is
// shown once, when the link is made, and only its hash is kept).
type ShareReply struct {
	CreatedAt  time.Time `json:"createdAt"`
	CreatedBy  string    `json:"createdBy,omitempty"`
	ExpiresAt  time.Time `json:"expiresAt"`
	ID         string    `json:"id"`
	Scrollback bool      `json:"scrollback"`
	SessionID  string    `json:"sessionId"`
	URL        string    `json:"url,omitempty"`
	// Viewers is how many watch through the link now.
	Viewers int `json:"viewers"`
}

// SharesReply is GET /api/sessions/:id/shares's: the session's live
// links, the oldest first.
type SharesReply struct {
	Shares []ShareReply `json:"shares"`
}
