package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/wire"
)

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
		if s.hub.Connections() == 0 {
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
