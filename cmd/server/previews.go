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
// client is connected.
const portsPoll = time.Second

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

// portView is a listening port as GET /api/ports and ports.changed show
// it: with the address of its preview, for the page that asked.
type portView struct {
	ports.Port
	URL string `json:"url"`
}

// listPorts answers GET /api/ports.
func (s *server) listPorts(c echo.Context) error {
	list, err := s.ports.List()
	if err != nil {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	req := c.Request()
	views := make([]portView, 0, len(list))
	for _, p := range list {
		views = append(views, portView{Port: p, URL: s.previews.URL(req.Host, p.Port, req.TLS != nil)})
	}
	return c.JSON(http.StatusOK, map[string]any{"ports": views})
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

// watchPorts tells every client when the listening ports change, looking
// once a portsPoll while any client is connected and not at all
// otherwise. It runs until ctx ends.
func (s *server) watchPorts(ctx context.Context) {
	t := time.NewTicker(portsPoll)
	defer t.Stop()
	var last []ports.Port
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if s.hub.Connections() == 0 {
			last = nil // a client that comes asks GET /api/ports
			continue
		}
		list, err := s.ports.List()
		if err != nil {
			s.log.Debug("ports not listed", "err", err)
			continue
		}
		if !slices.Equal(list, last) {
			s.hub.OnPorts(list)
			last = list
		}
	}
}
