package sessions

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/identity"
	"github.com/agentmux/agentmux/internal/textrule"

	"github.com/google/uuid"
)

// Limits of a session's prompt queue.
const (
	// MaxQueuedPrompts is how many prompts one session's queue holds.
	MaxQueuedPrompts = 100
	// MaxPromptBytes is the largest prompt the queue takes.
	MaxPromptBytes = 64 << 10
	// MaxQueueBytes bounds the text of all the prompts one session's
	// queue holds. The whole queue is sent to every client that attaches
	// (prompt.list), so it must stay far below what a connection may have
	// waiting: with JSON's escaping it is at most twice this.
	MaxQueueBytes = 256 << 10
)

// Errors of the prompt queue.
var (
	ErrQueueFull      = errors.New("the prompt queue is full")
	ErrPromptNotFound = errors.New("no such prompt in the queue")
	ErrNotQueueOwner  = errors.New("only its author may remove a queued prompt")
)

// Author is who queued a prompt; a review comment records its author
// with the same type.
type Author = identity.Author

// Prompt is a prompt waiting for the session's agent to wait for input.
type Prompt struct {
	ID       string    `json:"id"`
	Author   Author    `json:"author"`
	Text     string    `json:"text"`
	QueuedAt time.Time `json:"queuedAt"`
}

// Queue is a session's prompt queue, oldest first. Rev counts its changes,
// so a client that gets the whole queue and the events that change it in
// either order keeps the newest.
type Queue struct {
	Prompts []Prompt `json:"prompts"`
	Rev     uint64   `json:"rev"`
}

// textBytes is the size of the queued prompts' text.
func (q Queue) textBytes() int {
	n := 0
	for _, p := range q.Prompts {
		n += len(p.Text)
	}
	return n
}

// promptQueue is what waits to be typed into a session's agent for
// somebody: the queued prompts (this file), the keys held for a run being
// started (wake.go), and the input held behind an Enter that waits to
// submit (typing.go).
//
// Its mu is a leaf: taken alone or under the Session's mu, never while
// taking another lock. What it holds is typed, and its changes announced,
// by the Session under its mu, which orders both; the queue itself only
// keeps and bounds.
type promptQueue struct {
	// id is the session's, for errors; set once.
	id string

	// mu protects the fields below.
	mu sync.Mutex
	q  Queue
	// skip makes the queue sit out the next waiting period, which an
	// interrupt caused: the user takes it from there.
	skip bool
	// held is what was typed while no process ran, for the run being
	// started; nil when nothing waits.
	held []byte
	// typing is text typed into the run whose Enter waits for the
	// program to take it; the run's end or an interrupt drops it.
	typing *typing
	// settling is set while a deliverWhenSettled waits to type the next
	// prompt.
	settling bool
}

// snapshot returns the queue. Its prompts are never changed in place, so
// it stays as it was.
func (pq *promptQueue) snapshot() Queue {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	return pq.q
}

// add appends a prompt by author, its text clean, unless the queue is
// full, and returns it, the queue and its position (1 is next).
func (pq *promptQueue) add(author Author, text string) (Prompt, Queue, int, error) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.q.Prompts) >= MaxQueuedPrompts {
		return Prompt{}, Queue{}, 0, fmt.Errorf("%w: it holds %d prompts; remove one or wait for the agent to take the next", ErrQueueFull, MaxQueuedPrompts)
	}
	if n := pq.q.textBytes(); n+len(text) > MaxQueueBytes {
		return Prompt{}, Queue{}, 0, fmt.Errorf("%w: it holds %d bytes of prompts and this one is %d; a queue holds at most %d: remove a prompt or wait for the agent to take the next",
			ErrQueueFull, n, len(text), MaxQueueBytes)
	}
	p := Prompt{ID: uuid.NewString(), Author: author, Text: text, QueuedAt: time.Now().UTC()}
	pq.q.Prompts = append(slices.Clip(pq.q.Prompts), p)
	pq.q.Rev++
	return p, pq.q, len(pq.q.Prompts), nil
}

// remove takes a queued prompt out for its author, or for anyone when
// force is set, and returns it and the queue.
func (pq *promptQueue) remove(authorID, promptID string, force bool) (Prompt, Queue, error) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	i := slices.IndexFunc(pq.q.Prompts, func(p Prompt) bool { return p.ID == promptID })
	if i < 0 {
		return Prompt{}, Queue{}, fmt.Errorf("%w: %s (it may just have been delivered)", ErrPromptNotFound, clip.Quote(promptID))
	}
	p := pq.q.Prompts[i]
	if p.Author.ID != authorID && !force {
		return Prompt{}, Queue{}, fmt.Errorf("%w: this prompt is %s's", ErrNotQueueOwner, p.Author.Name)
	}
	pq.q.Prompts = slices.Delete(slices.Clone(pq.q.Prompts), i, i+1)
	pq.q.Rev++
	return p, pq.q, nil
}

