package sessions

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/output"
)

// SetupStatus is how a worktree session's setup script stands.
type SetupStatus string

// Setup statuses.
const (
	// SetupRunning: the script runs in the session's terminal; its agent
	// starts when it succeeds.
	SetupRunning SetupStatus = "running"
	// SetupPassed: it exited 0, and the agent was started.
	SetupPassed SetupStatus = "passed"
	// SetupFailed: it exited with another code or a signal; the agent
	// waits for a retry, or to be started anyway.
	SetupFailed SetupStatus = "failed"
	// SetupStopped: it was stopped on purpose (the session stopped).
	SetupStopped SetupStatus = "stopped"
	// SetupInterrupted: the server stopped while it ran (or it was
	// stopped and the agent never started since).
	SetupInterrupted SetupStatus = "interrupted"
)

// Setup is a worktree session's setup script's latest run.
type Setup struct {
	Status SetupStatus `json:"status"`
	// ExitCode is the script's; -1 while it runs and when it did not
	// exit by itself.
	ExitCode int `json:"exitCode"`
	// StartedAt is when the run began; DurationMs how long it took, once
	// it ended.
	StartedAt  time.Time `json:"startedAt"`
	DurationMs int64     `json:"durationMs"`
	// Script is its text; Hash the SHA-256 of it.
	Script string `json:"script"`
	Hash   string `json:"hash"`
	// AgentStarted reports that the session's agent has run since the
	// session was made: after the setup, or started without it.
	AgentStarted bool `json:"agentStarted"`
}

// sessionSetup is the session's part for its setup script. The Session's
// mu protects it: its changes are announced.
type sessionSetup struct {
	// last is the setup's latest run; nil for a session without one.
	last *Setup
	// next asks the run being started to be the setup's; running says
	// the current run is.
	next, running bool
	// agentArgv is what the agent starts with once the setup passed.
	agentArgv []string
	// then reports that the setup just passed: the agent is to start.
	then bool
}

// scriptArgv runs a workspace script (setup, run) in its session's
// terminal.
func scriptArgv(text string) []string { return []string{"/bin/sh", "-c", text} }

// planSetupLocked makes the run being started the setup's: sc in a
// shell, the agent's argv kept for after. mu must be held.
func (s *Session) planSetupLocked(sc scripts.Script, agentArgv []string) []string {
	started := s.setup.last != nil && s.setup.last.AgentStarted
	s.setup.last = &Setup{Status: SetupRunning, ExitCode: -1, StartedAt: time.Now().UTC(), Script: sc.Text, Hash: sc.Hash, AgentStarted: started}
	s.setup.next = true
	s.setup.agentArgv = agentArgv
	return scriptArgv(sc.Text)
}

// setupNoteLocked is the line the setup's run starts with. mu must be
// held.
func (s *Session) setupNoteLocked() string {
	first, _, _ := strings.Cut(strings.TrimSpace(s.setup.last.Script), "\n")
	return fmt.Sprintf("Setting up the worktree: %s (the agent starts when it succeeds)", first)
}

// startedRunLocked notes, as a run starts, whether it is the setup's or
// the agent's. mu must be held.
func (s *Session) startedRunLocked() {
	s.setup.running, s.setup.next = s.setup.next, false
	if !s.setup.running && s.setup.last != nil {
		s.setup.last.AgentStarted = true
	}
	if !s.setup.running && s.firstInput != nil {
		// Held as keys typed into a waking session are, so they reach the
		// agent's run, not the setup's, once it reads its terminal.
		if _, err := s.prompts.hold(s.firstInput); err != nil {
			s.log.Warn("the first input was refused", "err", err)
		}
		s.firstInput = nil
	}
}

