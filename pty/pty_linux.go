//go:build linux

package pty

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/procfs"
)

// Process is a child running in a pseudo-terminal. Its methods are safe for
// concurrent use, but only one goroutine should read at a time.
type Process struct {
	master *os.File
	raw    syscall.RawConn // master's, for what os.File has no method for
	cmd    *exec.Cmd
	tag    string

	// done is closed by the one goroutine that waits on the child, after
	// status and waitErr are set; they are read-only from then on.
	done    chan struct{}
	status  ExitStatus
	waitErr error

	// fdMu keeps Close from closing the master while Resize uses its raw
	// descriptor, which could by then name another file. closed is guarded
	// by it.
	fdMu   sync.RWMutex
	closed bool
}

// Start starts opts.Argv in a new pseudo-terminal of the given size, in a new
// session with the terminal as its controlling tty, so the child's pid is
// also its process group id.
func Start(opts Options) (*Process, error) {
	if len(opts.Argv) == 0 || opts.Argv[0] == "" {
		return nil, errors.New("start pty: empty command")
	}
	cols, rows := opts.Cols, opts.Rows
	if cols == 0 {
		cols = 80
	}
	if rows == 0 {
		rows = 24
	}
	defaultSignals.Do(restoreIgnoredSignals)
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	cmd.Dir = opts.Dir
	cmd.Env = opts.Env
	// StartWithSize sets Setsid and Setctty; adding Setpgid would fail with
	// EPERM because a session leader cannot change its group.
	started, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		return nil, fmt.Errorf("start pty %q: %w", opts.Argv[0], err)
	}
	master, raw, err := pollable(started)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("start pty %q: %w", opts.Argv[0], err)
	}
	p := &Process{master: master, raw: raw, cmd: cmd, tag: opts.Tag, done: make(chan struct{})}
	go p.wait()
	return p, nil
}

// pollable returns the master as a non-blocking file on Go's network
// poller, with its raw connection, and closes f. creack/pty leaves the master blocking (its ioctls
// go through Fd, which switches a file to blocking mode), and a blocking
// read holds an OS thread and, until the runtime notices, a scheduler slot:
// the goroutines that carry output to clients then wait for a CPU the PTY
// reader is not using. On the poller a waiting read parks like a socket's.
func pollable(f *os.File) (*os.File, syscall.RawConn, error) {
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil, fmt.Errorf("make pty pollable: %w", err)
	}
	dup, dupErr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, nil, fmt.Errorf("make pty pollable: %w", err)
	}
	if dupErr != nil {
		return nil, nil, fmt.Errorf("make pty pollable: dup: %w", dupErr)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return nil, nil, fmt.Errorf("make pty pollable: %w", err)
	}
	master := os.NewFile(uintptr(dup), f.Name())
	raw, err := master.SyscallConn()
	if err != nil {
		_ = master.Close()
		return nil, nil, fmt.Errorf("make pty pollable: %w", err)
	}
	return master, raw, nil
}

// wait is the only caller of cmd.Wait. It publishes the result by closing
// done, so any number of goroutines can learn of the exit.
func (p *Process) wait() {
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		err = nil
	}
	p.status = statusOf(p.cmd.ProcessState)
	p.waitErr = err
	close(p.done)
}

func statusOf(ps *os.ProcessState) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// Pid returns the child's process id, which is also its process group id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Read reads terminal output. When the last holder of the slave side closes
// it, Linux reports EIO; Read turns that into io.EOF, as the end of the
// stream is what it means, and so is a Close.
func (p *Process) Read(b []byte) (int, error) {
	n, err := p.master.Read(b)
	if err != nil && (errors.Is(err, syscall.EIO) || p.isClosed()) {
		err = io.EOF
	}
	return n, err
}

func (p *Process) isClosed() bool {
	p.fdMu.RLock()
	defer p.fdMu.RUnlock()
	return p.closed
}

// Write writes input to the terminal, as keystrokes. It blocks while the
// terminal's input queue is full, that is while the program is not reading.
func (p *Process) Write(b []byte) (int, error) {
	n, err := p.master.Write(b)
	if err != nil {
		return n, fmt.Errorf("write pty: %w", err)
	}
	return n, nil
}

