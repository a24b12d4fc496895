// Package reaper keeps every process this program starts, and everything
// those start, within its reach until it ends them.
//
// Agents start tools that detach: a daemon that calls setsid leaves the
// terminal's session, env -i drops any tag in the environment, and once
// its parent exits the kernel re-parents it to PID 1, where nothing ties
// it to this program any more. Start makes this program a child subreaper
// (prctl(2) PR_SET_CHILD_SUBREAPER): an orphan among its descendants is
// re-parented to it instead, and stays its descendant by the parent chain,
// the one tie a process cannot cut. KillAll follows that chain at shutdown.
//
// Orphans adopted so become this program's children, so they must be
// reaped when they exit, or they stay zombies. A blanket wait4(-1) would
// also take the exit status of the children os/exec started (the agents'
// PTYs, git), and their Wait would fail with ECHILD. Run reaps only the
// zombie children that no pidfd held by this process refers to: since Go
// 1.23, package os opens a pidfd for each process it starts (CLONE_PIDFD)
// and closes it only after Wait has reaped it, so a child with a held
// pidfd is os/exec's, and one without was adopted. Start checks that this
// runtime does hold pidfds; where it does not, nothing is reaped, and
// KillAll still ends everything at shutdown. So every child this program
// starts must come from package os (os/exec included): one started with
// syscall.ForkExec, or by C code, holds no pidfd and would be reaped here.
package reaper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/procfs"
)

// Reaper adopts this program's orphaned descendants, reaps them, and kills
// every descendant at shutdown. Make it with Start; its methods are safe
// for concurrent use.
type Reaper struct {
	log *slog.Logger
	// subreaper reports whether Start made this process a subreaper, so
	// Stop knows there is something to undo.
	subreaper bool
	// canReap reports whether os holds a pidfd for each child it starts,
	// which is what tells adopted children from os/exec's.
	canReap bool

	// mu makes each reaping pass (list zombie children, find the held
	// pidfds, wait4 the rest) one step: two passes at once could both pick
	// the same zombie, and the second wait4 could, after the pid was
	// reused, reach a child that is not adopted.
	mu sync.Mutex
}

// pollInterval is how often KillAll looks again for what it killed.
const pollInterval = 5 * time.Millisecond

// Start makes this process a child subreaper and checks whether it can
// reap what it adopts. What does not work is logged, once, and left out:
// without the subreaper an orphan still escapes to PID 1, and without
// pidfds adopted orphans stay zombies until this process exits.
func Start(log *slog.Logger) *Reaper {
	r := &Reaper{log: log}
	was, err := isSubreaper()
	if err == nil && !was {
		err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
		r.subreaper = err == nil
	}
	if err != nil {
		log.Warn("cannot become a child subreaper: processes that agents detach can outlive the server", "err", fmt.Errorf("prctl: %w", err))
	}
	held, err := goHoldsPidfds()
	r.canReap = held
	switch {
	case err != nil:
		log.Warn("cannot tell adopted processes from started ones; adopted ones stay zombies until the server exits", "err", err)
	case !held:
		log.Warn("this system gives no pidfds for started processes, which tell adopted processes from them; adopted ones stay zombies until the server exits")
	}
	return r
}

// Stop gives up the subreaper role Start took, so that orphans go to PID
// 1 again. Call it once Run has returned and KillAll has ended everything
// adopted: what is adopted stays this process's child.
func (r *Reaper) Stop() {
	if !r.subreaper {
		return
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0); err != nil {
		r.log.Warn("stop being a child subreaper", "err", fmt.Errorf("prctl: %w", err))
		return
	}
	r.subreaper = false
}

// isSubreaper reports whether this process already is a child subreaper
// (its own parent made it one, say), which Stop must then leave it.
func isSubreaper() (bool, error) {
	var v int32
	if err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0); err != nil {
		return false, fmt.Errorf("prctl: %w", err)
	}
	return v != 0, nil
}

// goHoldsPidfds reports whether package os holds a pidfd for the
// processes it starts. It asks os to find this process and looks for the
// pidfd that brings: os opens one there exactly when it gives one to each
// child it starts, both hinging on its one check that pidfds work
// (pidfdWorks in os/pidfd_linux.go). The tests check the children's
// directly.
func goHoldsPidfds() (bool, error) {
	self := os.Getpid()
	p, err := os.FindProcess(self)
	if err != nil {
		return false, fmt.Errorf("find this process: %w", err)
	}
	defer p.Release()
	held, err := heldPidfds()
	if err != nil {
		return false, err
	}
	return held[self], nil
}