// endSetupLocked records the end of the setup's run, st, and says what
// the session shows. mu must be held.
func (s *Session) endSetupLocked(st output.ExitStatus) {
	s.setup.running = false
	u := s.setup.last
	u.DurationMs = time.Since(u.StartedAt).Milliseconds()
	u.ExitCode = st.Code
	took := time.Duration(u.DurationMs) * time.Millisecond
	switch {
	case s.run.stopping:
		u.Status, u.ExitCode = SetupStopped, -1
		s.det.show(StatusStopped, "stopped during the setup")
	case st.Signal == 0 && st.Code == 0:
		u.Status = SetupPassed
		s.setup.then = true
		s.det.show(StatusActive, "setup done: starting the agent")
	default:
		u.Status = SetupFailed
		if st.Signal != 0 {
			u.ExitCode = -1
		}
		s.det.show(StatusError, fmt.Sprintf("the setup script failed (%s); retry it, or start the agent anyway", exitWords(st)))
	}
	s.log.Info("setup ended", "status", u.Status, "exitCode", st.Code, "signal", st.Signal, "took", took.Round(time.Millisecond))
	s.emit(Event{Kind: EventSetup, Session: s.infoLocked()})
}

// setupWords says how a setup that did not pass ended: "failed with exit
// code 1", "was interrupted by a restart".
func setupWords(u *Setup) string {
	switch u.Status {
	case SetupFailed:
		if u.ExitCode >= 0 {
			return fmt.Sprintf("failed with exit code %d", u.ExitCode)
		}
		return "failed"
	case SetupInterrupted:
		return "was interrupted by a restart of agentmux"
	case SetupStopped:
		return "was stopped"
	}
	return "has not run"
}

// exitWords says how a run ended: "exit code 1", "signal 9".
func exitWords(st output.ExitStatus) string {
	if st.Signal != 0 {
		return fmt.Sprintf("killed by signal %d", st.Signal)
	}
	return fmt.Sprintf("exit code %d", st.Code)
}

// takeAgentStart reports, once, that the setup just passed and the agent
// is to start, with its argv.
func (s *Session) takeAgentStart() ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.setup.then {
		return nil, false
	}
	s.setup.then = false
	return s.setup.agentArgv, true
}

// startAfterSetup starts the agent of a session whose setup just passed,
// in the goroutine of the setup's run once its reader is done. Nothing
// starts when the server is stopping, or the session was stopped,
// resumed or destroyed meanwhile.
func (m *Manager) startAfterSetup(s *Session, argv []string) {
	m.mu.Lock()
	closing := m.closing
	m.mu.Unlock()
	if closing {
		return
	}
	branch := m.branchOf(s)
	s.mu.Lock()
	if s.run.phase != phaseExited || s.setup.last == nil || s.setup.last.Status != SetupPassed {
		s.mu.Unlock()
		return
	}
	took := time.Duration(s.setup.last.DurationMs) * time.Millisecond
	proc, err := s.startLocked(argv, fmt.Sprintf("Setup done in %s: starting the agent.", took.Round(100*time.Millisecond)), branch)
	info := s.infoLocked()
	done := s.run.done
	m.emit(Event{Kind: EventStatus, Session: info})
	s.mu.Unlock()
	if err != nil {
		s.log.Warn("start the agent after the setup", "err", err)
		return
	}
	s.log.Info("agent started after the setup", "command", info.Command)
	m.goPump(s, proc, done)
}

// RetrySetup runs the setup script in force again in a worktree session
// whose agent is not running: after it failed, or was interrupted. The
// agent starts when it succeeds. ErrInvalid when the session has no
// worktree or no setup script may run now.
func (m *Manager) RetrySetup(id string) (*Session, error) {
	s, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	if s.Info().Worktree == nil {
		return nil, fmt.Errorf("%w: session %s has no worktree to set up", ErrInvalid, id)
	}
	sc, ok := m.setupScript()
	if !ok {
		return nil, fmt.Errorf("%w: no setup script may run: the workspace has none, or it waits for approval", ErrInvalid)
	}
	return m.resume(id, func(s *Session) ([]string, string) {
		agent, _ := s.resumePlan()
		argv := s.planSetupLocked(sc, agent)
		return argv, s.setupNoteLocked()
	})
}

// setupScript returns the setup script that may run, if any.
func (m *Manager) setupScript() (scripts.Script, bool) {
	if m.opts.SetupScript == nil {
		return scripts.Script{}, false
	}
	return m.opts.SetupScript()
}
