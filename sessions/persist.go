package sessions

import (
	"cmp"
	"encoding/json"
	"fmt"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/pty"
	"github.com/agentmux/agentmux/sessions/output"
	"github.com/agentmux/agentmux/sessions/store"
)

// record is a session's metadata as stored: the JSON document the store
// keeps under the session's id. Its field names and encodings are the
// database's format, which earlier builds' files must still load in.
type record struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	Profile        Profile            `json:"profile"`
	Command        []string           `json:"command"`
	Cwd            string             `json:"cwd"`
	CreatedAt      time.Time          `json:"createdAt"`
	LastActivityAt time.Time          `json:"lastActivityAt"`
	Status         Status             `json:"status"`
	Reason         string             `json:"reason,omitempty"`
	Cols           int                `json:"cols"`
	Rows           int                `json:"rows"`
	Exit           *output.ExitStatus `json:"exit,omitempty"`
	Worktree       *Worktree          `json:"worktree,omitempty"`
	Conversation   string             `json:"conversation,omitempty"`
}

// saved is a session read back from the store, decoded.
type saved struct {
	record record
	screen store.Screen
	queue  Queue
}

// load reads every session saved in st. A record that cannot be decoded
// is reported in skipped and left out; so is a screen or a prompt queue,
// which is lost, not its session. A damaged file is store.ErrCorrupt.
func load(st *store.Store) (out []saved, skipped []error, err error) {
	list, skipped, err := st.Load()
	if err != nil {
		return nil, nil, err
	}
	for _, sv := range list {
		var r record
		if err := json.Unmarshal(sv.Record, &r); err != nil {
			skipped = append(skipped, fmt.Errorf("session %q: %w", sv.ID, err))
			continue
		}
		d := saved{record: r, screen: sv.Screen}
		if sv.Queue != nil {
			if err := json.Unmarshal(sv.Queue, &d.queue); err != nil {
				skipped = append(skipped, fmt.Errorf("session %q prompt queue: %w", sv.ID, err))
				d.queue = Queue{}
			}
		}
		out = append(out, d)
	}
	return out, skipped, nil
}

// putRecord queues info's record for the store. emitMu must be held, so
// records reach the store in the order their changes happened.
func (m *Manager) putRecord(info Info) {
	if v, ok := m.encodeRecord(info); ok {
		m.journal.PutRecord(info.ID, v)
	}
}

// encodeRecord returns info's record as the store keeps it, or logs why
// it cannot.
func (m *Manager) encodeRecord(info Info) ([]byte, bool) {
	v, err := json.Marshal(recordOf(info))
	if err != nil {
		m.log.Error("encode session", "session", info.ID, "err", err)
		return nil, false
	}
	return v, true
}

// putQueue queues a session's prompt queue for the store. emitMu must be
// held.
func (m *Manager) putQueue(id string, q Queue) {
	v, err := json.Marshal(q)
	if err != nil {
		m.log.Error("encode prompt queue", "session", id, "err", err)
		return
	}
	m.journal.PutQueue(id, v)
}

func recordOf(info Info) record {
	return record{
		ID:             info.ID,
		Name:           info.Name,
		Profile:        info.Profile,
		Command:        info.Command,
		Cwd:            info.Cwd,
		CreatedAt:      info.CreatedAt,
		LastActivityAt: info.LastActivityAt,
		Status:         info.Status,
		Reason:         info.Reason,
		Cols:           info.Cols,
		Rows:           info.Rows,
		Exit:           info.Exit,
		Worktree:       info.Worktree,
		Conversation:   info.Conversation,
	}
}

