package sessions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PortCount is how many consecutive TCP ports each session gets: as many
// as Conductor gives a workspace, so a repository set up for it (a dev
// server on $CONDUCTOR_PORT, its API on $CONDUCTOR_PORT+1) works as it is.
const PortCount = 10

// DefaultPortBase is where port blocks are looked for when
// Options.PortBase is 0: above the usual dev servers' ports (3000, 5173,
// 8080) and below Linux's ephemeral range (32768 and up), so that
// neither a dev server started by hand nor the system's own outgoing
// connections are likely to sit in a block.
const DefaultPortBase = 20000

// ErrNoPorts means no block of PortCount free ports was found from the
// port base up: the session cannot be given ports of its own.
var ErrNoPorts = errors.New("no free block of ports")

// Ports is a block of consecutive TCP ports reserved for a session: its
// agent and what it starts find the first in $AGENTMUX_PORT.
type Ports struct {
	// First is the block's first port.
	First int `json:"first"`
	// Count is how many ports the block holds, from First.
	Count int `json:"count"`
}

// IsZero reports whether p is no block at all.
func (p Ports) IsZero() bool { return p.Count == 0 }

// last is the block's last port.
func (p Ports) last() int { return p.First + p.Count - 1 }

// overlaps reports whether p and q share a port.
func (p Ports) overlaps(q Ports) bool {
	return !p.IsZero() && !q.IsZero() && p.First <= q.last() && q.First <= p.last()
}

// portBlocks hands out the sessions' port blocks. A session holds its
// block while it is listed, running or not: a resume then gets the same
// ports back when they are still free, so the URL of the dev server it
// starts again stays the same. The block is released when the session is
// destroyed.
//
// A port is free when reserved, not forever: nothing stops another
// program from taking it after. That is why a block is checked again at
// every start of the session's agent (reserve with the block it held),
// and replaced when a port of it is taken.
type portBlocks struct {
	// base is the first port a block may start at; blocks are looked for
	// at base, base+PortCount, ... up to the last port.
	base int

	// mu protects held. It is a leaf: nothing else is locked under it.
	mu sync.Mutex
	// held is each session's block, by session id.
	held map[string]Ports
}

func newPortBlocks(base int) *portBlocks {
	return &portBlocks{base: base, held: make(map[string]Ports)}
}

// checkPortBase refuses a base that leaves no room for a block, or that
// lies among the ports only root may bind.
func checkPortBase(base int) error {
	if base < 1024 || base+PortCount-1 > 65535 {
		return fmt.Errorf("port base %d: must be from 1024 to %d", base, 65535-PortCount+1)
	}
	return nil
}

// hold records prev as id's block without checking that its ports are
// free: a session restored after a restart keeps its place, so no new
// session takes it before the restored one is resumed, when reserve
// checks it. A block that overlaps another's is not held.
func (b *portBlocks) hold(id string, prev Ports) bool {
	if prev.IsZero() {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.overlapsLocked(id, prev) {
		return false
	}
	b.held[id] = prev
	return true
}

// reserve returns a block for session id: prev, the block it held, when
// every port of it is still free and no other session's block overlaps
// it; else the first free block from the base up, looked for among the
// ports that remain (a bounded search). It returns ErrNoPorts when none
// is free; then id holds nothing.
func (b *portBlocks) reserve(id string, prev Ports) (Ports, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
	if !prev.IsZero() && prev.Count == PortCount && !b.overlapsLocked(id, prev) && blockFree(prev) {
		b.held[id] = prev
		return prev, nil
	}
	for first := b.base; first+PortCount-1 <= 65535; first += PortCount {
		p := Ports{First: first, Count: PortCount}
		if b.overlapsLocked(id, p) || !blockFree(p) {
			continue
		}
		b.held[id] = p
		return p, nil
	}
	return Ports{}, fmt.Errorf("%w: every block of %d ports from %d to 65535 is another session's or has a port in use", ErrNoPorts, PortCount, b.base)
}

// release gives back id's block, if it holds one.
func (b *portBlocks) release(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.held, id)
}

// overlapsLocked reports whether p overlaps the block of a session other
// than id. mu must be held.
func (b *portBlocks) overlapsLocked(id string, p Ports) bool {
	for other, q := range b.held {
		if other != id && p.overlaps(q) {
			return true
		}
	}
	return false
}

// blockFree reports whether every port of p can be listened on now.
func blockFree(p Ports) bool {
	for port := p.First; port <= p.last(); port++ {
		if !portFree(port) {
			return false
		}
	}
	return true
}

