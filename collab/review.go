package collab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentmux/agentmux/changes"
	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// treeTimeout bounds the git call that finds a session's tree for a
// review's quotes.
const treeTimeout = 10 * time.Second

// Comment adds p's comment to the draft of session id, and tells the
// clients in the session.
func (a *App) Comment(p *Participant, id string, cm review.Comment) error {
	cm.Author = a.Author(p) // the author a queued prompt records
	if _, _, err := a.reviews.Add(id, cm); err != nil {
		return err
	}
	a.announceDraft(id)
	return nil
}

// Uncomment removes p's comment commentID from the draft of session id,
// and tells the clients in the session.
func (a *App) Uncomment(p *Participant, id, commentID string) error {
	if _, err := a.reviews.Remove(id, a.Author(p).ID, commentID); err != nil {
		return err
	}
	a.announceDraft(id)
	return nil
}

// Discard empties the draft of session id, and tells the clients in the
// session.
func (a *App) Discard(id string) {
	a.reviews.Discard(id)
	a.announceDraft(id)
}

// SendDraftAs sends the draft of session s for p, as review.send's "as"
// says: "prompt" (or "") queues it for the agent (SendDraft), "comment"
// pastes it at a shell's prompt (PasteDraft). Anything else is refused
// and the draft left as it was.
func (a *App) SendDraftAs(p *Participant, s *sessions.Session, as string) error {
	switch as {
	case "", "prompt":
		return a.SendDraft(p, s)
	case "comment":
		return a.PasteDraft(p, s)
	}
	return fmt.Errorf("%w: review.send as %s: want prompt or comment", review.ErrInvalid, textclip.Quote(as))
}

// SendDraft queues the draft of session s as one prompt by p, and replies
// to p (prompt.queued_ack). When the prompt cannot be queued, nothing is
// lost: the comments go back in front of the draft.
func (a *App) SendDraft(p *Participant, s *sessions.Session) error {
	id := s.ID()
	taken, _, err := a.reviews.Take(id)
	if err != nil {
		return err
	}
	pr, pos, err := a.queueReview(s, a.Author(p), taken)
	if err != nil {
		a.reviews.Restore(id, taken)
		a.announceDraft(id)
		return err
	}
	if b, err := wire.Marshal(wire.PromptAckMessage{Type: wire.TypePromptQueuedAck, SessionID: id, PromptID: pr.ID, Position: pos}); err != nil {
		a.log.Error("encode message", "err", err)
	} else {
		p.client.Send(b)
	}
	a.announceDraft(id)
	return nil
}

// PasteDraft pastes the draft of session s at its program's prompt as a
// block of shell comments (review.CommentBlock), for p, who learned that
// the session runs a shell, where a queued prompt would run each line.
// Nothing runs and nothing is queued; the draft empties, which
// review.draft tells everyone. When it cannot be pasted, the comments go
// back and p gets the error.
func (a *App) PasteDraft(p *Participant, s *sessions.Session) error {
	id := s.ID()
	taken, _, err := a.reviews.Take(id)
	if err != nil {
		return err
	}
	text, err := review.Prompt(a.sessionTree(s), taken, sessions.MaxPromptBytes)
	if err == nil {
		err = s.Paste(review.CommentBlock(text))
	}
	if err != nil {
		a.reviews.Restore(id, taken)
		a.announceDraft(id)
		return err
	}
	a.log.Info("review pasted as comments", "session", id, "by", a.Author(p).Name, "comments", len(taken))
	a.announceDraft(id)
	return nil
}

// SendReview queues comments on session id's changes as one prompt by
// author, as POST /api/sessions/:id/review asks; the session's draft is
// left alone. It returns the prompt and its place in the queue.
func (a *App) SendReview(id string, author sessions.Author, comments []review.Comment) (sessions.Prompt, int, error) {
	s, err := a.sessions.Get(id)
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
	return a.queueReview(s, author, comments)
}

// queueReview renders comments against the session's tree as it is now
// and queues the prompt.
func (a *App) queueReview(s *sessions.Session, author sessions.Author, comments []review.Comment) (sessions.Prompt, int, error) {
	text, err := review.Prompt(a.sessionTree(s), comments, sessions.MaxPromptBytes)
	if err != nil {
		return sessions.Prompt{}, 0, err
	}
	p, pos, err := s.QueuePrompt(author, text)
	if err == nil {
		a.noteSent(s.ID(), comments)
	}
	return p, pos, err
}

// maxSentKept bounds the review comments kept as sent, per session.
const maxSentKept = 50

// noteSent keeps comments as sent to session id's agent, the latest
// maxSentKept, for what its pull request says it addressed.
func (a *App) noteSent(id string, comments []review.Comment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	kept := append(a.sent[id], comments...)
	a.sent[id] = kept[max(len(kept)-maxSentKept, 0):]
}

// SentReviews returns the review comments sent to session id's agent as
// prompts, oldest first (the latest 50). They are kept while the server
// runs, not across a restart.
func (a *App) SentReviews(id string) []review.Comment {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.sent[id])
}

// AddComments adds comments by author to the draft of session id, as
// many as it takes (review.MaxComments in all), and tells the clients in
// the session. Text from outside (a forge's reviewers) is made text a
// prompt may hold and bounded first. It returns how many it added; a
// comment the draft had no room for, or that was refused, is counted in
// left and logged, and nothing else is lost.
func (a *App) AddComments(id string, author sessions.Author, comments []review.Comment) (added, left int, err error) {
	if _, err := a.sessions.Get(id); err != nil {
		return 0, 0, err
	}
	for _, cm := range comments {
		cm.Author = author
		cm.Text = textclip.String(textrule.Plain(cm.Text), review.MaxCommentBytes-len("…"), "…")
		if _, _, err := a.reviews.Add(id, cm); err != nil {
			a.log.Info("a review comment was not added to the draft", "session", id, "path", cm.Path, "err", err)
			left++
			continue
		}
		added++
	}
	if added > 0 {
		a.announceDraft(id)
	}
	return added, left, nil
}

// sessionTree is the top of the git tree the session works in, which the
// paths of its diff are relative to; its directory when that is not in a
// repository (a quote is then looked for there, and at worst left out).
func (a *App) sessionTree(s *sessions.Session) string {
	cwd := s.Info().Cwd
	ctx, cancel := context.WithTimeout(context.Background(), treeTimeout)
	defer cancel()
	top, err := changes.Top(ctx, cwd)
	if err != nil {
		if !errors.Is(err, gitexec.ErrNotRepo) {
			a.log.Debug("no tree for a review's quotes", "session", s.ID(), "err", err)
		}
		return cwd
	}
	return top
}

// announceDraft tells every client in the session that its draft
// changed; each gets it as it is when it is sent.
func (a *App) announceDraft(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for p := range a.clients {
		if _, in := p.in[id]; in {
			p.client.MarkState(wire.TypeReviewDraft, id)
		}
	}
}
