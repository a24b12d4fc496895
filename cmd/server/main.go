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
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/afterlimit"
	"github.com/agentmux/agentmux/agentmcp"
	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/checks"
	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/guard"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/reaper"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/store"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/web"
	"github.com/agentmux/agentmux/wire"
	"github.com/agentmux/agentmux/ws"

	// Claude Code names the zone of a usage limit's reset time
	// (sessions.claudeReset); a container may have no zone files.
	_ "time/tzdata"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "hook":
			if len(os.Args) > 2 && os.Args[2] == "statusline" {
				os.Exit(statusLineMain(os.Stdin, os.Getenv, os.Stdout, os.Stderr))
			}
			os.Exit(hookMain(os.Args[2:], os.Stdin, os.Getenv, os.Stderr))
		case "mcp":
			os.Exit(mcpMain(os.Getenv, os.Stderr))
		case "health":
			os.Exit(healthMain(os.Args[2:], os.Getenv, os.Stdout, os.Stderr))
		case "hub":
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			os.Exit(hubMain(sigs, os.Args[2:], os.Getenv, os.Stderr, nil))
		}
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	os.Exit(run(sigs, os.Args[1:], os.Getenv, os.Stderr, nil))
}

// server is the wired application.
type server struct {
	cfg       config
	log       *slog.Logger
	store     *store.Store
	mgr       *sessions.Manager
	app       *collab.App // the clients' shared state; each WebSocket of hub joins it
	hub       *ws.Hub
	assets    *assets
	workspace *watcher.Workspace
	memory    *memory.Monitor
	hooks     *hookServer
	mcp       *agentmcp.Server // the agents' MCP endpoint, on the hook listener
	worktrees *worktreeWatches
	guard     *guard.Guard
	diffs     *changes.Live
	// shares are the read-only links to sessions.
	shares *share.Links
	// pulls opens and follows sessions' pull requests.
	pulls *pulls.Service
	// previews serves the agents' dev servers on origins of their own;
	// own are the ports it never proxies: agentmux's listeners; ports
	// lists the ports listening.
	previews *preview.Previews
	own      *ownPorts
	ports    *ports.Lister
	// attachments keeps the files people hand to agents, in their
	// sessions' trees.
	attachments *attachments.Store
	// checkpoints snapshots sessions' trees as their agents end turns,
	// and checks runs the check script on each of those snapshots.
	checkpoints *checkpoint.Auto
	checks      *checks.Runner
	// api serves the routes under /api.
	api     *httpapi.API
	started time.Time

	// stopWatchers ends the watcher goroutines; watchers tracks them.
	stopWatchers context.CancelFunc
	watchers     sync.WaitGroup
}

// wsIdleGrace is the hub's IdleGrace: a variable, so that tests need not
// wait it out.
var wsIdleGrace = ws.DefaultIdleGrace

// storeTimeout is how long start-up waits for a database another process
// holds before saying so.
const storeTimeout = 2 * time.Second

// dbFile is the database's name inside --data-dir.
const dbFile = "agentmux.db"

