// Package sessions owns the lifetimes of agent sessions.
//
// A Session is one agent process in a pseudo-terminal, the ring of its
// recent output, and its status. The Manager creates, limits, resumes and
// destroys sessions.
//
// Output flows by pull, never by push. Exactly one goroutine per run reads
// the PTY and appends to the session's ring; it never waits for anybody.
// Each subscriber keeps its own offset into the stream (seq) and copies out
// everything new at its own pace (ReadOutput, WaitOutput). A subscriber
// that falls more than the ring behind gets output.ErrOverrun and resyncs from
// ReplayStart. So a slow or stuck client can neither grow memory nor slow
// the program or any other client.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/output"

	"github.com/agentmux/agentmux/pty"
)

// Status is a session's state as clients see it, as the protocol names it.
type Status string

// The statuses of the protocol.
const (
	StatusActive  Status = "active"
	StatusWaiting Status = "waiting"
	StatusIdle    Status = "idle"
	StatusError   Status = "error"
	StatusStopped Status = "stopped"
)

// Size bounds for a terminal, in cells.
const (
	MinSize = 1
	MaxSize = 1000
)

// phase is the session's lifecycle. It only moves forward, except that a
// resume starts a new run of an exited session; transition is the one place
// that checks it.
type phase int

const (
	phaseRunning phase = iota + 1
	phaseExited
	phaseClosed
)

func (p phase) String() string {
	switch p {
	case phaseRunning:
		return "running"
	case phaseExited:
		return "exited"
	case phaseClosed:
		return "closed"
	}
	return "unknown"
}

// Info is a snapshot of a session's metadata.
type Info struct {
	ID     string
	Name   string
	Status Status
	Reason string
	Agent  string
	// Profile is how the session's agent starts and resumes.
	Profile        Profile
	Command        []string
	Cwd            string
	CreatedAt      time.Time
	LastActivityAt time.Time
	// Exit is set once the latest run has ended.
	Exit       *output.ExitStatus
	Cols, Rows int
	// Running reports whether the agent's process runs: an idle session
	// may be silent but alive, or a listed one with nothing running.
	Running bool
	// Worktree is the git worktree the session runs in, if it has one.
	Worktree *Worktree
	// Permission is what the agent waits for its user to allow, while
	// its waiting is a permission request; nil otherwise.
	Permission *Permission
	// Conversation is the id of the conversation the agent recorded, when
	// its profile learns one (Codex); a resume continues it.
	Conversation string
	// Ports is the block of ports reserved for the session, from its
	// agent's first start until it is destroyed; nil before, and for a
	// session restored without one until it is resumed.
	Ports *Ports
	// Check is the check of the session's last turn, running or ended;
	// nil before the first.
	Check *Check
	// SendFailures says whether a failed check is queued to the agent.
	SendFailures bool
	// Archive is the archive script's run when the session's worktree
	// was removed; nil when none ran.
	Archive *scripts.Result
	// Setup is the worktree's setup script's latest run; nil for a
	// session without one.
	Setup *Setup
	// RunOf is, for a run session, the session whose run script it runs;
	// empty for an agent's session.
	RunOf string
	// StartedBy is the session whose agent started this one; empty when
	// a person did.
	StartedBy string
	// Usage is what the session's agent reported it spends; nil when it
	// reported nothing.
	Usage *Usage
	// Limit is the account's usage limit that stopped the agent, while
	// it waits for its reset.
	Limit *Limit
	// PullRequest is the pull request of the session's branch, once one
	// was opened or found for it; nil before.
	PullRequest *PullRequest
	// WaitingSince is when the agent began to wait for its user, while
	// its status is StatusWaiting; zero otherwise.
	WaitingSince time.Time
	// runTree is a run session's runTree, for its record.
	runTree string
	// turns and transcript are the session's turnLedger and transcript,
	// for its record.
	turns      *turnLedger
	transcript *transcriptState
}

