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

// portsPoll is how often the listening ports are looked at while a
// client is connected, unless a look costs more than portsRest allows.
const portsPoll = time.Second

// portsRest is how many times as long as a look took the poller waits
// before the next: it takes at most 1 % of a core, however many sockets
// listen or however fast they come and go. A look at 5,000 listening
// sockets takes a few milliseconds, so it is the rule only when they
// churn: finding the process of a new socket reads every process's
// descriptors (BenchmarkPoll in ports/).
const portsRest = 99

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
// that opens port's preview, signed in when there is a token: a ticket
// good for a minute, minted only for a page of agentmux's own origin.
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
	return c.JSON(http.StatusOK, map[string]string{"url": s.previews.SignInURL(req.Host, port, req.TLS != nil)})
}

// watchPorts tells the hub what a browser is shown of the listening
// ports, looking while any client is connected and not at all otherwise:
// once a portsPoll, at once when a connection opens and the hub has
// nothing to send it, and never sooner than portsRest times as long as
// the last look took after it. The hub tells the clients what changed. It
// runs until ctx ends.
func (s *server) watchPorts(ctx context.Context) {
	t := time.NewTimer(portsPoll)
	defer t.Stop()
	var earliest time.Time // the soonest the next look may begin
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.hub.PortsWanted():
			t.Reset(time.Until(earliest))
			continue
		case <-t.C:
		}
		if s.hub.Connections() == 0 {
			t.Reset(portsPoll)
			continue
		}
		start := time.Now()
		if list, err := s.ports.List(); err != nil {
			s.log.Debug("ports not listed", "err", err)
		} else {
			s.hub.OnPorts(ports.Bound(list, preview.MinPort))
		}
		took := time.Since(start)
		earliest = time.Now().Add(portsRest * took)
		t.Reset(max(portsPoll, portsRest*took))
	}
}