// portFree reports whether port can be listened on, on the loopback
// address and on the wildcard one (both IPv4 and IPv6 where the system
// has them): a dev server listens on either, and a port something already
// listens on, on any address, makes one of the two binds fail. The
// listeners are closed at once; a listening socket closed before any
// connection leaves no TIME_WAIT behind, so the port is free again.
func portFree(port int) bool {
	for _, addr := range []string{"127.0.0.1", ""} {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// The environment that tells a session's agent, and everything it starts,
// where it works and which ports are its own. Conductor's names carry the
// same values, so a repository set up for Conductor (its scripts, its dev
// server on $CONDUCTOR_PORT) works here unchanged.
const (
	// EnvRootPath is the workspace: the repository's main checkout.
	EnvRootPath = "AGENTMUX_ROOT_PATH"
	// EnvWorkspacePath is the session's worktree, or the workspace for a
	// session that has none.
	EnvWorkspacePath = "AGENTMUX_WORKSPACE_PATH"
	// EnvBranch is the worktree's branch, or the workspace's current
	// branch; empty when HEAD is detached or there is no repository.
	EnvBranch = "AGENTMUX_BRANCH"
	// EnvPort is the first of the session's PortCount ports.
	EnvPort = "AGENTMUX_PORT"

	envConductorRootPath      = "CONDUCTOR_ROOT_PATH"
	envConductorWorkspacePath = "CONDUCTOR_WORKSPACE_PATH"
	envConductorPort          = "CONDUCTOR_PORT"
)

// placeKeys are the variables placeEnvLocked sets: taken out of the base
// environment, so a server started from inside a session (or from
// Conductor) does not hand its own values on.
var placeKeys = []string{
	EnvRootPath, EnvWorkspacePath, EnvBranch, EnvPort,
	envConductorRootPath, envConductorWorkspacePath, envConductorPort,
}

// reservePortsLocked gives the session its block for the run being
// started: the one it had while every port of it is free, else a new one.
// A new block is logged, and returned as a note for the session's
// terminal (moved), since the URLs of the servers it starts change. mu
// must be held.
func (s *Session) reservePortsLocked() (moved string, err error) {
	if s.blocks == nil {
		return "", nil
	}
	prev := s.ports
	p, err := s.blocks.reserve(s.id, prev)
	if err != nil {
		s.ports = Ports{}
		return "", fmt.Errorf("reserve the session's ports: %w", err)
	}
	s.ports = p
	if prev.IsZero() || p == prev {
		return "", nil
	}
	s.log.Warn("the session's ports were in use by something else; it has new ones",
		"was", prev.First, "now", p.First, "count", p.Count)
	return fmt.Sprintf("Ports %d-%d were in use by something else: this session's ports are now %d-%d ($AGENTMUX_PORT=%d).",
		prev.First, prev.last(), p.First, p.last(), p.First), nil
}

// placeEnvLocked returns the variables that tell the agent where it
// works and which ports are its own. mu must be held.
func (s *Session) placeEnvLocked(branch string) []string {
	dir := s.root
	if w := s.wt.get(); w != nil {
		dir = w.Path
	} else if s.runTree != "" {
		dir = s.runTree
	}
	env := []string{
		EnvRootPath + "=" + s.root, envConductorRootPath + "=" + s.root,
		EnvWorkspacePath + "=" + dir, envConductorWorkspacePath + "=" + dir,
		EnvBranch + "=" + branch,
	}
	if !s.ports.IsZero() {
		port := strconv.Itoa(s.ports.First)
		env = append(env, EnvPort+"="+port, envConductorPort+"="+port)
	}
	return env
}

// branchTimeout bounds the look-up of the workspace's branch: git answers
// it from a file, at once, unless something is badly wrong.
const branchTimeout = 5 * time.Second

// branchOf returns the branch s's agent is told it is on: its worktree's,
// or the one checked out in the workspace, empty when HEAD is detached or
// the workspace is no repository. It may run git, so no lock is held.
func (m *Manager) branchOf(s *Session) string {
	if w := s.wt.get(); w != nil {
		return w.Branch
	}
	if s.runOf != "" {
		if p, err := m.Get(s.runOf); err == nil {
			return m.branchOf(p)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), branchTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "symbolic-ref", "--quiet", "--short", "HEAD")
	cmd.Dir = m.opts.Workspace
	out, err := cmd.Output()
	if err != nil {
		return "" // detached, or no repository: no branch to tell
	}
	return strings.TrimSpace(string(out))
}

// ScriptEnv returns the whole environment of a program started for
// session id beside its agent, such as its setup, run or check script:
// the agent's, with the variables that tell where it works and which
// ports are its own (AGENTMUX_ROOT_PATH and the others above, with
// Conductor's names) as they are now, and the session's tag, so that
// stopping the session stops it too. It may run git, so the caller holds
// no lock of the Manager's.
func (m *Manager) ScriptEnv(id string) ([]string, error) {
	s, err := m.Get(id)
	if err != nil {
		return nil, err
	}
	branch := m.branchOf(s)
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(slices.Clip(s.env), s.placeEnvLocked(branch)...), nil
}
