// Command server is agentmux: it runs coding agents in pseudo-terminals and
// serves them, with a browser UI, over HTTP and one WebSocket.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ws"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(run(sigs, os.Args[1:], os.Getenv, os.Stderr, nil))
}

// server is the wired application.
type server struct {
	cfg     config
	log     *slog.Logger
	mgr     *sessions.Manager
	hub     *ws.Hub
	started time.Time
}

func newServer(cfg config, log *slog.Logger) (*server, error) {
	profile, err := defaultProfile(cfg, log)
	if err != nil {
		return nil, err
	}
	// The manager reports events to the hub, which needs the manager to
	// find sessions; no event can fire before hub is set, since no session
	// exists until the server serves.
	var hub *ws.Hub
	mgr, err := sessions.NewManager(sessions.Options{
		MaxSessions:    cfg.MaxSessions,
		Scrollback:     cfg.Scrollback,
		Workspace:      cfg.Workspace,
		DefaultProfile: profile,
		OnEvent:        func(ev sessions.Event) { hub.OnEvent(ev) },
		Logger:         log,
	})
	if err != nil {
		return nil, err
	}
	hub, err = ws.NewHub(ws.Options{
		Sessions:       mgr,
		BatchInterval:  cfg.BatchInterval,
		AllowedOrigins: cfg.AllowedOrigins,
		Logger:         log,
	})
	if err != nil {
		return nil, err
	}
	return &server{cfg: cfg, log: log, mgr: mgr, hub: hub, started: time.Now()}, nil
}

// run is main without the process: it returns the exit code. ready, when
// not nil, is told the address the server listens on.
func run(sigs <-chan os.Signal, args []string, getenv func(string) string, stderr io.Writer, ready func(addr string)) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "agentmux:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if cfg.Workspace == "" {
		if cfg.Workspace, err = os.Getwd(); err != nil {
			log.Error("find the current directory", "err", err)
			return 1
		}
	}
	if cfg.Workspace, err = filepath.Abs(cfg.Workspace); err != nil {
		log.Error("resolve workspace", "err", err)
		return 1
	}
	if fi, err := os.Stat(cfg.Workspace); err != nil || !fi.IsDir() {
		log.Error("workspace is not a directory", "workspace", cfg.Workspace)
		return 1
	}

	srv, err := newServer(cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error(fmt.Sprintf("listen on %s: %v", cfg.Addr, err))
		return 1
	}
	httpSrv := &http.Server{
		Handler:           srv.newRouter(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("agentmux listening", "url", "http://"+addr+"/", "workspace", cfg.Workspace, "version", version)
	if ready != nil {
		ready(addr)
	}

	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String(), "grace", cfg.ShutdownGrace)
	case err := <-served:
		log.Error("serve", "err", err)
		return 1
	}
	if err := srv.shutdown(httpSrv, sigs); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	<-served // Serve returned http.ErrServerClosed when Shutdown began
	log.Info("stopped")
	return 0
}

// shutdown stops the server within the grace period plus one second:
// clients are told, new connections and sessions refused, agents get SIGHUP
// and, when grace runs out, SIGKILL; then connections close with 1001. A
// second signal cuts the wait short.
func (s *server) shutdown(httpSrv *http.Server, sigs <-chan os.Signal) error {
	grace := s.cfg.ShutdownGrace
	deadline := time.Now().Add(grace + time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			s.log.Warn("second signal; stopping now", "signal", sig.String())
			cancel()
		case <-ctx.Done():
		}
	}()

	s.hub.Announce(grace)
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Shutdown(ctx) }()

	// Agents get the grace period; the last part of the second is kept for
	// closing connections.
	agentsCtx, cancelAgents := context.WithTimeout(ctx, grace+500*time.Millisecond)
	defer cancelAgents()
	errAgents := s.mgr.Shutdown(agentsCtx, grace)
	// Closing connections takes a round trip, not a grace period, so a
	// second signal does not skip it: clients still get their 1001. Only
	// the overall deadline bounds it.
	connsCtx, cancelConns := context.WithDeadline(context.Background(), deadline)
	defer cancelConns()
	errConns := s.hub.Close(connsCtx)
	errHTTP := <-httpDone
	errs := []error{errAgents, errConns, errHTTP}
	for i, err := range errs {
		// Only a second signal cancels ctx (running out of time is
		// DeadlineExceeded): the operator asked to cut the wait short,
		// so what was cut short is no failure.
		if errors.Is(err, context.Canceled) {
			s.log.Debug("cut short by the second signal", "err", err)
			errs[i] = nil
		}
	}
	return errors.Join(errs...)
}
