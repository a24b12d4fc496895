// Package ports finds the TCP ports listening inside the container that a
// browser could be shown: on the loopback address or on every address,
// each with the process that listens and, for a process an agent started,
// its session.
package ports

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/internal/procfs"
)

// Port is one listening TCP port.
type Port struct {
	Port int `json:"port"`
	// PID and Command are the listening process's, when it can be read
	// (another user's cannot): 0 and "" otherwise.
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
	// SessionID is the session whose agent started the process, from the
	// session id every process of a session carries in its environment.
	SessionID string `json:"sessionId,omitempty"`
}

// sessionEnv is the environment entry that names a process's session
// (sessions.EnvSessionID, which this package does not import to stay
// below it).
const sessionEnv = "AGENTMUX_SESSION_ID="

// stateListen is a socket's state in /proc/net/tcp when it listens.
const stateListen = "0A"

// Lister lists the listening ports under root (procfs.Root, or a fixture
// laid out the same way), leaving out those of process self (agentmux's
// own listeners). It remembers which process holds each listening socket:
// finding that out walks every process's descriptors, which a server
// looking once a second while a client is connected did for nothing but
// the same answer, about 1 % of a core on a busy machine. A listing whose
// sockets are all known, their processes still there, asks the kernel
// for the listening sockets and looks once at each process that holds
// them. It is safe for concurrent use.
type Lister struct {
	root string
	self int

	// mu protects the fields below; a listing holds it from the owners'
	// lookup to its answer.
	mu sync.Mutex
	// diag reports that listening sockets are asked of the kernel
	// (diag.go) rather than read from root's tables: root is the real
	// /proc, and sock_diag has not been refused.
	diag   bool
	owners map[uint64]owner // socket inode -> who held it when first seen
	// last is the last listing's answer: the same while no socket came,
	// went or changed hands.
	last []Port
}

// owner is a socket's process, as describe found it; pid 0 when none could
// be read (another user's, or gone mid-walk), looked for again after
// unknownRetry.
type owner struct {
	pid              int
	command, session string
	found            time.Time
}

// unknownRetry is how long a socket whose process could not be read stays
// so before the descriptors are walked for it again: another user's
// listener (a root sshd) would otherwise cost the walk every time.
const unknownRetry = 30 * time.Second

// NewLister returns a Lister of root's ports, leaving out self's.
func NewLister(root string, self int) *Lister {
	return &Lister{root: root, self: self, diag: root == procfs.Root, owners: make(map[uint64]owner)}
}

// List returns the listening ports, lowest first.
func (l *Lister) List() ([]Port, error) {
	inodes, err := l.listening()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.learnOwners(inodes) && l.last != nil {
		return slices.Clone(l.last), nil
	}
	own := make(map[int]bool)
	byPort := make(map[int]Port, len(inodes))
	for inode, port := range inodes {
		o := l.owners[inode]
		if o.pid != 0 && o.pid == l.self {
			own[port] = true
			continue
		}
		p := Port{Port: port, PID: o.pid, Command: o.command, SessionID: o.session}
		// A port listened on twice (IPv4 and IPv6, SO_REUSEPORT) is one
		// port: keep the one whose process is known, the lowest pid of
		// those, so that it does not flip from one listing to the next.
		if prev, ok := byPort[port]; !ok || prev.PID == 0 || p.PID != 0 && p.PID < prev.PID {
			byPort[port] = p
		}
	}
	out := make([]Port, 0, len(byPort))
	for port, p := range byPort {
		if !own[port] {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Port) int { return a.Port - b.Port })
	l.last = out
	return slices.Clone(out), nil
}

// listening returns the listening sockets a browser could reach: socket
// inode -> port.
func (l *Lister) listening() (map[uint64]int, error) {
	l.mu.Lock()
	diag := l.diag
	inodes := make(map[uint64]int, len(l.owners)) // as many as last time, most likely
	l.mu.Unlock()
	if diag {
		err := diagListening(inodes)
		if err == nil {
			return inodes, nil
		}
		// A sandbox without sock_diag: the tables, from now on.
		l.mu.Lock()
		l.diag = false
		l.mu.Unlock()
		clear(inodes)
	}
	for _, name := range []string{"tcp", "tcp6"} {
		if err := listening(filepath.Join(l.root, "net", name), inodes); err != nil {
			return nil, err
		}
	}
	return inodes, nil
}

