package wire

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// onTheWire is every error code as clients know it. A map keyed by the
// constants would not compile with two codes spelled alike.
var onTheWire = map[string]struct{ name, want string }{
	CodeSessionNotFound:      {"CodeSessionNotFound", "SESSION_NOT_FOUND"},
	CodeSessionLimitReached:  {"CodeSessionLimitReached", "SESSION_LIMIT_REACHED"},
	CodeSessionStoreFull:     {"CodeSessionStoreFull", "SESSION_STORE_FULL"},
	CodePTYSpawnFailed:       {"CodePTYSpawnFailed", "PTY_SPAWN_FAILED"},
	CodePermissionDenied:     {"CodePermissionDenied", "PERMISSION_DENIED"},
	CodeInvalidMessage:       {"CodeInvalidMessage", "INVALID_MESSAGE"},
	CodeMemoryCritical:       {"CodeMemoryCritical", "MEMORY_CRITICAL"},
	CodeInternal:             {"CodeInternal", "INTERNAL_ERROR"},
	CodeWorktreeError:        {"CodeWorktreeError", "WORKTREE_ERROR"},
	CodeWorktreeDirty:        {"CodeWorktreeDirty", "WORKTREE_DIRTY"},
	CodeInputFull:            {"CodeInputFull", "INPUT_FULL"},
	CodeNotQueueOwner:        {"CodeNotQueueOwner", "NOT_QUEUE_OWNER"},
	CodePromptNotFound:       {"CodePromptNotFound", "PROMPT_NOT_FOUND"},
	CodeQueueFull:            {"CodeQueueFull", "QUEUE_FULL"},
	CodeBodyTooLarge:         {"CodeBodyTooLarge", "BODY_TOO_LARGE"},
	CodeNotFound:             {"CodeNotFound", "NOT_FOUND"},
	CodeMethodNotAllowed:     {"CodeMethodNotAllowed", "METHOD_NOT_ALLOWED"},
	CodeUnauthorized:         {"CodeUnauthorized", "UNAUTHORIZED"},
	CodeForbidden:            {"CodeForbidden", "FORBIDDEN"},
	CodeUnsupportedMediaType: {"CodeUnsupportedMediaType", "UNSUPPORTED_MEDIA_TYPE"},
	CodeNotARepository:       {"CodeNotARepository", "NOT_A_REPOSITORY"},
	CodeUntrustedRepository:  {"CodeUntrustedRepository", "UNTRUSTED_REPOSITORY"},
	CodeTooManyConnections:   {"CodeTooManyConnections", "TOO_MANY_CONNECTIONS"},
	CodeReviewFull:           {"CodeReviewFull", "REVIEW_FULL"},
	CodeCommentNotFound:      {"CodeCommentNotFound", "COMMENT_NOT_FOUND"},
	CodeNotCommentAuthor:     {"CodeNotCommentAuthor", "NOT_COMMENT_AUTHOR"},
	CodeNothingToCommit:      {"CodeNothingToCommit", "NOTHING_TO_COMMIT"},
	CodeNotAWorktree:         {"CodeNotAWorktree", "NOT_A_WORKTREE"},
	CodeBaseDirty:            {"CodeBaseDirty", "BASE_DIRTY"},
	CodeMergeConflict:        {"CodeMergeConflict", "MERGE_CONFLICT"},
	CodeNothingToMerge:       {"CodeNothingToMerge", "NOTHING_TO_MERGE"},
	CodeBaseMoved:            {"CodeBaseMoved", "BASE_MOVED"},
	CodePushRejected:         {"CodePushRejected", "PUSH_REJECTED"},
	CodeNoRemote:             {"CodeNoRemote", "NO_REMOTE"},
	CodeCheckpointNotFound:   {"CodeCheckpointNotFound", "CHECKPOINT_NOT_FOUND"},
	CodeScriptsInvalid:       {"CodeScriptsInvalid", "SCRIPTS_INVALID"},
	CodeScriptChanged:        {"CodeScriptChanged", "SCRIPT_CHANGED"},
	CodeGitFailed:            {"CodeGitFailed", "GIT_FAILED"},
	CodeNotWaiting:           {"CodeNotWaiting", "NOT_WAITING"},
	CodeReadOnly:             {"CodeReadOnly", "READ_ONLY"},
	CodeShareNotFound:        {"CodeShareNotFound", "SHARE_NOT_FOUND"},
	CodeTooManyShares:        {"CodeTooManyShares", "TOO_MANY_SHARES"},
	CodeForgeNotReady:        {"CodeForgeNotReady", "FORGE_NOT_READY"},
	CodeForgeRefused:         {"CodeForgeRefused", "FORGE_REFUSED"},
	CodeForgeRateLimited:     {"CodeForgeRateLimited", "FORGE_RATE_LIMITED"},
	CodeForgeUnreachable:     {"CodeForgeUnreachable", "FORGE_UNREACHABLE"},
	CodeNoPullRequest:        {"CodeNoPullRequest", "NO_PULL_REQUEST"},
	CodeNoFailingChecks:      {"CodeNoFailingChecks", "NO_FAILING_CHECKS"},
	CodeAttachmentTooLarge:   {"CodeAttachmentTooLarge", "ATTACHMENT_TOO_LARGE"},
	CodeAttachmentsFull:      {"CodeAttachmentsFull", "ATTACHMENTS_FULL"},
	CodeAttachmentType:       {"CodeAttachmentType", "ATTACHMENT_TYPE"},
}

