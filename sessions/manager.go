package sessions

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/agentmux/agentmux/internal/observe"
	"github.com/agentmux/agentmux/pty"
	"github.com/agentmux/agentmux/worktree"
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
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrWorktree means git refused the session's worktree; the message
	// says why.
	ErrWorktree = errors.New("worktree refused")
	// ErrWorktreeDirty means a worktree to remove has uncommitted changes.
	ErrWorktreeDirty = errors.New("worktree has uncommitted changes")
)

// WorktreesDir is the workspace directory that holds sessions' worktrees.
const WorktreesDir = ".worktrees"

// gitTimeout bounds the git commands of one request.
const gitTimeout = time.Minute

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
	// EventUpdated says something clients do not show changed (the
	// agent's conversation id): saved, not announced.
	EventUpdated EventKind = "updated"
)

// Event tells observers about a session's change, with its state just after
// it.
type Event struct {
	Kind    EventKind
	Session Info
	// Message is what EventNeedsInput and EventWarning tell the user.
	Message string
	// Severity grades an EventWarning.
	Severity Severity
}

// Options configure a Manager. Zero values are documented per field.
type Options struct {
	// MaxSessions limits live sessions (those with a running process);
	// 0 means 4.
	MaxSessions int
	// Scrollback is the size in bytes of each session's output ring;
	// 0 means 1 MiB.
	Scrollback int
	// Workspace is the directory relative working directories are resolved
	// against and where sessions start by default; empty means the current
	// directory.
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
	Store *Store
	// SaveInterval is how often changed screens are saved; 0 means 5 s.
	SaveInterval time.Duration
	// Timing holds the delays of waiting, idle and stuck detection; zero
	// fields take their defaults.
	Timing Timing
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
	journal *journal

	// mu protects the fields below. Lock order: mu before a Session's mu.
	mu       sync.Mutex
	sessions map[string]*Session
	closing  bool
	// created counts sessions ever created, to name them.
	created int
	// runs tracks every session's PTY reader so Shutdown can wait for all.
	runs sync.WaitGroup

	// saveMu serialises screen saves (the saver and Close).
	saveMu sync.Mutex
	// savedEnd is the stream end each session's saved screen reached.
	// emitMu protects it.
	savedEnd map[string]uint64
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
	m := &Manager{
		opts:      opts,
		log:       opts.Logger,
		sessions:  make(map[string]*Session),
		savedEnd:  make(map[string]uint64),
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
	m.journal = newJournal(opts.Store, m.log)
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
	if m.journal == nil || ev.Kind == EventNeedsInput || ev.Kind == EventWarning {
		return // these change nothing a restart keeps
	}
	if ev.Kind == EventDestroyed {
		m.journal.remove(ev.Session.ID)
		delete(m.savedEnd, ev.Session.ID)
		return
	}
	m.journal.putRecord(recordOf(ev.Session))
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
	list, skipped, err := m.opts.Store.load()
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
			ring:      newRing(m.opts.Scrollback),
			timing:    m.opts.Timing,
			hooks:     m.opts.Hooks,
			worktree:  r.Worktree,
			phase:     phaseExited,
			status:    status,
			reason:    reason,
			argv:      r.Command,
			cols:      cmp.Or(r.Cols, 80),
			rows:      cmp.Or(r.Rows, 24),
			exit:      r.Exit,
			// conversation survives restarts, so a resume continues it.
			conversation: r.Conversation,
		}
		s.lastActivity.Store(r.LastActivityAt.UnixNano())
		s.ring.restore(sv.screen)
		// A server killed outright could not stop the session's processes;
		// those that did not die with its terminal (detached helpers) die
		// now, before anything can resume the session.
		if err := pty.SignalTagged(sessionTag(r.ID), syscall.SIGKILL); err != nil {
			s.log.Warn("kill what the session's last run left running", "err", err)
		}
		m.sessions[r.ID] = s
		m.savedEnd[r.ID] = s.ring.state().End
		m.created++
	}
	if len(list) > 0 {
		m.log.Info("restored sessions", "count", len(list), "database", m.opts.Store.Path())
	}
	return nil
}

