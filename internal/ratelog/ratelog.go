// Package ratelog keeps a log line that anyone outside can cause (a
// refused request, an oversized frame) to at most one per interval, so a
// client in a loop cannot flood the log, while the count of what was left
// out still reaches it.
package ratelog

import (
	"sync"
	"time"
)

// Limiter allows one line per Every. Its zero value allows every line;
// it is safe for concurrent use.
type Limiter struct {
	// Every is the least time between two lines.
	Every time.Duration

	// mu protects last and suppressed.
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Allow reports whether a line may be logged now and, when it may, how
// many were left out since the last one.
func (l *Limiter) Allow() (ok bool, suppressed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.suppressed++
		return false, 0
	}
	suppressed, l.suppressed = l.suppressed, 0
	l.last = now
	return true, suppressed
}
