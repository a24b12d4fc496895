package wire

import (
	"errors"

	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher/memory"
)

// Error codes, used in the protocol's error messages and in HTTP error
// bodies alike. Every code agentmux sends is here, so the WebSocket, the
// API and the UI cannot come to spell one differently; docs/protocol.md
// lists them with their HTTP statuses.
const (
	// CodeSessionNotFound: the session id names no session.
	CodeSessionNotFound = "SESSION_NOT_FOUND"
	// CodeSessionLimitReached: --max-sessions sessions are running.
	CodeSessionLimitReached = "SESSION_LIMIT_REACHED"
	// CodeSessionStoreFull: as many sessions are kept, running or ended,
	// as --keep-sessions allows; deleting ended ones makes room.
	CodeSessionStoreFull = "SESSION_STORE_FULL"
	// CodePTYSpawnFailed: the session's command could not be started.
	CodePTYSpawnFailed = "PTY_SPAWN_FAILED"
	// CodePermissionDenied: the server is shutting down, or (HTTP, 403)
	// the request came from another web page, named a Host that is not
	// allowed, or a file outside the workspace.
	CodePermissionDenied = "PERMISSION_DENIED"
	// CodeInvalidMessage: a malformed message or request, or one that
	// does not fit the session's state (resuming a running one).
	CodeInvalidMessage = "INVALID_MESSAGE"
	// CodeMemoryCritical: memory use is above --mem-critical, so no new
	// agent starts.
	CodeMemoryCritical = "MEMORY_CRITICAL"
	// CodeInternal: any other failure.
	CodeInternal = "INTERNAL_ERROR"
	// CodeWorktreeError: git refused a session's worktree (not a
	// repository, invalid branch name, branch checked out elsewhere).
	CodeWorktreeError = "WORKTREE_ERROR"
	// CodeWorktreeDirty: a worktree to remove has uncommitted changes.
	CodeWorktreeDirty = "WORKTREE_DIRTY"
	// CodeInputFull: the agent has not read the input already sent (1 MiB
	// waits); this input was refused whole and may be sent again.
	CodeInputFull = "INPUT_FULL"
	// CodeNotQueueOwner: only a prompt's author may take it off the queue.
	CodeNotQueueOwner = "NOT_QUEUE_OWNER"
	// CodePromptNotFound: no such prompt in the session's queue (it may
	// just have been delivered).
	CodePromptNotFound = "PROMPT_NOT_FOUND"
	// CodeQueueFull: the session's queue holds its most prompts.
	CodeQueueFull = "QUEUE_FULL"
	// CodeBodyTooLarge (HTTP only, 413): a request body over the API's
	// bound; nothing was done.
	CodeBodyTooLarge = "BODY_TOO_LARGE"
	// CodeNotFound (HTTP only): no such file or route.
	CodeNotFound = "NOT_FOUND"
	// CodeMethodNotAllowed (HTTP only, 405): a route outside /api asked
	// with a method it does not take, such as POST /ws.
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	// CodeUnauthorized (HTTP only, 401): the request lacks --token (or
	// carries a wrong one, or not as "Bearer <token>"), or a hook call
	// lacks its session's secret. A caller without the secret learns
	// nothing else, not even whether the session exists.
	CodeUnauthorized = "UNAUTHORIZED"
	// CodeForbidden (HTTP only, 403): a hook call from another machine or
	// from a web page. (A web page's request to the API is
	// CodePermissionDenied.)
	CodeForbidden = "FORBIDDEN"
	// CodeUnsupportedMediaType (HTTP only, 415): a request body that is
	// not application/json, which is what a page on another origin could
	// send without asking first.
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	// CodeNotARepository (HTTP only): a diff was asked of a session whose
	// tree is not in a git repository.
	CodeNotARepository = "NOT_A_REPOSITORY"
	// CodeUntrustedRepository (HTTP only, 409): git refused the
	// repository a session works in because it belongs to another user
	// and is not the workspace agentmux trusts; the message says which
	// and what to do.
	CodeUntrustedRepository = "UNTRUSTED_REPOSITORY"
	// CodeTooManyConnections (HTTP only, 503): a WebSocket upgrade found
	// the server at its cap of WebSockets with none idle to close for it
	// (every one attached to a session, or only just opened); the client
	// may try again later.
	CodeTooManyConnections = "TOO_MANY_CONNECTIONS"
	// CodeReviewFull: the session's review draft holds its most comments.
	CodeReviewFull = "REVIEW_FULL"
	// CodeCommentNotFound: no such comment in the session's review draft
	// (it may just have been sent).
	CodeCommentNotFound = "COMMENT_NOT_FOUND"
	// CodeNotCommentAuthor: only a comment's author may take it back.
	CodeNotCommentAuthor = "NOT_COMMENT_AUTHOR"
	// CodeNothingToCommit (HTTP only, 409): a commit of a clean tree.
	CodeNothingToCommit = "NOTHING_TO_COMMIT"
	// CodeNotAWorktree (HTTP only, 409): a branch action (status, merge,
	// push, update, archive) on a session without a worktree, or whose
	// base is not a branch.
	CodeNotAWorktree = "NOT_A_WORKTREE"
	// CodeBaseDirty (HTTP only, 409): the base is checked out in a tree
	// with uncommitted changes, so a merge would move it under them;
	// nothing moved.
	CodeBaseDirty = "BASE_DIRTY"
	// CodeMergeConflict (HTTP only, 409): the branch and its base change
	// the same lines; the body's files name them, and nothing moved.
	CodeMergeConflict = "MERGE_CONFLICT"
	// CodeNothingToMerge (HTTP only, 409): the base has every commit of
	// the branch already.
	CodeNothingToMerge = "NOTHING_TO_MERGE"
	// CodeBaseMoved (HTTP only, 409): the base moved while the merge was
	// being made; nothing moved, and it can be tried again.
	CodeBaseMoved = "BASE_MOVED"
	// CodePushRejected (HTTP only, 409): the remote, or a pre-push hook,
	// refused the push; the message has their reason.
	CodePushRejected = "PUSH_REJECTED"
	// CodeNoRemote (HTTP only, 404): the repository has no such remote.
	CodeNoRemote = "NO_REMOTE"
	// CodeCheckpointNotFound (HTTP only, 404): the session has no
	// checkpoint of that id (never taken, or pruned).
	CodeCheckpointNotFound = "CHECKPOINT_NOT_FOUND"
	// CodeGitFailed (HTTP only, 500): a git step failed for a reason
	// none of the above names; the message says which step and why.
	CodeGitFailed = "GIT_FAILED"
)