// restore lists every saved session as idle, with its last screen in its
// ring at the offsets it had, so clients' seq stay meaningful.
func (m *Manager) restore() error {
	list, skipped, err := load(m.opts.Store)
	if err != nil {
		return err
	}
	for _, e := range skipped {
		m.log.Warn("a saved session could not be read and is left out", "database", m.opts.Store.Path(), "err", e)
	}
	for _, sv := range list {
		r := sv.record
		// A run that had failed on its own stays failed, with its exit
		// code; every other session (running when the server went, or
		// stopped) comes back idle, waiting for a resume.
		status, reason := StatusIdle, "restored after a restart; resume to start the agent again"
		if r.Status == StatusError {
			status, reason = StatusError, r.Reason
		}
		s := &Session{
			id:        r.ID,
			name:      r.Name,
			profile:   r.Profile,
			cwd:       r.Cwd,
			env:       sessionEnv(m.opts.Env, r.ID),
			createdAt: r.CreatedAt,
			log:       m.log.With("session", r.ID),
			emit:      m.emit,
			ring:      output.NewRing(m.opts.Scrollback),
			timing:    m.opts.Timing,
			hooks:     m.opts.Hooks,
			wt:        sessionWorktree{w: r.Worktree},
			det:       detector{status: status, reason: reason},
			run: agentRun{
				phase: phaseExited,
				argv:  r.Command,
				cols:  cmp.Or(r.Cols, 80),
				rows:  cmp.Or(r.Rows, 24),
				exit:  r.Exit,
			},
			// conversation survives restarts, so a resume continues it.
			conv:    conversation{id: r.Conversation},
			prompts: promptQueue{id: r.ID, q: sv.queue},
		}
		s.lastActivity.Store(r.LastActivityAt.UnixNano())
		s.ring.Restore(sv.screen.Start, sv.screen.Prefix, sv.screen.Data, sv.screen.Cut)
		// A server killed outright could not stop the session's processes;
		// those that did not die with its terminal (detached helpers) die
		// now, before anything can resume the session.
		if err := pty.SignalTagged(sessionTag(r.ID), syscall.SIGKILL); err != nil {
			s.log.Warn("kill what the session's last run left running", "err", err)
		}
		m.sessions[r.ID] = s
		m.savers[r.ID] = new(output.Saver)
		m.savers[r.ID].Mark(s.ring)
		m.created++
	}
	if len(list) > 0 {
		m.log.Info("restored sessions", "count", len(list), "database", m.opts.Store.Path())
	}
	return nil
}

// saver saves changed screens every SaveInterval until Close, and tells
// Options.Quiet when the output stops.
func (m *Manager) saver() {
	defer close(m.saverDone)
	t := time.NewTicker(m.opts.SaveInterval)
	defer t.Stop()
	moving := false
	for {
		select {
		case <-m.stopSaver:
			return
		case <-t.C:
			moved := m.saveScreens()
			if moving && !moved && m.opts.Quiet != nil {
				m.opts.Quiet()
			}
			moving = moved
		}
	}
}

// saveScreens writes the metadata and new output of every session whose
// output moved since its last save, and reports whether any had. It
// hands the journal about saveBacklog bytes at a time, so however many
// sessions printed, the copies a save makes (and bbolt's of them) are
// about that much at once.
func (m *Manager) saveScreens() (moved bool) {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	for _, s := range m.List() {
		if m.saveScreen(s) {
			moved = true
			m.journal.Drain(saveBacklog)
		}
	}
	return moved
}

// saveBacklog bounds the output a save queues before it waits for the
// journal to take it: a few busy rings.
const saveBacklog = 4 << 20

// pageBytes is the database's page size: what a commit costs at least.
const pageBytes = 4096

// saveScreen queues s's metadata and the output it printed since its last
// save: a piece, or a whole screen the first time, after the ring moved
// past the last save, and once the pieces since the last whole screen are
// as many as the ring has pages. That bound keeps the pieces stored few,
// and costs, spread over the saves that made them, about a page a save:
// what any commit writes anyway.
func (m *Manager) saveScreen(s *Session) (saved bool) {
	// Under emitMu, so a Destroy's removal cannot be queued between the
	// check that the session is still there and the save, which would
	// bring a destroyed session back after a restart. The session's mu
	// comes first, as everywhere (a run ending emits under it): taking it
	// inside emitMu deadlocked a save against a run's end.
	s.mu.Lock()
	defer s.mu.Unlock()
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	st := s.ring.State()
	if st.Closed {
		return false
	}
	sv := m.savers[s.id]
	if sv == nil {
		sv = new(output.Saver)
		m.savers[s.id] = sv
	}
	enc, whole, cut := sv.Save(s.ring, store.ScreenHead, sv.Pieces() >= m.opts.Scrollback/pageBytes)
	if enc == nil {
		return false
	}
	// A record that cannot be encoded is logged and left as stored; the
	// output is saved all the same.
	v, _ := m.encodeRecord(s.infoLocked())
	if whole {
		m.journal.PutSnapshot(s.id, v, enc, cut)
	} else {
		// The ring's start when the save began: the ring holds at least
		// from there, so what the store keeps covers it.
		m.journal.AppendScreen(s.id, v, enc, st.Start)
	}
	return true
}

// Close saves every changed screen, stops the periodic saving and returns
// once everything is written. Call it after Shutdown, so the agents' last
// output is in; the Store stays open for its owner to close.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		close(m.stopSaver)
		<-m.saverDone
		if m.journal != nil {
			m.saveScreens()
			m.journal.Close()
		}
	})
}

// durable waits, holding no lock, until every change made so far is
// committed to the store.
func (m *Manager) durable() {
	if m.journal != nil {
		m.journal.Sync()
	}
}
