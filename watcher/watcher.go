package watcher

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/agentmux/agentmux/internal/regfile"
	"github.com/agentmux/agentmux/watcher/workflow"
)

// DefaultIgnore are the directory and file names never watched:
// .agentmux holds agentmux's own files in a tree (the attachments people
// hand to agents, and their uploads under way), which are not the agent's
// changes.
var DefaultIgnore = []string{"node_modules", ".git", ".worktrees", ".agentmux"}

// Temporaries are the names (path.Match patterns) of the files editors and
// atomic writers keep beside the file being edited: left out unless
// WorkspaceOptions.KeepTemporaries, because in the feed they drown the
// one change the user made in adds and deletes of litter. vim alone,
// saving main.go, makes .main.go.swp, probes the directory with 4913 and
// renames the old file to main.go~; an agent's atomic write goes through
// plan.md.tmp.<pid>.<time>. sed -i's and perl -i's are told apart by
// mkstempTemporary, which no pattern can be.
var Temporaries = []string{
	"*.sw[a-p]", "*.swx", "4913", // vim's swap files and its probe of the directory
	"*~",         // backups (vim, emacs, nano)
	".#*", "#*#", // emacs's lock and auto-save files
	".~lock.*#",                      // LibreOffice's lock files
	"*.tmp.*",                        // atomic writes: file.tmp.<pid>.<time>
	"*___jb_tmp___", "*___jb_old___", // JetBrains' safe write
	"*.kate-swp",            // Kate
	".goutputstream-??????", // GLib's atomic saves (gedit, GNOME's editors)
}

// mkstempPrefixes are the names, before mkstemp's six random characters,
// of the temporaries tools write beside a file they edit in place and
// then rename over it: GNU sed -i (sedG7xFA9) and perl -i (XXVJAFmE, a
// template of eight X of which glibc fills the last six). No glob tells
// them from a real name ("sedatives" is sed and six letters); see
// mkstempTemporary.
var mkstempPrefixes = []string{"sed", "XX"}

// mkstempTemporary reports whether name is one of mkstempPrefixes and six
// of mkstemp's characters ([A-Za-z0-9]), at least one of them not a
// lowercase letter. Real words are all lowercase after the prefix; of
// mkstemp's names only one in about 180 is, and that one shows in the
// feed as any file would.
func mkstempTemporary(name string) bool {
	for _, prefix := range mkstempPrefixes {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok || len(rest) != 6 {
			continue
		}
		random := false
		for _, c := range []byte(rest) {
			switch {
			case 'a' <= c && c <= 'z':
			case 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
				random = true
			default:
				return false
			}
		}
		return random
	}
	return false
}