// newServer builds the application in dependency order, each part complete
// when the next is built, and then connects the parts: the consumers of
// session and memory events subscribe to them, and the watchers start. On
// an error nothing is left open.
func newServer(cfg config, log *slog.Logger) (_ *server, err error) {
	// Before anything runs git: the workspace may belong to another uid
	// (bind-mounted from the host), which git refuses unless told it is
	// the user's. It is the one directory the user named as theirs.
	if err := gitexec.Trust(cfg.Workspace, filepath.Join(cfg.Workspace, sessions.WorktreesDir)); err != nil {
		return nil, err
	}
	profile, err := defaultProfile(cfg, log)
	if err != nil {
		return nil, err
	}
	origins, err := sameorigin.New(cfg.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	// Before the manager: it admits new agents only while memory allows.
	mon, err := memory.NewMonitor(memory.Options{
		WarnPercent:     cfg.MemWarn,
		CriticalPercent: cfg.MemCritical,
		Interval:        cfg.MemInterval,
		Logger:          log,
	})
	if err != nil {
		return nil, err
	}
	st, err := openStore(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	s := &server{cfg: cfg, log: log, store: st, memory: mon, started: time.Now(),
		guard: guard.New(guard.Options{Token: cfg.Token, Hosts: allowedHosts(cfg), Origins: origins, Frames: preview.FrameSources(cfg.PreviewDomain), Logger: log})}
	defer func() {
		if err != nil {
			s.abandon()
		}
	}()
	var hooks *sessions.HookConfig
	if s.hooks, hooks, err = listenHooks(cfg.DataDir, log); err != nil {
		return nil, err
	}
	// Before the manager, which runs the archive script; the checks run
	// the check script.
	trust, err := scripts.NewTrust(scripts.TrustOptions{
		Root:      cfg.Workspace,
		Overrides: cfg.Scripts,
		Approvals: st,
		TrustAll:  cfg.TrustScripts,
		Logger:    log,
		Settings:  st,
	})
	if err != nil {
		return nil, err
	}

	s.mgr, err = sessions.NewManager(sessions.Options{
		MaxSessions:        cfg.MaxSessions,
		KeepSessions:       cfg.KeepSessions,
		Scrollback:         cfg.Scrollback,
		Workspace:          cfg.Workspace,
		DefaultProfile:     profile,
		Admit:              mon.Admit,
		Store:              st,
		SaveInterval:       cfg.SaveInterval,
		Quiet:              giveMemoryBack,
		Timing:             cfg.Timing,
		Hooks:              hooks,
		MCP:                s.hooks.mcpConfig(cfg.MCP, cfg.DataDir),
		ContinueAfterLimit: cfg.ContinueAfterLimit,
		PortBase:           cfg.PortBase,
		Archive: func(ctx context.Context, _, dir string, env []string) (scripts.Result, bool) {
			return trust.RunIn(ctx, scripts.Archive, dir, env, sessions.ArchiveLimit)
		},
		SetupScript: func() (scripts.Script, bool) { return trust.Runnable(scripts.Setup) },
		Logger:      log,
	})
	if err != nil {
		return nil, err
	}
	if s.app, err = collab.New(collab.Options{Sessions: s.mgr, Logger: log}); err != nil {
		return nil, err
	}
	// After the manager, which has restored the sessions whose links are
	// kept.
	s.shares, err = share.New(share.Options{
		Store:  st,
		Exists: func(id string) bool { _, err := s.mgr.Get(id); return err == nil },
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	if cfg.MCP {
		s.mcp, err = agentmcp.New(agentmcp.Options{
			Sessions:   s.mgr,
			Version:    version,
			MaxStarted: cfg.MCPMaxStarted,
			MaxDepth:   cfg.MCPMaxDepth,
			Counts:     s.app.DiffCounts,
			OnCall:     func(c agentmcp.Call) { s.app.OnAgentCall(agentCallView(c)) },
			Logger:     log,
		})
		if err != nil {
			return nil, err
		}
	}
	s.hub, err = ws.NewHub(ws.Options{
		Sessions:       s.mgr,
		App:            s.app,
		BatchInterval:  cfg.BatchInterval,
		Origins:        origins,
		Logger:         log,
		MaxConnections: maxWebSockets,
		IdleGrace:      wsIdleGrace,
		Shares:         s.shares,
	})
	if err != nil {
		return nil, err
	}
	if s.assets, err = newAssets(web.Assets(), "index.html"); err != nil {
		return nil, err
	}
	s.pulls, err = pulls.New(pulls.Options{
		Sessions:    s.mgr,
		Token:       forge.TokenOptions{File: cfg.GitHubTokenFile},
		API:         cfg.GitHubAPI,
		UserAgent:   "agentmux/" + version,
		Refresh:     cfg.PullRequestRefresh,
		Watched:     s.app.Attached,
		Notify:      s.app.OnPullRequest,
		SentReviews: s.app.SentReviews,
		Drafts:      s.app,
		Logger:      log,
	})
	if err != nil {
		return nil, err
	}
	s.attachments = attachments.New(attachments.Options{MaxFile: cfg.Attachments.MaxFile, MaxPerSession: cfg.Attachments.MaxPerSession, Logger: log})
	s.diffs = changes.NewLive(changes.LiveOptions{Notify: s.app.OnSessionDiff, Overlaps: s.app.OnOverlaps, Workspace: cfg.Workspace, Logger: log})
	s.checkpoints = checkpoint.NewAuto(cfg.Checkpoints, func(session, dir string, cp checkpoint.Checkpoint, began time.Time) {
		if err := s.mgr.NoteCheckpoint(session, cp.ID, began); err != nil {
			log.Debug("note a checkpoint's turns", "session", session, "err", err)
		}
		s.app.OnCheckpoint(session, cp)
		s.checks.Start(session, dir, cp.ID)
	}, log)
	s.own = &ownPorts{}
	s.ports = ports.NewLister(procfs.Root, os.Getpid())
	s.own.add(s.hooks.ln.Addr())
	if s.previews, err = preview.New(preview.Options{Domain: cfg.PreviewDomain, Token: cfg.Token, Own: s.own.has, Logger: log}); err != nil {
		return nil, err
	}
	s.workspace, err = watcher.NewWorkspace(watcher.WorkspaceOptions{
		Root:            cfg.Workspace,
		Ignore:          cfg.WatchIgnore,
		KeepTemporaries: cfg.WatchTemporaries,
		OnFile: func(ev watcher.FileEvent) {
			s.app.OnFile(ev)
			s.diffs.Changed(ev.Path)
		},
		OnWorkflow: s.app.OnWorkflow,
		Logger:     log,
	})
	if err != nil {
		return nil, err
	}
	s.checks, err = checks.New(checks.Options{
		Trust: trust,
		Store: st,
		Env:   s.mgr.ScriptEnv,
		Busy: func(id string) bool {
			sess, err := s.mgr.Get(id)
			return err == nil && !sess.Waiting()
		},
		Report: func(id string, cp int, r scripts.Result) {
			if err := s.mgr.NoteCheck(id, sessions.CheckOf(cp, r)); err != nil {
				log.Debug("a check of a session that is gone", "session", id, "err", err)
			}
		},
		Limit: cfg.CheckTimeout,
		Log:   log,
	})
	if err != nil {
		return nil, err
	}
	if s.api, err = httpapi.New(httpapi.Options{
		Scripts:   trust,
		Checks:    s.checks,
		Sessions:  s.mgr,
		Workspace: cfg.Workspace,
		Files:     s.workspace,
		// start makes the worktree watchers, before anything is served.
		Worktrees:    func() []httpapi.WatchedTree { return s.worktrees.all() },
		Memory:       mon,
		Ports:        s.ports,
		Previews:     s.previews,
		IsOwnPort:    s.own.has,
		Reviews:      s.app,
		Announce:     s.app,
		Overlaps:     s.app,
		Shares:       s.shares,
		Viewers:      s.app,
		PullRequests: s.pulls,
		Checkpoints:  cfg.Checkpoints,
		Attachments:  s.attachments,
		Name:         workspaceName(cfg.Name),
		Version:      version,
		Started:      s.started,
		Logger:       log,
	}); err != nil {
		return nil, err
	}
	s.start()
	return s, nil
}

// openStore opens the session database in dataDir, making the directory
// if need be.
func openStore(dataDir string) (*store.Store, error) {
	if dataDir == "" {
		return nil, errors.New("no data directory")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	return store.Open(filepath.Join(dataDir, dbFile), storeTimeout)
}

// abandon undoes a newServer that failed part way: it closes what was
// opened, in reverse order. No session has run yet.
func (s *server) abandon() {
	if s.shares != nil {
		s.shares.Close() // stops its expiry timer
	}
	if s.mgr != nil {
		s.mgr.Close() // stops its saver
	}
	if s.hooks != nil {
		_ = s.hooks.stop(context.Background())
	}
	_ = s.store.Close()
}

// start connects the built parts and starts the watchers; the server owns
// their goroutines, which halt ends. Every subscription is made before
// agents can run (no session runs until the hooks are served and the
// server answers requests), so no event goes unseen.
func (s *server) start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatchers = cancel
	s.worktrees = &worktreeWatches{
		ctx: ctx, wg: &s.watchers, workspace: s.cfg.Workspace, ignore: s.cfg.WatchIgnore,
		keepTemporaries: s.cfg.WatchTemporaries,
		app:             s.app, diffs: s.diffs, log: s.log, running: make(map[string]runningWatch),
	}
	s.mgr.Subscribe(s.app.OnEvent)
	s.mgr.Subscribe(s.worktrees.onEvent)
	s.mgr.Subscribe(s.followDiffs)
	s.mgr.Subscribe(s.forgetDeleted)
	s.mgr.Subscribe((&turns{auto: s.checkpoints, checks: s.checks, workspace: s.cfg.Workspace}).onEvent)
	s.memory.Subscribe(s.app.OnMemory)
	s.mgr.SubscribeSaveStatus(s.app.OnSaveStatus)
	s.hooks.start(s.mgr, s.mcpHandler())
	for _, sess := range s.mgr.List() { // restored sessions
		info := sess.Info()
		if info.Worktree != nil {
			s.worktrees.start(info.ID, info.Worktree.Path)
		}
		s.followDiff(info)
	}
	s.watchers.Go(func() { s.diffs.Run(ctx) })
	s.watchers.Go(func() { s.pulls.Run(ctx) })
	s.watchers.Go(func() { s.checkpoints.Run(ctx) })
	s.watchers.Go(func() { s.continueAfterLimits().Run(ctx) })
	s.watchers.Go(func() { s.watchPorts(ctx) })
	s.watchers.Go(func() { s.memory.Run(ctx) })
	s.watchers.Go(func() {
		// Without a workspace watcher the server still serves terminals.
		if err := s.workspace.Run(ctx); err != nil {
			s.log.Error("workspace watcher stopped", "err", err)
		}
	})
}

// halt stops the watchers and drops the previews' idle connections.
func (s *server) halt() {
	s.worktrees.halt()
	s.stopWatchers()
	s.watchers.Wait()
	// After the checkpoints' goroutine, which starts checks.
	s.checks.Close()
	s.previews.Close()
	s.shares.Close()
	if s.mcp != nil {
		s.mcp.Close() // its waits would hold the hook listener's shutdown
	}
}

// close stops the watchers, saves what is left and closes the database;
// the sessions must have been stopped. shutdown takes the same steps,
// with the connections closed between the last two.
func (s *server) close() error {
	s.halt()
	errHooks := s.hooks.stop(context.Background())
	s.mgr.Close()
	return errors.Join(errHooks, s.store.Close())
}

// run is main without the process: it returns the exit code. ready, when
// not nil, is told the address the server listens on.
func run(sigs <-chan os.Signal, args []string, getenv func(string) string, stderr io.Writer, ready func(addr string)) int {
	// `agentmux version` is --version, beside the other subcommands.
	if len(args) > 0 && args[0] == "version" {
		args = append([]string{"--version"}, args[1:]...)
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "agentmux: %v (see --help)\n", err)
		return 2
	}
	if cfg.Version {
		fmt.Fprintf(stderr, "agentmux %s\n", version)
		return 0
	}
	if cfg.PrintConfig {
		if err := printConfig(stdout); err != nil {
			fmt.Fprintf(stderr, "agentmux: %v\n", err)
			return 1
		}
		return 0
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	if cfg.Workspace, err = resolveWorkspace(cfg.Workspace); err != nil {
		log.Error(err.Error())
		return 1
	}
	if fi, err := os.Stat(cfg.Workspace); err != nil || !fi.IsDir() {
		log.Error("workspace is not a directory", "workspace", cfg.Workspace)
		return 1
	}
	if cfg.DataDir == "" {
		if cfg.DataDir, err = defaultDataDir(getenv, cfg.Workspace); err != nil {
			log.Error(err.Error())
			return 1
		}
		// Before the database is opened: a workspace's first start with
		// a directory of its own takes its sessions from the shared one
		// of earlier versions.
		if err := adoptSharedSessions(getenv, cfg.Workspace, cfg.DataDir, log); err != nil {
			log.Error("cannot start: " + err.Error())
			return 1
		}
	}

	// Before anything can start a process: an orphan of one of ours must
	// come to this process, not to PID 1, for shutdown to find it. The
	// goroutine that reaps what is adopted ends with run, and this process
	// stops being a subreaper then (it matters to tests, which call run
	// again in the same process).
	strays := reaper.Start(log)
	defer strays.Stop()
	reapCtx, stopReaping := context.WithCancel(context.Background())
	var reaping sync.WaitGroup
	reaping.Go(func() { strays.Run(reapCtx) })
	defer func() {
		stopReaping()
		reaping.Wait()
	}()

	if limit, ok := memoryLimit(cfg, getenv); ok {
		debug.SetMemoryLimit(limit)
		log.Debug("memory limit for the Go heap", "bytes", limit)
	}
	// The port first: a busy one is told before the database is opened
	// and sessions restored.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		log.Error(listenError(cfg.Addr, err))
		return 1
	}
	srv, err := newServer(cfg, log)
	if err != nil {
		_ = ln.Close()
		log.Error("cannot start: " + err.Error())
		return 1
	}
	ln = limitListen(ln, maxConnections, "http", log)
	srv.own.add(ln.Addr())
	httpSrv := newHTTPServer(srv.handler(), log, defaultLimits)
	served := make(chan error, 1)
	go func() { served <- httpSrv.Serve(ln) }()
	addr := ln.Addr().String()
	if err := writeAddrFile(cfg.DataDir, addr); err != nil {
		log.Warn("agentmux health will need --addr to find this server", "err", err)
	}
	log.Info("agentmux listening", "url", openURL(addr), "address", addr, "workspace", cfg.Workspace, "version", version)
	if cfg.Token != "" {
		// As Jupyter does: one URL that signs the browser in, then drops
		// the token from the address bar.
		log.Info("open this URL to sign in", "url", signInURL(addr, cfg.Token))
		if cfg.tokenOnCommandLine {
			log.Warn("the token was given with --token, so every process on this machine can read it in the server's command line (ps, /proc/PID/cmdline); pass it in AGENTMUX_TOKEN or with --token-file instead")
		}
	} else if level, msg, ok := noTokenNotice(addr, cfg.PublishedHost); ok {
		log.Log(context.Background(), level, msg)
	}
	if !web.Built() {
		log.Warn("this binary has no UI build; the page at / says how to build it (make web)")
	}
	if ready != nil {
		ready(addr)
	}

	select {
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String(), "grace", cfg.ShutdownGrace)
	case err := <-served:
		log.Error("serve", "err", err)
		if err := removeAddrFile(cfg.DataDir); err != nil {
			log.Warn("stop", "err", err)
		}
		// Stop the agents and save; nothing is listening any more.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+time.Second)
		defer cancel()
		errAgents := srv.mgr.Shutdown(ctx, cfg.ShutdownGrace)
		if err := errors.Join(errAgents, strays.KillAll(ctx), srv.close()); err != nil {
			log.Error("stop", "err", err)
		}
		return 1
	}
	// While the database is still locked: after that the data directory,
	// and its agentmux.addr, may be another server's.
	if err := removeAddrFile(cfg.DataDir); err != nil {
		log.Warn("shutdown", "err", err)
	}
	if err := srv.shutdown(httpSrv, sigs, strays); err != nil {
		log.Error("shutdown", "err", err)
		return 1
	}
	<-served // Serve returned http.ErrServerClosed when Shutdown began
	log.Info("stopped")
	return 0
}

// resolveWorkspace returns the workspace --workspace names (the current
// directory when it names none) as an absolute, clean path.
func resolveWorkspace(ws string) (string, error) {
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("find the current directory: %w", err)
		}
		ws = wd
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fmt.Errorf("resolve workspace %s: %w", ws, err)
	}
	return abs, nil
}

