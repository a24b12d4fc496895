package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/wire"
)

// PortView is a listening port as GET /api/ports shows it: with the
// address of its preview, for the page that asked.
type PortView struct {
	ports.Port
	URL string `json:"url"`
}

// listPorts answers GET /api/ports: the same bounded listing as
// ports.changed, each port with its preview's address.
func (a *API) listPorts(c echo.Context) error {
	list, err := a.opts.Ports.List()
	if err != nil {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	shown := ports.Bound(list, preview.MinPort)
	req := c.Request()
	views := make([]PortView, 0, len(shown.Ports))
	for _, p := range shown.Ports {
		views = append(views, PortView{Port: p, URL: a.opts.Previews.URL(req.Host, p.Port, req.TLS != nil)})
	}
	return c.JSON(http.StatusOK, PortsReply{Ports: views, More: shown.More})
}

// signInPreview answers POST /api/ports/:port/preview with the address
// that opens port's preview signed in: a ticket good once, within a
// minute, minted only for a page of agentmux's own origin (the guard's
// check, as for every POST).
func (a *API) signInPreview(c echo.Context) error {
	port, err := strconv.Atoi(c.Param("port"))
	if err != nil || port < preview.MinPort || port > 65535 {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage,
			fmt.Sprintf("port %q: want a port from %d to 65535", clip(c.Param("port")), preview.MinPort))
	}
	if a.opts.IsOwnPort(port) {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("port %d is agentmux's own", port))
	}
	req := c.Request()
	u, err := a.opts.Previews.SignInURL(req.Host, port, req.TLS != nil)
	if err != nil {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	return c.JSON(http.StatusOK, URLReply{URL: u})
}
