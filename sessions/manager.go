package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/internal/observe"
	"github.com/agentmux/agentmux/pty"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/output"
	"github.com/agentmux/agentmux/sessions/store"
)

// Errors the Manager and Session return. Callers map them to protocol codes
// and HTTP statuses at the edge.
var (
	ErrNotFound     = errors.New("session not found")
	ErrLimitReached = errors.New("session limit reached")
	ErrSpawn        = errors.New("cannot start the agent")
	ErrInvalid      = errors.New("invalid request")
	ErrRunning      = errors.New("session is already running")
	ErrNotRunning   = errors.New("session is not running")
	// ErrNoPaste: the program has not asked for marked pastes (mode
	// 2004), so a paste's line breaks would reach it as Enters.
	ErrNoPaste      = errors.New("the program takes no marked pastes")
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrStoreFull means as many sessions are kept as Options.KeepSessions
	// allows: ended ones must be deleted before another is created.
	ErrStoreFull = errors.New("session store full")
	// ErrWorktree means git refused the session's worktree; the message
	// says why.
	ErrWorktree = errors.New("worktree refused")
	// ErrWorktreeDirty means a worktree to remove has uncommitted changes.
	ErrWorktreeDirty = errors.New("worktree has uncommitted changes")
)

// EventKind names a change in a session's life.
type EventKind string

// The events a Manager emits.
const (
	EventCreated   EventKind = "created"
	EventStatus    EventKind = "status"
	EventDestroyed EventKind = "destroyed"
	// EventNeedsInput follows the status event of a session that started
	// waiting for its user, once per waiting period.
	EventNeedsInput EventKind = "needsInput"
	// EventWarning says a running session has been silent long enough to
	// be stuck.
	EventWarning EventKind = "warning"
	// EventTurnEnded says the agent began to wait for its user: its turn
	// ended, whatever signalled it (a bell, a notification, a hook, a
	// question in its output). It comes once per waiting period, before
	// held keys or a queued prompt answer the wait, which they may do at
	// once, so that the session is never announced waiting: a turn's end
	// is not a status change. Neither announced to clients nor saved.
	EventTurnEnded EventKind = "turnEnded"
	// EventUpdated says something clients do not show changed (the
	// agent's conversation id): saved, not announced.
	EventUpdated EventKind = "updated"
	// EventCheck says the check of one of the session's turns started or
	// ended (Event.Check), or that sending its failures to the agent was
	// turned on or off (Info.SendFailures).
	EventCheck EventKind = "check"
	// EventSetup says a worktree session's setup script started or ended
	// (Info.Setup).
	EventSetup EventKind = "setup"
	// EventUsage says the session's agent reported what it spends anew
	// (Info.Usage).
	EventUsage EventKind = "usage"
	// EventPromptQueued, EventPromptDequeued and EventPromptDelivered
	// change a session's prompt queue: Prompt is the one added, removed
	// or typed, Queue the queue after it.
	EventPromptQueued    EventKind = "promptQueued"
	EventPromptDequeued  EventKind = "promptDequeued"
	EventPromptDelivered EventKind = "promptDelivered"
)

// Event tells observers about a session's change, with its state just after
// it.
type Event struct {
	Kind    EventKind
	Session Info
	// Message is what EventNeedsInput and EventWarning tell the user,
	// and what signalled an EventTurnEnded.
	Message string
	// Severity grades an EventWarning.
	Severity Severity
	// Prompt and Queue describe a prompt event.
	Prompt *Prompt
	Queue  Queue
	// Check is the check an EventCheck is about: the session's last
	// (Session.Check), or one of an earlier turn's that ended after a
	// later one started; nil when only SendFailures changed.
	Check *Check
}

