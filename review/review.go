// Package review keeps the comments reviewers leave on a session's diff
// until they are sent, and turns them into the prompt that tells the
// agent: each comment names its path and lines, quotes them from the
// session's tree, and gives what the reviewer said.
//
// A draft belongs to a session, not to a reviewer: every participant sees
// it and may send or discard it, and each comment keeps its author, the
// only one who may take it back. Drafts live in memory, bounded in
// comments and bytes; a page that reloads finds its session's draft as
// it left it.
package review

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/identity"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/google/uuid"
)

// Bounds of a draft. The prompt a draft makes is bounded as well (see
// Prompt), below what a session's prompt queue takes.
const (
	// MaxComments is how many comments one session's draft holds.
	MaxComments = 50
	// MaxCommentBytes is the longest comment text.
	MaxCommentBytes = 4 << 10
	// MaxPathBytes is the longest path a comment may name.
	MaxPathBytes = 1024
	// MaxLines is the most lines one comment may span.
	MaxLines = 200
)

var (
	// ErrInvalid means a comment breaks a rule; the error says which.
	ErrInvalid = errors.New("invalid review comment")
	// ErrFull means the session's draft holds MaxComments already.
	ErrFull = errors.New("review draft full")
	// ErrNotFound means no comment has that id in the session's draft.
	ErrNotFound = errors.New("review comment not found")
	// ErrNotAuthor means someone other than a comment's author tried to
	// take it back.
	ErrNotAuthor = errors.New("only its author may remove a review comment")
	// ErrEmpty means there is nothing to send.
	ErrEmpty = errors.New("no review comments to send")
)

// Author is who wrote a comment; a queued prompt records its author with
// the same type, so a sent review keeps its reviewer's identity.
type Author = identity.Author

// Comment is one remark on lines of a file in a session's tree.
type Comment struct {
	ID string `json:"id"`
	// Path is the file's path relative to the top of the session's tree.
	Path string `json:"path"`
	// Line is the first line the comment is about (1-based, in the file
	// as it is now); EndLine the last, equal to Line for one line.
	Line    int       `json:"line"`
	EndLine int       `json:"endLine"`
	Text    string    `json:"text"`
	Author  Author    `json:"author"`
	At      time.Time `json:"at"`
}

// Draft is a session's comments, oldest first. Rev counts its changes, so
// a client that gets a draft and the events that change it in either
// order keeps the newest.
type Draft struct {
	Comments []Comment `json:"comments"`
	Rev      uint64    `json:"rev"`
}

// Drafts holds every session's draft. Its methods are safe for
// concurrent use.
type Drafts struct {
	// mu protects by and revs. It is a leaf: no lock is taken under it.
	mu sync.Mutex
	// by holds the drafts, by session id; revs their revisions, kept when
	// a draft empties so a revision never goes back.
	by   map[string][]Comment
	revs map[string]uint64
}

// NewDrafts returns an empty set of drafts.
func NewDrafts() *Drafts {
	return &Drafts{by: make(map[string][]Comment), revs: make(map[string]uint64)}
}

// Get returns a session's draft.
func (d *Drafts) Get(session string) Draft {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.draftLocked(session)
}

func (d *Drafts) draftLocked(session string) Draft {
	return Draft{Comments: slices.Clone(d.by[session]), Rev: d.revs[session]}
}

// Add checks c, gives it an id and a time, and adds it to the session's
// draft. It returns the comment as added and the draft.
func (d *Drafts) Add(session string, c Comment) (Comment, Draft, error) {
	c, err := Clean(c)
	if err != nil {
		return Comment{}, Draft{}, err
	}
	c.ID, c.At = uuid.NewString(), time.Now().UTC()
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.by[session]) >= MaxComments {
		return Comment{}, Draft{}, fmt.Errorf("%w: it holds %d comments; send or discard it first", ErrFull, MaxComments)
	}
	d.by[session] = append(d.by[session], c)
	d.revs[session]++
	return c, d.draftLocked(session), nil
}

