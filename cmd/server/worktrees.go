package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/watcher/workflow"
)

// worktreeWatches runs a workspace watcher per session worktree, since
// the main watcher leaves .worktrees out: a workflow status file or a
// document written in a session's worktree is that session's news, told
// with its id, and its files' changes are told as the workspace's are. Each watcher runs from the session's creation (or the
// server's start, for a restored one) to its destruction or shutdown.
type worktreeWatches struct {
	ctx       context.Context // the server's watcher context
	wg        *sync.WaitGroup // the server's watcher goroutines
	workspace string
	ignore    []string
	// keepTemporaries is --watch-temporaries.
	keepTemporaries bool
	app             *collab.App
	diffs           *changes.Live
	log             *slog.Logger

	// mu protects stopped and running. A watcher's goroutine starts under
	// it, so halt, which takes it, sees every watcher that started.
	mu      sync.Mutex
	stopped bool // once halted, no watcher starts
	running map[string]runningWatch
}

type runningWatch struct {
	w      *watcher.Workspace
	cancel context.CancelFunc
	// prefix is the worktree's directory relative to the workspace, with
	// a trailing slash.
	prefix string
}

// onEvent starts or stops a session's watcher. It is called with the
// manager's events, so it must not block: the watcher reads its tree in
// its own goroutine.
func (w *worktreeWatches) onEvent(ev sessions.Event) {
	switch ev.Kind {
	case sessions.EventCreated:
		if ev.Session.Worktree != nil {
			w.start(ev.Session.ID, ev.Session.Worktree.Path)
		}
	case sessions.EventDestroyed:
		w.stop(ev.Session.ID)
	}
}

func (w *worktreeWatches) start(id, root string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.running[id]; w.stopped || ok {
		return
	}
	log := w.log.With("session", id)
	// Paths on the wire are workspace-relative, so the UI reads the
	// documents with /api/files like any other.
	prefix, err := filepath.Rel(w.workspace, root)
	if err != nil {
		prefix = root
	}
	prefix = filepath.ToSlash(prefix) + "/"
	wsw, err := watcher.NewWorkspace(watcher.WorkspaceOptions{
		Root:            root,
		Ignore:          w.ignore,
		KeepTemporaries: w.keepTemporaries,
		OnFile: func(ev watcher.FileEvent) {
			w.app.OnSessionFile(id, prefix, ev)
			w.diffs.Changed(ev.Path)
		},
		OnWorkflow: func(_ string, wf workflow.Workflow) { w.app.OnSessionWorkflow(id, wf) },
		Logger:     log,
	})
	if err != nil {
		log.Warn("cannot watch the session's worktree", "worktree", root, "err", err)
		return
	}
	ctx, cancel := context.WithCancel(w.ctx)
	w.running[id] = runningWatch{w: wsw, cancel: cancel, prefix: prefix}
	// Run reads the tree in this goroutine, not in the event's caller.
	w.wg.Go(func() {
		if err := wsw.Run(ctx); err != nil {
			log.Warn("cannot watch the session's worktree", "worktree", root, "err", err)
		}
	})
}

// watcher returns the watcher of a session's worktree, or nil.
func (w *worktreeWatches) watcher(id string) *watcher.Workspace {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running[id].w
}

// all returns the running watchers, for the API's documents.
func (w *worktreeWatches) all() []httpapi.WatchedTree {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]httpapi.WatchedTree, 0, len(w.running))
	for id, r := range w.running {
		out = append(out, httpapi.WatchedTree{SessionID: id, Prefix: r.prefix, Watcher: r.w})
	}
	return out
}

func (w *worktreeWatches) stop(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.running[id]; ok {
		r.cancel()
		delete(w.running, id)
	}
}

// halt stops every watcher and keeps new ones from starting; the server's
// wait group then waits for them.
func (w *worktreeWatches) halt() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for id, r := range w.running {
		r.cancel()
		delete(w.running, id)
	}
}