// Options configure a Manager. Zero values are documented per field.
type Options struct {
	// MaxSessions limits live sessions (those with a running process);
	// 0 means 4.
	MaxSessions int
	// KeepSessions limits the sessions kept, running or ended: a create
	// past it is refused with ErrStoreFull, and nothing is deleted to
	// make room. 0 means DefaultKeepSessions.
	KeepSessions int
	// Scrollback is the size in bytes of each session's output ring;
	// 0 means 1 MiB.
	Scrollback int
	// Workspace is the directory relative working directories are resolved
	// against and where sessions start by default; empty means the current
	// directory. Its sessions are the ones a Store lists: those of other
	// workspaces in a database they share stay there, unlisted.
	Workspace string
	// DefaultProfile is used when a create request names no agent and no
	// command; its zero value means the shell profile.
	DefaultProfile Profile
	// Profiles are the agents a request may name; nil means
	// BuiltinProfiles.
	Profiles map[string]Profile
	// Env is the base environment of agents; nil means the server's own.
	Env []string
	// StopGrace is how long a stopped agent gets between SIGHUP and
	// SIGKILL; 0 means 3 seconds.
	StopGrace time.Duration
	// Admit, when set, is asked before an agent starts (Create, Resume)
	// and refuses it by returning an error, which the caller gets as it
	// is: how a resource the Manager does not own, such as memory, gates
	// new agents. It is called with the Manager's lock held, so it must be
	// quick and must not call the Manager. nil admits every agent that
	// MaxSessions allows.
	Admit func() error
	// Store, when set, keeps sessions across restarts: the sessions it
	// holds are restored (as idle) by NewManager, metadata is written on
	// every change, and screens every SaveInterval while they change and
	// at Close. nil means sessions live only as long as the Manager.
	Store *store.Store
	// SaveInterval is how often changed screens are saved; 0 means 5 s.
	SaveInterval time.Duration
	// Quiet, when set, is called when the sessions' output stops: at the
	// first save, with a Store, that finds no output since the last one
	// after a save that did. It runs on the saver's goroutine, so it
	// should be quick; a server gives memory back in it.
	Quiet func()
	// Timing holds the delays of waiting, idle and stuck detection and of
	// flow control; zero fields take their defaults.
	Timing Timing
	// PortBase is the lowest port of the blocks of PortCount ports each
	// session gets (AGENTMUX_PORT); 0 means DefaultPortBase. A session
	// keeps its block while it is listed, stopped or not, so a resume
	// gets the same ports back when they are still free; it is released
	// when the session is destroyed.
	PortBase int
	// MCP, when set, points every agent's run at agentmux's MCP
	// endpoint (caller.go); nil gives none.
	MCP *MCPConfig
	// ContinueAfterLimit is the default of each limit's continue prompt
	// at its reset (Limit.Continue): what a session gets when a usage
	// limit stops its agent.
	ContinueAfterLimit bool
	// SetupScript, when set, returns the workspace's setup script when
	// one may run: a new worktree session runs it in its terminal before
	// its agent starts. nil runs none.
	SetupScript func() (scripts.Script, bool)
	// Archive, when set, runs the workspace's archive script for a
	// session whose worktree is about to be removed (it is archived, or
	// destroyed with its worktree): in dir, the worktree, with env, the
	// session's environment, once its agent stopped, within ArchiveLimit.
	// It reports false when there is no script that may run. nil runs
	// none.
	Archive func(ctx context.Context, id, dir string, env []string) (scripts.Result, bool)
	// Hooks, when set, has agents whose profile supports hooks report when
	// they wait for their user; nil means output alone tells.
	Hooks *HookConfig
	// Logger receives the manager's logs; nil means slog.Default().
	Logger *slog.Logger
}

// CreateOptions describe a new session. Every field is optional.
type CreateOptions struct {
	// Name is shown in tabs; empty means the agent's name and a number.
	Name string
	// Cwd is where the agent runs, absolute or relative to the workspace;
	// empty means the workspace.
	Cwd string
	// Agent names a profile; empty means the default profile.
	Agent string
	// Command, when set, is run instead of the profile's command.
	Command []string
	// Cols and Rows are the initial size; 0 means 80x24.
	Cols, Rows int
	// WorktreeBranch, when set, runs the session in a git worktree of the
	// workspace's repository, .worktrees/<name>, on this branch: the
	// existing one, or a new one from HEAD. Cwd must then be empty.
	WorktreeBranch string
	// WorktreeBase is the revision a new WorktreeBranch starts at, HEAD
	// when empty; it is refused for a branch that exists.
	WorktreeBase string
	// FirstInput is typed into the agent's first run, each line with
	// its Enter, once it reads its terminal: once it is quiet after its
	// first output (for Claude Code, its first waiting), after the setup
	// if one runs first. It suits a shell, which never waits for a
	// queued prompt as an agent does.
	FirstInput string
	// StartedBy is the session whose agent asked for this one (package
	// agentmcp); empty for one a person started.
	StartedBy string
}