// WorkspaceOptions configure a Workspace. Zero values are documented.
type WorkspaceOptions struct {
	// Root is the directory watched, recursively. Required.
	Root string
	// Ignore are more names or glob patterns (path.Match) that, matching
	// any element of a path, leave it out, on top of DefaultIgnore and,
	// unless KeepTemporaries, Temporaries.
	Ignore []string
	// KeepTemporaries reports editors' swap, backup and lock files and
	// atomic writers' temporaries like any other file; false leaves them
	// out (see Temporaries).
	KeepTemporaries bool
	// Coalesce is how long a burst of events on one path is folded into
	// one trailing event; 0 means 500 ms.
	Coalesce time.Duration
	// UnlinkDelay is how long a removal waits to see the path come back,
	// as it does when an editor saves by renaming a new file over the old
	// one; 0 means 100 ms.
	UnlinkDelay time.Duration
	// WorkflowDebounce is how long a workflow status file must be quiet
	// before it is read; 0 means 500 ms.
	WorkflowDebounce time.Duration
	// Rescan is how often the whole tree is walked to catch events the
	// kernel lost (bind mounts from macOS and Windows hosts lose some);
	// 0 means 5 minutes, negative never.
	Rescan time.Duration
	// OnFile receives every file event; it must not block.
	OnFile func(FileEvent)
	// OnWorkflow receives each newly read workflow and the workspace-
	// relative path of its file; it must not block.
	OnWorkflow func(rel string, wf workflow.Workflow)
	// Logger receives the watcher's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Workspace watches a directory tree and reports file and workflow events.
// Run's goroutine owns all its state but the last workflow.
type Workspace struct {
	opts  WorkspaceOptions
	log   *slog.Logger
	ready chan struct{}
	// addWatch adds a directory watch; a seam so tests can run into the
	// kernel's watch limit without lowering it for the whole machine.
	addWatch func(w *fsnotify.Watcher, dir string) error
	// inspections carries functions to run on Run's goroutine, which owns
	// the state below, so tests can look at it without racing.
	inspections chan func()

	// Owned by Run's goroutine.
	fsw         *fsnotify.Watcher
	known       map[string]fileState // files, by absolute path
	watched     map[string]bool      // directories with a watch
	windows     map[string]*window   // paths in a coalescing window
	workflowDue map[string]time.Time // workflow files waiting to be read, by rel
	due         dueHeap              // the deadlines of both, earliest first
	badWorkflow map[string]string    // the last unreadable content seen, by rel
	limitHit    bool                 // the kernel's watch limit was reached
	unwatched   int                  // directories left without a watch

	// mu protects workflow, workflowRel and docs.
	mu          sync.Mutex
	workflow    workflow.Workflow
	workflowRel string
	// docs are the documents (IsDocFile) there are, by rel, with their
	// modification times: a page that loads late learns of them here.
	docs map[string]time.Time
}

// Document is a markdown document under docs/ (see IsDocFile).
type Document struct {
	// Rel is relative to the watched root, with forward slashes.
	Rel string
	// ModTime is when it was last written.
	ModTime time.Time
}

// Documents returns the documents under the root, most recently written
// first, at most limit of them (all when limit is 0 or less).
func (w *Workspace) Documents(limit int) []Document {
	w.mu.Lock()
	out := make([]Document, 0, len(w.docs))
	for rel, t := range w.docs {
		out = append(out, Document{Rel: rel, ModTime: t})
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b Document) int {
		return cmp.Or(b.ModTime.Compare(a.ModTime), strings.Compare(a.Rel, b.Rel))
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// noteDoc records that rel is now a document written at mtime, or, when
// gone, that it is no longer one.
func (w *Workspace) noteDoc(rel string, mtime time.Time, gone bool) {
	if !IsDocFile(rel) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if gone {
		delete(w.docs, rel)
	} else {
		w.docs[rel] = mtime
	}
}

type fileState struct {
	mtime int64
	size  int64
}

// window is a path's coalescing window: events within it are folded into
// one settle at its deadline, when pending.
type window struct {
	deadline time.Time
	pending  bool
}

// NewWorkspace returns a watcher for opts.Root; Run starts it.
func NewWorkspace(opts WorkspaceOptions) (*Workspace, error) {
	if opts.Root == "" || !filepath.IsAbs(opts.Root) {
		return nil, fmt.Errorf("watch workspace: root %q must be an absolute path", opts.Root)
	}
	for _, p := range opts.Ignore {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("watch workspace: ignore pattern %q: %w", p, err)
		}
	}
	opts.Root = filepath.Clean(opts.Root)
	ignore := slices.Clone(DefaultIgnore)
	if !opts.KeepTemporaries {
		ignore = append(ignore, Temporaries...)
	}
	opts.Ignore = append(ignore, opts.Ignore...)
	opts.Coalesce = cmp.Or(opts.Coalesce, 500*time.Millisecond)
	opts.UnlinkDelay = cmp.Or(opts.UnlinkDelay, 100*time.Millisecond)
	opts.WorkflowDebounce = cmp.Or(opts.WorkflowDebounce, 500*time.Millisecond)
	opts.Rescan = cmp.Or(opts.Rescan, 5*time.Minute)
	if opts.OnFile == nil {
		opts.OnFile = func(FileEvent) {}
	}
	if opts.OnWorkflow == nil {
		opts.OnWorkflow = func(string, workflow.Workflow) {}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Workspace{
		opts:        opts,
		log:         opts.Logger.With("workspace", opts.Root),
		ready:       make(chan struct{}),
		addWatch:    func(w *fsnotify.Watcher, dir string) error { return w.Add(dir) },
		inspections: make(chan func()),
		known:       make(map[string]fileState),
		watched:     make(map[string]bool),
		windows:     make(map[string]*window),
		workflowDue: make(map[string]time.Time),
		badWorkflow: make(map[string]string),
		docs:        make(map[string]time.Time),
	}, nil
}

// Ready returns a channel closed once the initial scan is done and every
// directory is watched.
func (w *Workspace) Ready() <-chan struct{} { return w.ready }

// workflow.Workflow returns the last workflow read successfully and the workspace-
// relative path of its file, or false when there is none.
func (w *Workspace) Workflow() (workflow.Workflow, string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.workflow, w.workflowRel, w.workflowRel != ""
}

// inspect runs f on Run's goroutine and waits for it; Run must be running.
func (w *Workspace) inspect(f func()) {
	done := make(chan struct{})
	w.inspections <- func() { f(); close(done) }
	<-done
}

// pollInterval is how often the tree is walked when the kernel gives no
// inotify instance at all.
const pollInterval = 5 * time.Second

// Run watches until ctx ends. Without inotify (the instance limit reached)
// it says so once and falls back to walking the tree every few seconds.
func (w *Workspace) Run(ctx context.Context) error {
	fsw, err := fsnotify.NewBufferedWatcher(4096)
	switch {
	case errors.Is(err, syscall.EMFILE):
		w.log.Error("inotify instance limit reached; watching the workspace by polling every " + pollInterval.String() +
			" instead. Raise it on the host: sysctl -w fs.inotify.max_user_instances=1024")
	case err != nil:
		return fmt.Errorf("watch workspace: %w", err)
	default:
		w.fsw = fsw
		defer fsw.Close()
	}
	w.scan(true)
	close(w.ready)

	rescanEvery := w.opts.Rescan
	if w.fsw == nil {
		rescanEvery = pollInterval
	}
	var rescan <-chan time.Time
	if rescanEvery > 0 {
		t := time.NewTicker(rescanEvery)
		defer t.Stop()
		rescan = t.C
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fsw != nil {
		events, errs = w.fsw.Events, w.fsw.Errors
	}
	for {
		w.armTimer(timer)
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			w.handle(ev)
		case err, ok := <-errs:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Warn("the kernel dropped workspace events; rescanning")
				w.scan(false)
				continue
			}
			w.log.Warn("workspace watch", "err", err)
		case f := <-w.inspections:
			f()
		case <-timer.C:
			w.fireDue(time.Now())
		case <-rescan:
			w.scan(false)
		}
	}
}

// dueItem is a deadline of a path's window (workflow false) or of a
// workflow file's debounce (workflow true, key is rel).
type dueItem struct {
	at       time.Time
	key      string
	workflow bool
}

// dueHeap orders deadlines, earliest first (container/heap). An entry whose
// window is gone, or whose debounce has moved on, is stale and skipped when
// it comes up: a checkout of thousands of files opens thousands of
// windows, so finding the next deadline must not mean scanning them all.
type dueHeap []dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueItem)) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// live reports whether it still stands for a pending deadline.
func (w *Workspace) live(it dueItem) bool {
	if it.workflow {
		at, ok := w.workflowDue[it.key]
		return ok && at.Equal(it.at)
	}
	win, ok := w.windows[it.key]
	return ok && win.deadline.Equal(it.at)
}