// learnOwners brings l.owners to the sockets in inodes: it keeps the
// owners it knows, and walks the processes' descriptors for the sockets
// that are new or whose process has gone (a child that inherited the
// socket may hold it now). Sockets no longer listening are forgotten.
// Each process is looked at once however many sockets it holds: a server
// of thousands of listeners costs one look, not thousands. It reports
// whether anything changed: when nothing did, l.owners holds the same
// sockets, with the same owners, as after the last call, so the last
// listing stands. mu must be held.
func (l *Lister) learnOwners(inodes map[uint64]int) (changed bool) {
	alive := make(map[int]bool)
	unknown := make(map[uint64]int)
	now := time.Now()
	for inode, port := range inodes {
		o, ok := l.owners[inode]
		switch {
		case !ok:
			unknown[inode] = port
		case o.pid == 0:
			if now.Sub(o.found) > unknownRetry {
				unknown[inode] = port
			}
		default:
			a, seen := alive[o.pid]
			if !seen {
				a = l.alive(o.pid)
				alive[o.pid] = a
			}
			if !a {
				unknown[inode] = port
			}
		}
	}
	for inode := range l.owners {
		if _, ok := inodes[inode]; !ok {
			delete(l.owners, inode)
			changed = true
		}
	}
	if len(unknown) == 0 {
		return changed
	}
	pids := socketOwners(l.root, unknown)
	described := make(map[int]owner)
	for inode := range unknown {
		pid := pids[inode]
		o, ok := described[pid]
		if !ok {
			o = owner{pid: pid, found: now}
			if pid != 0 {
				o.command, o.session = describe(l.root, pid)
			}
			described[pid] = o
		}
		l.owners[inode] = o
	}
	return true
}

// alive reports whether process pid still exists.
func (l *Lister) alive(pid int) bool {
	_, err := os.Stat(filepath.Join(l.root, strconv.Itoa(pid)))
	return err == nil
}

// listening adds to inodes the listening sockets of one /proc/net table
// whose address a browser on this machine could reach: loopback or any.
func listening(path string, inodes map[uint64]int) error {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil // no IPv6
	}
	if err != nil {
		return fmt.Errorf("list ports: %w", err)
	}
	defer f.Close()
	return parseTable(f, inodes)
}

// parseTable reads a /proc/net/tcp{,6} table.
func parseTable(r io.Reader, inodes map[uint64]int) error {
	sc := bufio.NewScanner(r)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != stateListen {
			continue
		}
		addr, portHex, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil || port == 0 || !reachable(tableAddr(addr)) {
			continue
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			continue
		}
		inodes[inode] = int(port)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("list ports: %w", err)
	}
	return nil
}

// tableAddr decodes a table's hex address. The kernel writes it as 32-bit
// words in host order (little endian here).
func tableAddr(hexAddr string) net.IP {
	b, err := hex.DecodeString(hexAddr)
	if err != nil || len(b)%4 != 0 {
		return nil
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return net.IP(b)
}

// reachable reports whether a browser on this machine could reach a
// listener on ip: loopback, or every address.
func reachable(ip net.IP) bool { return ip.IsLoopback() || ip.IsUnspecified() }

// socketOwners maps the sockets in inodes to a process that holds them,
// by reading the descriptors of every process it may read, until each
// socket is found.
func socketOwners(root string, inodes map[uint64]int) map[uint64]int {
	owners := make(map[uint64]int)
	if len(inodes) == 0 {
		return owners
	}
	procs, err := os.ReadDir(root)
	if err != nil {
		return owners
	}
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fdDir := filepath.Join(root, d.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			num, ok := strings.CutPrefix(link, "socket:[")
			if !ok {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(num, "]"), 10, 64)
			if err != nil {
				continue
			}
			if _, ok := inodes[inode]; ok {
				if _, seen := owners[inode]; !seen {
					owners[inode] = pid
				}
			}
		}
		if len(owners) == len(inodes) {
			break
		}
	}
	return owners
}

// describe returns a process's command name and its session, as far as
// they can be read.
func describe(root string, pid int) (command, session string) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	if line, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
		if st, err := procfs.ParseStat(line); err == nil {
			command = st.Comm
		}
	}
	if env, err := os.ReadFile(filepath.Join(dir, "environ")); err == nil {
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if id, ok := bytes.CutPrefix(kv, []byte(sessionEnv)); ok {
				if isSessionID(id) {
					session = string(id)
				}
				break
			}
		}
	}
	return command, session
}

// maxSessionID is the longest session id believed: any process may set
// the variable, and what a listing carries must stay small (MaxListed).
// agentmux's ids are UUIDs, 36 bytes.
const maxSessionID = 64

// isSessionID reports whether id could be a session's: at most
// maxSessionID letters, digits and dashes.
func isSessionID(id []byte) bool {
	if len(id) == 0 || len(id) > maxSessionID {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
