package sessions

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/pty"
	"github.com/agentmux/agentmux/scripts"
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
	// Ports is the session's port block, held again after a restart
	// when no other session's overlaps it, and checked at its resume.
	Ports *Ports `json:"ports,omitempty"`
	// Workspace is the workspace of the Manager that saved the session,
	// absolute and clean: a database several workspaces share (one
	// --data-dir given to servers of each) holds all of theirs, and each
	// lists only its own. Records saved before it was kept have none;
	// their Cwd says (isOfWorkspace).
	Workspace string `json:"workspace,omitempty"`
	// Check and SendFailures are the last turn's check and whether
	// failures go to the agent.
	Check        *Check `json:"check,omitempty"`
	SendFailures bool   `json:"sendFailures,omitempty"`
	// Archive is the archive script's run, for an archived session.
	Archive *scripts.Result `json:"archive,omitempty"`
	// Setup is a worktree session's setup script's latest run.
	Setup *Setup `json:"setup,omitempty"`
	// RunOf and RunTree are a run session's (see Session).
	RunOf   string `json:"runOf,omitempty"`
	RunTree string `json:"runTree,omitempty"`
	// StartedBy is the session whose agent started this one.
	StartedBy string `json:"startedBy,omitempty"`
	// Usage is the agent's last report of what it spends; Turns divides
	// it into the agent's turns; Transcript is how far a Claude run's
	// transcript has been read for it.
	Usage *Usage      `json:"usage,omitempty"`
	Turns *turnLedger `json:"turns,omitempty"`
	// Limit is the usage limit the agent waits to reset, with the plan
	// to continue it.
	Limit      *Limit           `json:"limit,omitempty"`
	Transcript *transcriptState `json:"transcript,omitempty"`
	// PullRequest is the pull request of the session's branch.
	PullRequest *PullRequest `json:"pullRequest,omitempty"`
}

// isOfWorkspace reports whether a stored session belongs to the
// workspace ws (absolute and clean): the one it records, or, for a
// record saved before records named theirs, the one its working
// directory (or its worktree) is in. Sessions of the workspace always
// ran in it or in a worktree under it, unless one was given an absolute
// cwd outside it: such an old record belongs to no workspace, and stays
// in the database unlisted.
func isOfWorkspace(r record, ws string) bool {
	if r.Workspace != "" {
		return filepath.Clean(r.Workspace) == ws
	}
	within := func(p string) bool {
		rel, err := filepath.Rel(ws, filepath.Clean(p))
		return err == nil && filepath.IsAbs(p) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	return r.Cwd != "" && within(r.Cwd) || r.Worktree != nil && within(r.Worktree.Path)
}

// CopyWorkspace copies the sessions of the workspace ws (absolute) that
// src holds into dst, as they are stored, and returns how many. src is
// only read: it is how a workspace takes its sessions from a database it
// shared with others.
func CopyWorkspace(dst, src *store.Store, ws string) (int, error) {
	list, _, err := load(src)
	if err != nil {
		return 0, err
	}
	ws = filepath.Clean(ws)
	var ids []string
	for _, sv := range list {
		if isOfWorkspace(sv.record, ws) {
			ids = append(ids, sv.record.ID)
		}
	}
	if err := store.CopySessions(dst, src, ids); err != nil {
		return 0, err
	}
	return len(ids), nil
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
	r := recordOf(info)
	r.Workspace = m.opts.Workspace
	v, err := json.Marshal(r)
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
		Ports:          info.Ports,
		Check:          info.Check,
		SendFailures:   info.SendFailures,
		Archive:        info.Archive,
		Setup:          info.Setup,
		RunOf:          info.RunOf,
		RunTree:        info.runTree,
		StartedBy:      info.StartedBy,
		Usage:          info.Usage,
		Turns:          info.turns,
		Limit:          info.Limit,
		PullRequest:    info.PullRequest,
		Transcript:     info.transcript,
	}
}