// saver saves changed screens every SaveInterval until Close.
func (m *Manager) saver() {
	defer close(m.saverDone)
	t := time.NewTicker(m.opts.SaveInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stopSaver:
			return
		case <-t.C:
			m.saveScreens()
		}
	}
}

// saveScreens writes the metadata and screen of every session whose output
// moved since its last save.
func (m *Manager) saveScreens() {
	m.saveMu.Lock()
	defer m.saveMu.Unlock()
	for _, s := range m.List() {
		m.saveScreen(s)
	}
}

// saveScreen queues s's metadata and screen when its output moved since
// the last save.
func (m *Manager) saveScreen(s *Session) {
	// Under emitMu, so a Destroy's removal cannot be queued between the
	// check that the session is still there and the save, which would
	// bring a destroyed session back after a restart. The session's mu
	// comes first, as everywhere (a run ending emits under it): taking it
	// inside emitMu deadlocked a save against a run's end.
	s.mu.Lock()
	defer s.mu.Unlock()
	m.emitMu.Lock()
	defer m.emitMu.Unlock()
	st := s.ring.state()
	if saved, ok := m.savedEnd[s.id]; st.Closed || (ok && saved == st.End) {
		return
	}
	sc := s.ring.snapshot()
	m.journal.putSnapshot(recordOf(s.infoLocked()), sc)
	m.savedEnd[s.id] = sc.start + uint64(len(sc.data))
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
			m.journal.close()
		}
	})
}

// MaxSessions returns the live-session limit.
func (m *Manager) MaxSessions() int { return m.opts.MaxSessions }

// Create starts a new session. It returns ErrLimitReached at the limit,
// ErrInvalid for bad options and ErrSpawn when the command cannot start;
// in each case nothing else changes. With a store, it returns once the
// session is on disk: a session the caller was told of survives kill -9.
func (m *Manager) Create(opts CreateOptions) (*Session, error) {
	s, err := m.create(opts)
	if err == nil {
		m.durable()
	}
	return s, err
}

// durable waits, holding no lock, until every change made so far is
// committed to the store.
func (m *Manager) durable() {
	if m.journal != nil {
		m.journal.sync()
	}
}

func (m *Manager) create(opts CreateOptions) (_ *Session, err error) {
	profile, argvOverride, err := m.pickProfile(opts)
	if err != nil {
		return nil, err
	}
	cwd, err := m.resolveCwd(opts.Cwd)
	if err != nil {
		return nil, err
	}
	cols, rows := cmp.Or(opts.Cols, 80), cmp.Or(opts.Rows, 24)
	if err := checkSize(cols, rows); err != nil {
		return nil, err
	}
	if err := checkName(opts.Name); err != nil {
		return nil, err
	}
	name := opts.Name
	var wt *Worktree
	if opts.WorktreeBranch != "" {
		if opts.Cwd != "" {
			return nil, fmt.Errorf("%w: give cwd or worktree, not both: a worktree session runs in its worktree", ErrInvalid)
		}
		// Refused before git does any work, as far as can be known now;
		// the limit is checked again once the worktree exists.
		if err := m.admit(); err != nil {
			return nil, err
		}
		if name == "" {
			name = opts.WorktreeBranch // the branch names the session well
		}
		var (
			made   worktree.Worktree
			origin string
		)
		if made, origin, err = m.addWorktree(name, opts.WorktreeBranch); err != nil {
			return nil, err
		}
		wt, cwd = &Worktree{Path: made.Path, Branch: made.Branch, Base: origin}, made.Path
		defer func() {
			if err != nil { // nothing half-made stays
				m.rollbackWorktree(made)
			}
		}()
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.admitLocked(); err != nil {
		return nil, err
	}
	id := uuid.NewString()
	if name == "" {
		name = fmt.Sprintf("%s %d", profile.Name, m.created+1)
	}
	s := &Session{
		id:        id,
		name:      name,
		profile:   profile,
		cwd:       cwd,
		env:       sessionEnv(m.opts.Env, id),
		createdAt: time.Now().UTC(),
		log:       m.log.With("session", id),
		emit:      m.emit,
		ring:      newRing(m.opts.Scrollback),
		timing:    m.opts.Timing,
		hooks:     m.opts.Hooks,
		worktree:  wt,
		cols:      cols,
		rows:      rows,
	}
	argv := argvOverride
	if argv == nil {
		argv = profile.StartArgv(id)
	}
	s.mu.Lock()
	proc, err := s.startLocked(argv, "")
	info := s.infoLocked()
	done := s.runDone
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	m.created++
	m.sessions[id] = s
	m.runs.Add(1)
	s.log.Info("session created", "name", name, "agent", profile.Name, "command", info.Command, "cwd", cwd)
	m.emit(Event{Kind: EventCreated, Session: info})
	go func() {
		defer m.runs.Done()
		s.pump(proc, done)
	}()
	return s, nil
}

// admit says whether a new session could start now.
func (m *Manager) admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.admitLocked()
}