// openWindow starts p's coalescing window.
func (w *Workspace) openWindow(p string, at time.Time, pending bool) {
	w.windows[p] = &window{deadline: at, pending: pending}
	heap.Push(&w.due, dueItem{at: at, key: p})
}

// debounceWorkflow (re)starts a workflow file's quiet period.
func (w *Workspace) debounceWorkflow(rel string, at time.Time) {
	w.workflowDue[rel] = at
	heap.Push(&w.due, dueItem{at: at, key: rel, workflow: true})
}

// armTimer points the timer at the earliest pending deadline.
func (w *Workspace) armTimer(t *time.Timer) {
	for w.due.Len() > 0 && !w.live(w.due[0]) {
		heap.Pop(&w.due)
	}
	if w.due.Len() == 0 {
		t.Stop()
		return
	}
	t.Reset(max(time.Until(w.due[0].at), 0))
}

// fireDue settles the windows and reads the workflow files whose time has
// come.
func (w *Workspace) fireDue(now time.Time) {
	for w.due.Len() > 0 && !w.due[0].at.After(now) {
		it := heap.Pop(&w.due).(dueItem)
		if !w.live(it) {
			continue
		}
		if it.workflow {
			delete(w.workflowDue, it.key)
			w.readWorkflow(it.key)
			continue
		}
		win := w.windows[it.key]
		delete(w.windows, it.key)
		if win.pending {
			w.settle(it.key)
		}
	}
}

