package ws

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// treeTimeout bounds the git call that finds a session's tree for a
// review's quotes.
const treeTimeout = 10 * time.Second

// reviewAuthor is what a review comment records of who wrote it: the
// participant's author id and name, the author a queued prompt records.
func (h *Hub) reviewAuthor(c *conn) review.Author { return h.authorOf(c) }

// review carries out one of the review.* messages of this connection.
func (c *conn) review(m *clientMessage, s *sessions.Session) error {
	h, id := c.hub, s.ID()
	switch m.Type {
	case wire.TypeReviewComment:
		cm := review.Comment{Path: *m.Path, Line: *m.Line, Text: *m.Text, Author: h.reviewAuthor(c)}
		if m.EndLine != nil {
			cm.EndLine = *m.EndLine
		}
		if _, _, err := h.reviews.Add(id, cm); err != nil {
			return err
		}
	case wire.TypeReviewUncomment:
		if _, err := h.reviews.Remove(id, h.authorOf(c).ID, *m.CommentID); err != nil {
			return err
		}
	case wire.TypeReviewDiscard:
		h.reviews.Discard(id)
	case wire.TypeReviewSend:
		taken, _, err := h.reviews.Take(id)
		if err != nil {
			return err
		}
		p, pos, err := h.queueReview(s, h.authorOf(c), taken)
		if err != nil {
			// Nothing is lost: the comments go back in front of the draft.
			h.reviews.Restore(id, taken)
			h.announceDraft(id)
			return err
		}
		c.sendJSON(wire.PromptAckMessage{Type: wire.TypePromptQueuedAck, SessionID: id, PromptID: p.ID, Position: pos})
	}
	h.announceDraft(id)
	return nil
}

// SendReview queues comments on session id's changes as one prompt by
// author, as POST /api/sessions/:id/review asks; the session's draft is
// left alone. It returns the prompt and its place in the queue.
func (h *Hub) SendReview(id string, author sessions.Author, comments []review.Comment) (sessions.Prompt, int, error) {
	s, err := h.opts.Sessions.Get(id)
	if err != nil {
		return sessions.Prompt{}, 0, err
	}
	if len(comments) > review.MaxComments {
		return sessions.Prompt{}, 0, fmt.Errorf("%w: %d comments; at most %d at a time", review.ErrInvalid, len(comments), review.MaxComments)
	}
	for i, cm := range comments {
		if comments[i], err = review.Clean(cm); err != nil {
			return sessions.Prompt{}, 0, fmt.Errorf("comment %d: %w", i+1, err)
		}
	}
	return h.queueReview(s, author, comments)
}

// queueReview renders comments against the session's tree as it is now
// and queues the prompt.
func (h *Hub) queueReview(s *sessions.Session, author sessions.Author, comments []review.Comment) (sessions.Prompt, int, error) {
	text, err := review.Prompt(h.sessionTree(s), comments, sessions.MaxPromptBytes)
	if err != nil {
		return sessions.Prompt{}, 0, err
	}
	return s.QueuePrompt(author, text)
}

// sessionTree is the top of the git tree the session works in, which the
// paths of its diff are relative to; its directory when that is not in a
// repository (a quote is then looked for there, and at worst left out).
func (h *Hub) sessionTree(s *sessions.Session) string {
	cwd := s.Info().Cwd
	ctx, cancel := context.WithTimeout(context.Background(), treeTimeout)
	defer cancel()
	top, err := changes.Top(ctx, cwd)
	if err != nil {
		if !errors.Is(err, changes.ErrNotRepository) {
			h.log.Debug("no tree for a review's quotes", "session", s.ID(), "err", err)
		}
		return cwd
	}
	return top
}

// announceDraft tells every connection in the session that its draft
// changed; each gets it as it is when its writer sends it.
func (h *Hub) announceDraft(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.conns {
		if _, in := c.who.in[id]; in {
			c.sendState(wire.TypeReviewDraft, id)
		}
	}
}