func (m *Manager) admitLocked() error {
	if m.closing {
		return ErrShuttingDown
	}
	if n := m.liveLocked(); n >= m.opts.MaxSessions {
		return fmt.Errorf("%w: %d of %d sessions are running", ErrLimitReached, n, m.opts.MaxSessions)
	}
	if m.opts.Admit != nil {
		return m.opts.Admit()
	}
	return nil
}

// addWorktree makes the worktree of a new session called name.
func (m *Manager) addWorktree(name, branch string) (worktree.Worktree, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	dir := filepath.Join(m.opts.Workspace, WorktreesDir, worktree.DirName(name))
	if err := m.checkWorktreeDir(dir); err != nil {
		return worktree.Worktree{}, "", err
	}
	// Read before the branch is made: what the workspace has checked out.
	origin, err := worktree.Origin(ctx, m.opts.Workspace)
	if err != nil {
		m.log.Warn("cannot tell what the worktree branches off; its changes count from its own HEAD", "err", err)
		origin = ""
	}
	wt, err := worktree.Add(ctx, m.opts.Workspace, dir, branch)
	if err != nil {
		return worktree.Worktree{}, "", worktreeError(err)
	}
	// Keep the worktrees out of the main tree's git status.
	if err := worktree.Exclude(ctx, m.opts.Workspace, "/"+WorktreesDir+"/"); err != nil {
		m.log.Warn("could not add .worktrees to .git/info/exclude", "err", err)
	}
	m.log.Info("worktree added", "path", wt.Path, "branch", wt.Branch, "new branch", wt.Created, "base", origin)
	return wt, origin, nil
}

// checkWorktreeDir refuses a worktree directory that is not, with every
// symbolic link on its way followed, inside the workspace's .worktrees. A
// repository can commit .worktrees as a link, which would send every
// checkout, and every removal, wherever it points.
func (m *Manager) checkWorktreeDir(dir string) error {
	refuse := func(format string, args ...any) error {
		return tagged{fmt.Errorf(format, args...), ErrWorktree}
	}
	parent := filepath.Join(m.opts.Workspace, WorktreesDir)
	fi, err := os.Lstat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist): // Add makes it
	case err != nil:
		return refuse("check %s: %w", parent, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(parent)
		return refuse("%s is a symbolic link (to %s); worktrees are made only in a real directory inside the workspace, so remove the link first", parent, target)
	case !fi.IsDir():
		return refuse("%s is not a directory; worktrees are made in it, so move it away first", parent)
	}
	realParent, err := realPath(parent)
	if err != nil {
		return refuse("resolve %s: %w", parent, err)
	}
	realWorkspace, err := filepath.EvalSymlinks(m.opts.Workspace)
	if err != nil {
		return refuse("resolve the workspace: %w", err)
	}
	real, err := realPath(dir)
	if err != nil {
		return refuse("resolve %s: %w", dir, err)
	}
	if realParent != filepath.Join(realWorkspace, WorktreesDir) || !isWithin(real, realParent) {
		return refuse("%s resolves to %s, outside the workspace's %s; a symbolic link on the way must go", dir, real, WorktreesDir)
	}
	return nil
}