// Worktree is a git worktree made for a session.
type Worktree struct {
	// Path is the worktree's directory, absolute.
	Path string `json:"path"`
	// Branch is the branch checked out in it.
	Branch string `json:"branch"`
	// Base is the branch (or commit) of the workspace the worktree was
	// made from: its changes are counted from where its branch left it.
	// Empty for worktrees made before it was recorded.
	Base string `json:"base,omitempty"`
	// Merged is the commit at the tip of the base once the branch was
	// merged into it from agentmux; empty until then.
	Merged string `json:"merged,omitempty"`
	// MergedTip is the branch's commit that was merged: what the branch
	// adds is counted from it (ship.Mark). Empty until the branch is
	// merged, and for merges recorded before it was.
	MergedTip string `json:"mergedTip,omitempty"`
	// Archived reports that the worktree was removed after the merge:
	// the session stays listed, with its branch, and cannot be resumed.
	Archived bool `json:"archived,omitempty"`
}

// Session is one agent process, its output and its status.
//
// A session is made of parts, each owning its fields in the file that uses
// them: the run (below, session.go), its status (det, detector.go and
// status.go), what waits to be typed into it (prompts, queue.go, wake.go
// and typing.go), the agent's conversation (conv, conversation.go) and
// the worktree (wt, worktrees.go). The Session wires them.
//
// Locks are taken in one order: the Session's mu, then the Manager's
// emitMu, then the ring's. The parts' own locks are leaves: each is taken
// alone or under any of those, and none is held while another lock is
// taken, so a change that spans parts takes their locks one at a time.
// mu is the run's lock and orders what the session announces: a part's
// change that is announced, or that depends on what runs (a wait that
// releases held keys or types a queued prompt), is made under mu, which
// is held while the event is emitted; a part's own reads need only its
// lock.
type Session struct {
	id        string
	profile   Profile
	cwd       string
	env       []string
	createdAt time.Time
	log       *slog.Logger
	emit      func(Event)
	ring      *output.Ring
	timing    Timing
	hooks     *HookConfig
	// root is the workspace, told to the agent as AGENTMUX_ROOT_PATH.
	root string
	// mcp points its agent's runs at agentmux's MCP endpoint (caller.go);
	// nil gives none.
	mcp *MCPConfig
	// startedBy is the session whose agent started this one, if an agent
	// did.
	startedBy string
	// firstInput is typed into the agent's first run once it reads its
	// terminal (CreateOptions.FirstInput); nil once handed over. Guarded
	// by mu.
	firstInput []byte
	// usage is the agent's last report of what it spends (usage.go).
	// Guarded by mu.
	usage *Usage
	// limit is the account's usage limit that stopped the agent, until
	// it works again (limit.go); continueByDefault turns on the continue
	// prompt at its reset. Guarded by mu.
	limit             *Limit
	continueByDefault bool
	// pullRequest is the pull request opened, or found, for the
	// session's branch (pullrequest.go). Guarded by mu.
	pullRequest *PullRequest
	// menuClosing is when the continue prompt may be typed, after the
	// Escape typed before it (limit.go). Guarded by mu.
	menuClosing time.Time
	// turns divides usage into the agent's turns (turnusage.go).
	// Guarded by mu.
	turns turnLedger
	// tailMu orders the hook calls that read the agent's record of what
	// its turns spent: a Codex run's rollout (codexusage.go), read under
	// it; a Claude run's transcript (claudeusage.go), read under it and
	// kept under mu as well, for the session's record.
	tailMu     sync.Mutex
	rollout    *jsonlTail
	transcript *transcript
	// followingTranscript is set while a watch reads the transcript as
	// Claude writes a turn's last lines (claudeusage.go). Guarded by mu.
	followingTranscript bool
	// blocks hands out the session's ports at every start of its agent.
	blocks *portBlocks

	lastActivity atomic.Int64 // unix nanoseconds, of output or input
	lastOutput   atomic.Int64 // unix nanoseconds
	// armed asks the run's reader to wake the silence watcher on the next
	// output; see noteOutput.
	armed atomic.Bool

	// mu protects name and run. It is never held across a blocking call
	// other than starting a process; emitting under it is safe because
	// observers must not block.
	mu sync.Mutex
	// name is set once, when the session is listed, if it had none.
	name string
	run  agentRun
	// ports is the session's block, reserved at every start of its
	// agent (the same one while it is free); zero before the first.
	ports Ports

	// det is the session's status and what the current run's is made
	// of: waiting for the user, idle, warned as stuck.
	det detector
	// prompts is what waits to be typed into the agent for somebody:
	// queued prompts, keys held for a run being started, input behind an
	// Enter under way.
	prompts promptQueue
	// conv is the agent's own conversation, for a resume.
	conv conversation
	// wt is the git worktree the session runs in, if any.
	wt sessionWorktree
	// check is the check of its last turn, and whether failures go to
	// the agent (check.go).
	check sessionCheck
	// archive is the archive script's run, once its worktree was removed
	// (worktrees.go).
	archive *scripts.Result
	// setup is its worktree's setup script's run (setup.go).
	setup sessionSetup
	// runOf is, for a run session (run.go), the session whose run script
	// it runs; runTree is that session's worktree, if it has one. Both
	// are set once, before the session is listed.
	runOf, runTree string
}