// rel returns p relative to the root with forward slashes, and whether p
// is inside the root and not ignored.
func (w *Workspace) rel(p string) (string, bool) {
	r, err := filepath.Rel(w.opts.Root, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	r = filepath.ToSlash(r)
	if r == "." {
		return r, true
	}
	for _, elem := range strings.Split(r, "/") {
		for _, pat := range w.opts.Ignore {
			if ok, _ := path.Match(pat, elem); ok {
				return "", false
			}
		}
		if !w.opts.KeepTemporaries && mkstempTemporary(elem) {
			return "", false
		}
	}
	return r, true
}

func (w *Workspace) handle(ev fsnotify.Event) {
	if _, ok := w.rel(ev.Name); !ok {
		return
	}
	switch {
	case ev.Has(fsnotify.Create):
		fi, err := os.Lstat(ev.Name)
		if err != nil {
			w.note(ev.Name, true) // gone already
			return
		}
		if fi.IsDir() {
			w.addTree(ev.Name)
			return
		}
		w.note(ev.Name, false)
	case ev.Has(fsnotify.Write):
		w.note(ev.Name, false)
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		if w.watched[ev.Name] {
			w.removeTree(ev.Name)
			return
		}
		w.note(ev.Name, true)
	}
	// Chmod alone changes nothing a client shows.
}

// note folds an event on p into its window. A first change is settled at
// once, so an isolated write reaches clients without delay; later ones in
// the window are settled together at its end. A first removal waits a
// little, for save-by-rename.
func (w *Workspace) note(p string, removal bool) {
	if win := w.windows[p]; win != nil {
		win.pending = true
		return
	}
	now := time.Now()
	if removal {
		w.openWindow(p, now.Add(w.opts.UnlinkDelay), true)
		return
	}
	w.settle(p)
	w.openWindow(p, now.Add(w.opts.Coalesce), false)
}

// settle reports what p is now, compared with what was known of it.
func (w *Workspace) settle(p string) {
	rel, _ := w.rel(p)
	old, wasKnown := w.known[p]
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.Mode().IsRegular():
		now := fileState{mtime: fi.ModTime().UnixNano(), size: fi.Size()}
		w.known[p] = now
		w.noteDoc(rel, fi.ModTime(), false)
		switch {
		case !wasKnown:
			w.emit(p, rel, FileAdded)
		case now != old:
			w.emit(p, rel, FileChanged)
		}
	default:
		// Gone, or no longer a regular file (a directory or a FIFO now):
		// either way the file clients know of is gone.
		if wasKnown {
			delete(w.known, p)
			w.noteDoc(rel, time.Time{}, true)
			w.emit(p, rel, FileRemoved)
		}
	}
}

func (w *Workspace) emit(p, rel string, op FileOp) {
	w.opts.OnFile(FileEvent{Path: p, Rel: rel, Op: op, Time: time.Now()})
	if op != FileRemoved && workflow.IsFile(rel) {
		w.debounceWorkflow(rel, time.Now().Add(w.opts.WorkflowDebounce))
	}
}

// addTree watches a new directory and everything under it. The watch goes
// on first and the walk comes after, so a file created inside while the
// walk runs is either seen by the walk or reported by the watch.
func (w *Workspace) addTree(dir string) {
	w.walk(dir, func(p string, _ fs.DirEntry) { w.note(p, false) })
}

// walk visits the tree under dir: it skips what is ignored, watches every
// directory, and calls file for every regular file.
func (w *Workspace) walk(dir string, file func(p string, d fs.DirEntry)) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone meanwhile, or unreadable: nothing to watch
		}
		if _, ok := w.rel(p); !ok {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			w.watch(p)
		} else if d.Type().IsRegular() {
			file(p, d)
		}
		return nil
	})
}

// removeTree forgets a directory that was removed or moved away: every
// file known under it is settled (and so reported gone), and its watches
// are dropped.
func (w *Workspace) removeTree(dir string) {
	prefix := dir + string(filepath.Separator)
	for p := range w.known {
		if strings.HasPrefix(p, prefix) {
			w.note(p, true)
		}
	}
	for d := range w.watched {
		if d == dir || strings.HasPrefix(d, prefix) {
			delete(w.watched, d)
			if w.fsw != nil {
				_ = w.fsw.Remove(d) // the kernel may have dropped it already
			}
		}
	}
}

