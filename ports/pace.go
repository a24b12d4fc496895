package ports

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// The pace of a poller of the listening ports: a look once a PollEvery
// while someone watches, within a budget of 1/lookShare of a core
// (Budget).
const (
	// PollEvery is how often a poller looks while it may.
	PollEvery = time.Second
	// lookShare: looks take at most half a percent of a core over time,
	// however many sockets listen or however fast they come and go, so
	// that with the garbage they leave and the messages that tell what
	// changed a poller stays under 1 %. A look at 5,000 listening sockets
	// takes 6 to 10 ms of CPU, and they come every 1.5 to 2 seconds;
	// while those sockets churn, 45 to 65 ms, finding a new socket's
	// process reading every process's descriptors, and they come every
	// 10 seconds or so (BenchmarkPoll). With a few hundred sockets, as
	// in practice, a look takes well under 5 ms and comes every second.
	lookShare = 200
	// lookBurst is the look time a poller may save up: the first look,
	// which finds every socket's process (some 80 ms with 5,000), does
	// not hold the next one back. Small, as it is also what looks may
	// take at once beyond the share when sockets start to churn.
	lookBurst = 250 * time.Millisecond
)

// Budget is the CPU time a poller may spend on looks: it grows by
// 1/lookShare of the time that passes, up to lookBurst, and each look
// spends what it cost (LookCPU). Over any stretch of time the looks take
// at most lookBurst plus 1/lookShare of it, and the last look, which may
// overrun the budget it began within. The zero value is a full budget;
// it is not safe for concurrent use (a poller owns its own).
type Budget struct {
	left time.Duration // below 0 once looks have run ahead
	at   time.Time     // when left was last brought up to date
}

func (b *Budget) refill(now time.Time) {
	if b.at.IsZero() {
		b.left = lookBurst
	} else {
		b.left = min(lookBurst, b.left+now.Sub(b.at)/lookShare)
	}
	b.at = now
}

// Spend pays for a look that took took and ended at now.
func (b *Budget) Spend(now time.Time, took time.Duration) {
	b.refill(now)
	b.left -= took
}

// Wait returns how long from now until the budget allows a look.
func (b *Budget) Wait(now time.Time) time.Duration {
	b.refill(now)
	return max(0, -b.left*lookShare)
}

// LookCPU runs look and returns the CPU time it took. It runs on a
// thread of its own, whose CPU clock counts the look alone: on a busy
// machine a look's wall time is mostly waiting for a CPU, which costs
// nothing, and would hold the next look back for it (a look of 10 ms
// that waited 400 ms would delay the next by 40 s).
func LookCPU(look func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, wall := threadCPU(), time.Now()
	look()
	if end := threadCPU(); start > 0 && end > 0 {
		return end - start
	}
	return time.Since(wall) // no thread clock: the wall time, which is more
}

// threadCPU returns the CPU time the calling thread has used; 0 when it
// cannot be read.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
