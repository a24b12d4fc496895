//go:build unix && !linux

package rawio

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Elsewhere the ordinary system calls serve: the monitor thread's wake-up
// this package avoids was measured on Linux only.

func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := unix.Read(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := unix.Write(int(fd), p)
	return max(n, 0), errnoOf(err)
}

func sysIoctlInt(fd uintptr, req uint) (int, syscall.Errno) {
	v, err := unix.IoctlGetInt(int(fd), req)
	return v, errnoOf(err)
}

func errnoOf(err error) syscall.Errno {
	var errno syscall.Errno
	if err != nil && !errors.As(err, &errno) {
		return syscall.EIO
	}
	return errno
}