// Remove takes a comment back out of the session's draft; only its
// author may.
func (d *Drafts) Remove(session, authorID, commentID string) (Draft, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := d.by[session]
	i := slices.IndexFunc(cs, func(c Comment) bool { return c.ID == commentID })
	if i < 0 {
		return Draft{}, fmt.Errorf("%w: %q", ErrNotFound, commentID)
	}
	if cs[i].Author.ID != authorID {
		return Draft{}, fmt.Errorf("%w: this one is %s's", ErrNotAuthor, cs[i].Author.Name)
	}
	d.by[session] = slices.Delete(cs, i, i+1)
	d.revs[session]++
	return d.draftLocked(session), nil
}

// Take empties the session's draft and returns what it held, for sending.
// A draft already empty is ErrEmpty.
func (d *Drafts) Take(session string) ([]Comment, Draft, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cs := d.by[session]
	if len(cs) == 0 {
		return nil, Draft{}, ErrEmpty
	}
	delete(d.by, session)
	d.revs[session]++
	return cs, d.draftLocked(session), nil
}

// Restore puts comments taken for a send that then failed back in front
// of the session's draft, so a failed send loses nothing.
func (d *Drafts) Restore(session string, taken []Comment) Draft {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.by[session] = append(slices.Clone(taken), d.by[session]...)
	d.revs[session]++
	return d.draftLocked(session)
}

// Discard empties the session's draft, whoever wrote its comments.
func (d *Drafts) Discard(session string) Draft {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.by, session)
	d.revs[session]++
	return d.draftLocked(session)
}

// Forget drops everything of a session that is gone.
func (d *Drafts) Forget(session string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.by, session)
	delete(d.revs, session)
}

// Clean checks a comment as a client sent it and returns it normalised:
// one line is EndLine equal to Line, line ends are "\n". Its ID, At and
// Author are left as they are.
func Clean(c Comment) (Comment, error) {
	if err := checkPath(c.Path); err != nil {
		return Comment{}, err
	}
	if c.EndLine == 0 {
		c.EndLine = c.Line
	}
	switch {
	case c.Line < 1:
		return Comment{}, fmt.Errorf("%w: line %d; lines count from 1", ErrInvalid, c.Line)
	case c.EndLine < c.Line:
		return Comment{}, fmt.Errorf("%w: the range %d-%d ends before it starts", ErrInvalid, c.Line, c.EndLine)
	case c.EndLine-c.Line >= MaxLines:
		return Comment{}, fmt.Errorf("%w: the range %d-%d spans more than %d lines", ErrInvalid, c.Line, c.EndLine, MaxLines)
	}
	text := strings.ReplaceAll(c.Text, "\r\n", "\n")
	switch {
	case len(text) > MaxCommentBytes:
		return Comment{}, fmt.Errorf("%w: the comment is %d bytes; at most %d", ErrInvalid, len(text), MaxCommentBytes)
	case strings.TrimSpace(text) == "":
		return Comment{}, fmt.Errorf("%w: the comment is empty", ErrInvalid)
	case !utf8.ValidString(text):
		return Comment{}, fmt.Errorf("%w: the comment is not valid UTF-8", ErrInvalid)
	}
	// The comment is typed into the agent: a control character would be
	// a key, and an escape could end the bracketed paste early.
	if r, control, ok := textrule.FirstNotText(text); ok && control {
		return Comment{}, fmt.Errorf("%w: the comment contains the control character %U", ErrInvalid, r)
	} else if ok {
		return Comment{}, fmt.Errorf("%w: the comment contains the invisible character %U, which would make what is shown differ from what the agent reads", ErrInvalid, r)
	}
	c.Text = text
	return c, nil
}

// checkPath accepts a relative, clean, slash-separated path inside the
// tree: what a diff names.
func checkPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: the comment names no file", ErrInvalid)
	case len(p) > MaxPathBytes:
		return fmt.Errorf("%w: the path is %d bytes; at most %d", ErrInvalid, len(p), MaxPathBytes)
	case !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
		return fmt.Errorf("%w: the path %q holds a control character or is not UTF-8", ErrInvalid, p)
	case strings.HasPrefix(p, "/") || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/.."):
		return fmt.Errorf("%w: the path %q is not inside the session's tree", ErrInvalid, p)
	}
	return nil
}
