package httpapi_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/procfs"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/preview"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/sessions/store"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/ws"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitTimeout bounds every wait in these tests; generous, for -race on a
// busy two-core machine.
const waitTimeout = apitest.Timeout

// apiEnv is the API over real parts (a session manager running real
// PTYs, with its bbolt store, the workspace's watcher, the memory monitor,
// the port lister and previews, collab for the review send and the
// announcements, and the WebSocket hub its clients join), behind a real HTTP server. It is not the whole
// server: no guard, no hook listener, no worktree watchers; cmd/server's
// tests cover those and the wiring.
type apiEnv struct {
	*apitest.Client
	dir string // the workspace
	mgr *sessions.Manager
	hub *ws.Hub
	// files is the workspace's watcher.
	files *watcher.Workspace
	ts    *httptest.Server
	log   *testutil.SyncBuffer
	// store is the session database, which also keeps script approvals.
	store *store.Store
	// shares are the read-only links.
	shares *share.Links
}

// at returns e reporting to t, for use inside t's subtest.
func (e *apiEnv) at(t *testing.T) *apiEnv {
	c := *e
	c.Client = e.Client.At(t)
	return &c
}

// harness says how newAPI builds the API; the zero value is the
// defaults of `agentmux --agent-cmd "sh -c 'exec sleep 60'"`.
type harness struct {
	// workspace is a fresh temporary directory when empty.
	workspace string
	// maxSessions is 4 when 0, as --max-sessions's default.
	maxSessions int
	// checkpoints bound what checkpoints keep, as --checkpoint-max-file
	// and --checkpoint-max-total do.
	checkpoints checkpoint.Options
	// scripts are the workspace scripts set as by flags; the zero value
	// sets none.
	scripts scripts.Overrides
	// clock times the read-only links; nil is the real clock.
	clock clockwork.Clock
}

// newAPI starts the API over a fresh workspace whose default sessions run
// sleep 60. Everything stops when the test ends.
func newAPI(t *testing.T) *apiEnv { return harness{}.start(t) }

// startRepo starts the API over a workspace that is a git repository
// with one commit on main.
func (h harness) startRepo(t *testing.T) *apiEnv {
	t.Helper()
	apitest.SkipWithoutGit(t)
	e := h.start(t)
	apitest.InitRepo(t, e.dir)
	return e
}

// startShip is startRepo whose git knows who commits.
func (h harness) startShip(t *testing.T) *apiEnv {
	t.Helper()
	e := h.startRepo(t)
	apitest.SetCommitter(t, e.dir)
	return e
}

// watchWS opens a WebSocket once the workspace watcher has scanned.
func (e *apiEnv) watchWS(t *testing.T) *websocket.Conn {
	t.Helper()
	return apitest.OpenWS(t, e.ts.URL, e.files.Ready())
}

func (h harness) start(t *testing.T) *apiEnv {
	t.Helper()
	if h.workspace == "" {
		h.workspace = t.TempDir()
	}
	if h.maxSessions == 0 {
		h.maxSessions = 4
	}
	e := &apiEnv{dir: h.workspace, log: &testutil.SyncBuffer{}}
	log := slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := store.Open(filepath.Join(t.TempDir(), "agentmux.db"), 2*time.Second)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	mon, err := memory.NewMonitor(memory.Options{Logger: log})
	if err != nil {
		t.Fatalf("memory monitor: %v", err)
	}
	e.mgr, err = sessions.NewManager(sessions.Options{
		MaxSessions:    h.maxSessions,
		KeepSessions:   sessions.DefaultKeepSessions,
		Scrollback:     1 << 20,
		Workspace:      h.workspace,
		DefaultProfile: sessions.CustomProfile([]string{"sh", "-c", "exec sleep 60"}),
		Admit:          mon.Admit,
		Store:          st,
		Logger:         log,
	})
	if err != nil {
		t.Fatalf("session manager: %v", err)
	}
	app, err := collab.New(collab.Options{Sessions: e.mgr, Logger: log})
	if err != nil {
		t.Fatalf("collab: %v", err)
	}
	shares, err := share.New(share.Options{Store: st, Clock: h.clock, Logger: log})
	if err != nil {
		t.Fatalf("share links: %v", err)
	}
	t.Cleanup(shares.Close)
	if e.hub, err = ws.NewHub(ws.Options{Sessions: e.mgr, App: app, Logger: log, Shares: shares}); err != nil {
		t.Fatalf("hub: %v", err)
	}
	e.mgr.Subscribe(app.OnEvent)
	e.shares = shares
	e.files, err = watcher.NewWorkspace(watcher.WorkspaceOptions{Root: h.workspace, OnFile: app.OnFile, OnWorkflow: app.OnWorkflow, Logger: log})
	if err != nil {
		t.Fatalf("workspace watcher: %v", err)
	}
	// No port is the harness's own: it listens on httptest's only.
	notOurs := func(int) bool { return false }
	previews, err := preview.New(preview.Options{Own: notOurs, Logger: log})
	if err != nil {
		t.Fatalf("previews: %v", err)
	}
	e.store = st
	trust, err := scripts.NewTrust(scripts.TrustOptions{Root: h.workspace, Approvals: st, Overrides: h.scripts, Logger: log})
	if err != nil {
		t.Fatalf("scripts: %v", err)
	}
	api, err := httpapi.New(httpapi.Options{
		Scripts:     trust,
		Sessions:    e.mgr,
		Workspace:   h.workspace,
		Files:       e.files,
		Memory:      mon,
		Ports:       ports.NewLister(procfs.Root, os.Getpid()),
		Previews:    previews,
		IsOwnPort:   notOurs,
		Reviews:     app,
		Announce:    app,
		Shares:      shares,
		Viewers:     app,
		Checkpoints: h.checkpoints,
		Version:     "test",
		Logger:      log,
	})
	if err != nil {
		t.Fatalf("httpapi.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var watching sync.WaitGroup
	watching.Go(func() { _ = e.files.Run(ctx) })

	router := echo.New()
	router.HideBanner, router.HidePort = true, true
	router.HTTPErrorHandler = httpapi.ErrorHandler(log)
	api.Register(router.Group("/api"))
	router.GET("/ws", echo.WrapHandler(e.hub))
	e.ts = httptest.NewServer(router)
	e.Client = &apitest.Client{T: t, URL: e.ts.URL, HTTP: apitest.NewHTTPClient(t)}
	t.Cleanup(func() {
		ctx, cancelShutdown := context.WithTimeout(context.Background(), waitTimeout)
		defer cancelShutdown()
		if err := e.mgr.Shutdown(ctx, time.Second); err != nil {
			t.Errorf("shut sessions down: %v", err)
		}
		if err := e.hub.Close(ctx); err != nil {
			t.Errorf("close hub: %v", err)
		}
		cancel()
		watching.Wait()
		previews.Close()
		e.mgr.Close()
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
		e.ts.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", e.log)
		}
	})
	return e
}
