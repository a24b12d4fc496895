package ports_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/wire"
)

// pollListeners is how many sockets listen during BenchmarkPoll: as many
// as the security review's flood.
const pollListeners = 5000

// cpuTime is the CPU this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPoll is one look of the ports poller at pollListeners
// listening sockets held by another process of the test binary
// (PORTS_TEST_LISTENERS, see TestMain), as the server makes once a second
// while a client is connected: the listing, the bound, the change since
// the last look and, when there is one, its message. churn is how many
// sockets are replaced before each look (the review replaced one every
// 0.2 s). cpu-ns/op, this process's CPU time per look, is what one look
// a second costs: 10,000,000 is 1 % of a core.
func BenchmarkPoll(b *testing.B) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PORTS_TEST_LISTENERS="+strconv.Itoa(pollListeners))
	held := testutil.StartListeners(b, cmd)
	for _, churn := range []int{0, 5} {
		b.Run(fmt.Sprintf("churn=%d", churn), func(b *testing.B) {
			l := ports.NewLister(procfs.Root, os.Getpid())
			var last ports.Listing
			poll := func() int {
				list, err := l.List()
				if err != nil || len(list) < pollListeners {
					b.Fatalf("listed %d ports (%v), want at least %d", len(list), err, pollListeners)
				}
				now := ports.Bound(list, preview.MinPort)
				if now.Equal(last) {
					return 0
				}
				msg := wire.PortsMessage{Type: wire.TypePortsChanged, More: now.More}
				msg.Added, msg.Removed = ports.Diff(last.Ports, now.Ports)
				enc, err := wire.Marshal(msg)
				if err != nil {
					b.Fatal(err)
				}
				last = now
				return len(enc)
			}
			poll()
			var cpu time.Duration
			sent := 0
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				if churn > 0 {
					held.Replace(b, churn)
				}
				b.StartTimer()
				start := cpuTime(b)
				sent += poll()
				cpu += cpuTime(b) - start
			}
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(sent)/float64(b.N), "sent-B/op")
		})
	}
}