// TryWrite writes as much of b as the terminal takes now, without
// waiting: it returns how much that was (0, nil when its input queue is
// full). A keystroke then reaches the program without a hand-off to a
// goroutine that may block.
func (p *Process) TryWrite(b []byte) (int, error) {
	var n int
	var writeErr error
	// Returning true from the callback tells the poller not to wait.
	err := p.raw.Write(func(fd uintptr) bool {
		for {
			n, writeErr = unix.Write(int(fd), b)
			if writeErr != unix.EINTR {
				return true
			}
		}
	})
	switch {
	case errors.Is(writeErr, unix.EAGAIN):
		return 0, nil
	case err != nil || writeErr != nil:
		return 0, fmt.Errorf("write pty: %w", cmp.Or(err, writeErr))
	}
	return n, nil
}

// Unread returns how many bytes written to the terminal the program has
// not read yet: what waits in the line discipline's input queue (in
// canonical mode, only complete lines count, as a program reads no
// others). Bytes the kernel is still moving from the master to that queue
// are not counted, so 0 right after a write proves nothing on its own.
//
// The count is only to be had on the slave side, which the server does
// not keep open (holding it would keep Read from ever seeing the end of
// the stream): a descriptor for it is opened from the master for the one
// ioctl, without making the terminal the server's controlling one.
func (p *Process) Unread() (int, error) {
	p.fdMu.RLock()
	defer p.fdMu.RUnlock()
	if p.closed {
		return 0, fmt.Errorf("count unread input: %w", os.ErrClosed)
	}
	var n int
	var ioctlErr error
	err := p.raw.Control(func(fd uintptr) {
		slave, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if errno != 0 {
			ioctlErr = fmt.Errorf("open the slave side: %w", errno)
			return
		}
		defer unix.Close(int(slave))
		n, ioctlErr = unix.IoctlGetInt(int(slave), unix.TIOCINQ)
	})
	if err = cmp.Or(err, ioctlErr); err != nil {
		return 0, fmt.Errorf("count unread input: %w", err)
	}
	return n, nil
}

// Resize sets the terminal size; the kernel sends SIGWINCH to the
// foreground process group.
func (p *Process) Resize(cols, rows uint16) error {
	p.fdMu.RLock()
	defer p.fdMu.RUnlock()
	if p.closed {
		return fmt.Errorf("resize pty: %w", os.ErrClosed)
	}
	// Not pty.Setsize: it would switch the master back to blocking mode.
	rc, err := p.master.SyscallConn()
	if err != nil {
		return fmt.Errorf("resize pty: %w", err)
	}
	var ioctlErr error
	err = rc.Control(func(fd uintptr) {
		ioctlErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err = cmp.Or(err, ioctlErr); err != nil {
		return fmt.Errorf("resize pty: %w", err)
	}
	return nil
}

// Signal sends sig to the child's whole process group, so the tools an agent
// started in the foreground get it too. Signalling a group that has already
// gone is not an error.
func (p *Process) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid(), sig)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", p.Pid(), err)
	}
	return nil
}

// SignalSession sends sig to the child's process group and to every other
// process still in the child's session: background jobs of a job-control
// shell run in groups of their own but stay in the session the terminal
// belongs to. Every descendant of the child gets it too, in a session of
// its own or not, and with a Tag so do the processes that carry the tag.
// Missing processes are not an error.
func (p *Process) SignalSession(sig syscall.Signal) error {
	// The walk comes first: once the signal ends the child, its children
	// are orphans, no longer its descendants.
	members, walkErr := p.members()
	err := p.Signal(sig)
	return cmp.Or(err, signalAll(members, sig), walkErr)
}

// OpenFiles returns the paths that the child, its descendants, the rest of
// its terminal session and, with a Tag, the processes carrying it have
// open and match accepts. It reads /proc; a process that ends meanwhile
// is skipped.
func (p *Process) OpenFiles(match func(path string) bool) ([]string, error) {
	pids, err := p.members()
	var paths []string
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		fds, ferr := os.ReadDir(dir)
		if ferr != nil {
			continue // gone, or not ours
		}
		for _, fd := range fds {
			if target, lerr := os.Readlink(dir + "/" + fd.Name()); lerr == nil && match(target) {
				paths = append(paths, target)
			}
		}
	}
	return paths, err
}

