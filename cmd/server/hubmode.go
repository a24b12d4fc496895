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
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/hub"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/web"
)

// hubConfig is agentmux hub's configuration after flags and environment.
type hubConfig struct {
	Addr              string
	Token             string
	TokenFile         string
	AllowedOrigins    []string
	AllowedHosts      []string
	Peers             []hub.Peer
	PeersFile         string
	Discover          []hub.Discovery
	DiscoverTokenFile string
	DiscoverOpenURL   string
	Every             time.Duration
	ShutdownGrace     time.Duration
	LogLevel          slog.Level
}

// defaultHubAddr is the hub's address by default: beside a workspace's
// 8080 on the same machine.
const defaultHubAddr = "127.0.0.1:8090"

// hubEnvPrefix names the hub's variables, AGENTMUX_HUB_ADDR and so on,
// apart from a workspace's: a container may run both.
const hubEnvPrefix = "AGENTMUX_HUB_"

func newHubFlagSet(cfg *hubConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("agentmux hub", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.Addr, "addr", defaultHubAddr, "address to listen on, host:port")
	fs.StringVar(&cfg.Token, "token", "", "when set, the hub's page, /api (but /api/health) and /ws need it, as agentmux's do; prefer AGENTMUX_HUB_TOKEN or --token-file")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "read the hub's token from this file's first line; the file must be readable by its owner only")
	fs.Func("allowed-origins", "comma-separated origins (scheme://host[:port]), besides the hub's own, whose pages may answer sessions through it", func(s string) error {
		cfg.AllowedOrigins = splitList(s)
		return nil
	})
	fs.Func("allowed-hosts", "comma-separated names the hub answers to without a token, besides localhost and IP addresses (.domain for every name under it)", func(s string) error {
		cfg.AllowedHosts = splitList(s)
		return nil
	})
	fs.Func("peer", "a workspace without a token, http(s)://host:port (repeat the flag, or separate with commas)", func(s string) error {
		for _, raw := range splitList(s) {
			u, err := hub.ParsePeerURL(raw)
			if err != nil {
				return err
			}
			cfg.Peers = append(cfg.Peers, hub.Peer{URL: u})
		}
		return nil
	})
	fs.StringVar(&cfg.PeersFile, "peers", "", "a file of workspaces, one a line: URL TOKEN-FILE [OPEN-URL] (TOKEN-FILE - for none; OPEN-URL, where a browser reaches its UI); read again every --discover-every")
	fs.Func("discover", "find workspaces in DNS: dns:NAME:PORT (each A/AAAA record of NAME a workspace at PORT; a Kubernetes headless Service) or dns:_SERVICE._PROTO.NAME (SRV records); repeat for several", func(s string) error {
		for _, raw := range splitList(s) {
			d, err := hub.ParseDiscovery(raw)
			if err != nil {
				return err
			}
			cfg.Discover = append(cfg.Discover, d)
		}
		return nil
	})
	fs.StringVar(&cfg.DiscoverTokenFile, "discover-token-file", "", "the token of the workspaces --discover finds, on this file's first line (none when empty)")
	fs.StringVar(&cfg.DiscoverOpenURL, "discover-open-url", "", "where a browser reaches a discovered workspace's UI, {name} replaced by its name (its --name, a pod's name): https://{name}.agentmux.example.com/ (default: its address in DNS)")
	fs.DurationVar(&cfg.Every, "discover-every", hub.DefaultEvery, "how often DNS and the peers file are read again")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 5*time.Second, "how long pages and workspaces get to close at shutdown")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	return fs
}

// parseHubConfig reads agentmux hub's flags, then each flag not given
// from its AGENTMUX_HUB_ variable.
func parseHubConfig(args []string, getenv func(string) string, usageOut io.Writer) (hubConfig, error) {
	var cfg hubConfig
	fs := newHubFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			hubUsage(fs, usageOut)
			return hubConfig{}, err
		}
		return hubConfig{}, flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return hubConfig{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := hubEnvName(f.Name)
		if v := getenv(name); v != "" && !given[f.Name] {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %s", name, v, wantFor(f, err.Error())))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return hubConfig{}, err
	}
	if cfg.TokenFile != "" {
		if cfg.Token != "" {
			return hubConfig{}, errors.New("--token and --token-file both give a token; give one")
		}
		tok, err := readTokenFile(cfg.TokenFile)
		if err != nil {
			return hubConfig{}, err
		}
		cfg.Token = tok
	}
	if err := checkAddr(cfg.Addr); err != nil {
		return hubConfig{}, err
	}
	if _, err := sameorigin.New(cfg.AllowedOrigins); err != nil {
		return hubConfig{}, fmt.Errorf("--allowed-origins: %w", err)
	}
	switch {
	case len(cfg.Peers) == 0 && cfg.PeersFile == "" && len(cfg.Discover) == 0:
		return hubConfig{}, errors.New("no workspaces: give --peer URL, --peers FILE or --discover dns:NAME:PORT")
	case cfg.Every < time.Second:
		return hubConfig{}, fmt.Errorf("--discover-every %s: at least 1s", cfg.Every)
	case cfg.DiscoverTokenFile != "" && len(cfg.Discover) == 0:
		return hubConfig{}, errors.New("--discover-token-file without --discover: the token is for the workspaces DNS finds")
	}
	if cfg.PeersFile != "" {
		// Read once now, so a mistake in it is told at start-up; later
		// reads keep the workspaces of the last good one.
		if _, err := hub.ReadPeers(cfg.PeersFile); err != nil {
			return hubConfig{}, err
		}
	}
	return cfg, nil
}

