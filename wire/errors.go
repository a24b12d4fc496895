package wire

import (
	"errors"
	"net/http"

	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/ship"
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
	// CodeScriptsInvalid (HTTP only, 422): the workspace's agentmux.json
	// (or conductor.json) cannot be used; the message names the file and
	// the field. Nothing of it is in force until it is fixed.
	CodeScriptsInvalid = "SCRIPTS_INVALID"
	// CodeScriptChanged (HTTP only, 409): an approval named a hash no
	// script in force has, most likely because the file changed since
	// the scripts were read; nothing was approved, and the scripts
	// should be read again.
	CodeScriptChanged = "SCRIPT_CHANGED"
	// CodeNotWaiting (HTTP only, 409): an answer to a session that no
	// longer waits, or waits at another permission request than the one
	// answered.
	CodeNotWaiting = "NOT_WAITING"
	// CodeReadOnly (WebSocket only): a viewer, connected through a
	// read-only link, sent what a link does not grant (input, a resize,
	// another session...); nothing changed.
	CodeReadOnly = "READ_ONLY"
	// CodeShareNotFound (HTTP only, 404): the session has no live
	// read-only link of that id (never made, revoked or expired).
	CodeShareNotFound = "SHARE_NOT_FOUND"
	// CodeTooManyShares (HTTP only, 409): the session, or the workspace,
	// has its most live read-only links.
	CodeTooManyShares = "TOO_MANY_SHARES"
	// CodeForgeNotReady (HTTP only, 409): no pull request can be opened
	// for the session: no GitHub token was found, or its remote is on no
	// GitHub host; the message says what is missing.
	CodeForgeNotReady = "FORGE_NOT_READY"
	// CodeForgeRefused (HTTP only, 409): the forge refused the request
	// (no permission, a branch it will not take, no such repository for
	// the token); the message quotes the forge.
	CodeForgeRefused = "FORGE_REFUSED"
	// CodeForgeRateLimited (HTTP only, 429): the forge's rate limit is
	// spent; Retry-After and the message say until when.
	CodeForgeRateLimited = "FORGE_RATE_LIMITED"
	// CodeForgeUnreachable (HTTP only, 502): the forge could not be
	// reached, or failed.
	CodeForgeUnreachable = "FORGE_UNREACHABLE"
	// CodeNoPullRequest (HTTP only, 409): the session has no pull
	// request yet to act on.
	CodeNoPullRequest = "NO_PULL_REQUEST"
	// CodeNoFailingChecks (HTTP only, 409): fix-checks while none of the
	// pull request's checks fails.
	CodeNoFailingChecks = "NO_FAILING_CHECKS"
	// CodeAttachmentTooLarge (HTTP only, 413): an attachment over
	// --attachment-max; nothing was stored.
	CodeAttachmentTooLarge = "ATTACHMENT_TOO_LARGE"
	// CodeAttachmentsFull (HTTP only, 409): the session keeps as many
	// attachments as --attachments-per-session allows (or 500 files);
	// they go when the session is deleted.
	CodeAttachmentsFull = "ATTACHMENTS_FULL"
	// CodeAttachmentType (HTTP only, 415): an attachment whose content is
	// not an image (PNG, JPEG, GIF, WebP), a PDF or UTF-8 text, whatever
	// its name says.
	CodeAttachmentType = "ATTACHMENT_TYPE"
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

// errorKind is one row of the mapping from domain errors to what clients
// are told: the code, and the status the HTTP API answers with.
type errorKind struct {
	err    error
	code   string
	status int
}

// errorKinds is the one mapping from the domain's sentinel errors (of
// sessions, review, memory admission, ship, checkpoint, scripts,
// attachments, and
// gitexec's for every package that runs git) to protocol codes and HTTP statuses, so
// that the WebSocket and the API name a failure alike. The first row whose
// error the failure is wins: a row comes before any row whose error it may
// also be (sessions tags a dirty worktree ErrWorktreeDirty and
// ErrWorktree both), and the sessions rows come before git's, since a
// session's error may wrap the git failure beneath it.
var errorKinds = []errorKind{
	{memory.ErrCritical, CodeMemoryCritical, http.StatusServiceUnavailable},
	{sessions.ErrNotFound, CodeSessionNotFound, http.StatusNotFound},
	{sessions.ErrLimitReached, CodeSessionLimitReached, http.StatusConflict},
	{sessions.ErrStoreFull, CodeSessionStoreFull, http.StatusConflict},
	{sessions.ErrSpawn, CodePTYSpawnFailed, http.StatusBadRequest},
	{sessions.ErrShuttingDown, CodePermissionDenied, http.StatusServiceUnavailable},
	{sessions.ErrInputFull, CodeInputFull, http.StatusConflict},
	// No route edits a queue or a draft (the WebSocket does), so the API
	// never answers these five; 500 is what it would say of any error it
	// did not expect.
	{sessions.ErrNotQueueOwner, CodeNotQueueOwner, http.StatusInternalServerError},
	{sessions.ErrPromptNotFound, CodePromptNotFound, http.StatusInternalServerError},
	{sessions.ErrQueueFull, CodeQueueFull, http.StatusConflict},
	{sessions.ErrWorktreeDirty, CodeWorktreeDirty, http.StatusConflict},
	{sessions.ErrWorktree, CodeWorktreeError, http.StatusBadRequest},
	{review.ErrFull, CodeReviewFull, http.StatusInternalServerError},
	{review.ErrNotFound, CodeCommentNotFound, http.StatusInternalServerError},
	{review.ErrNotAuthor, CodeNotCommentAuthor, http.StatusInternalServerError},
	{review.ErrInvalid, CodeInvalidMessage, http.StatusBadRequest},
	{review.ErrEmpty, CodeInvalidMessage, http.StatusBadRequest},
	{review.ErrTooLong, CodeInvalidMessage, http.StatusBadRequest},
	{sessions.ErrInvalid, CodeInvalidMessage, http.StatusBadRequest},
	// Resuming a running session is a request that does not fit the
	// session's state, not a malformed one.
	{sessions.ErrRunning, CodeInvalidMessage, http.StatusConflict},
	{sessions.ErrNotRunning, CodeInvalidMessage, http.StatusBadRequest},
	{sessions.ErrNotLimited, CodeInvalidMessage, http.StatusConflict},
	{sessions.ErrNoPaste, CodeInvalidMessage, http.StatusConflict},
	{sessions.ErrNotWaiting, CodeNotWaiting, http.StatusConflict},
	{sessions.ErrNoDialog, CodeInvalidMessage, http.StatusConflict},
	{pulls.ErrNoPullRequest, CodeNoPullRequest, http.StatusConflict},
	{pulls.ErrNoFailingChecks, CodeNoFailingChecks, http.StatusConflict},
	{forge.ErrNoToken, CodeForgeNotReady, http.StatusConflict},
	{forge.ErrNotGitHub, CodeForgeNotReady, http.StatusConflict},
	{forge.ErrRefused, CodeForgeRefused, http.StatusConflict},
	{forge.ErrNotFound, CodeForgeRefused, http.StatusConflict},
	{forge.ErrRateLimited, CodeForgeRateLimited, http.StatusTooManyRequests},
	{forge.ErrUnreachable, CodeForgeUnreachable, http.StatusBadGateway},
	{share.ErrNotFound, CodeShareNotFound, http.StatusNotFound},
	{share.ErrTooMany, CodeTooManyShares, http.StatusConflict},
	{share.ErrInvalid, CodeInvalidMessage, http.StatusBadRequest},
	{share.ErrDenied, CodeUnauthorized, http.StatusUnauthorized},
	{share.ErrReadOnly, CodeReadOnly, http.StatusForbidden},

	{ship.ErrConflict, CodeMergeConflict, http.StatusConflict},
	{gitexec.ErrNotRepo, CodeNotARepository, http.StatusConflict},
	{gitexec.ErrUntrusted, CodeUntrustedRepository, http.StatusConflict},
	{ship.ErrNothingToCommit, CodeNothingToCommit, http.StatusConflict},
	{ship.ErrBaseDirty, CodeBaseDirty, http.StatusConflict},
	// Bringing the base in needs the worktree's own changes committed.
	{ship.ErrDirty, CodeWorktreeDirty, http.StatusConflict},
	{ship.ErrNothingToMerge, CodeNothingToMerge, http.StatusConflict},
	{ship.ErrBaseMoved, CodeBaseMoved, http.StatusConflict},
	{ship.ErrRejected, CodePushRejected, http.StatusConflict},
	{ship.ErrNoRemote, CodeNoRemote, http.StatusNotFound},
	{ship.ErrNotWorktree, CodeNotAWorktree, http.StatusConflict},
	{ship.ErrNoBranch, CodeNotAWorktree, http.StatusConflict},
	{ship.ErrNoBase, CodeNotAWorktree, http.StatusConflict},
	{checkpoint.ErrNotFound, CodeCheckpointNotFound, http.StatusNotFound},
	{ship.ErrNoMessage, CodeInvalidMessage, http.StatusBadRequest},
	{ship.ErrInvalidMessage, CodeInvalidMessage, http.StatusBadRequest},
	{ship.ErrInvalidMode, CodeInvalidMessage, http.StatusBadRequest},
	{checkpoint.ErrInvalidSession, CodeInvalidMessage, http.StatusBadRequest},
	{scripts.ErrInvalid, CodeScriptsInvalid, http.StatusUnprocessableEntity},
	{scripts.ErrNotInForce, CodeScriptChanged, http.StatusConflict},
	{attachments.ErrTooLarge, CodeAttachmentTooLarge, http.StatusRequestEntityTooLarge},
	{attachments.ErrFull, CodeAttachmentsFull, http.StatusConflict},
	{attachments.ErrType, CodeAttachmentType, http.StatusUnsupportedMediaType},
	{attachments.ErrName, CodeInvalidMessage, http.StatusBadRequest},
	{attachments.ErrCut, CodeInvalidMessage, http.StatusBadRequest},
}

// ErrorCode returns the protocol code for err, CodeInternal for an error
// the mapping does not name.
func ErrorCode(err error) string {
	code, _ := ErrorStatus(err)
	return code
}

// ErrorStatus returns the protocol code for err and the HTTP status the
// API answers it with: CodeInternal and 500 for an error the mapping does
// not name.
func ErrorStatus(err error) (code string, status int) {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.code, k.status
		}
	}
	return CodeInternal, http.StatusInternalServerError
}
