//go:build !linux

package pty

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// errNotLinux is what every entry point returns away from Linux.
var errNotLinux = fmt.Errorf("agentmux runs agents in Linux pseudo-terminals only, not on %s (run it in the container, docs/container.md): %w", runtime.GOOS, errors.ErrUnsupported)

// Process is a child running in a pseudo-terminal. Away from Linux none
// is ever made: Start fails.
type Process struct{}

// Start returns an error wrapping errors.ErrUnsupported: only Linux is
// supported.
func Start(opts Options) (*Process, error) {
	return nil, fmt.Errorf("start pty: %w", errNotLinux)
}

// SignalTagged returns an error wrapping errors.ErrUnsupported: only Linux
// is supported.
func SignalTagged(tag string, sig syscall.Signal) error {
	return fmt.Errorf("signal tagged processes: %w", errNotLinux)
}