// next returns the prompt to type next: none while an Enter still waits
// to submit earlier text, into which the prompt would be typed.
func (pq *promptQueue) next() (Prompt, bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if len(pq.q.Prompts) == 0 || pq.typing != nil {
		return Prompt{}, false
	}
	return pq.q.Prompts[0], true
}

// delivered takes the prompt next returned, now typed, off the queue and
// returns the queue.
func (pq *promptQueue) delivered() Queue {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.q.Prompts = slices.Delete(slices.Clone(pq.q.Prompts), 0, 1)
	pq.q.Rev++
	return pq.q
}

// startSettling marks a deliverWhenSettled under way and reports whether
// none was: only one may be.
func (pq *promptQueue) startSettling() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	if pq.settling {
		return false
	}
	pq.settling = true
	return true
}

// stopSettling marks the deliverWhenSettled under way ended.
func (pq *promptQueue) stopSettling() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.settling = false
}

// sitOut makes the queue sit out the next waiting period.
func (pq *promptQueue) sitOut(yes bool) {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.skip = yes
}

// sitsOut reports whether the queue sits out this waiting period, which
// uses the turn up: it takes the next one.
func (pq *promptQueue) sitsOut() bool {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	skip := pq.skip
	pq.skip = false
	return skip
}

// interrupt drops what waits to be typed on the user's behalf, held keys
// and the Enter under way with what was typed behind it, and makes the
// queue sit out the waiting period the interrupt causes.
func (pq *promptQueue) interrupt() {
	pq.mu.Lock()
	defer pq.mu.Unlock()
	pq.held, pq.typing, pq.skip = nil, nil, true
}

// cleanPrompt checks a prompt's text and returns it as it is typed: line
// ends as the Enter key sends them.
func cleanPrompt(text string) (string, error) {
	if len(text) > MaxPromptBytes {
		return "", fmt.Errorf("%w: the prompt is %d bytes; a queued prompt holds at most %d", ErrInvalid, len(text), MaxPromptBytes)
	}
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("%w: the prompt is empty", ErrInvalid)
	}
	if !utf8.ValidString(text) {
		return "", fmt.Errorf("%w: the prompt is not valid UTF-8", ErrInvalid)
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	// Other control characters would be keys, not text: an escape could
	// end the bracketed paste early and run the rest as commands. Bidi
	// overrides and invisible characters would let the queue show one
	// prompt while the agent is given another.
	if r, control, ok := textrule.FirstNotText(text); ok && control {
		return "", fmt.Errorf("%w: the prompt contains the control character %U; only text, tabs and line breaks can be queued", ErrInvalid, r)
	} else if ok {
		return "", fmt.Errorf("%w: the prompt contains the invisible character %U, which would make what is shown differ from what the agent reads", ErrInvalid, r)
	}
	return text, nil
}

