package main

import (
	"context"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
)

// ownPorts are the ports agentmux itself listens on: never previewed.
type ownPorts struct {
	// mu protects ports: the listeners add theirs as they open while
	// requests ask.
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

// watchPorts tells collab what a browser is shown of the listening
// ports, looking while any client is connected and not at all otherwise:
// once a ports.PollEvery, and at once when a client joins and collab has
// nothing to send it, as the looks' budget allows (ports.Budget). Collab
// tells the clients what changed. It runs until ctx ends.
func (s *server) watchPorts(ctx context.Context) {
	t := time.NewTimer(ports.PollEvery)
	defer t.Stop()
	var budget ports.Budget
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.app.PortsWanted():
			t.Reset(budget.Wait(time.Now()))
			continue
		case <-t.C:
		}
		if !s.app.Watched() {
			t.Reset(ports.PollEvery)
			continue
		}
		cost := ports.LookCPU(s.lookAtPorts)
		now := time.Now()
		budget.Spend(now, cost)
		t.Reset(max(ports.PollEvery, budget.Wait(now)))
	}
}

// lookAtPorts lists the ports and tells collab what a browser is shown
// of them.
func (s *server) lookAtPorts() {
	list, err := s.ports.List()
	if err != nil {
		s.log.Debug("ports not listed", "err", err)
		return
	}
	s.app.OnPorts(ports.Bound(list, preview.MinPort))
}