// members lists the child's processes: its descendants, its terminal
// session's, and with a Tag those carrying it. The session and the tag
// each can be shed (setsid, env -i); descent cannot, and it still reaches
// what a process in the middle of the tree started, as long as that
// process lives. What was orphaned (its parent gone) is out of reach here:
// the program that runs Processes adopts it as a child subreaper, and ends
// it when it shuts down.
func (p *Process) members() ([]int, error) {
	all, err := procfs.Processes(procfs.Root)
	if err != nil {
		return nil, err
	}
	sid := p.Pid()
	descends := make(map[int]bool)
	for _, pid := range procfs.Descendants(all, p.Pid()) {
		descends[pid] = true
	}
	return matching(all, func(st procfs.Stat) bool {
		return st.Session == sid || descends[st.PID] || p.tag != "" && hasEnv(st.PID, p.tag)
	}), nil
}

// SignalTagged sends sig to every process whose environment holds tag
// (KEY=VALUE), but this one: what is left of a child started with that
// Tag by an earlier run of this program, say. Missing processes are not
// an error.
func SignalTagged(tag string, sig syscall.Signal) error {
	pids, err := processes(func(st procfs.Stat) bool { return hasEnv(st.PID, tag) })
	return cmp.Or(signalAll(pids, sig), err)
}

func signalAll(pids []int, sig syscall.Signal) error {
	var err error
	for _, pid := range pids {
		if e := syscall.Kill(pid, sig); e != nil && !errors.Is(e, syscall.ESRCH) {
			err = cmp.Or(err, fmt.Errorf("signal process %d: %w", pid, e))
		}
	}
	return err
}

// processes lists the processes, other than this one, that match reports
// true for, given their stat (gopsutil's process tree shells out to pgrep).
func processes(match func(procfs.Stat) bool) ([]int, error) {
	all, err := procfs.Processes(procfs.Root)
	if err != nil {
		return nil, err
	}
	return matching(all, match), nil
}

// matching returns the pids in all, other than this process's, that match
// reports true for.
func matching(all []procfs.Stat, match func(procfs.Stat) bool) []int {
	self := os.Getpid()
	var pids []int
	for _, st := range all {
		if st.PID != self && match(st) {
			pids = append(pids, st.PID)
		}
	}
	return pids
}

// hasEnv reports whether process pid's environment holds entry. Another
// user's processes cannot be read, and are not ours to signal anyway.
func hasEnv(pid int, entry string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if string(kv) == entry {
			return true
		}
	}
	return false
}

// defaultSignals restores, once, the default action of the signals this
// program inherited ignored.
var defaultSignals sync.Once

// restoreIgnoredSignals makes children start with every signal at its
// default action, whatever this program inherited. A signal ignored at
// start-up (under nohup, SIGHUP; in a background job of a script, SIGINT
// and SIGQUIT) stays ignored across exec, so an agent started under a
// nohup'd server would survive its terminal's hangup, and shutdown would
// wait out the grace period for nothing. Go resets a signal to the
// default in a child only when it handles the signal itself: asking for
// it, on a channel never read (deliveries to a full channel are dropped),
// makes it handled here, still without effect on this process.
func restoreIgnoredSignals() {
	var ignored []os.Signal
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
		syscall.SIGPIPE, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU} {
		if signal.Ignored(sig) {
			ignored = append(ignored, sig)
		}
	}
	if len(ignored) > 0 {
		signal.Notify(make(chan os.Signal, 1), ignored...)
	}
}

// Done returns a channel that is closed when the child has exited and been
// reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the child to exit or ctx to end, and reports how it ended.
func (p *Process) Wait(ctx context.Context) (ExitStatus, error) {
	select {
	case <-p.done:
		return p.status, p.waitErr
	case <-ctx.Done():
		return ExitStatus{}, context.Cause(ctx)
	}
}

// Close closes the master side; a Read in progress returns io.EOF. It does
// not stop the child: signal the process group for that, and close after
// the output has been read. Close is idempotent.
func (p *Process) Close() error {
	p.fdMu.Lock()
	defer p.fdMu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.master.Close(); err != nil {
		return fmt.Errorf("close pty: %w", err)
	}
	return nil
}