// QueuePrompt adds a prompt to the session's queue and returns it with its
// position (1 is next). A session that waits for its user now gets it at
// once; otherwise it is typed when the agent next waits.
func (s *Session) QueuePrompt(author Author, text string) (Prompt, int, error) {
	text, err := cleanPrompt(text)
	if err != nil {
		return Prompt{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.phase == phaseClosed {
		return Prompt{}, 0, ErrNotFound
	}
	return s.addPromptLocked(author, text)
}

// queuePromptLocked is QueuePrompt for a caller that holds mu and has
// checked that the session is not closed.
func (s *Session) queuePromptLocked(author Author, text string) error {
	text, err := cleanPrompt(text)
	if err != nil {
		return err
	}
	_, _, err = s.addPromptLocked(author, text)
	return err
}

// addPromptLocked queues a clean prompt, and types it at once into an
// agent that waits. mu must be held.
func (s *Session) addPromptLocked(author Author, text string) (Prompt, int, error) {
	p, q, pos, err := s.prompts.add(author, text)
	if err != nil {
		return Prompt{}, 0, err
	}
	s.log.Info("prompt queued", "prompt", p.ID, "author", author.Name, "position", pos, "bytes", len(text))
	s.emit(Event{Kind: EventPromptQueued, Session: s.infoLocked(), Prompt: &p, Queue: q})
	if s.det.isWaiting() {
		s.deliverLocked()
	}
	return p, pos, nil
}

// DequeuePrompt removes a queued prompt for by. Without force only its
// author may; force lets anyone, since an author's identity can be gone
// for good (storage cleared, another browser) and their prompt must not
// outlive them. The UI asks its user before it forces.
func (s *Session) DequeuePrompt(by Author, promptID string, force bool) error {
	// Under mu, which orders the queue's announcements.
	s.mu.Lock()
	defer s.mu.Unlock()
	p, q, err := s.prompts.remove(by.ID, promptID, force)
	if err != nil {
		return err
	}
	s.log.Info("prompt removed from the queue", "prompt", p.ID, "author", p.Author.Name, "by", by.Name)
	s.emit(Event{Kind: EventPromptDequeued, Session: s.infoLocked(), Prompt: &p, Queue: q})
	return nil
}

// Queue returns the session's prompt queue.
func (s *Session) Queue() Queue { return s.prompts.snapshot() }

// deliverLocked types the oldest queued prompt into a waiting agent that
// can take it, or has it typed once it can (deliverWhenSettled):
// one prompt per waiting period (typing it ends the period), none in the
// period that follows an interrupt. It reports whether a prompt is on its
// way, which answers the wait. mu must be held.
func (s *Session) deliverLocked() bool {
	if s.prompts.sitsOut() || s.awaitsResetLocked() {
		// The user stopped the agent: they take it from here, and the
		// queue waits for the agent's next turn to end.
		return false
	}
	// While an Enter still waits to submit earlier text, next has none:
	// the prompt waits for the Enter (submitLocked).
	p, ok := s.prompts.next()
	if !ok || s.run.in == nil || !s.det.atPrompt() {
		return false
	}
	if s.settled(time.Now()) {
		return s.typePromptLocked(p)
	}
	if s.prompts.startSettling() {
		go s.deliverWhenSettled(s.run.in)
	}
	return true
}

// A queued prompt is typed once the waiting agent can take it as a new
// turn. Most signals come once the agent is at its prompt: a bell or a
// question in its output, Claude Code's SessionStart hook. Claude Code's
// Stop hook comes before that: Claude shows "running stop hook", draws
// nothing while the hook's process exits, and only then ends its turn on
// screen; a prompt typed and submitted before that came back into its
// input at the next turn's end, where the next queued prompt joined it
// (web/test/31, on a loaded machine). After such a signal the agent has
// settled once it has redrawn and then been still for turnEndQuiet,
// longer than the gaps between its spinner's frames; settleBound is the
// last resort for an agent that keeps drawing, or draws nothing.
const (
	turnEndQuiet = 250 * time.Millisecond
	settleBound  = 2 * time.Second
)

// deliverWhenSettled types the oldest queued prompt into the run whose
// input is in once the agent has settled, or tells clients the session
// waits when the queue has emptied meanwhile. It gives up when the wait
// or the run ends first: the user answered it, or the run is gone.
func (s *Session) deliverWhenSettled(in *inputQueue) {
	s.poll(func() bool { return s.settled(time.Now()) }, func(settled bool) bool {
		switch {
		case s.run.in != in || !s.det.atPrompt():
			// The run ended, or the wait did: the prompt waits for the next.
		case settled:
			if p, ok := s.prompts.next(); !ok || !s.typePromptLocked(p) {
				s.announceWaitLocked()
			}
		default:
			return false
		}
		s.prompts.stopSettling()
		return true
	})
}

// settled reports whether the waiting agent can take a prompt now (see
// turnEndQuiet).
func (s *Session) settled(now time.Time) bool {
	since, _, redraws, ok := s.det.wait()
	if !ok {
		return false
	}
	if !redraws || now.Sub(since) >= settleBound {
		return true
	}
	last := time.Unix(0, s.lastOutput.Load())
	return last.After(since) && now.Sub(last) >= turnEndQuiet
}

// typePromptLocked types p, then its Enter once the agent has taken the
// text, and takes p off the queue, which ends the waiting period. It
// reports whether p was typed. mu must be held.
func (s *Session) typePromptLocked(p Prompt) bool {
	var keys []byte
	if s.ring.BracketedPaste() {
		// The program asked for pastes to be marked: the text arrives as
		// one paste, its line breaks as text rather than Enter.
		keys = append(keys, "\x1b[200~"...)
		keys = append(keys, p.Text...)
		keys = append(keys, "\x1b[201~"...)
	} else {
		keys = append(keys, strings.ReplaceAll(p.Text, "\n", "\r")...)
	}
	// The Enter goes on its own once the agent has taken the text (see
	// typing.go): agents that tell a paste from typing by how keys come
	// (Claude Code does) would take an Enter in the same burst for a line
	// break in the prompt, not for submit.
	if err := s.typeLocked(keys, true, "queued prompt "+p.ID); err != nil {
		// The agent has left 1 MiB unread: it is not really waiting. The
		// prompt stays first for the next period.
		s.log.Warn("could not type the queued prompt", "prompt", p.ID, "err", err)
		return false
	}
	s.touch()
	q := s.prompts.delivered()
	s.log.Info("queued prompt delivered", "prompt", p.ID, "author", p.Author.Name)
	s.emit(Event{Kind: EventPromptDelivered, Session: s.infoLocked(), Prompt: &p, Queue: q})
	s.endWaitingLocked("queued prompt from " + p.Author.Name)
	return true
}
