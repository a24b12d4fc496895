package hub

import (
	"cmp"
	"slices"
	"time"

	"github.com/agentmux/agentmux/sessions"
)

// Inbox is every workspace the hub knows and every session of those it
// reaches: GET /api/inbox's body, and the page's WebSocket message.
type Inbox struct {
	Workspaces []WorkspaceView `json:"workspaces"`
	// Sessions come those that need a person first, the longest waiting
	// first, then the others, the latest active first.
	Sessions []SessionView `json:"sessions"`
}

// WorkspaceView is one workspace as the inbox shows it.
type WorkspaceView struct {
	// URL is where the hub reaches the workspace's API: the workspace's
	// key in the hub's API.
	URL string `json:"url"`
	// Name is the workspace's own (its --name), once it was reached;
	// else its URL's host.
	Name string `json:"name"`
	// OpenURL is where a browser reaches the workspace's own UI.
	OpenURL   string `json:"openUrl"`
	Reachable bool   `json:"reachable"`
	// Error says why an unreachable workspace is: refused, token
	// rejected, timeout, and the detail.
	Error string `json:"error,omitempty"`
	// Since is when the workspace was last reached or lost.
	Since    time.Time `json:"since"`
	Sessions int       `json:"sessions"`
}

// SessionView is one session of one workspace as the inbox shows it.
type SessionView struct {
	// Workspace is the workspace's URL (WorkspaceView.URL).
	Workspace     string `json:"workspace"`
	WorkspaceName string `json:"workspaceName"`
	ID            string `json:"id"`
	Name          string `json:"name"`
	Agent         string `json:"agent"`
	Status        string `json:"status"`
	Running       bool   `json:"running"`
	// NeedsInput says a person is waited for: the session's status is
	// waiting.
	NeedsInput bool `json:"needsInput"`
	// Permission is what a waiting agent asks to be allowed.
	Permission *sessions.Permission `json:"permission,omitempty"`
	// Reason is why the session has its status: what a waiting agent
	// asks.
	Reason string `json:"reason,omitempty"`
	// WaitingSince is when a waiting session began to wait.
	WaitingSince *time.Time `json:"waitingSince,omitempty"`
	// Limit is the usage limit that stops the agent, while it does.
	Limit  *sessions.Limit `json:"limit,omitempty"`
	Branch string          `json:"branch,omitempty"`
	// Additions and Deletions count the lines the agent changed.
	Additions      int       `json:"additions"`
	Deletions      int       `json:"deletions"`
	LastActivityAt time.Time `json:"lastActivityAt"`
	// OpenURL opens the workspace's own UI at this session.
	OpenURL string `json:"openUrl"`
}

// sortSessions puts those that need a person first, the longest waiting
// first; then the others, the latest active first; ties by workspace and
// name, so the list does not shuffle between two snapshots.
func sortSessions(list []SessionView) {
	slices.SortStableFunc(list, func(a, b SessionView) int {
		if a.NeedsInput != b.NeedsInput {
			if a.NeedsInput {
				return -1
			}
			return 1
		}
		if a.NeedsInput {
			if c := waitStart(a).Compare(waitStart(b)); c != 0 {
				return c
			}
		} else if c := b.LastActivityAt.Compare(a.LastActivityAt); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.WorkspaceName, b.WorkspaceName), cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
}

// waitStart is when a session began to wait, or its last activity when
// its workspace did not say.
func waitStart(s SessionView) time.Time {
	if s.WaitingSince != nil {
		return *s.WaitingSince
	}
	return s.LastActivityAt
}
