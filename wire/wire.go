// Package wire is agentmux's wire model: the message types, payloads,
// views and error codes of the WebSocket protocol (docs/protocol.md) and
// of the HTTP API. The ws package speaks the protocol and the server's API
// handlers answer requests; both describe sessions, workflows, changes and
// failures with what is defined here, so the two cannot drift apart.
//
// A view (SessionView, WorkflowView, DiffView, ResourceWarningView) turns
// a domain value into its wire form; the domain packages know nothing of
// JSON field names.
//
// Both directions are defined here: the server's messages as one struct
// each, the client's as ClientMessage with the fields each type carries
// (ClientFields), checked by DecodeClient. AppendOutput encodes
// terminal.output, the bulk of the traffic, by hand. The package neither
// reads nor writes a socket: that is ws's.
package wire

// Message types of the protocol, client to server.
const (
	TypeTerminalInput     = "terminal.input"
	TypeTerminalInterrupt = "terminal.interrupt"
	TypeTerminalResize    = "terminal.resize"
	TypeTerminalAck       = "terminal.ack"
	TypeSessionAttach     = "session.attach"
	TypeSessionDetach     = "session.detach"
	TypeSessionResume     = "session.resume"
	// TypeClientHello says who the client is (name, colour, key) and which
	// session it views; it may be sent again at any time.
	TypeClientHello   = "client.hello"
	TypePromptQueue   = "prompt.queue"
	TypePromptDequeue = "prompt.dequeue"
	// TypeReviewComment adds a comment on lines of a file to a session's
	// review draft; TypeReviewUncomment takes one back (its author only);
	// TypeReviewDiscard empties the draft; TypeReviewSend makes the
	// draft one queued prompt.
	TypeReviewComment   = "review.comment"
	TypeReviewUncomment = "review.uncomment"
	TypeReviewDiscard   = "review.discard"
	TypeReviewSend      = "review.send"
	// TypeHeartbeat goes both ways: the server's carries its clock and
	// echoes the client's.
	TypeHeartbeat = "heartbeat"
)

// Message types of the protocol, server to client.
const (
	TypeTerminalOutput    = "terminal.output"
	TypeTerminalExit      = "terminal.exit"
	TypeSessionAttached   = "session.attached"
	TypeSessionCreated    = "session.created"
	TypeSessionStatus     = "session.status"
	TypeSessionDestroyed  = "session.destroyed"
	TypeSessionNeedsInput = "session.needsInput"
	TypeSessionWarning    = "session.warning"
	TypeSessionDiff       = "session.diff"
	// TypeSessionBranch says where a worktree session's branch stands
	// after something moved it: a commit, a merge, a push, an update
	// from its base, an archive.
	TypeSessionBranch = "session.branch"
	// TypeOverlapsChanged is the whole list of overlaps between
	// sessions' changes (two sessions in different trees of one
	// repository that change the same file), sent when it changes and
	// to a client that joins.
	TypeOverlapsChanged = "overlaps.changed"
	// TypePortsChanged says the listed ports changed: what changed.
	TypePortsChanged = "ports.changed"
	// TypeSessionCheckpoint announces a checkpoint of a session's tree.
	TypeSessionCheckpoint = "session.checkpoint"
	// TypeSessionSetup says a worktree session's setup script started or
	// ended.
	TypeSessionSetup = "session.setup"
	// TypeSessionCheck says the check of a session's last turn started or
	// ended, or that sending its failures to the agent was turned on or
	// off.
	TypeSessionCheck = "session.check"
	// TypeSessionResized announces a session's new size, and who set it.
	TypeSessionResized = "session.resized"
	// TypeAgentCall tells of a call an agent made to agentmux's MCP
	// tools: a line of the activity feed.
	TypeAgentCall = "agent.call"
	// TypeUsageUpdated says what a session's agent reported it spends.
	TypeUsageUpdated = "usage.updated"
	// TypeSessionContinued tells that agentmux sent a session a usage
	// limit stopped on, once the limit reset: a line of the activity
	// feed.
	TypeSessionContinued = "session.continued"
	// TypeSessionAnswered tells that a person answered a waiting session
	// without its terminal (from a hub, or the API): a line of the
	// activity feed, naming who.
	TypeSessionAnswered = "session.answered"
	// TypeShareWelcome is the first message a viewer, connected through a
	// read-only link, is sent: the link and the one session it shows.
	TypeShareWelcome = "share.welcome"
	// TypeSessionPullRequest tells how a session's pull request stands:
	// its state, review decision and checks, at each change.
	TypeSessionPullRequest = "session.pullRequest"
	// TypeClientWelcome tells a client the identity the server gave it.
	TypeClientWelcome       = "client.welcome"
	TypeSessionParticipants = "session.participants"
	TypePromptQueued        = "prompt.queued"
	TypePromptQueuedAck     = "prompt.queued.ack"
	TypePromptDelivered     = "prompt.delivered"
	TypePromptDequeued      = "prompt.dequeued"
	// TypePromptList is a session's whole queue, sent on attach.
	TypePromptList = "prompt.list"
	// TypeReviewDraft is a session's whole review draft, sent on attach
	// and whenever it changes.
	TypeReviewDraft = "review.draft"
	TypeFileChanged = "file.changed"
	// TypeFileRecent lists the last file.changed events, for a client
	// that connects.
	TypeFileRecent      = "file.recent"
	TypeLayoutShift     = "layout.shift"
	TypeWorkflowUpdated = "workflow.updated"
	TypeResourceWarning = "resource.warning"
	// TypeSaveStatus says the sessions stopped being saved (the
	// database refuses writes: a full disk), or are saved again.
	TypeSaveStatus     = "save.status"
	TypeServerShutdown = "server.shutdown"
	TypeError          = "error"
)

// MaxSessionIDLen is the length of a session id, a UUID in its usual
// form; a longer one names no session and is refused before any reply
// echoes it.
const MaxSessionIDLen = 36

// MaxReplayLines bounds session.attach's lines: more than any terminal's
// scrollback, and the replay's search for them stays small.
const MaxReplayLines = 100_000

// MaxDiffFiles bounds the files one session.diff lists; its totals still
// count them all.
const MaxDiffFiles = 1000