// watch adds a watch on dir, unless the kernel's limit was reached, which
// is reported once, clearly.
func (w *Workspace) watch(dir string) {
	if w.watched[dir] || w.fsw == nil {
		return
	}
	if w.limitHit {
		w.unwatched++
		return
	}
	err := w.addWatch(w.fsw, dir)
	switch {
	case err == nil:
		w.watched[dir] = true
	case errors.Is(err, syscall.ENOSPC):
		w.limitHit = true
		w.unwatched++
		w.log.Error("inotify watch limit reached: changes in this and further new directories are found only by the periodic rescan. "+
			"Raise the limit on the host: sysctl -w fs.inotify.max_user_watches=524288", "directory", dir)
	case errors.Is(err, fs.ErrNotExist):
		// Removed before the watch went on.
	default:
		w.log.Warn("watch directory", "directory", dir, "err", err)
	}
}

// scan walks the tree: it watches every directory not yet watched and,
// unless initial, reports every file that differs from what is known,
// catching what the kernel did not tell.
func (w *Workspace) scan(initial bool) {
	began := time.Now()
	seen := make(map[string]bool, len(w.known))
	var workflows []workflowFile
	w.walk(w.opts.Root, func(p string, d fs.DirEntry) {
		seen[p] = true
		fi, err := d.Info()
		if err != nil {
			return
		}
		now := fileState{mtime: fi.ModTime().UnixNano(), size: fi.Size()}
		if initial {
			w.known[p] = now
			rel, _ := w.rel(p)
			w.noteDoc(rel, fi.ModTime(), false)
			if workflow.IsFile(rel) {
				workflows = append(workflows, workflowFile{rel: rel, mtime: now.mtime})
			}
			return
		}
		if old, ok := w.known[p]; !ok || old != now {
			w.note(p, false)
		}
	})
	for p := range w.known {
		if !seen[p] {
			w.note(p, true)
		}
	}
	if initial {
		w.readNewestWorkflow(workflows)
		w.log.Info("watching the workspace", "files", len(w.known), "directories", len(w.watched),
			"unwatched", w.unwatched, "took", time.Since(began).Round(time.Millisecond))
	}
}

// workflowFile is a workflow status file found by the initial scan.
type workflowFile struct {
	rel   string
	mtime int64
}

// readNewestWorkflow makes the most recently written of the status files
// found at start, of those that parse, the current workflow: the one the
// agent wrote last is where the project stands. Of files written at the
// same moment, the one nearest the root wins.
func (w *Workspace) readNewestWorkflow(files []workflowFile) {
	slices.SortFunc(files, func(a, b workflowFile) int {
		return cmp.Or(cmp.Compare(b.mtime, a.mtime),
			cmp.Compare(strings.Count(a.rel, "/"), strings.Count(b.rel, "/")),
			strings.Compare(a.rel, b.rel))
	})
	for _, f := range files {
		if w.readWorkflow(f.rel) {
			return
		}
	}
}

// readWorkflow reads a workflow status file and, when it parses, makes it
// the current workflow, whichever file was current before: a project may
// keep several (docs/bmm-workflow-status.yaml beside the method's own
// .bmad/bmm/status/*.yaml), and the one just written is the news. A file
// that does not parse is reported once per content, and the last good
// workflow stays. It reports whether the file parsed.
func (w *Workspace) readWorkflow(rel string) bool {
	// A FIFO put in a status file's place must not block the read, and
	// with it the watcher and the server's shutdown, until a writer comes.
	data, err := regfile.Read(filepath.Join(w.opts.Root, filepath.FromSlash(rel)))
	if err != nil {
		return false // removed or unreadable meanwhile; a later event reads it
	}
	wf, err := workflow.Parse(data)
	if err != nil {
		if w.badWorkflow[rel] != string(data) {
			w.badWorkflow[rel] = string(data)
			w.log.Warn("workflow status file not understood; keeping the last good workflow", "file", rel, "err", err)
		}
		return false
	}
	delete(w.badWorkflow, rel)
	w.mu.Lock()
	w.workflow, w.workflowRel = wf, rel
	w.mu.Unlock()
	w.opts.OnWorkflow(rel, wf)
	return true
}

// IsDocFile reports whether rel (workspace-relative, forward slashes) is a
// markdown document under docs/, which the UI offers to show as it is
// written.
func IsDocFile(rel string) bool {
	return strings.HasPrefix(rel, "docs/") && strings.EqualFold(path.Ext(rel), ".md")
}