// memoryLimit is the soft limit given to the Go runtime, unless
// GOMEMLIMIT sets one: every session's ring and 1 MiB more (its clients'
// buffers, and room for the collector to work in), two rings for the
// save in progress (its copy and bbolt's), and 8 MiB for the rest of the
// server (its heap is about 3 MiB idle). Without one, the collector lets the heap grow to twice what is
// live before it collects: after replays and floods to a few clients the
// server sat at 41 MiB (under 30 with a limit), and 32 printing sessions
// took 3.3 MiB each above their rings' 1 MiB, where the project's goal
// is under 2 MiB above (2.4 with this limit, at no cost in CPU that the
// scale benchmark could tell from noise; 8 MiB rather than 16 for the rest
// took 4 sessions from 4.9 to 3.6 MiB each, and the throughput to one
// client stayed 1.17 times a bare PTY's). It is soft: a heap that needs
// more gets it, collected more often. Once output stops, giveMemoryBack
// returns what the busy time freed.
func memoryLimit(cfg config, getenv func(string) string) (int64, bool) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	ring := int64(cfg.Scrollback)
	return int64(cfg.MaxSessions)*(ring+1<<20) + 2*ring + 8<<20, true
}

// giveMemoryBack collects and returns every free page to the system once
// the sessions' output stops. The soft limit (memoryLimit) bounds the heap
// while sessions print, but once they stop nothing allocates: no
// collection comes to lower the heap goal the busy time set, and the
// runtime's background scavenger returns pages only down to that goal, so
// 32 sessions that had printed kept 160-200 MB. A collection of a heap
// that is mostly rings takes a few milliseconds, once a burst of output.
func giveMemoryBack() { debug.FreeOSMemory() }