// agentRun is the session's current, or last, run of its agent: the
// process, its terminal and the lifecycle. The Session's mu protects it.
type agentRun struct {
	phase phase
	argv  []string
	proc  *pty.Process
	in    *inputQueue // the current run's input, nil when none runs
	cols  int
	rows  int
	exit  *output.ExitStatus
	done  chan struct{} // closed when the current run's reader has finished
	// stopping reports whether the current run is being stopped on
	// purpose, so its end is "stopped", not "error".
	stopping bool
	// unpaced is closed when the current run is being stopped: its reader
	// then reads to the end, paced or not.
	unpaced chan struct{}
	// secret authenticates the current run's hook calls, callerSecret
	// its calls to agentmux (caller.go); wake nudges its silence watcher.
	secret       string
	callerSecret string
	wake         chan struct{}
}

// ID returns the session's id, a UUID.
func (s *Session) ID() string { return s.id }

// Waiting reports whether the agent waits for its user now: its turn
// ended and nothing (the user, held keys, a queued prompt) answered yet.
// The status clients are shown may follow a moment later.
func (s *Session) Waiting() bool { return s.det.isWaiting() }

// Pid returns the running agent's process id, or 0 when none runs.
func (s *Session) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.proc == nil {
		return 0
	}
	return s.run.proc.Pid()
}

// Tree returns the directory the session works in and what its changes
// are counted from (changes.Base): for a worktree session, where its
// branch left the branch it was made from, and once merged, the tip that
// was merged, so that the changes are what the branch still adds;
// otherwise HEAD (none).
func (info Info) Tree() (dir string, from []string) {
	if wt := info.Worktree; wt != nil {
		if wt.MergedTip != "" {
			return wt.Path, []string{wt.Base, wt.MergedTip}
		}
		return wt.Path, []string{wt.Base}
	}
	return info.Cwd, nil
}

// Info returns a snapshot of the session's metadata.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLocked()
}

func (s *Session) infoLocked() Info {
	status, reason := s.det.shown()
	info := Info{
		ID:             s.id,
		Name:           s.name,
		Status:         status,
		Reason:         reason,
		Agent:          s.profile.Name,
		Profile:        s.profile,
		Command:        slices.Clone(s.run.argv),
		Cwd:            s.cwd,
		CreatedAt:      s.createdAt,
		LastActivityAt: time.Unix(0, s.lastActivity.Load()).UTC(),
		Cols:           s.run.cols,
		Rows:           s.run.rows,
		Running:        s.run.phase == phaseRunning,
		Conversation:   s.conv.current(),
		Worktree:       s.wt.get(),
		Permission:     s.det.permissionAsked(),
		RunOf:          s.runOf,
		StartedBy:      s.startedBy,
		Usage:          s.usageLocked(),
		Limit:          s.limitLocked(),
		PullRequest:    s.pullRequest,
		runTree:        s.runTree,
		transcript:     s.transcript.state(),
	}
	if len(s.turns.Turns) > 0 {
		l := s.turns
		l.Turns = l.clone()
		info.turns = &l
	}
	if !s.ports.IsZero() {
		p := s.ports
		info.Ports = &p
	}
	if s.run.exit != nil {
		e := *s.run.exit
		info.Exit = &e
	}
	if s.check.last != nil {
		c := *s.check.last
		info.Check = &c
	}
	info.SendFailures = s.check.sendFailures
	if s.archive != nil {
		a := *s.archive
		info.Archive = &a
	}
	if s.setup.last != nil {
		u := *s.setup.last
		info.Setup = &u
	}
	if since, _, _, waiting := s.det.wait(); waiting && status == StatusWaiting {
		info.WaitingSince = since.UTC()
	}
	return info
}