// heldPidfds returns the pids that this process's pidfds refer to, read
// from /proc/self/fd and /proc/self/fdinfo. A descriptor closed during the
// scan is skipped.
func heldPidfds() (map[int]bool, error) {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, fmt.Errorf("list descriptors: %w", err)
	}
	held := make(map[int]bool)
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err != nil || target != "anon_inode:[pidfd]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		for line := range strings.Lines(string(info)) {
			if v, ok := strings.CutPrefix(line, "Pid:"); ok {
				// -1 once the process is reaped: no child of ours then.
				if pid, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && pid > 0 {
					held[pid] = true
				}
			}
		}
	}
	return held, nil
}

// Run reaps adopted children that have exited, at once and on each
// SIGCHLD, until ctx ends. Without pidfds it returns at once.
func (r *Reaper) Run(ctx context.Context) {
	if !r.canReap {
		return
	}
	// Buffered: a SIGCHLD that comes during a pass is kept, and one pass
	// after it sees every zombie, however many signals were merged.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	defer signal.Stop(sigs)
	for {
		if err := r.reap(); err != nil {
			r.log.Warn("reap adopted processes", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-sigs:
		}
	}
}

// reap waits for each zombie child of this process that no held pidfd
// refers to.
func (r *Reaper) reap() error {
	_, err := r.reapIn()
	return err
}

// reapIn is reap; it also returns the process table it read, for KillAll,
// which then still lists the zombies just reaped.
func (r *Reaper) reapIn() ([]procfs.Stat, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all, err := procfs.Processes(procfs.Root)
	if err != nil {
		return nil, err
	}
	if !r.canReap {
		return all, nil
	}
	self := os.Getpid()
	var zombies []int
	for _, st := range all {
		if st.PPID == self && st.State == 'Z' {
			zombies = append(zombies, st.PID)
		}
	}
	if len(zombies) == 0 {
		return all, nil
	}
	// The pidfds are read after the zombies, not before: a child os/exec
	// starts after the scan of descriptors could already be a zombie in a
	// later list, its pidfd unseen. A zombie in the list has had its
	// pidfd since before it ran, and keeps it until its Wait has reaped it.
	held, err := heldPidfds()
	if err != nil {
		return all, err
	}
	for _, pid := range zombies {
		if held[pid] {
			continue // os/exec's: its Wait reaps it
		}
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.ECHILD):
			// Reaped by the Wait that had held its pidfd until just now.
		case err != nil:
			return all, fmt.Errorf("wait for process %d: %w", pid, err)
		case got == pid:
			if ws.Signaled() {
				r.log.Debug("reaped an adopted process", "pid", pid, "signal", ws.Signal().String())
			} else {
				r.log.Debug("reaped an adopted process", "pid", pid, "code", ws.ExitStatus())
			}
		}
	}
	return all, nil
}

// KillAll sends SIGKILL to every descendant of this process, and again to
// what they start or leave meanwhile, and waits until none is left but
// the zombies os/exec's Waits will reap; the adopted ones it reaps. It
// returns an error naming what is left when ctx ends first. Call it when
// nothing of this program should run any more: it spares nothing.
func (r *Reaper) KillAll(ctx context.Context) error {
	self := os.Getpid()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	killed := make(map[int]bool)
	for {
		// The reaping pass also reads the table this pass works on.
		all, err := r.reapIn()
		if err != nil {
			return fmt.Errorf("kill descendants: %w", err)
		}
		byPID := make(map[int]procfs.Stat, len(all))
		for _, st := range all {
			byPID[st.PID] = st
		}
		var left []int
		for _, pid := range procfs.Descendants(all, self) {
			st := byPID[pid]
			if st.State == 'Z' {
				// Dead, but left to reap while its parent, dying too,
				// has yet to hand it to this process. A zombie child of
				// this process is os/exec's or was just reaped.
				if st.PPID != self && r.canReap {
					left = append(left, pid)
				}
				continue
			}
			// Again on each pass, for what it started meanwhile. A
			// process that exited meanwhile gives ESRCH; one that is
			// not ours to signal (EPERM, a setuid program) stays in
			// the list until ctx ends, and the error names it.
			if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
				killed[pid] = true
			}
			left = append(left, pid)
		}
		if len(left) == 0 {
			if len(killed) > 0 {
				r.log.Info("killed processes left behind", "count", len(killed), "pids", slices.Sorted(maps.Keys(killed)))
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill descendants: processes %v still there: %w", left, context.Cause(ctx))
		case <-t.C:
		}
	}
}