// Manager creates, finds, resumes and destroys sessions.
type Manager struct {
	opts Options
	log  *slog.Logger

	// emitMu orders events: each is emitted, and queued for the store,
	// while it is held, so observers and the store see a session's changes
	// in the order they happened. Lock order: a Session's mu, then emitMu,
	// then a ring's mu.
	emitMu sync.Mutex
	// observers are told of every event, under emitMu.
	observers observe.List[Event]
	// journal writes the store's changes; nil without a store. Its
	// goroutine starts in NewManager and ends in Close, after draining.
	journal *store.Journal

	// mu protects the fields below. Lock order: mu before a Session's mu.
	// It is never held while a process starts (fork, exec, PATH lookups,
	// reading an agent's files): those happen with only the Session's mu.
	mu       sync.Mutex
	sessions map[string]*Session
	closing  bool
	// created counts sessions ever created, to name them.
	created int
	// starting holds the sessions admitted to start (by Create, not yet
	// listed, or by Resume) whose process is being started; they count
	// as running for the limits. starts counts them for Shutdown, which
	// waits for them before it stops what runs.
	starting map[*Session]bool
	starts   sync.WaitGroup
	// runs tracks every session's PTY reader so Shutdown can wait for all.
	runs sync.WaitGroup

	// ports hands out the sessions' port blocks; it has its own lock.
	ports *portBlocks

	// statusMu protects saving, whose observers are told under it so
	// that they see its changes in order. It is taken alone, and
	// observers take only leaf locks of their own.
	statusMu      sync.Mutex
	saving        SaveStatus
	saveObservers observe.List[SaveStatus]

	// saveMu serialises screen saves (the saver and Close).
	saveMu sync.Mutex
	// savers follow each session's ring for its saves. emitMu protects
	// the map; saveMu serialises the saves.
	savers map[string]*output.Saver
	// stopSaver ends the saver goroutine; saverDone is closed when it has.
	stopSaver chan struct{}
	saverDone chan struct{}
	closeOnce sync.Once
}

// NewManager returns a Manager with no sessions.
func NewManager(opts Options) (*Manager, error) {
	if opts.MaxSessions == 0 {
		opts.MaxSessions = 4
	}
	if opts.MaxSessions < 0 {
		return nil, fmt.Errorf("max sessions %d: must be positive", opts.MaxSessions)
	}
	if opts.KeepSessions == 0 {
		opts.KeepSessions = DefaultKeepSessions
	}
	if opts.KeepSessions < opts.MaxSessions {
		return nil, fmt.Errorf("kept sessions %d: must be at least the %d sessions that may run", opts.KeepSessions, opts.MaxSessions)
	}
	if opts.Scrollback == 0 {
		opts.Scrollback = 1 << 20
	}
	if opts.Scrollback < 1024 {
		return nil, fmt.Errorf("scrollback %d bytes: must be at least 1024", opts.Scrollback)
	}
	if opts.Workspace == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("find workspace: %w", err)
		}
		opts.Workspace = wd
	}
	// Absolute and clean: records name it, and a restore compares.
	ws, err := filepath.Abs(opts.Workspace)
	if err != nil {
		return nil, fmt.Errorf("find workspace: %w", err)
	}
	opts.Workspace = ws
	if opts.Profiles == nil {
		opts.Profiles = BuiltinProfiles()
	}
	if len(opts.DefaultProfile.Start) == 0 {
		opts.DefaultProfile = opts.Profiles[ProfileShell]
	}
	if opts.Env == nil {
		opts.Env = os.Environ()
	}
	if opts.StopGrace == 0 {
		opts.StopGrace = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.SaveInterval <= 0 {
		opts.SaveInterval = 5 * time.Second
	}
	opts.Timing = opts.Timing.withDefaults()
	if opts.PortBase == 0 {
		opts.PortBase = DefaultPortBase
	}
	if err := checkPortBase(opts.PortBase); err != nil {
		return nil, err
	}
	m := &Manager{
		ports:     newPortBlocks(opts.PortBase),
		opts:      opts,
		log:       opts.Logger,
		sessions:  make(map[string]*Session),
		starting:  make(map[*Session]bool),
		savers:    make(map[string]*output.Saver),
		stopSaver: make(chan struct{}),
		saverDone: make(chan struct{}),
	}
	if opts.Store == nil {
		close(m.saverDone)
		return m, nil
	}
	if err := m.restore(); err != nil {
		return nil, err
	}
	m.saving.Database = opts.Store.Path()
	m.journal = store.NewJournal(opts.Store, m.log)
	m.journal.SubscribeFailures(m.saveFailed)
	go m.saver()
	return m, nil
}

