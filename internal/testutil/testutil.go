// Package testutil holds what the tests of several packages share.
package testutil

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every few milliseconds and fails the test when it
// does not hold within timeout. Tests wait on conditions, never on sleeps
// that guess how long something takes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

// SyncBuffer is a bytes.Buffer that a logger's goroutine may write while
// the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// ErrorKind fails the test unless err wraps kind and its message mentions
// each of mentions: an error must say what went wrong in words, not only
// be of the right kind.
func ErrorKind(t testing.TB, err, kind error, mentions ...string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want one wrapping %v", err, kind)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}