// restore lists every saved session of the workspace as idle, with its
// last screen in its ring at the offsets it had, so clients' seq stay
// meaningful. Sessions of other workspaces are left as they are stored:
// not listed, not counted, their processes not touched.
func (m *Manager) restore() error {
	list, skipped, err := load(m.opts.Store)
	if err != nil {
		return err
	}
	for _, e := range skipped {
		m.log.Warn("a saved session could not be read and is left out", "database", m.opts.Store.Path(), "err", e)
	}
	others := 0
	for _, sv := range list {
		r := sv.record
		if !isOfWorkspace(r, m.opts.Workspace) {
			others++
			continue
		}
		// A run that had failed on its own stays failed, with its exit
		// code; every other session (running when the server went, or
		// stopped) comes back idle, waiting for a resume.
		status, reason := StatusIdle, "restored after a restart; resume to start the agent again"
		if r.Status == StatusError {
			status, reason = StatusError, r.Reason
		}
		if l := r.Limit; l != nil && l.ContinuedAt == nil && status == StatusIdle {
			status, reason = StatusLimited, "stopped at the usage limit before a restart; resume it once the limit resets"
			if l.Continue && l.ResetsAt != nil {
				reason = "stopped at the usage limit before a restart; agentmux resumes it once the limit resets"
			}
		}
		if u := r.Setup; u != nil && (u.Status == SetupRunning || u.Status == SetupStopped && !u.AgentStarted) {
			// The setup went with the server that ran it (a shutdown
			// stops it, a crash ends it), and the agent never started.
			u.Status, u.ExitCode = SetupInterrupted, -1
			status, reason = StatusError, "the setup script was interrupted by a restart of agentmux; retry it, or start the agent anyway"
		}
		s := m.sessionOf(r.ID, r.Profile, r.Cwd)
		s.name, s.createdAt = r.Name, r.CreatedAt
		s.wt = sessionWorktree{w: r.Worktree}
		s.det = detector{status: status, reason: reason}
		s.run = agentRun{
			phase: phaseExited,
			argv:  r.Command,
			cols:  cmp.Or(r.Cols, 80),
			rows:  cmp.Or(r.Rows, 24),
			exit:  r.Exit,
		}
		// conversation survives restarts, so a resume continues it.
		s.conv = conversation{id: r.Conversation}
		s.prompts = promptQueue{id: r.ID, q: sv.queue}
		s.check = sessionCheck{last: r.Check, sendFailures: r.SendFailures}
		s.archive, s.setup = r.Archive, sessionSetup{last: r.Setup}
		s.runOf, s.runTree, s.startedBy = r.RunOf, r.RunTree, r.StartedBy
		s.usage, s.limit, s.transcript = r.Usage, r.Limit, r.Transcript.reader()
		s.pullRequest = r.PullRequest
		if r.Turns != nil {
			s.turns = *r.Turns
		}
		if r.RunOf != "" {
			// Its session's ports, which that session holds.
			s.blocks = nil
			if r.Ports != nil {
				s.ports = *r.Ports
			}
		}

		if c := s.check.last; c != nil && c.Status == scripts.Running {
			// The check went with the server that ran it.
			c.Status, c.ExitCode = scripts.Superseded, -1
			c.Output += "agentmux stopped before the check ended\n"
		}
		// Its block is kept for it, so no new session takes its ports
		// before it is resumed; the resume checks they are still free.
		if r.Ports != nil && r.RunOf == "" && !(r.Worktree != nil && r.Worktree.Archived) {
			if m.ports.hold(r.ID, *r.Ports) {
				s.ports = *r.Ports
			} else {
				s.log.Warn("the session's saved ports overlap another session's; it gets new ones when resumed", "was", r.Ports.First)
			}
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
	if n := len(list) - others; n > 0 {
		m.log.Info("restored sessions", "count", n, "database", m.opts.Store.Path())
	}
	if others > 0 {
		m.log.Info("the database holds sessions of other workspaces too; they are left as they are, for those workspaces' servers",
			"count", others, "database", m.opts.Store.Path(), "workspace", m.opts.Workspace)
	}
	return nil
}

// SaveStatus says whether the sessions are being saved.
type SaveStatus struct {
	// Failing reports that the database refused a commit and that
	// everything has not been saved since: from the first refused commit
	// until a save of every session, whole, succeeds.
	Failing bool
	// Err is the last refused commit's error while Failing; after a
	// recovery, the error that was.
	Err error
	// Since is when saving started failing, while Failing; after a
	// recovery, when everything was saved again. Zero when saving never
	// failed.
	Since time.Time
	// Database is the database file's path.
	Database string
}

// SaveStatus returns whether the sessions are being saved; without a
// Store, never failing.
func (m *Manager) SaveStatus() SaveStatus {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	return m.saving
}

// SubscribeSaveStatus has fn called with every change of SaveStatus from
// now on (when saving starts failing, and when it works again), in order,
// until cancel is called. fn runs with a lock of the Manager held, so it
// must be quick and must not call the Manager.
func (m *Manager) SubscribeSaveStatus(fn func(SaveStatus)) (cancel func()) {
	return m.saveObservers.Subscribe(fn)
}

// saveFailed makes a commit the database refused the Manager's state:
// said once, in one log line, when saving starts failing, not at every
// refused commit. It runs on the journal's goroutine.
func (m *Manager) saveFailed(err error) {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	if m.saving.Failing {
		m.saving.Err = err
		return
	}
	m.saving = SaveStatus{Failing: true, Err: err, Since: time.Now(), Database: m.opts.Store.Path()}
	m.log.Error("sessions are not being saved: the database refuses writes; a restart now loses what the sessions do until saving works again, which is retried every save interval",
		"database", m.opts.Store.Path(), "err", err)
	// Under statusMu, so that observers see the changes in order.
	m.saveObservers.Notify(m.saving)
}

// saveRecovered ends a failing state, once a save of everything
// succeeded.
func (m *Manager) saveRecovered() {
	m.statusMu.Lock()
	defer m.statusMu.Unlock()
	if !m.saving.Failing {
		return
	}
	failedFor := time.Since(m.saving.Since).Round(time.Second)
	m.saving = SaveStatus{Err: m.saving.Err, Since: time.Now(), Database: m.opts.Store.Path()}
	m.log.Info("sessions are saved again", "database", m.opts.Store.Path(), "failedFor", failedFor)
	m.saveObservers.Notify(m.saving)
}

// saveRound is one tick of the saver: the changed screens are saved,
// and reports whether any output had moved. While saving fails it saves
// every session whole instead (record, screen and prompt queue), which
// puts back what the refused commits lost, and waits for it: when all of
// it is committed, saving works again. That costs a copy of every ring
// per tick, only while the disk refuses writes; a small commit that
// happens to fit meanwhile (bbolt reuses freed pages) is no recovery.
func (m *Manager) saveRound() (moved bool) {
	if !m.SaveStatus().Failing {
		return m.saveScreens()
	}
	before := m.journal.Failures()
	moved = m.resaveAll()
	m.journal.Sync()
	if m.journal.Failures() == before {
		m.saveRecovered()
	}
	return moved
}

// resaveAll queues every session's record, whole screen and prompt
// queue, and reports whether any had output since its last save.
func (m *Manager) resaveAll() bool { return m.saveEach(m.resave) }

// saveEach runs save on every session, and reports whether any session's
// output had moved. It hands the journal about saveBacklog bytes at a
// time, so however many sessions printed, the copies a save makes (and
// bbolt's of them) are about that much at once.
func (m *Manager) saveEach(save func(*Session) bool) (moved bool) {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	for _, s := range m.List() {
		if save(s) {
			moved = true
		}
		m.journal.Drain(saveBacklog)
	}
	return moved
}

// withSaver runs save with s's ring state and saver, made the first time,
// unless the ring is closed (then it reports false). It holds s.mu, then
// emitMu: under emitMu, so a Destroy's removal cannot be queued between
// the check that the session is still there and the save, which would
// bring a destroyed session back after a restart. The session's mu comes
// first, as everywhere (a run ending emits under it): taking it inside
// emitMu deadlocked a save against a run's end.
func (m *Manager) withSaver(s *Session, save func(st output.State, sv *output.Saver) bool) bool {
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
	return save(st, sv)
}

// resave queues s's record, whole screen and prompt queue, and reports
// whether it had output since its last save.
func (m *Manager) resave(s *Session) bool {
	return m.withSaver(s, func(st output.State, sv *output.Saver) bool {
		moved := st.End != sv.End()
		// A new Saver makes the save whole: what followed the last stored
		// piece may have been refused.
		*sv = output.Saver{}
		v, ok := m.encodeRecord(s.infoLocked())
		if enc, _, cut := sv.Save(s.ring, store.ScreenHead, true); enc != nil {
			m.journal.PutSnapshot(s.id, v, enc, cut)
		} else if ok {
			m.journal.PutRecord(s.id, v)
		}
		m.putQueue(s.id, s.prompts.snapshot())
		return moved
	})
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
			moved := m.saveRound()
			if moving && !moved && m.opts.Quiet != nil {
				m.opts.Quiet()
			}
			moving = moved
		}
	}
}

