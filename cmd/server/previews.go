package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"

	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/wire"
)

// The ports poller's pace: a look once a portsPoll while a client is
// connected, within a budget of 1/portsShare of a core (lookBudget).
const (
	portsPoll = time.Second
	// portsShare: looks take at most half a percent of a core over time,
	// however many sockets listen or however fast they come and go, so
	// that with the garbage they leave and the connections' messages the
	// poller stays under 1 %. A look at 5,000 listening sockets takes 6
	// to 10 ms of CPU, and they come every 1.5 to 2 seconds; while those
	// sockets churn, 45 to 65 ms, finding a new socket's process reading
	// every process's descriptors, and they come every 10 seconds or so
	// (BenchmarkPoll in ports/). With a few hundred sockets, as in
	// practice, a look takes well under 5 ms and comes every second.
	portsShare = 200
	// portsBurst is the look time the poller may save up: the first look,
	// which finds every socket's process (some 80 ms with 5,000), does
	// not hold the next one back. Small, as it is also what looks may
	// take at once beyond the share when sockets start to churn.
	portsBurst = 250 * time.Millisecond
)

// lookBudget is the CPU time the ports poller may spend on looks: it
// grows by 1/portsShare of the time that passes, up to portsBurst, and
// each look spends what it cost. Over any stretch of time the looks take
// at most portsBurst plus 1/portsShare of it, and the last look, which
// may overrun the budget it began within. The zero value is a full
// budget.
type lookBudget struct {
	left time.Duration // below 0 once looks have run ahead
	at   time.Time     // when left was last brought up to date
}

func (b *lookBudget) refill(now time.Time) {
	if b.at.IsZero() {
		b.left = portsBurst
	} else {
		b.left = min(portsBurst, b.left+now.Sub(b.at)/portsShare)
	}
	b.at = now
}

// spend pays for a look that took took and ended at now.
func (b *lookBudget) spend(now time.Time, took time.Duration) {
	b.refill(now)
	b.left -= took
}

// wait returns how long from now until the budget allows a look.
func (b *lookBudget) wait(now time.Time) time.Duration {
	b.refill(now)
	return max(0, -b.left*portsShare)
}

// ownPorts are the ports agentmux itself listens on: never previewed.
type ownPorts struct {
	mu    sync.Mutex
	ports []int
}

func (o *ownPorts) add(addr net.Addr) {
	if a, ok := addr.(*net.TCPAddr); ok {
		o.mu.Lock()
		o.ports = append(o.ports, a.Port)
		o.mu.Unlock()
	}
}

func (o *ownPorts) has(port int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Contains(o.ports, port)
}

// handler is everything the main listener serves: the previews on their
// own origins, and agentmux on its.
func (s *server) handler() http.Handler { return s.previews.Split(s.newRouter()) }

// portView is a listening port as GET /api/ports shows it: with the
// address of its preview, for the page that asked.
type portView struct {
	ports.Port
	URL string `json:"url"`
}

// listPorts answers GET /api/ports: the same bounded listing as
// ports.changed, each port with its preview's address.
func (s *server) listPorts(c echo.Context) error {
	list, err := s.ports.List()
	if err != nil {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	shown := ports.Bound(list, preview.MinPort)
	req := c.Request()
	views := make([]portView, 0, len(shown.Ports))
	for _, p := range shown.Ports {
		views = append(views, portView{Port: p, URL: s.previews.URL(req.Host, p.Port, req.TLS != nil)})
	}
	return c.JSON(http.StatusOK, map[string]any{"ports": views, "more": shown.More})
}

// signInPreview answers POST /api/ports/:port/preview with the address
// that opens port's preview signed in: a ticket good once, within a
// minute, minted only for a page of agentmux's own origin (the guard's
// check, as for every POST).
func (s *server) signInPreview(c echo.Context) error {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < preview.MinPort || port > 65535 {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage,
			fmt.Sprintf("port %q: want a port from %d to 65535", clip(c.Param("port")), preview.MinPort))
	}
	if s.own.has(port) {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("port %d is agentmux's own", port))
	}
	req := c.Request()
	u, err := s.previews.SignInURL(req.Host, port, req.TLS != nil)
	if err != nil {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	return c.JSON(http.StatusOK, map[string]string{"url": u})
}

// watchPorts tells the hub what a browser is shown of the listening
// ports, looking while any client is connected and not at all otherwise:
// once a portsPoll, and at once when a connection opens and the hub has
// nothing to send it, as the budget allows. The hub tells the clients
// what changed. It runs until ctx ends.
func (s *server) watchPorts(ctx context.Context) {
	t := time.NewTimer(portsPoll)
	defer t.Stop()
	var budget lookBudget
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.hub.PortsWanted():
			t.Reset(budget.wait(time.Now()))
			continue
		case <-t.C:
		}
		if s.hub.Connections() == 0 {
			t.Reset(portsPoll)
			continue
		}
		cost := s.lookAtPorts()
		now := time.Now()
		budget.spend(now, cost)
		t.Reset(max(portsPoll, budget.wait(now)))
	}
}

// lookAtPorts lists the ports, tells the hub what a browser is shown of
// them, and returns the CPU time that took. It runs on a thread of its
// own, whose CPU clock counts the look alone: on a busy machine the
// look's wall time is mostly waiting for a CPU, which costs nothing, and
// would hold the next look back for it (a look of 10 ms that waited
// 400 ms would delay the next by 40 s).
func (s *server) lookAtPorts() time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, wall := threadCPU(), time.Now()
	if list, err := s.ports.List(); err != nil {
		s.log.Debug("ports not listed", "err", err)
	} else {
		s.hub.OnPorts(ports.Bound(list, preview.MinPort))
	}
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