// transition moves the lifecycle to next, or says why it cannot. mu must be
// held.
func (s *Session) transition(next phase) error {
	ok := false
	switch next {
	case phaseRunning:
		ok = s.run.phase == 0 || s.run.phase == phaseExited
	case phaseExited:
		ok = s.run.phase == phaseRunning
	case phaseClosed:
		ok = s.run.phase == phaseExited
	}
	if !ok {
		switch s.run.phase {
		case phaseRunning:
			return ErrRunning
		case phaseClosed:
			return ErrNotFound
		}
		return fmt.Errorf("session %s: cannot go from %s to %s", s.id, s.run.phase, next)
	}
	s.run.phase = next
	return nil
}

// start runs argv as a new run of the session. The caller emits the event
// that announces it and then calls pump, so a run that ends at once is never
// announced before it began. mu must be held.
//
// note, when not empty, is a line for the terminal, written before the
// run's first byte: why the run is not what the user might expect. branch
// is what the agent is told in AGENTMUX_BRANCH (see Manager.branchOf).
func (s *Session) startLocked(argv []string, note, branch string) (*pty.Process, error) {
	first := s.run.phase == 0
	if err := s.transition(phaseRunning); err != nil {
		return nil, err
	}
	// Said plainly: exec would blame the program ("fork/exec /usr/bin/sh:
	// no such file or directory") for a missing working directory.
	if fi, err := os.Stat(s.cwd); err != nil || !fi.IsDir() {
		return nil, s.failStartLocked(fmt.Errorf("working directory %s no longer exists", s.cwd))
	}
	movedPorts, err := s.reservePortsLocked()
	if err != nil {
		return nil, s.failStartLocked(err)
	}
	env, secret := append(slices.Clip(s.env), s.placeEnvLocked(branch)...), ""
	// The agent's first run is its start, not a resume, though a setup
	// ran in the terminal before it.
	agentFirst := first || s.setup.last != nil && !s.setup.last.AgentStarted
	callerEnv, callerArgs, err := s.callerLocked()
	if err != nil {
		return nil, s.failStartLocked(fmt.Errorf("give the agent agentmux's MCP tools: %w", err))
	}
	env = append(env, callerEnv...)
	if args := s.hooks.agentArgs(s.profile); args != nil && !s.setup.next {
		// The hooks find the server and prove who they are from the
		// environment, which only the agent's own processes inherit.
		secret = newSecret()
		argv = append(slices.Clone(argv), args...)
		env = append(slices.Clip(env), EnvHookURL+"="+s.hooks.URL+"/"+s.id, EnvHookSecret+"="+secret)
	}
	if callerArgs != nil {
		argv = append(slices.Clone(argv), callerArgs...)
	}
	proc, err := pty.Start(pty.Options{
		Argv: argv,
		Dir:  s.cwd,
		Env:  env,
		Cols: uint16(s.run.cols),
		Rows: uint16(s.run.rows),
		Tag:  sessionTag(s.id),
	})
	if err != nil {
		return nil, s.failStartLocked(err)
	}
	s.run.argv = argv
	s.run.proc = proc
	s.run.in = newInputQueue()
	s.run.in.direct = func(b []byte) int {
		n, err := proc.TryWrite(b)
		if err != nil {
			return 0 // the feeder meets the error too, and ends
		}
		return n
	}
	s.run.exit = nil
	s.run.stopping = false
	s.det.reset()
	s.det.show(StatusActive, "started")
	s.run.secret = secret
	s.run.wake = make(chan struct{}, 1)
	s.run.done = make(chan struct{})
	s.run.unpaced = make(chan struct{})
	s.touch()
	s.lastOutput.Store(time.Now().UnixNano())
	s.armed.Store(false)
	s.startedRunLocked()
	if !s.setup.running {
		s.conv.runStarted(!agentFirst)
	}
	s.prompts.sitOut(false)
	var noted []byte
	for _, n := range []string{note, movedPorts} {
		if n != "" {
			noted = append(noted, noteLine(n)...)
		}
	}
	s.ring.StartRun(first, noted)
	s.armHeld(s.run.in)
	return proc, nil
}

