package sessions

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions/output"

	"github.com/google/uuid"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/worktree"
)

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

// createPlan is a create request checked and resolved: everything a new
// session needs but its id, which it gets under the Manager's lock.
type createPlan struct {
	profile Profile
	// argv is the request's own command; nil means the profile's.
	argv []string
	cwd  string
	// name is empty until a worktree or the session's number names it.
	name       string
	cols, rows int
	worktree   *Worktree
	startedBy  string
	firstInput []byte
}

// create runs the steps of Create: check the request, make the worktree it
// asks for, then, under the lock, admit, build and start the session. A
// worktree made for a session that does not start is taken back.
func (m *Manager) create(opts CreateOptions) (_ *Session, err error) {
	plan, err := m.planCreate(opts)
	if err != nil {
		return nil, err
	}
	if opts.WorktreeBranch != "" {
		var made worktree.Worktree
		if made, err = m.planWorktree(&plan, opts); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil { // nothing half-made stays
				m.rollbackWorktree(made)
			}
		}()
	}

	m.mu.Lock()
	if err := m.admitLocked(true); err != nil {
		m.mu.Unlock()
		return nil, err
	}
	s := m.newSession(plan)
	m.reserveLocked(s)
	m.mu.Unlock()
	if err := m.launch(s, plan.argv); err != nil {
		return nil, err
	}
	return s, nil
}

// Bounds of a create request's fields: far above what a person types,
// far below what would make every session list and error reply large.
const (
	// MaxCommandArgs and MaxCommandBytes bound a request's own command.
	MaxCommandArgs  = 256
	MaxCommandBytes = 8 << 10
	// maxPathBytes is PATH_MAX: no longer cwd names a directory.
	maxPathBytes = 4096
	// maxAgentBytes bounds a profile's name.
	maxAgentBytes = 64
	// maxBranchBytes bounds a worktree's branch name (a ref name is a
	// file name under .git/refs).
	maxBranchBytes = 255
)

// checkBounds refuses a create request whose fields are larger than any
// real one, before anything looks at them.
func checkBounds(opts CreateOptions) error {
	if len(opts.Command) > MaxCommandArgs {
		return fmt.Errorf("%w: command has %d arguments; at most %d are taken", ErrInvalid, len(opts.Command), MaxCommandArgs)
	}
	n := 0
	for _, a := range opts.Command {
		n += len(a)
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: command argument %s contains a NUL byte, which no program can be given", ErrInvalid, clip.Quote(a))
		}
	}
	if n > MaxCommandBytes {
		return fmt.Errorf("%w: command is %d bytes long; at most %d are taken", ErrInvalid, n, MaxCommandBytes)
	}
	for _, f := range []struct {
		name, value string
		max         int
	}{{"cwd", opts.Cwd, maxPathBytes}, {"agent", opts.Agent, maxAgentBytes}, {"worktree branch", opts.WorktreeBranch, maxBranchBytes}, {"worktree base", opts.WorktreeBase, maxBranchBytes}} {
		if len(f.value) > f.max {
			return fmt.Errorf("%w: %s is %d bytes long; at most %d are taken", ErrInvalid, f.name, len(f.value), f.max)
		}
	}
	return nil
}

// planCreate checks a create request and resolves its profile, command,
// working directory and size; it changes nothing.
func (m *Manager) planCreate(opts CreateOptions) (createPlan, error) {
	if err := checkBounds(opts); err != nil {
		return createPlan{}, err
	}
	profile, argv, err := m.pickProfile(opts)
	if err != nil {
		return createPlan{}, err
	}
	cwd, err := m.resolveCwd(opts.Cwd)
	if err != nil {
		return createPlan{}, err
	}
	cols, rows := cmp.Or(opts.Cols, 80), cmp.Or(opts.Rows, 24)
	if err := checkSize(cols, rows); err != nil {
		return createPlan{}, err
	}
	if err := CheckName(opts.Name); err != nil {
		return createPlan{}, err
	}
	if len(opts.FirstInput) > MaxHeldInput {
		return createPlan{}, fmt.Errorf("%w: the first input is %d bytes long; at most %d are taken", ErrInvalid, len(opts.FirstInput), MaxHeldInput)
	}
	if opts.WorktreeBase != "" && opts.WorktreeBranch == "" {
		return createPlan{}, fmt.Errorf("%w: a base is where a new worktree's branch starts: give the branch too", ErrInvalid)
	}
	return createPlan{profile: profile, argv: argv, cwd: cwd, name: opts.Name, cols: cols, rows: rows, startedBy: opts.StartedBy, firstInput: firstInput(opts.FirstInput)}, nil
}

// planWorktree makes the worktree a create request asks for and points the
// plan at it. The caller takes the returned worktree back if the session
// then does not start.
func (m *Manager) planWorktree(plan *createPlan, opts CreateOptions) (worktree.Worktree, error) {
	if opts.Cwd != "" {
		return worktree.Worktree{}, fmt.Errorf("%w: give cwd or worktree, not both: a worktree session runs in its worktree", ErrInvalid)
	}
	// Refused before git does any work, as far as can be known now;
	// the limit is checked again once the worktree exists.
	if err := m.admit(); err != nil {
		return worktree.Worktree{}, err
	}
	if plan.name == "" {
		plan.name = opts.WorktreeBranch // the branch names the session well
	}
	made, origin, err := m.addWorktree(plan.name, opts.WorktreeBranch, opts.WorktreeBase)
	if err != nil {
		return worktree.Worktree{}, err
	}
	plan.worktree = &Worktree{Path: made.Path, Branch: made.Branch, Base: origin}
	plan.cwd = made.Path
	return made, nil
}