// saveScreens writes the metadata and new output of every session whose
// output moved since its last save, and reports whether any had.
func (m *Manager) saveScreens() bool { return m.saveEach(m.saveScreen) }

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
func (m *Manager) saveScreen(s *Session) bool {
	return m.withSaver(s, func(st output.State, sv *output.Saver) bool {
		enc, whole, cut := sv.Save(s.ring, store.ScreenHead, sv.Pieces() >= m.opts.Scrollback/pageBytes)
		if enc == nil {
			return false
		}
		// A record that cannot be encoded is logged and left as stored;
		// the output is saved all the same.
		v, _ := m.encodeRecord(s.infoLocked())
		if whole {
			m.journal.PutSnapshot(s.id, v, enc, cut)
		} else {
			// The ring's start when the save began: the ring holds at
			// least from there, so what the store keeps covers it.
			m.journal.AppendScreen(s.id, v, enc, st.Start)
		}
		return true
	})
}

// Close saves every changed screen, stops the periodic saving and returns
// once everything is written. Call it after Shutdown, so the agents' last
// output is in; the Store stays open for its owner to close.
func (m *Manager) Close() {
	m.closeOnce.Do(func() {
		close(m.stopSaver)
		<-m.saverDone
		if m.journal != nil {
			wasFailing, before := m.SaveStatus().Failing, m.journal.Failures()
			m.saveScreens()
			m.journal.Close()
			// Saving that starts failing now is logged as it starts; one
			// that failed already is said again, as what a restart will
			// miss.
			if wasFailing && m.journal.Failures() != before {
				m.log.Error("the last save before closing failed too: a restart finds the sessions as they were last saved",
					"database", m.opts.Store.Path(), "err", m.SaveStatus().Err)
			}
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
