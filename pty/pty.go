// Package pty runs one process in a pseudo-terminal.
//
// A Process is the master side of the terminal plus the child running on
// the slave side. It knows nothing about sessions, subscribers or the
// network: it starts a command at a size, reads and writes the terminal,
// resizes it, signals the child's process group and reports how the child
// ended.
//
// The master is kept on Go's network poller, so a waiting Read parks its
// goroutine instead of holding an OS thread. A Read ends with io.EOF when
// every holder of the slave side has gone; stopping a Process means
// signalling its process group so that happens, not closing the master
// under a reader, which would lose the output still in the terminal.
//
// It works on Linux only (pty_linux.go): it counts unread input with
// Linux's ioctls and finds a session's processes in /proc. Elsewhere
// Start returns an error that says so (pty_other.go).
package pty

import "syscall"

// Options describe the command to start. Argv must name at least the
// program; the other fields have usable zero values.
type Options struct {
	// Argv is the program followed by its arguments. The program is looked
	// up on PATH when it contains no slash.
	Argv []string
	// Dir is the working directory; empty means the server's own.
	Dir string
	// Env is the complete environment; nil means the server's own.
	Env []string
	// Cols and Rows are the initial size; zero means 80x24.
	Cols, Rows uint16
	// Tag, when not empty, is an entry of Env (KEY=VALUE) that marks this
	// child and everything it starts, which inherit it: SignalSession also
	// signals the processes that carry it, even those that left the
	// terminal's session (a daemon that called setsid).
	Tag string
}

// ExitStatus tells how a process ended.
type ExitStatus struct {
	// Code is the exit code, or 128+signal when a signal killed the process,
	// as a shell reports it.
	Code int
	// Signal is the signal that killed the process, or 0.
	Signal syscall.Signal
}