// newSession builds the session a plan describes, with a fresh id,
// not yet started or listed; an unnamed one is named when it is listed.
func (m *Manager) newSession(plan createPlan) *Session {
	id := uuid.NewString()
	s := m.sessionOf(id, plan.profile, plan.cwd)
	s.name, s.createdAt = plan.name, time.Now().UTC()
	s.startedBy, s.firstInput = plan.startedBy, plan.firstInput
	s.wt = sessionWorktree{w: plan.worktree}
	s.prompts = promptQueue{id: id}
	s.run = agentRun{cols: plan.cols, rows: plan.rows}
	return s
}

// sessionOf returns a session with what the manager gives every session,
// new or restored: its environment, logger, announcements, ring, timing,
// hooks, workspace, MCP endpoint, continuing after a limit and ports.
func (m *Manager) sessionOf(id string, profile Profile, cwd string) *Session {
	return &Session{
		id:                id,
		profile:           profile,
		cwd:               cwd,
		env:               sessionEnv(m.opts.Env, id),
		log:               m.log.With("session", id),
		emit:              m.emit,
		ring:              output.NewRing(m.opts.Scrollback),
		timing:            m.opts.Timing,
		hooks:             m.opts.Hooks,
		root:              m.opts.Workspace,
		mcp:               m.opts.MCP,
		continueByDefault: m.opts.ContinueAfterLimit,
		blocks:            m.ports,
	}
}

// launch starts a new session reserved to start, its first run with argv
// (nil means its profile's start command), then lists it, announces it and
// starts its reader. A session that does not start is not listed.
func (m *Manager) launch(s *Session, argv []string) error {
	// Done last: Shutdown, which waits for it, then finds the session
	// listed and its reader counted.
	defer m.starts.Done()
	if argv == nil {
		argv = s.profile.StartArgv(s.id)
	}
	branch := m.branchOf(s)
	var sc scripts.Script
	withSetup := false
	if s.wt.get() != nil {
		sc, withSetup = m.setupScript()
	}
	s.mu.Lock()
	note := ""
	if withSetup {
		argv = s.planSetupLocked(sc, argv)
		note = s.setupNoteLocked()
	}
	proc, err := s.startLocked(argv, note, branch)
	done := s.run.done
	s.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.starting, s)
	if err != nil {
		m.ports.release(s.id) // a session that is not listed holds no ports
		return err
	}
	m.created++
	m.sessions[s.id] = s
	s.mu.Lock()
	if s.name == "" {
		// Numbered as listed: a session that failed to start takes no
		// number.
		s.name = fmt.Sprintf("%s %d", s.profile.Name, m.created)
	}
	info := s.infoLocked()
	s.mu.Unlock()
	s.log.Info("session created", "name", s.name, "agent", s.profile.Name, "command", info.Command, "cwd", s.cwd)
	// Under mu, so that no event of the session's (its removal) can come
	// before it.
	m.emit(Event{Kind: EventCreated, Session: info})
	m.goPump(s, proc, done)
	return nil
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
		return Profile{}, nil, fmt.Errorf("%w: unknown agent %s (known: %s)", ErrInvalid, clip.Quote(opts.Agent), strings.Join(names, ", "))
	}
	if err := p.CheckInstalled(); err != nil {
		return Profile{}, nil, fmt.Errorf("%w: %w", ErrSpawn, err)
	}
	return p, nil, nil
}

// resolveCwd returns the directory a request's cwd names, refusing one
// that is not an existing directory.
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
		return "", fmt.Errorf("%w: working directory %s does not exist", ErrInvalid, clip.Quote(cwd))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: working directory %s is not a directory", ErrInvalid, clip.Quote(cwd))
	}
	return cwd, nil
}

// CheckName refuses a session name that is too long or could pass for
// another when shown. Participants' names follow the same rules.
func CheckName(name string) error {
	if len(name) > 128 {
		return fmt.Errorf("%w: name is longer than 128 bytes", ErrInvalid)
	}
	if strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: name contains control characters", ErrInvalid)
	}
	if r, ok := textrule.FirstInvisible(name, false); ok {
		return fmt.Errorf("%w: name contains the invisible character %U; names are shown as typed", ErrInvalid, r)
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
		case "TERM", "COLORTERM", "AGENTMUX_TOKEN", EnvSessionID, EnvMCPSecret, EnvMCPURL:
			continue // a server started inside a session hands on none of its own
		}
		if slices.Contains(placeKeys, key) {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "TERM=xterm-256color", "COLORTERM=truecolor", sessionTag(id))
}

// firstInput returns the keys that type text into a terminal, each line
// ended with Enter as typed; nil for none.
func firstInput(text string) []byte {
	if text == "" {
		return nil
	}
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\n", "\r")
	if !strings.HasSuffix(text, "\r") {
		text += "\r"
	}
	return []byte(text)
}