// realPath is path with every symbolic link resolved, for a path that may
// not exist yet: its deepest existing ancestor is resolved and the rest
// appended.
func realPath(path string) (string, error) {
	existing, rest := filepath.Clean(path), ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", err
	}
	return filepath.Join(real, rest), nil
}

// isWithin reports whether path is dir or lies under it; both are clean.
func isWithin(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// rollbackWorktree takes back the worktree of a session that did not
// start, and the branch when it was made for it.
func (m *Manager) rollbackWorktree(wt worktree.Worktree) {
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if err := worktree.Remove(ctx, wt.Path, true); err != nil {
		m.log.Error("remove the worktree of a session that did not start", "path", wt.Path, "err", err)
		return
	}
	// .worktrees too, if this was its only worktree; a directory with
	// others in it stays (removing a non-empty directory fails).
	_ = os.Remove(filepath.Dir(wt.Path))
	if wt.Created {
		if err := worktree.DeleteBranch(ctx, m.opts.Workspace, wt.Branch); err != nil {
			m.log.Error("delete the branch made for a session that did not start", "branch", wt.Branch, "err", err)
		}
	}
}

// pickProfile returns the profile a request names and, for a request that
// gives its own command, that command.
func (m *Manager) pickProfile(opts CreateOptions) (Profile, []string, error) {
	if len(opts.Command) > 0 {
		if opts.Command[0] == "" {
			return Profile{}, nil, fmt.Errorf("%w: command must start with a program name", ErrInvalid)
		}
		p := CustomProfile(opts.Command)
		return p, slices.Clone(opts.Command), nil
	}
	if opts.Agent == "" {
		return m.opts.DefaultProfile, nil, nil
	}
	if opts.Agent == m.opts.DefaultProfile.Name {
		return m.opts.DefaultProfile, nil, nil
	}
	p, ok := m.opts.Profiles[opts.Agent]
	if !ok {
		names := slices.Sorted(maps.Keys(m.opts.Profiles))
		return Profile{}, nil, fmt.Errorf("%w: unknown agent %q (known: %s)", ErrInvalid, opts.Agent, strings.Join(names, ", "))
	}
	if err := p.CheckInstalled(); err != nil {
		return Profile{}, nil, fmt.Errorf("%w: %w", ErrSpawn, err)
	}
	return p, nil, nil
}

func (m *Manager) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return m.opts.Workspace, nil
	}
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(m.opts.Workspace, cwd)
	}
	cwd = filepath.Clean(cwd)
	fi, err := os.Stat(cwd)
	if err != nil {
		return "", fmt.Errorf("%w: working directory %q does not exist", ErrInvalid, cwd)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: working directory %q is not a directory", ErrInvalid, cwd)
	}
	return cwd, nil
}

func checkName(name string) error {
	if len(name) > 128 {
		return fmt.Errorf("%w: name is longer than 128 bytes", ErrInvalid)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: name contains control characters", ErrInvalid)
	}
	// Format characters (bidi overrides, zero-width spaces and joiners)
	// draw nothing or reorder what follows: a tab could pass for another.
	if i := strings.IndexFunc(name, func(r rune) bool { return unicode.Is(unicode.Cf, r) }); i >= 0 {
		r, _ := utf8.DecodeRuneInString(name[i:])
		return fmt.Errorf("%w: name contains the invisible formatting character %U; names are shown as typed", ErrInvalid, r)
	}
	return nil
}