// openURL is the address to open in a browser: a wildcard listener
// (0.0.0.0, [::]) is shown as localhost.
func openURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// signInURL is openURL with the token that signs the browser in.
func signInURL(addr, token string) string {
	return openURL(addr) + "?token=" + url.QueryEscape(token)
}

// listenError says why the server cannot listen, and how to choose
// another address when the port is taken.
func listenError(addr string, err error) string {
	msg := fmt.Sprintf("cannot listen on %s: %v", addr, err)
	if errors.Is(err, syscall.EADDRINUSE) {
		msg += "; another program (another agentmux?) has that port: choose another with --addr or AGENTMUX_ADDR, for example --addr 127.0.0.1:8081"
	}
	return msg
}

// shutdown stops the server within the grace period plus one second:
// clients are told, new connections and sessions refused, agents get SIGHUP
// and, when grace runs out, SIGKILL; then connections close with 1001, and
// whatever still runs that descends from this process, such as a daemon an
// agent detached, is killed. A second signal cuts the wait short.
func (s *server) shutdown(httpSrv *http.Server, sigs <-chan os.Signal, strays *reaper.Reaper) error {
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

	// Each step's time goes into the last log line: a shutdown that runs
	// long says where.
	began := time.Now()
	step := func() time.Duration {
		now := time.Now()
		d := now.Sub(began).Round(time.Millisecond)
		began = now
		return d
	}
	s.hub.Announce(grace)
	s.halt()
	httpDone := make(chan error, 1)
	go func() { httpDone <- httpSrv.Shutdown(ctx) }()
	tookWatchers := step()

	// Agents get the grace period; the last part of the second is kept for
	// closing connections.
	agentsCtx, cancelAgents := context.WithTimeout(ctx, grace+500*time.Millisecond)
	defer cancelAgents()
	errAgents := s.mgr.Shutdown(agentsCtx, grace)
	// The agents are gone, and with them every hook caller.
	errHooks := s.hooks.stop(ctx)
	tookAgents := step()
	// Save everything the agents wrote to the end before saying goodbye:
	// a client that reconnects at once to the next server finds it all.
	s.mgr.Close()
	tookSave := step()
	// Closing connections takes a round trip, not a grace period, so a
	// second signal does not skip it: clients still get their 1001. Only
	// the overall deadline bounds it, less a little, so that the close
	// frames' short last chance and dropping silent clients fit too.
	connsCtx, cancelConns := context.WithDeadline(context.Background(), deadline.Add(-200*time.Millisecond))
	defer cancelConns()
	errConns := s.hub.Close(connsCtx)
	errHTTP := <-httpDone
	tookConns := step()
	// Last, when nothing of the server runs a process any more (no agent,
	// no request, no watcher's git): anything still descending from it
	// was left behind, and outliving the server is what it must not do.
	// The sessions' own kill missed it because it left their sessions and
	// tags and lost its parent, which handed it to this process. SIGKILL
	// takes effect at once, so even a second signal leaves it its few
	// milliseconds, within the overall deadline.
	straysCtx, cancelStrays := context.WithDeadline(context.Background(), deadline)
	defer cancelStrays()
	errStrays := strays.KillAll(straysCtx)
	tookStrays := step()
	errStore := s.store.Close()
	s.log.Info("shut down", "watchers", tookWatchers, "agents", tookAgents, "save", tookSave,
		"connections", tookConns, "strays", tookStrays, "database", step())
	errs := []error{errAgents, errHooks, errConns, errHTTP, errStrays, errStore}
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

// noTokenNotice says what start-up logs about a server without a token
// that listens on addr: nothing on loopback; elsewhere a warning, since
// anyone who can connect can run commands. In a container the address
// that matters is the one its port is published on, which the server
// cannot see: when the person who started it says (--published-host) that
// it is a loopback address, the line is information instead. A container
// started with -p 0.0.0.0:8080:8080, or without saying, still warns.
func noTokenNotice(addr, publishedHost string) (slog.Level, string, bool) {
	if isLoopback(addr) {
		return 0, "", false
	}
	if publishedHost == "" {
		return slog.LevelWarn, "listening on " + addr + " without --token: anyone who can reach this address can run commands in your workspace; set a token (AGENTMUX_TOKEN or --token-file), or listen on 127.0.0.1. " +
			"In a container, this address is the one its port is published on: when that is 127.0.0.1 only (docker run -p 127.0.0.1:8080:8080), say so with AGENTMUX_PUBLISHED_HOST=127.0.0.1, and this becomes information", true
	}
	if ip := net.ParseIP(publishedHost); ip != nil && ip.IsLoopback() {
		return slog.LevelInfo, "listening on " + addr + " without --token; the port is published on " + publishedHost + " only (--published-host), so only processes on that machine can connect", true
	}
	return slog.LevelWarn, "listening on " + addr + " without --token, and the port is published on " + publishedHost + " (--published-host): anyone who can reach that address can run commands in your workspace; set a token (AGENTMUX_TOKEN or --token-file)", true
}

// continueAfterLimits returns the planner that sends on the sessions a
// usage limit stopped once it resets, each told in the activity feed.
func (s *server) continueAfterLimits() *afterlimit.Planner {
	return afterlimit.New(s.mgr, afterlimit.Options{
		Margin: s.cfg.ContinueMargin,
		Text:   s.cfg.ContinueText,
		Log:    s.log,
		Continued: func(info sessions.Info, lim sessions.Limit, text string) {
			s.app.OnContinued(wire.ContinuedMessage{SessionID: info.ID, Text: text, ResetsAt: lim.ResetsAt, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		},
	})
}

// workspaceName is the name a hub shows the workspace under: --name, else
// the machine's host name (a pod's name on Kubernetes), else
// "agentmux".
func workspaceName(name string) string {
	if name != "" {
		return name
	}
	if host, err := os.Hostname(); err == nil && host != "" {
		return host
	}
	return "agentmux"
}