// failStartLocked records a run that could not start and returns the
// error to report. mu must be held.
func (s *Session) failStartLocked(err error) error {
	s.run.phase = phaseExited
	if s.run.exit == nil {
		// A session that never ran reads as failed, not as exited 0.
		s.run.exit = &output.ExitStatus{Code: -1}
	}
	s.det.show(StatusError, err.Error())
	return fmt.Errorf("%w: %w", ErrSpawn, err)
}

// pump is the run's one PTY reader. It copies output into the ring until
// the terminal closes, then records how the process ended. It is the only
// goroutine that ends a run.
func (s *Session) pump(proc *pty.Process, done chan struct{}) {
	defer close(done)
	readerDone := make(chan struct{})
	go s.reapStragglers(proc, readerDone)
	s.mu.Lock()
	wake, in, unpaced := s.run.wake, s.run.in, s.run.unpaced
	s.mu.Unlock()
	feederDone := make(chan struct{})
	go func() {
		defer close(feederDone)
		s.feed(in, proc)
	}()
	// Read before the first read of output: the screen a resumed run
	// starts with is not its question.
	started := s.lastOutput.Load()
	watcherDone := make(chan struct{})
	go func() {
		defer close(watcherDone)
		s.watchQuiet(s.timing, started, readerDone, wake)
	}()

	var conversationDone chan struct{}
	if s.profile.Conversation == ConversationCodex {
		conversationDone = make(chan struct{})
		go func() {
			defer close(conversationDone)
			s.followConversation(proc, readerDone)
		}()
	}

	var alerts alertScanner
	buf := make([]byte, 32<<10)
	for {
		// Clients that keep up pace the program: no read while the
		// fastest of them would lose output (see output.Pacer).
		s.ring.WaitRoom(len(buf), unpaced)
		n, err := proc.Read(buf)
		if n > 0 {
			s.ring.Write(buf[:n])
			now := time.Now().UnixNano()
			s.lastActivity.Store(now)
			s.lastOutput.Store(now)
			if a, ok := alerts.scan(buf[:n]); ok {
				s.alerted(a)
			}
			s.noteOutput(wake)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.log.Warn("read pty", "err", err)
			}
			break
		}
	}
	close(readerDone)
	in.close()
	<-watcherDone // no silence verdict may follow the run's end
	if conversationDone != nil {
		<-conversationDone
	}
	st, _ := proc.Wait(context.Background())
	// What the run started and left running, detached helpers included
	// (a daemon that called setsid but still carries the session's tag),
	// ends with it.
	if err := proc.SignalSession(syscall.SIGKILL); err != nil {
		s.log.Warn("kill what the run left running", "err", err)
	}
	// finishRun forgets proc first, so no Write or Resize can reach the
	// terminal while it closes.
	s.finishRun(output.ExitStatus{Code: st.Code, Signal: int(st.Signal)})
	if err := proc.Close(); err != nil {
		s.log.Warn("close pty", "err", err)
	}
	<-feederDone // closing the terminal ended any write it was blocked in
}

// reapStragglers ends the run when the agent has exited but something it
// left behind still holds the terminal open, which would keep the reader
// (and so the run) alive forever: first it kills the rest of the terminal
// session; if even that leaves the terminal open (a process that called
// setsid holds it), it closes the master, which ends the read. It returns
// when the reader finishes, or once it has done both.
func (s *Session) reapStragglers(proc *pty.Process, readerDone <-chan struct{}) {
	select {
	case <-readerDone:
		return
	case <-proc.Done():
	}
	t := time.NewTimer(stragglerGrace)
	defer t.Stop()
	select {
	case <-readerDone:
		return
	case <-t.C:
	}
	s.log.Debug("agent exited but its terminal is still open; killing its terminal session")
	if err := proc.SignalSession(syscall.SIGKILL); err != nil {
		s.log.Warn("kill stragglers", "err", err)
	}
	t.Reset(stragglerGrace)
	select {
	case <-readerDone:
	case <-t.C:
		s.releaseTerminal(proc)
	}
}

// releaseTerminal closes the master of a run whose terminal a process
// outside its session still holds, ending the run's read.
func (s *Session) releaseTerminal(proc *pty.Process) {
	s.log.Warn("a process outside the agent's session still holds its terminal; closing the terminal", "pid", proc.Pid())
	if err := proc.Close(); err != nil {
		s.log.Warn("close pty", "err", err)
	}
}

