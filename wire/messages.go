package wire

import (
	"time"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
)

// Server-to-client messages, each as docs/protocol.md describes it.
type (
	// OutputMessage is terminal.output: what a session's program wrote,
	// up to stream offset Seq. AppendOutput encodes it by hand, for
	// speed; this is its shape.
	OutputMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Data      string `json:"data"`
		Seq       uint64 `json:"seq"`
	}
	// ErrorMessage reports a failed request.
	ErrorMessage struct {
		Type      string `json:"type"`
		Message   string `json:"message"`
		Code      string `json:"code,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}
	// AttachedMessage answers session.attach; the replay follows.
	AttachedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Seq       uint64 `json:"seq"`
		Cols      int    `json:"cols"`
		Rows      int    `json:"rows"`
		Status    string `json:"status"`
		Reset     bool   `json:"reset"`
		// Live is where output new to every client begins: a client
		// answers the terminal queries at or after it, and none before
		// (they were answered, or nobody can answer them). No frame
		// spans it.
		Live uint64 `json:"live"`
		// Partial reports that a replay left out older lines than the
		// attach's lines asked for: a client that showed a screen first
		// can attach again for its scrollback.
		Partial bool `json:"partial,omitempty"`
	}
	// ResizedMessage announces the size a session's terminal now has:
	// the clients that only watch draw it at that size.
	ResizedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Cols      int    `json:"cols"`
		Rows      int    `json:"rows"`
		// By is the id (client.welcome's) of the connection whose size
		// it is: the one that typed last or took the size.
		By string `json:"by"`
	}
	// ExitMessage reports that a session's process ended.
	ExitMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		ExitCode  int    `json:"exitCode"`
		Signal    int    `json:"signal,omitempty"`
	}
	// CreatedMessage announces a new session.
	CreatedMessage struct {
		Type    string  `json:"type"`
		Session Session `json:"session"`
	}
	// StatusMessage announces a session's new status.
	StatusMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Status    string `json:"status"`
		Reason    string `json:"reason,omitempty"`
		Running   bool   `json:"running"`
		// Permission is what a waiting agent asks to be allowed, when
		// its waiting is a permission request.
		Permission *sessions.Permission `json:"permission,omitempty"`
		// Limit is the account's usage limit that stops the agent, while
		// it does.
		Limit *sessions.Limit `json:"limit,omitempty"`
	}
	// NeedsInputMessage says an agent waits for its user.
	NeedsInputMessage struct {
		Type       string               `json:"type"`
		SessionID  string               `json:"sessionId"`
		Message    string               `json:"message"`
		Permission *sessions.Permission `json:"permission,omitempty"`
	}
	// WarningMessage warns about one session.
	WarningMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Message   string `json:"message"`
		Severity  string `json:"severity"`
	}
	// DestroyedMessage announces a session's end.
	DestroyedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
	}
	// HeartbeatMessage carries the server's clock, and the client's
	// timestamp back when the client sent one.
	HeartbeatMessage struct {
		Type      string   `json:"type"`
		Timestamp int64    `json:"timestamp"`
		Echo      *float64 `json:"echo,omitempty"`
	}
	// ShutdownMessage warns that the server is stopping.
	ShutdownMessage struct {
		Type          string `json:"type"`
		Message       string `json:"message"`
		GracePeriodMs int64  `json:"gracePeriodMs"`
	}
	// FileChangedMessage reports a file of the workspace that changed.
	FileChangedMessage struct {
		Type      string `json:"type"`
		Path      string `json:"path"`
		Event     string `json:"event"`
		Timestamp string `json:"timestamp"`
	}
	// RecentFile is one file event of file.recent: a file.changed's
	// fields.
	RecentFile struct {
		Path      string `json:"path"`
		Event     string `json:"event"`
		Timestamp string `json:"timestamp"`
	}
	// FileRecentMessage is file.recent: the workspace's last file
	// events, oldest first, that a connection is sent when it connects,
	// so a page reloaded shows the activity it had.
	FileRecentMessage struct {
		Type  string       `json:"type"`
		Files []RecentFile `json:"files"`
	}
	// LayoutShiftMessage suggests a view, such as a document just
	// written.
	LayoutShiftMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId,omitempty"`
		Mode      string `json:"mode"`
		Trigger   string `json:"trigger"`
		Path      string `json:"path"`
	}
	// WorkflowMessage carries a workflow just read, the workspace's or,
	// with a SessionID, a session worktree's.
	WorkflowMessage struct {
		Type      string   `json:"type"`
		SessionID string   `json:"sessionId,omitempty"`
		Workflow  Workflow `json:"workflow"`
		// File is the workspace's status file the workflow was read from,
		// relative to the workspace; absent for a session's: with several
		// status files, the one written last is shown, and named.
		File string `json:"file,omitempty"`
	}
	// ResourceWarningMessage announces a memory level.
	ResourceWarningMessage struct {
		Type                   string  `json:"type"`
		Message                string  `json:"message"`
		MemoryUsagePercent     float64 `json:"memoryUsagePercent"`
		IsAcceptingNewSessions bool    `json:"isAcceptingNewSessions"`
		Level                  string  `json:"level"`
	}
	// SaveStatusMessage says whether the sessions are being saved: sent
	// when saving starts failing and when it works again.
	SaveStatusMessage struct {
		Type string `json:"type"`
		// Failing reports that the database refuses writes: a restart
		// now loses what the sessions did since Since.
		Failing bool `json:"failing"`
		// Message says what failed, in a sentence for people.
		Message string `json:"message"`
		// Database is the database file: where it failed.
		Database string `json:"database"`
		// Since is when saving started failing or, once not failing,
		// when it worked again, in Unix milliseconds.
		Since int64 `json:"since"`
		// Error is the database's last refusal, while failing.
		Error string `json:"error,omitempty"`
		// Advice says what to do about it, while failing.
		Advice string `json:"advice,omitempty"`
	}
	// DiffMessage is the live summary of what a session changed.
	DiffMessage struct {
		Type      string     `json:"type"`
		SessionID string     `json:"sessionId"`
		Base      string     `json:"base"`
		Files     []DiffFile `json:"files"`
		Additions int        `json:"additions"`
		Deletions int        `json:"deletions"`
		// Truncated reports that more files changed than are listed.
		Truncated bool `json:"truncated,omitempty"`
	}
	// WelcomeMessage tells a client its connection's id and the identity
	// it is known by; it answers every client.hello.
	WelcomeMessage struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		// AuthorID marks this person's queued prompts, across reconnects
		// when the client sends the same key.
		AuthorID string `json:"authorId"`
		Name     string `json:"name"`
		Color    string `json:"color"`
	}
	// ParticipantsMessage says who is in a session now.
	ParticipantsMessage struct {
		Type         string        `json:"type"`
		SessionID    string        `json:"sessionId"`
		Participants []Participant `json:"participants"`
	}
	// PromptQueuedMessage announces a prompt added to a session's queue.
	PromptQueuedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		Prompt    Prompt `json:"prompt"`
		// Rev orders a session's queue messages: a client keeps what the
		// highest it has seen says.
		Rev uint64 `json:"rev"`
	}
	// PromptAckMessage tells the sender where its prompt went.
	PromptAckMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		PromptID  string `json:"promptId"`
		// Position is 1 for the next prompt to be delivered.
		Position int `json:"position"`
	}
	// PromptGoneMessage announces a prompt delivered to the agent or
	// taken off the queue.
	PromptGoneMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		PromptID  string `json:"promptId"`
		Rev       uint64 `json:"rev"`
	}
	// ReviewDraftMessage is a session's review draft, oldest comment
	// first; Rev orders it with the other drafts of the session.
	ReviewDraftMessage struct {
		Type      string           `json:"type"`
		SessionID string           `json:"sessionId"`
		Comments  []review.Comment `json:"comments"`
		Rev       uint64           `json:"rev"`
	}
	// BranchMessage is session.branch: a session's branch against its
	// base, and what was last done to it.
	BranchMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		// Action is what moved it: commit, merge, push, update or
		// archive.
		Action string `json:"action"`
		Branch string `json:"branch"`
		Base   string `json:"base,omitempty"`
		Ahead  int    `json:"ahead"`
		Behind int    `json:"behind"`
		// Commit is what the action made: the new commit of a commit,
		// the base's new tip after a merge, the branch's after an update.
		Commit string `json:"commit,omitempty"`
		// Merged and Archived are the session's state (see Worktree).
		Merged   string `json:"merged,omitempty"`
		Archived bool   `json:"archived,omitempty"`
		// Remote and PullRequestURL say where a push went and the page
		// that opens a pull request for it ("" for an unknown forge).
		Remote         string `json:"remote,omitempty"`
		PullRequestURL string `json:"pullRequestUrl,omitempty"`
		// Conflicts are the files an update from the base left
		// conflicted in the worktree.
		Conflicts []string `json:"conflicts,omitempty"`
	}
	// OverlapsMessage is overlaps.changed: every overlap between
	// sessions' changes, as GET /api/overlaps lists them.
	OverlapsMessage struct {
		Type     string    `json:"type"`
		Overlaps []Overlap `json:"overlaps"`
	}
	// PortsMessage is ports.changed: what changed in the listed ports
	// (ports.Listing) since the connection's last ports.changed, or, the
	// first time, the whole listing.
	PortsMessage struct {
		Type string `json:"type"`
		// Reset reports that Added is the whole listing: the client
		// drops what it had. A connection's first ports.changed is one.
		Reset bool `json:"reset,omitempty"`
		// Added are the ports new to the listing, and those whose
		// process or session changed, which replace the entries of the
		// same port.
		Added []ports.Port `json:"added"`
		// Removed are the ports that left the listing.
		Removed []int `json:"removed"`
		// More counts the listening ports not listed.
		More int `json:"more"`
	}
	// CheckpointMessage is session.checkpoint: a new checkpoint of a
	// session's tree.
	CheckpointMessage struct {
		Type       string                `json:"type"`
		SessionID  string                `json:"sessionId"`
		Checkpoint checkpoint.Checkpoint `json:"checkpoint"`
	}
	// UsageMessage is usage.updated: a session's agent reported what it
	// spends anew.
	UsageMessage struct {
		Type      string         `json:"type"`
		SessionID string         `json:"sessionId"`
		Usage     sessions.Usage `json:"usage"`
	}
	// ContinuedMessage is session.continued: agentmux sent on a session
	// a usage limit stopped, once the limit reset.
	ContinuedMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		// Text is the prompt typed; empty when the prompts queued while
		// the limit held went on instead.
		Text string `json:"text"`
		// ResetsAt is when the limit reset.
		ResetsAt  *time.Time `json:"resetsAt,omitempty"`
		Timestamp string     `json:"timestamp"`
	}
	// AnsweredMessage is session.answered: a person answered a waiting
	// session without its terminal (POST /api/sessions/:id/answer).
	AnsweredMessage struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		// Answer is allow, deny or reply.
		Answer string `json:"answer"`
		// By is who answered, as they named themselves, and through what
		// ("alice (hub)"); "api" when they did not say.
		By string `json:"by"`
		// Permission is the request an allow or deny answered.
		Permission *sessions.Permission `json:"permission,omitempty"`
		// Text is a reply's text.
		Text      string `json:"text,omitempty"`
		Timestamp string `json:"timestamp"`
	}
	// ShareWelcomeMessage is share.welcome, a viewer's first message:
	// the read-only link it came through and the session it shows.
	ShareWelcomeMessage struct {
		Type       string        `json:"type"`
		ShareID    string        `json:"shareId"`
		ExpiresAt  time.Time     `json:"expiresAt"`
		Scrollback bool          `json:"scrollback"`
		Session    ViewedSession `json:"session"`
	}
	// PullRequestMessage is session.pullRequest: how a session's pull
	// request stands, sent at each change and to a client that connects.
	PullRequestMessage struct {
		Type        string     `json:"type"`
		SessionID   string     `json:"sessionId"`
		PullRequest pulls.View `json:"pullRequest"`
	}
	// AgentCallMessage is agent.call: a call an agent made to one of
	// agentmux's MCP tools, done or refused.
	AgentCallMessage struct {
		Type string `json:"type"`
		// SessionID is the calling agent's session.
		SessionID string `json:"sessionId"`
		// Tool is the tool's name, such as start_session.
		Tool string `json:"tool"`
		// Text says what was done, for people: "planner started 'tests'
		// on feature/tests".
		Text string `json:"text"`
		// TargetID is the session the call was about, if any.
		TargetID string `json:"targetId,omitempty"`
		// Error, when present, is why the call was refused or failed.
		Error     string `json:"error,omitempty"`
		Timestamp string `json:"timestamp"`
	}
	// SetupMessage is session.setup: a worktree session's setup script
	// started or ended.
	SetupMessage struct {
		Type      string          `json:"type"`
		SessionID string          `json:"sessionId"`
		Setup     *sessions.Setup `json:"setup,omitempty"`
	}
	// CheckMessage is session.check: the check of one of a session's turns
	// that started or ended (absent when only sending failures changed),
	// and whether its failures go to the agent.
	CheckMessage struct {
		Type         string          `json:"type"`
		SessionID    string          `json:"sessionId"`
		Check        *sessions.Check `json:"check,omitempty"`
		SendFailures bool            `json:"sendFailures"`
	}
	// PromptListMessage is a session's whole queue, oldest first.
	PromptListMessage struct {
		Type      string   `json:"type"`
		SessionID string   `json:"sessionId"`
		Prompts   []Prompt `json:"prompts"`
		Rev       uint64   `json:"rev"`
	}
)