// ErrorBody is the body of every HTTP error: the API's and the
// WebSocket's, before it upgrades.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// Files, for MERGE_CONFLICT, are the conflicted paths.
		Files []string `json:"files,omitempty"`
	} `json:"error"`
}

// NewErrorBody returns the body for an HTTP error with this code and
// message.
func NewErrorBody(code, msg string) ErrorBody {
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	return b
}

// ErrorCode returns the code for an error of the sessions or review
// packages (or of an admission check sessions passed on), so the WebSocket and the HTTP API
// name a failure alike. This is the one error-to-code mapping.
func ErrorCode(err error) string {
	switch {
	case errors.Is(err, memory.ErrCritical):
		return CodeMemoryCritical
	case errors.Is(err, sessions.ErrNotFound):
		return CodeSessionNotFound
	case errors.Is(err, sessions.ErrLimitReached):
		return CodeSessionLimitReached
	case errors.Is(err, sessions.ErrStoreFull):
		return CodeSessionStoreFull
	case errors.Is(err, sessions.ErrSpawn):
		return CodePTYSpawnFailed
	case errors.Is(err, sessions.ErrShuttingDown):
		return CodePermissionDenied
	case errors.Is(err, sessions.ErrInputFull):
		return CodeInputFull
	case errors.Is(err, sessions.ErrNotQueueOwner):
		return CodeNotQueueOwner
	case errors.Is(err, sessions.ErrPromptNotFound):
		return CodePromptNotFound
	case errors.Is(err, sessions.ErrQueueFull):
		return CodeQueueFull
	case errors.Is(err, sessions.ErrWorktreeDirty):
		return CodeWorktreeDirty
	case errors.Is(err, sessions.ErrWorktree):
		return CodeWorktreeError
	case errors.Is(err, review.ErrFull):
		return CodeReviewFull
	case errors.Is(err, review.ErrNotFound):
		return CodeCommentNotFound
	case errors.Is(err, review.ErrNotAuthor):
		return CodeNotCommentAuthor
	case errors.Is(err, review.ErrInvalid), errors.Is(err, review.ErrEmpty), errors.Is(err, review.ErrTooLong),
		errors.Is(err, sessions.ErrInvalid),
		errors.Is(err, sessions.ErrRunning),
		errors.Is(err, sessions.ErrNotRunning):
		return CodeInvalidMessage
	}
	return CodeInternal
}