// TestErrorCodes: every code declared in errors.go is spelled as clients
// (the UI, scripts, the protocol document) know it, and the protocol
// document names it; a new code fails here until it is listed above and
// documented.
func TestErrorCodes(t *testing.T) {
	declared := codeConstants(t)
	listed := map[string]bool{}
	for got, c := range onTheWire {
		listed[c.name] = true
		if got != c.want {
			t.Errorf("%s = %q, want %q: clients know it by that", c.name, got, c.want)
		}
		if !declared[c.name] {
			t.Errorf("%s is listed here but not declared in errors.go", c.name)
		}
	}
	for name := range declared {
		if !listed[name] {
			t.Errorf("%s is declared in errors.go but not listed in this test", name)
		}
	}

	doc, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for code, c := range onTheWire {
		if !regexp.MustCompile(`\b` + code + `\b`).Match(doc) {
			t.Errorf("%s (%s) is not in docs/protocol.md", code, c.name)
		}
	}
}

// codeConstants returns the names of the constants in errors.go that
// start with Code.
func codeConstants(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for n := range stringConstants(t, "errors.go", "Code") {
		names[n] = true
	}
	return names
}

// TestErrorKinds walks the one mapping from domain errors to codes and
// statuses: every row's error, wrapped as a failing step wraps it, comes
// out as that row says (no row above it takes it), with a code clients
// know and a status that is an error's; an error no row names is an
// internal one.
func TestErrorKinds(t *testing.T) {
	if len(errorKinds) == 0 {
		t.Fatal("no rows")
	}
	for i, k := range errorKinds {
		err := fmt.Errorf("a step: %w", k.err)
		code, status := ErrorStatus(err)
		if code != k.code || status != k.status {
			t.Errorf("row %d (%v): got %s %d, want %s %d", i, k.err, code, status, k.code, k.status)
		}
		if got := ErrorCode(err); got != k.code {
			t.Errorf("row %d (%v): ErrorCode %s, want %s", i, k.err, got, k.code)
		}
		if _, ok := onTheWire[k.code]; !ok {
			t.Errorf("row %d (%v): code %q is not one clients know", i, k.err, k.code)
		}
		if k.status < 400 || k.status > 599 {
			t.Errorf("row %d (%v): status %d is not an error's", i, k.err, k.status)
		}
	}
	// Errors that are two kinds at once come out as the first.
	for _, c := range []struct {
		err    error
		code   string
		status int
	}{
		{errors.New("anything else"), CodeInternal, http.StatusInternalServerError},
		{&ship.ConflictError{Files: []string{"a"}}, CodeMergeConflict, http.StatusConflict},
		{errors.Join(sessions.ErrWorktreeDirty, sessions.ErrWorktree), CodeWorktreeDirty, http.StatusConflict},
		{errors.Join(sessions.ErrWorktree, gitexec.ErrNotRepo), CodeWorktreeError, http.StatusBadRequest},
		{errors.Join(memory.ErrCritical, sessions.ErrSpawn), CodeMemoryCritical, http.StatusServiceUnavailable},
	} {
		if code, status := ErrorStatus(c.err); code != c.code || status != c.status {
			t.Errorf("%v: got %s %d, want %s %d", c.err, code, status, c.code, c.status)
		}
	}
}
