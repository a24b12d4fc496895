package sessions

import (
	"slices"
	"time"
)

// TurnUsage is what one turn of the agent spent: the session's figures
// at the turn's end less those at the end of the turn before, so a
// session's turns add up to its usage. A figure the agent does not
// report is absent.
type TurnUsage struct {
	// Turn numbers the session's turns that reported usage, from 1.
	Turn int `json:"turn"`
	// EndedAt is when the agent ended the turn.
	EndedAt time.Time `json:"endedAt"`
	// Checkpoint is the checkpoint the turn's tree is in: the first
	// taken after it ended; absent until one is.
	Checkpoint   int      `json:"checkpoint,omitempty"`
	InputTokens  *int64   `json:"inputTokens,omitempty"`
	OutputTokens *int64   `json:"outputTokens,omitempty"`
	CostUSD      *float64 `json:"costUsd,omitempty"`
}

// MaxTurnsKept bounds the turns a session keeps figures for; the oldest
// go first.
const MaxTurnsKept = 500

// turnLedger splits a session's usage into its turns. Its figures are
// the session's totals at each turn's end less those before: Claude Code
// reports its cost in the status line after the turn's Stop hook, so the
// last turn takes figures reported late until the agent works again.
// Guarded by the Session's mu.
type turnLedger struct {
	Turns []TurnUsage `json:"turns,omitempty"`
	// Before is the session's totals before the last turn; At, those
	// the last turn was counted to.
	Before figures `json:"before"`
	At     figures `json:"at"`
	// Open says the last turn still takes late figures.
	Open bool `json:"open,omitempty"`
}

// figures are a usage's totals that turns divide.
type figures struct {
	In   *int64   `json:"in,omitempty"`
	Out  *int64   `json:"out,omitempty"`
	Cost *float64 `json:"cost,omitempty"`
}

func figuresOf(u *Usage) figures {
	if u == nil {
		return figures{}
	}
	return figures{In: u.InputTokens, Out: u.OutputTokens, Cost: u.CostUSD}
}

// turnEnded counts a turn that ended at now, the session's usage then
// being u. A session whose agent reports nothing counts no turns.
func (l *turnLedger) turnEnded(u *Usage, now time.Time) {
	if u == nil {
		return
	}
	n := 1
	if k := len(l.Turns); k > 0 {
		n = l.Turns[k-1].Turn + 1
		if l.Turns[k-1].spentNothing() {
			// A wait that ended no work (Claude at its prompt when it
			// starts) is no turn: this one takes its place.
			n--
			l.Turns = l.Turns[:k-1]
		}
	}
	if len(l.Turns) >= MaxTurnsKept {
		l.Turns = slices.Delete(l.Turns, 0, len(l.Turns)-MaxTurnsKept+1)
	}
	l.Before, l.At = l.At, figuresOf(u)
	l.Turns = append(l.Turns, l.turn(n, now.UTC()))
	l.Open = true
}

// reported takes figures the agent reported after the last turn ended,
// before it works again: they are the last turn's.
func (l *turnLedger) reported(u *Usage) {
	if !l.Open || len(l.Turns) == 0 || u == nil {
		return
	}
	l.At = figuresOf(u)
	last := &l.Turns[len(l.Turns)-1]
	t := l.turn(last.Turn, last.EndedAt)
	t.Checkpoint = last.Checkpoint
	*last = t
}

// spentNothing reports whether the turn's figures are all zero.
func (t TurnUsage) spentNothing() bool {
	return (t.InputTokens == nil || *t.InputTokens == 0) && (t.OutputTokens == nil || *t.OutputTokens == 0) && (t.CostUSD == nil || *t.CostUSD == 0)
}

// working closes the last turn to late figures: what is reported from now
// on is the next turn's.
func (l *turnLedger) working() { l.Open = false }

// turn is turn n's figures: At less Before. A total that fell (a new
// conversation, whose totals start again) counts whole.
func (l *turnLedger) turn(n int, ended time.Time) TurnUsage {
	return TurnUsage{
		Turn: n, EndedAt: ended,
		InputTokens:  less(l.At.In, l.Before.In),
		OutputTokens: less(l.At.Out, l.Before.Out),
		CostUSD:      less(l.At.Cost, l.Before.Cost),
	}
}

func less[T int64 | float64](now, before *T) *T {
	if now == nil {
		return nil
	}
	d := *now
	if before != nil && *before <= *now {
		d -= *before
	}
	return &d
}

// checkpointed says checkpoint cp holds the tree the turns that ended
// before began left: those that ended since the checkpoint before.
func (l *turnLedger) checkpointed(cp int, began time.Time) bool {
	changed := false
	for i := range l.Turns {
		if t := &l.Turns[i]; t.Checkpoint == 0 && !t.EndedAt.After(began) {
			t.Checkpoint = cp
			changed = true
		}
	}
	return changed
}

// NoteCheckpoint says checkpoint cp of the session's tree was taken, from
// the tree as it was at began: it holds what the turns that ended before
// then, since the checkpoint before, did.
func (m *Manager) NoteCheckpoint(id string, cp int, began time.Time) error {
	return m.withListed(id, func(s *Session) error {
		if s.turns.checkpointed(cp, began) {
			s.emit(Event{Kind: EventUpdated, Session: s.infoLocked()})
		}
		return nil
	})
}

// clone returns a copy that shares nothing with l.
func (l *turnLedger) clone() []TurnUsage { return slices.Clone(l.Turns) }

// Turns returns what each of the session's last turns spent (at most
// MaxTurnsKept), oldest first.
func (s *Session) Turns() []TurnUsage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turns.clone()
}

// SpentByCheckpoint adds up the session's turns by the checkpoint that
// holds their tree (NoteCheckpoint); turns no checkpoint holds yet are
// left out.
func (s *Session) SpentByCheckpoint() map[int]Spent {
	s.mu.Lock()
	defer s.mu.Unlock()
	spent := map[int]Spent{}
	for _, t := range s.turns.Turns {
		if t.Checkpoint == 0 {
			continue
		}
		sp := spent[t.Checkpoint]
		sp.Add(t)
		spent[t.Checkpoint] = sp
	}
	return spent
}

// Spent adds up turns: what a checkpoint's turns, or those since a time,
// spent. A figure none of the turns reported is absent.
type Spent struct {
	// Turns counts the turns added up.
	Turns        int      `json:"turns"`
	InputTokens  *int64   `json:"inputTokens,omitempty"`
	OutputTokens *int64   `json:"outputTokens,omitempty"`
	CostUSD      *float64 `json:"costUsd,omitempty"`
}

// Add counts one more turn.
func (sp *Spent) Add(t TurnUsage) {
	sp.Turns++
	sp.InputTokens = plus(sp.InputTokens, t.InputTokens)
	sp.OutputTokens = plus(sp.OutputTokens, t.OutputTokens)
	sp.CostUSD = plus(sp.CostUSD, t.CostUSD)
}

func plus[T int64 | float64](sum, v *T) *T {
	if v == nil {
		return sum
	}
	s := *v
	if sum != nil {
		s += *sum
	}
	return &s
}