// hubEnvName is the variable of a hub flag: AGENTMUX_HUB_ADDR for --addr.
func hubEnvName(flagName string) string {
	return hubEnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func hubUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "agentmux hub shows the sessions of many agentmux workspaces in one inbox, and answers them.\n\n")
	fmt.Fprintf(w, "Usage:\n  agentmux hub [flags]\n\nEvery flag can also be set by its environment variable; flags win.\n\n")
	fs.VisitAll(func(f *flag.Flag) {
		fmt.Fprintf(w, "  --%s (%s)\n      %s", f.Name, hubEnvName(f.Name), f.Usage)
		if def := f.DefValue; def != "" && def != "[]" && !strings.Contains(f.Usage, "(default") {
			if f.Name == "log-level" {
				def = strings.ToLower(def)
			}
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	})
}

// hubMain is agentmux hub without the process: it returns the exit code.
// ready, when not nil, is told the address the hub listens on.
func hubMain(sigs <-chan os.Signal, args []string, getenv func(string) string, stderr io.Writer, ready func(addr string)) int {
	cfg, err := parseHubConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hub: %v (see --help)\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})).With("mode", "hub")
	h, err := hub.New(hub.Options{
		Peers: cfg.Peers, PeersFile: cfg.PeersFile,
		Discover: cfg.Discover, DiscoverTokenFile: cfg.DiscoverTokenFile, DiscoverOpenURL: cfg.DiscoverOpenURL,
		Every: cfg.Every, Logger: log,
	})
	if err != nil {
		log.Error("cannot start: " + err.Error())
		return 1
	}
	e, err := newHubRouter(cfg, h, log)
	if err != nil {
		log.Error("cannot start: " + err.Error())
		return 1
	}

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error(listenError(cfg.Addr, err))
		return 1
	}
	ln = limitListen(ln, maxConnections, "http", log)
	srv := newHTTPServer(e, log, defaultLimits)
	ctx, stop := context.WithCancel(context.Background())
	running := make(chan struct{})
	go func() {
		defer close(running)
		h.Run(ctx)
	}()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("agentmux hub listening", "url", openURL(addr), "address", addr, "version", version)
	if cfg.Token != "" {
		log.Info("open this URL to sign in", "url", signInURL(addr, cfg.Token))
	} else if !isLoopback(addr) {
		log.Warn("listening on " + addr + " without --token: anyone who can reach this address can see every workspace's sessions and answer their agents; set a token (AGENTMUX_HUB_TOKEN or --token-file), or listen on 127.0.0.1")
	}
	if ready != nil {
		ready(addr)
	}
	code := 0
	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-served:
		log.Error("serve", "err", err)
		code = 1
	}
	// The pages are told the hub stops (Run's end closes them), then the
	// listener stops taking requests and waits for those under way.
	stop()
	<-running
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("shutdown", "err", err)
	}
	log.Info("hub stopped")
	return code
}

// newHubRouter returns the hub's routes, its API, its page's WebSocket and
// its page, all behind the guard agentmux's own sit behind.
func newHubRouter(cfg hubConfig, h *hub.Hub, log *slog.Logger) (*echo.Echo, error) {
	origins, err := sameorigin.New(cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	assets, err := newAssets(web.Assets(), hubPage())
	if err != nil {
		return nil, err
	}
	g := guard.New(guard.Options{Token: cfg.Token, Cookie: guard.HubTokenCookie, Hosts: allowedHosts(config{AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins}), Origins: origins, Logger: log})
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = httpapi.ErrorHandler(log)
	e.Use(g.Middleware) // before any route: it must wrap them all
	h.Register(e.Group("/api"))
	e.GET("/ws", echo.WrapHandler(h.Pages(origins)))
	e.GET("/*", echo.WrapHandler(assets))
	return e, nil
}

// hubPage is the page the hub serves at its root: the hub's own, when the
// binary carries a UI build, else the page that says how to build one.
func hubPage() string {
	if web.Built() {
		return "hub.html"
	}
	return "index.html"
}
