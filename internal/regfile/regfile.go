// Package regfile opens files that must be regular, for readers that a
// FIFO or a device put in a file's place must not block: a workspace is
// the user's (or an agent's) to fill with anything.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular means the path names something other than a regular file:
// a FIFO, a device, a socket or a directory.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading and returns it with its FileInfo, or
// ErrNotRegular (wrapped with the path) when it is not a regular file.
// O_NONBLOCK makes opening a FIFO or a device return at once instead of
// waiting for a writer; on a regular file it changes nothing. A failed
// open returns os.OpenFile's *fs.PathError as it is (Op "open"), so a
// caller can tell a missing or forbidden file from a failed fstat (Op
// "stat"). The caller closes the file.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return f, fi, nil
}

// Read returns the content of the regular file at path; anything else is
// an error (see Open).
func Read(path string) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
