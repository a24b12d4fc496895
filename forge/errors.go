package forge

import (
	"errors"
	"fmt"
	"strings"
	"time"

	textclip "github.com/agentmux/agentmux/internal/clip"
)

// The errors callers tell apart with errors.Is; each is wrapped with the
// step that failed (and, for ErrRefused and ErrRateLimited, carried by a
// *Refused or *RateLimited that errors.As finds).
var (
	// ErrNoToken: no token was found; the error's text says, in words,
	// what was looked for.
	ErrNoToken = errors.New("no GitHub token")
	// ErrNotGitHub: the remote's URL is not a GitHub repository this
	// package can address.
	ErrNotGitHub = errors.New("not a GitHub repository")
	// ErrRefused: GitHub answered 4xx, other than 404 and the rate
	// limit's 403/429.
	ErrRefused = errors.New("GitHub refused")
	// ErrNotFound: GitHub answered 404 — no such repository or pull
	// request, or a token without access to it (GitHub says 404 for
	// both, so as not to reveal private repositories).
	ErrNotFound = errors.New("not found on GitHub")
	// ErrRateLimited: the rate limit is spent (primary or secondary).
	ErrRateLimited = errors.New("GitHub rate limit exceeded")
	// ErrUnreachable: GitHub could not be reached, or answered 5xx.
	ErrUnreachable = errors.New("GitHub unreachable")
)

// maxMessage bounds how much of the forge's words an error quotes.
const maxMessage = 300

// Refused is GitHub's 4xx answer, in its own words: the message, the
// errors' messages (or code and field when an error has no message) and
// the documentation URL it points to.
type Refused struct {
	Status  int
	Message string
	Errors  []string
	DocURL  string
}

// Error quotes the forge: "GitHub refused (422): Validation Failed: A pull
// request already exists for o:b." (bounded).
func (e *Refused) Error() string {
	msg := e.Message
	if len(e.Errors) > 0 {
		msg += ": " + strings.Join(e.Errors, "; ")
	}
	msg = clip(msg, maxMessage)
	if msg == "" {
		return fmt.Sprintf("GitHub refused (%d)", e.Status)
	}
	return fmt.Sprintf("GitHub refused (%d): %s", e.Status, msg)
}

// Unwrap makes errors.Is(err, ErrRefused) true.
func (e *Refused) Unwrap() error { return ErrRefused }

// RateLimited says the rate limit is spent and when it comes back: Reset
// is from X-RateLimit-Reset, or from Retry-After for a secondary limit.
type RateLimited struct {
	Reset            time.Time
	Limit, Remaining int
	Resource         string // X-RateLimit-Resource: core, graphql, search...
}

// Error says until when, in the server's local time.
func (e *RateLimited) Error() string {
	if e.Reset.IsZero() {
		return "GitHub rate limit exceeded"
	}
	return "GitHub rate limit exceeded until " + e.Reset.Local().Format("15:04:05")
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimited) Unwrap() error { return ErrRateLimited }

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string { return textclip.String(s, n, "…") }
