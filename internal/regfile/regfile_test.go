package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// blockLimit is how long an open may take before it counts as waiting for
// a FIFO's writer, which never comes here.
const blockLimit = 5 * time.Second

// returnsPromptly runs f and fails the test if it has not returned within
// blockLimit. A blocked f would leak its goroutine, so on failure the
// test opens the FIFO's write end to release it.
func returnsPromptly(t *testing.T, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(blockLimit):
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // unblocks the reader's open
		if err == nil {
			w.Close()
		}
		<-done
		t.Fatalf("still blocked after %s on a FIFO with no writer", blockLimit)
		return nil
	}
}

func TestFIFOIsRefusedWithoutBlocking(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "status.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	err := returnsPromptly(t, fifo, func() error {
		f, fi, err := Open(fifo)
		if f != nil || fi != nil {
			f.Close()
			t.Error("Open of a FIFO returned a file")
		}
		return err
	})
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open of a FIFO: %v, want ErrNotRegular", err)
	}
	err = returnsPromptly(t, fifo, func() error {
		_, err := Read(fifo)
		return err
	})
	if !errors.Is(err, ErrNotRegular) {
		t.Errorf("Read of a FIFO: %v, want ErrNotRegular", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.md")
	if err := os.WriteFile(file, []byte("# hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, fi, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi.Size() != 8 || !fi.Mode().IsRegular() {
		t.Errorf("Open: info %v size %d", fi.Mode(), fi.Size())
	}
	if b, err := Read(file); err != nil || string(b) != "# hello\n" {
		t.Errorf("Read = %q, %v", b, err)
	}

	if _, _, err := Open(dir); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open of a directory: %v, want ErrNotRegular", err)
	}
	if _, err := Read("/dev/null"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Read of a device: %v, want ErrNotRegular", err)
	}
	var pe *fs.PathError
	_, _, err = Open(filepath.Join(dir, "missing"))
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("Open of a missing file: %v, want the open's *fs.PathError", err)
	}
}
