package rawio_test

import (
	"bytes"
	"io"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/internal/rawio"
)

// TryWrite takes what fits and never waits; IoctlInt reads how much waits.
func TestTryWriteNeverWaits(t *testing.T) {
	r, _, rrc, wrc := pipe(t)
	chunk := bytes.Repeat([]byte("k"), 4096)
	total := 0
	for {
		n, err := rawio.TryWrite(wrc, chunk)
		if err != nil {
			t.Fatalf("TryWrite: %v", err)
		}
		total += n
		if n == 0 {
			break
		}
		if total > 64<<20 {
			t.Fatal("a pipe took 64 MiB without filling")
		}
	}
	queued, err := rawio.IoctlInt(rrc, unix.TIOCINQ)
	if err != nil || queued != total {
		t.Fatalf("IoctlInt(TIOCINQ) = %d, %v; want the %d bytes written", queued, err, total)
	}
	if _, err := io.ReadFull(r, make([]byte, 8192)); err != nil {
		t.Fatal(err)
	}
	if n, err := rawio.TryWrite(wrc, chunk); err != nil || n == 0 {
		t.Fatalf("TryWrite once the reader made room = %d, %v; want some taken", n, err)
	}
}