// Subscribe has fn called with every event from now on, in order, until
// cancel is called. fn runs while the Manager holds locks, so it must not
// block or call the Manager; it may subscribe or cancel. Subscribe before
// the first Create or Resume to miss nothing: restoring sessions emits no
// events.
func (m *Manager) Subscribe(fn func(Event)) (cancel func()) {
	return m.observers.Subscribe(fn)
}

// emit tells the observers about a change and records it in the store, in
// the order changes happen.
func (m *Manager) emit(ev Event) {
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	m.observers.Notify(ev)
	if m.journal == nil || ev.Kind == EventNeedsInput || ev.Kind == EventWarning || ev.Kind == EventTurnEnded {
		return // these change nothing a restart keeps
	}
	switch ev.Kind {
	case EventDestroyed:
		m.journal.Remove(ev.Session.ID)
		delete(m.savers, ev.Session.ID)
	case EventPromptQueued, EventPromptDequeued, EventPromptDelivered:
		m.putQueue(ev.Session.ID, ev.Queue)
	default:
		m.putRecord(ev.Session)
	}
}

// MaxSessions returns the live-session limit.
func (m *Manager) MaxSessions() int { return m.opts.MaxSessions }

// DefaultKeepSessions is how many sessions are kept, running or ended,
// when Options.KeepSessions is 0.
const DefaultKeepSessions = 50

// KeepSessions returns the kept-sessions limit.
func (m *Manager) KeepSessions() int { return m.opts.KeepSessions }

// admit says whether a new session could start now.
func (m *Manager) admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.admitLocked(true)
}

// admitLocked says whether a session may start now; isNew is set for one
// that Create would add to those kept. mu must be held.
func (m *Manager) admitLocked(isNew bool) error {
	if m.closing {
		return ErrShuttingDown
	}
	if kept := len(m.sessions) + m.creatingLocked(); isNew && kept >= m.opts.KeepSessions {
		return fmt.Errorf("%w: %d sessions are kept, the most --keep-sessions allows; delete ended sessions to make room (nothing is deleted for you)",
			ErrStoreFull, kept)
	}
	if n := m.liveLocked(); n >= m.opts.MaxSessions {
		return fmt.Errorf("%w: %d of %d sessions are running", ErrLimitReached, n, m.opts.MaxSessions)
	}
	if m.opts.Admit != nil {
		return m.opts.Admit()
	}
	return nil
}

// liveLocked counts sessions with a running process or one being
// started. A starting session's own mu is held while its process starts,
// so it is counted without taking it. mu must be held.
func (m *Manager) liveLocked() int {
	n := 0
	for s := range m.starting {
		if s.runOf == "" {
			n++
		}
	}
	for _, s := range m.sessions {
		if m.starting[s] || s.runOf != "" {
			continue // counted, or a run script: no agent
		}
		s.mu.Lock()
		if s.run.phase == phaseRunning {
			n++
		}
		s.mu.Unlock()
	}
	return n
}

// creatingLocked counts the sessions Create is starting, not yet listed.
// mu must be held.
func (m *Manager) creatingLocked() int {
	n := 0
	for s := range m.starting {
		if m.sessions[s.id] != s {
			n++
		}
	}
	return n
}

// reserveLocked admits s to start: it counts as running until release.
// mu must be held.
func (m *Manager) reserveLocked(s *Session) {
	m.starting[s] = true
	m.starts.Add(1)
}

// releaseResume ends a resumed session's reservation.
func (m *Manager) releaseResume(s *Session) {
	m.mu.Lock()
	delete(m.starting, s)
	m.mu.Unlock()
	m.starts.Done()
}

// Get returns the session with this id, or ErrNotFound.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return s, nil
}

// List returns every session, oldest first.
func (m *Manager) List() []*Session {
	m.mu.Lock()
	list := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	m.mu.Unlock()
	slices.SortFunc(list, func(a, b *Session) int {
		return cmp.Or(a.createdAt.Compare(b.createdAt), strings.Compare(a.id, b.id))
	})
	return list
}

