package main

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/httpapi"
)

// newRouter returns the HTTP routes: the API, the WebSocket and the UI,
// all behind the guard.
func (s *server) newRouter() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = httpapi.ErrorHandler(s.log)
	e.Use(s.guard.Middleware) // before any route: it must wrap them all
	s.api.Register(e.Group("/api"))
	e.GET("/ws", func(c echo.Context) error {
		s.hub.ServeHTTP(c.Response(), c.Request())
		return nil // the hub answered, upgrade or error alike
	})
	e.GET("/*", echo.WrapHandler(s.assets))
	return e
}

// handler is everything the main listener serves: the previews on their
// own origins, and agentmux on its.
func (s *server) handler() http.Handler { return s.previews.Split(s.newRouter()) }

// allowedHosts is what the guard answers without a token besides
// localhost and IP addresses: --allowed-hosts and the hosts of
// --allowed-origins.
func allowedHosts(cfg config) []string {
	allowed := slices.Clone(cfg.AllowedHosts)
	for _, o := range cfg.AllowedOrigins {
		if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
			allowed = append(allowed, strings.ToLower(u.Hostname()))
		}
	}
	return allowed
}