// stragglerGrace is how long children may keep the terminal open after the
// agent itself exited.
const stragglerGrace = 2 * time.Second

func (s *Session) finishRun(st output.ExitStatus) {
	s.mu.Lock()
	if err := s.transition(phaseExited); err != nil {
		s.mu.Unlock()
		s.log.Error("end run", "err", err)
		return
	}
	s.run.exit = &st
	setup := s.setup.running
	if !setup {
		s.noteRunEnd(st)
	}
	s.run.proc = nil
	s.run.in = nil
	s.run.secret = "" // a dead run's hooks speak for nobody
	s.det.runEnded()
	s.heldLostLocked()
	s.prompts.dropTyping()
	switch {
	case setup:
		s.endSetupLocked(st)
	case s.run.stopping:
		s.det.show(StatusStopped, "stopped")
	case st.Signal != 0:
		s.det.show(StatusError, fmt.Sprintf("killed by signal %d (%s)", st.Signal, syscall.Signal(st.Signal)))
	case st.Code != 0:
		s.det.show(StatusError, fmt.Sprintf("exited with code %d", st.Code))
	default:
		s.det.show(StatusStopped, "exited with code 0")
	}
	// The ring update and the event happen under mu, so a Destroy or
	// Resume, which take mu to find the process gone, can only act, and
	// emit, after this run's end is fully recorded and announced.
	defer s.mu.Unlock()
	s.ring.Update(func(rs *output.State) { rs.RunEnded, rs.Exit = true, st })
	s.log.Info("session process ended", "code", st.Code, "signal", st.Signal)
	s.emit(Event{Kind: EventStatus, Session: s.infoLocked()})
}

func (s *Session) touch() { s.lastActivity.Store(time.Now().UnixNano()) }

// Write sends input to the terminal, as typed keys. It never blocks: the
// input is queued for the run's feeder, and refused with ErrInputFull when
// the agent has left too much unread.
func (s *Session) Write(p []byte) error {
	return s.input(p, false)
}

// Interrupt types Ctrl+C: it writes ETX, which the terminal turns into
// SIGINT for the foreground group, and which raw-mode programs read as a
// key, just as they would from a real keyboard. Input still queued is
// dropped, as a terminal flushes its input on an interrupt, and so are
// keys held for a session being resumed.
func (s *Session) Interrupt() error {
	return s.input([]byte{0x03}, true)
}

func (s *Session) input(p []byte, interrupt bool) error {
	s.mu.Lock()
	in := s.run.in
	if interrupt {
		// Held keys go, and so do an Enter waiting to submit and what
		// was typed behind it: the user stopped what they would have
		// sent. The waiting period this causes is the user's, not the
		// queue's.
		s.prompts.interrupt()
	} else if in != nil && isTerminalReport(p) {
		// The terminal answering the program (a query it sent while it
		// starts) is not typing: holding it back could keep the program
		// from getting ready to read what is held.
	} else if held, err := s.prompts.holdBehind(p); held {
		// Keys typed before the new run read its terminal go after the
		// ones held for it; keys typed while an Enter waits for its text
		// to be taken go after the Enter.
		s.mu.Unlock()
		return err
	}
	if in != nil && !isTerminalReport(p) {
		if !interrupt {
			s.prompts.sitOut(false)
		}
		s.endWaitingLocked("input from the user")
	}
	s.mu.Unlock()
	if in == nil {
		return ErrNotRunning
	}
	// Noted before the input can reach the program, so its echo cannot
	// come back before the readers know to send it at once.
	s.ring.NoteInput()
	queue := (*inputQueue).push
	if interrupt {
		queue = (*inputQueue).interrupt
	}
	if err := queue(in, p); err != nil {
		return fmt.Errorf("session %s: %w", s.id, err)
	}
	s.touch()
	return nil
}

// Resize sets the terminal size. The size is kept for the next run when
// no process is running.
func (s *Session) Resize(cols, rows int) error {
	if err := checkSize(cols, rows); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run.cols == cols && s.run.rows == rows {
		return nil
	}
	s.run.cols, s.run.rows = cols, rows
	if s.run.proc == nil {
		return nil
	}
	return s.run.proc.Resize(uint16(cols), uint16(rows))
}

