package rawio

import (
	"syscall"
	"unsafe"
)

// The descriptors this package is given are non-blocking, so these calls
// return at once: the case syscall.RawSyscall is for.

func sysRead(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

func sysWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

func sysIoctlInt(fd uintptr, req uint) (int, syscall.Errno) {
	var v int32 // the kernel writes an int
	_, _, e := syscall.RawSyscall(syscall.SYS_IOCTL, fd, uintptr(req), uintptr(unsafe.Pointer(&v)))
	return int(v), e
}