// Resume starts an exited session's agent again in the same directory with
// its profile's resume command. Its output continues the same stream, so
// attached clients keep their offsets.
func (m *Manager) Resume(id string) (*Session, error) {
	return m.resume(id, (*Session).resumePlan)
}

// resume starts a new run of an exited session with what plan says (under
// the session's mu): the agent's resume, or its setup script again.
func (m *Manager) resume(id string, plan func(*Session) (argv []string, note string)) (*Session, error) {
	s, err := m.reserveResume(id)
	if err != nil {
		return nil, err
	}
	defer m.releaseResume(s)
	branch := m.branchOf(s)
	s.mu.Lock()
	argv, note := plan(s)
	proc, err := s.startLocked(argv, note, branch)
	if err == nil {
		s.det.explain("resumed")
	}
	info := s.infoLocked()
	done := s.run.done
	// A failed start changed the status to error; say so either way.
	m.emit(Event{Kind: EventStatus, Session: info})
	if err == nil && s.setup.running {
		m.emit(Event{Kind: EventSetup, Session: info})
	}
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s.log.Info("session resumed", "command", info.Command)
	m.goPump(s, proc, done)
	return s, nil
}

// reserveResume admits session id to resume, or says why not.
func (m *Manager) reserveResume(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, ErrShuttingDown
	}
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if m.starting[s] {
		return nil, ErrRunning
	}
	s.mu.Lock()
	running := s.run.phase == phaseRunning
	s.mu.Unlock()
	archived := s.wt.isArchived()
	if running {
		return nil, ErrRunning
	}
	if archived {
		return nil, fmt.Errorf("%w: session %s is archived: its worktree was removed after its branch was merged", ErrInvalid, id)
	}
	admit := m.admitLocked
	if s.runOf != "" {
		admit = func(bool) error { return m.admitRunLocked() }
	}
	if err := admit(false); err != nil {
		return nil, err
	}
	m.reserveLocked(s)
	return s, nil
}

// goPump starts the reader of s's run proc, which closes done when the run
// has ended; Shutdown waits for it.
func (m *Manager) goPump(s *Session, proc *pty.Process, done chan struct{}) {
	m.runs.Add(1)
	go func() {
		defer m.runs.Done()
		s.pump(proc, done)
		// The setup's run ended well: the agent's starts from here, so
		// that Shutdown, waiting for this goroutine, waits for it too.
		if argv, ok := s.takeAgentStart(); ok {
			m.startAfterSetup(s, argv)
		}
	}()
}

// Destroy stops the session's process (SIGHUP, then SIGKILL after the stop
// grace) and forgets the session, on disk too before it returns, so it
// does not come back after a crash. A worktree it has stays.
func (m *Manager) Destroy(ctx context.Context, id string) error {
	err := m.destroy(ctx, id)
	if err == nil {
		m.durable()
	}
	return err
}

func (m *Manager) destroy(ctx context.Context, id string) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	// Its run script goes first: it runs in the session's tree.
	if run := m.runOf(id); run != nil {
		if err := m.destroy(ctx, run.id); err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("destroy the session's run: %w", err)
		}
	}
	if err := s.stop(ctx, m.opts.StopGrace); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[id] != s {
		// Another Destroy won the race.
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err := s.close(); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	delete(m.sessions, id)
	m.ports.release(id)
	info := s.Info()
	info.Status, info.Reason = StatusStopped, "destroyed"
	s.log.Info("session destroyed")
	m.emit(Event{Kind: EventDestroyed, Session: info})
	return nil
}

// Shutdown refuses new sessions and resumes, then stops every running
// session at once, giving each agent grace between SIGHUP and SIGKILL,
// and waits for every PTY reader to finish. Sessions stay listed. Each
// session's screen is saved as soon as its agent has stopped, while the
// others may still be using their grace, so the final save in Close has
// little left to write when the shutdown's time is nearly up.
func (m *Manager) Shutdown(ctx context.Context, grace time.Duration) error {
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	// What was admitted before still starts; then it is stopped too.
	m.starts.Wait()
	m.mu.Lock()
	list := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		list = append(list, s)
	}
	m.mu.Unlock()

	var (
		wg   sync.WaitGroup
		errs = make([]error, len(list))
	)
	for i, s := range list {
		wg.Go(func() {
			if errs[i] = s.stop(ctx, grace); errs[i] == nil && m.journal != nil {
				m.saveScreen(s)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("shutdown sessions: %w", err)
	}
	m.runs.Wait()
	return nil
}