func checkSize(cols, rows int) error {
	if cols < MinSize || cols > MaxSize || rows < MinSize || rows > MaxSize {
		return fmt.Errorf("%w: terminal size %dx%d is outside %d..%d", ErrInvalid, cols, rows, MinSize, MaxSize)
	}
	return nil
}

// output.State returns a consistent view of the output stream.
func (s *Session) StreamState() output.State { return s.ring.State() }

// ReadOutput copies output from offset off onwards into p and returns how
// many bytes it copied. It returns output.ErrOverrun when off is older than the
// ring holds.
func (s *Session) ReadOutput(p []byte, off uint64) (int, error) { return s.ring.ReadAt(p, off) }

// WaitOutput returns a channel that is closed once the stream reaches
// target bytes or its epoch moves on from epoch (a run started or ended,
// or the session closed), and a function that withdraws the wait; call it
// when giving up on the channel.
func (s *Session) WaitOutput(target, epoch uint64) (<-chan struct{}, func()) {
	return s.ring.Wait(target, epoch)
}

// WatchOutput returns a watch on the output stream that signals wake (see
// output.Watch): WaitOutput for a reader that follows several sessions
// through one wake-up.
func (s *Session) WatchOutput(wake chan<- struct{}) *output.Watch { return s.ring.Watch(wake) }

// Pace makes the caller, a client reading the session's output from offset
// at, pace the program until Close or until it stalls (Timing.StallAfter).
func (s *Session) Pace(at uint64) *output.Pacer {
	return s.ring.Pace(at, s.timing.withDefaults().StallAfter)
}

// NoteDelivered records that output up to off was handed to a client, so
// a client attaching later knows the terminal queries before it were seen
// (output.State.Live).
func (s *Session) NoteDelivered(off uint64) { s.ring.NoteDelivered(off) }

// ReplayStart returns where a replay of the ring begins and the escape
// sequences that restore the terminal modes in force there; send them,
// then the output from that offset, to a cleared terminal. lines, when
// above 0, is how many lines the client keeps: the replay then leaves out
// older complete lines, which it would only drop, and cut says whether it
// did.
func (s *Session) ReplayStart(lines int) (off uint64, prefix []byte, cut bool) {
	return s.ring.ReplayStart(lines)
}

// stop ends the current run: SIGHUP to the process group, as a terminal
// does when it closes, then SIGKILL when grace runs out or ctx ends. It
// returns once the run has finished. Stopping a session that is not running
// is a no-op.
func (s *Session) stop(ctx context.Context, grace time.Duration) error {
	s.mu.Lock()
	proc, done := s.run.proc, s.run.done
	if proc != nil && !s.run.stopping {
		s.run.stopping = true
		close(s.run.unpaced) // a paced reader must read on, to the end
	}
	s.mu.Unlock()
	if proc == nil {
		return nil
	}
	if err := proc.Signal(syscall.SIGHUP); err != nil {
		return err
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		// The agent is gone; its background jobs, in groups of their own,
		// may not be. Nothing of a stopped session outlives it.
		if err := proc.SignalSession(syscall.SIGKILL); err != nil {
			s.log.Warn("kill the session's remaining processes", "err", err)
		}
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	s.log.Debug("agent ignored SIGHUP; killing its terminal session")
	if err := proc.SignalSession(syscall.SIGKILL); err != nil {
		return err
	}
	// SIGKILL cannot be ignored, so the run normally ends at once. It does
	// not when a process outside the session (one that called setsid)
	// still holds the terminal; closing the master ends the read then, at
	// the latest when ctx ends, so a shutdown keeps to its deadline.
	t.Reset(stragglerGrace)
	select {
	case <-done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-done: // ended meanwhile: keep the output
	default:
		s.releaseTerminal(proc)
		<-done // the read ends at once, and the killed agent has been reaped
	}
	return nil
}

// close marks the session gone for good and wakes every reader so it can
// leave. The run must have ended.
func (s *Session) close() error {
	s.mu.Lock()
	err := s.transition(phaseClosed)
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.ring.Update(func(st *output.State) { st.Closed = true })
	s.removeMCPConfig() // its secret is dead, and the file would pile up
	return nil
}