// EnvSessionID names the environment variable that carries a session's id
// to its agent and everything the agent starts; it also marks them as the
// session's (see sessionTag).
const EnvSessionID = "AGENTMUX_SESSION_ID"

// sessionTag is the environment entry that marks a session's processes:
// stopping the session stops every process that carries it, wherever it
// went.
func sessionTag(id string) string { return EnvSessionID + "=" + id }

// sessionEnv returns the agent's environment: the base one, less the
// server's secret, with a terminal type xterm.js answers to and the
// session's id for scripts and hooks.
func sessionEnv(base []string, id string) []string {
	env := make([]string, 0, len(base)+4)
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		switch key {
		case "TERM", "COLORTERM", "AGENTMUX_TOKEN", EnvSessionID:
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TERM=xterm-256color", "COLORTERM=truecolor", sessionTag(id))
}

// liveLocked counts sessions with a running process. mu must be held.
func (m *Manager) liveLocked() int {
	n := 0
	for _, s := range m.sessions {
		s.mu.Lock()
		if s.phase == phaseRunning {
			n++
		}
		s.mu.Unlock()
	}
	return n
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing {
		return nil, ErrShuttingDown
	}
	s, ok := m.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	s.mu.Lock()
	if s.phase == phaseRunning {
		s.mu.Unlock()
		return nil, ErrRunning
	}
	s.mu.Unlock()
	if err := m.admitLocked(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	proc, err := s.startLocked(s.resumePlanLocked())
	if err == nil {
		s.reason = "resumed"
	}
	info := s.infoLocked()
	done := s.runDone
	s.mu.Unlock()
	// A failed start changed the status to error; say so either way.
	m.emit(Event{Kind: EventStatus, Session: info})
	if err != nil {
		return nil, err
	}
	s.log.Info("session resumed", "command", info.Command)
	m.runs.Add(1)
	go func() {
		defer m.runs.Done()
		s.pump(proc, done)
	}()
	return s, nil
}

// DestroyWithWorktree destroys the session and removes its git worktree,
// never its branch. A worktree with uncommitted changes refuses it all
// with ErrWorktreeDirty, the session untouched, unless force.
func (m *Manager) DestroyWithWorktree(ctx context.Context, id string, force bool) error {
	s, err := m.Get(id)
	if err != nil {
		return err
	}
	wt := s.Info().Worktree
	if wt == nil {
		return fmt.Errorf("%w: session %s has no worktree", ErrInvalid, id)
	}
	// The link may have appeared since the worktree was made; removing
	// through it would delete outside the workspace.
	if err := m.checkWorktreeDir(wt.Path); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	if !force {
		// Checked first, so a refusal leaves the agent running.
		if err := worktree.CheckClean(gctx, wt.Path); err != nil {
			return worktreeError(err)
		}
	}
	if err := m.Destroy(ctx, id); err != nil {
		return err
	}
	// The agent may have written more while it stopped; that still counts.
	if err := worktree.Remove(gctx, wt.Path, force); err != nil {
		return fmt.Errorf("session destroyed, but its worktree was kept: %w", worktreeError(err))
	}
	s.log.Info("worktree removed", "path", wt.Path, "branch kept", wt.Branch)
	return nil
}

func worktreeError(err error) error {
	if errors.Is(err, worktree.ErrDirty) {
		return tagged{fmt.Errorf("%w. Commit or stash them, or remove the worktree with force", err), ErrWorktreeDirty}
	}
	return tagged{err, ErrWorktree}
}

// tagged is err, which says it all, marked as of kind for errors.Is.
type tagged struct{ err, kind error }

func (t tagged) Error() string   { return t.err.Error() }
func (t tagged) Unwrap() []error { return []error{t.err, t.kind} }

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
