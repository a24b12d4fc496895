package sessions

import (
	"context"
	"fmt"

	"github.com/agentmux/agentmux/scripts"
)

// A session's run script (the workspace's scripts.run: a dev server) runs
// in a session of its own beside the session's agent, its run session:
// its own terminal, output and scrollback, restarted or stopped on
// request, and destroyed with its session. It is no agent: it is not
// counted against MaxSessions, nothing in its output ends a turn, and it
// has no ports of its own: it runs in its session's tree on its session's
// ports (AGENTMUX_PORT), with its session's environment.

// runOf returns the run session of session id, if it has one.
func (m *Manager) runOf(id string) *Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		if s.runOf == id {
			return s
		}
	}
	return nil
}

// RunOf returns the run session of session id, or ErrNotFound when it
// has none.
func (m *Manager) RunOf(id string) (*Session, error) {
	if s := m.runOf(id); s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("%w: session %s has no run", ErrNotFound, id)
}

// StartRun runs sc, the run script, for session id: in a new run
// session, or its run session again, stopped first if it runs (a
// restart). In the Exclusive mode every other session's run stops first.
// ErrInvalid for a run session itself, an archived session, and one
// without ports yet (restored, never resumed).
func (m *Manager) StartRun(ctx context.Context, id string, sc scripts.Script, mode scripts.Mode) (*Session, error) {
	parent, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	p := parent.Info()
	switch {
	case p.RunOf != "":
		return nil, fmt.Errorf("%w: session %s is a run script's; start the run of its session %s", ErrInvalid, id, p.RunOf)
	case p.Worktree != nil && p.Worktree.Archived:
		return nil, fmt.Errorf("%w: session %s is archived: its worktree is gone", ErrInvalid, id)
	case p.Ports == nil:
		return nil, fmt.Errorf("%w: session %s has no ports yet: resume it first", ErrInvalid, id)
	}
	if mode == scripts.Exclusive {
		if err := m.stopRunsBut(ctx, id); err != nil {
			return nil, err
		}
	}
	argv := scriptArgv(sc.Text)
	if run := m.runOf(id); run != nil {
		if err := run.stop(ctx, m.opts.StopGrace); err != nil {
			return nil, fmt.Errorf("stop the run to restart it: %w", err)
		}
		return m.resume(run.id, func(s *Session) ([]string, string) {
			s.ports = *p.Ports
			return argv, "Run script restarted."
		})
	}
	tree := ""
	if p.Worktree != nil {
		tree = p.Worktree.Path
	}
	plan := createPlan{
		profile: Profile{Name: "run", Start: argv, Resume: argv},
		argv:    argv,
		cwd:     p.Cwd,
		name:    p.Name + " · run",
		cols:    p.Cols,
		rows:    p.Rows,
	}
	m.mu.Lock()
	if err := m.admitRunLocked(); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	s := m.newSession(plan)
	s.runOf, s.runTree, s.blocks, s.ports = id, tree, nil, *p.Ports
	m.reserveLocked(s)
	m.mu.Unlock()
	if err := m.launch(s, argv); err != nil {
		return nil, err
	}
	m.durable()
	return s, nil
}

// StopRun stops session id's run script; its run session stays listed,
// with its output, to be started again.
func (m *Manager) StopRun(ctx context.Context, id string) error {
	run, err := m.RunOf(id)
	if err != nil {
		return err
	}
	if err := run.stop(ctx, m.opts.StopGrace); err != nil {
		return fmt.Errorf("stop the run: %w", err)
	}
	return nil
}

// stopRunsBut stops every run script that runs but session keep's: the
// run mode is exclusive, and keep's starts.
func (m *Manager) stopRunsBut(ctx context.Context, keep string) error {
	for _, s := range m.List() {
		if s.runOf == "" || s.runOf == keep || s.Pid() == 0 {
			continue
		}
		if err := s.stop(ctx, m.opts.StopGrace); err != nil {
			return fmt.Errorf("stop the run of session %s: %w", s.runOf, err)
		}
		s.log.Info("run stopped: another session's starts, and the run mode is exclusive")
	}
	return nil
}

// admitRunLocked says whether a run script may start now: not while the
// server stops, nor while memory is short; the session limit is the
// agents'. mu must be held.
func (m *Manager) admitRunLocked() error {
	if m.closing {
		return ErrShuttingDown
	}
	if m.opts.Admit != nil {
		return m.opts.Admit()
	}
	return nil
}
