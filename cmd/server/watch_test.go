package main

// End-to-end tests of the workspace and memory features (SPEC 3, 4 and 5,
// "Workspace" and "Memory"): real fsnotify on a temp workspace, the real
// memory monitor reading this machine's cgroup or host, real HTTP and
// WebSocket through the server newServer builds.

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// isolatedWriteBound is how soon an isolated write's file.changed must
// reach a client here. SPEC 5 asks for 200 ms (it takes about 2 ms); the
// slack is for -race on a busy two-core machine, while still catching a
// first event held back to the end of the 500 ms coalescing window.
const isolatedWriteBound = 450 * time.Millisecond

// The workspace's messages are read with apitest's client.
type watchEvent = apitest.Event

var (
	readWatchEvent = apitest.ReadEvent
	collectUntil   = apitest.CollectUntil
	collectWithin  = apitest.CollectWithin
	eventLines     = apitest.EventLines
)

// isFileEvent matches the file.changed of abs with op ("" for any op).
func isFileEvent(abs, op string) func(watchEvent) bool {
	return func(ev watchEvent) bool {
		return ev.Type == wire.TypeFileChanged && ev.Path == abs && (op == "" || ev.Event == op)
	}
}

// watchWS waits for the workspace watcher's initial scan (a file written
// before it would be taken as already there, not added) and opens a
// WebSocket on e's server, registered with the hub once it returns.
func watchWS(t *testing.T, e *apiEnv) *websocket.Conn {
	t.Helper()
	return apitest.OpenWS(t, e.ts.URL, e.srv.workspace.Ready())
}

// writeWS writes a file under root, making its directories.
func writeWS(t testing.TB, root, rel, content string) string {
	t.Helper()
	abs := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return abs
}

var markerSeq atomic.Int64

// marker writes a new file at the workspace root and reads up to its
// file.changed, returning what came before it. Every event of a write made
// before the marker's is queued by the kernel ahead of the marker's, and a
// first event is reported at once, so what the marker does not bring along
// never came.
func marker(t testing.TB, e *apiEnv, conn *websocket.Conn) []watchEvent {
	t.Helper()
	abs := writeWS(t, e.dir, fmt.Sprintf("marker-%d.txt", markerSeq.Add(1)), "m\n")
	got := collectUntil(t, conn, "the marker's file.changed", isFileEvent(abs, "add"))
	return got[:len(got)-1]
}

// checkFileChanged checks a file.changed frame has exactly the protocol's
// fields and a timestamp in [from, to], give or take a second of clock
// granularity.
func checkFileChanged(t testing.TB, ev watchEvent, from, to time.Time) {
	t.Helper()
	var fields map[string]any
	if err := json.Unmarshal(ev.Raw, &fields); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(fields)); !slices.Equal(keys, []string{"event", "path", "timestamp", "type"}) {
		t.Errorf("file.changed %s has fields %q, want exactly type, path, event, timestamp", ev.Raw, keys)
	}
	if !filepath.IsAbs(ev.Path) {
		t.Errorf("file.changed %s: path is not absolute", ev.Raw)
	}
	ts, err := time.Parse(time.RFC3339, ev.Timestamp)
	if err != nil {
		t.Errorf("file.changed %s: timestamp is not RFC 3339: %v", ev.Raw, err)
		return
	}
	if ts.Before(from.Add(-time.Second)) || ts.After(to.Add(time.Second)) {
		t.Errorf("file.changed %s: timestamp %v is not between %v and %v", ev.Raw, ts, from, to)
	}
}

// only returns the events for which keep holds.
func only(evs []watchEvent, keep func(watchEvent) bool) []watchEvent {
	var out []watchEvent
	for _, ev := range evs {
		if keep(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// TestWatchFileEvents: add, change and unlink of a file reach a client as
// file.changed, with the absolute path and an RFC 3339 timestamp; so do
// files in directories made after the server started.
func TestWatchFileEvents(t *testing.T) {
	e := newAPI(t)
	conn := watchWS(t, e)

	// A plain write of a new file, in a new directory.
	before := time.Now()
	abs := writeWS(t, e.dir, "notes/plain.txt", "hello\n")
	got := collectUntil(t, conn, "file.changed for notes/plain.txt", isFileEvent(abs, ""))
	took := time.Since(before)
	ev := got[len(got)-1]
	if ev.Event != "add" {
		t.Errorf("first file.changed for a new file: %s, want event add", ev.Raw)
	}
	checkFileChanged(t, ev, before, time.Now())
	if took > isolatedWriteBound {
		t.Errorf("an isolated write took %v to reach the client, want under %v (SPEC: 200 ms)", took, isolatedWriteBound)
	}
	t.Logf("isolated write reached the client in %v", took)

	// A file moved into place whole, as editors save, so that its add has
	// no trailing change and what follows is the test's own change.
	staged := filepath.Join(t.TempDir(), "doc.txt")
	if err := os.WriteFile(staged, []byte("v1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	abs = filepath.Join(e.dir, "notes", "doc.txt")
	before = time.Now()
	if err := os.Rename(staged, abs); err != nil {
		t.Fatal(err)
	}
	got = collectUntil(t, conn, "file.changed for notes/doc.txt", isFileEvent(abs, ""))
	if ev := got[len(got)-1]; ev.Event != "add" {
		t.Errorf("file moved into the workspace: %s, want event add", ev.Raw)
	} else {
		checkFileChanged(t, ev, before, time.Now())
	}

	before = time.Now()
	if err := os.WriteFile(abs, []byte("version two, longer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got = collectUntil(t, conn, "file.changed for the rewritten notes/doc.txt", isFileEvent(abs, ""))
	if ev := got[len(got)-1]; ev.Event != "change" {
		t.Errorf("rewritten file: %s, want event change", ev.Raw)
	} else {
		checkFileChanged(t, ev, before, time.Now())
	}

	before = time.Now()
	if err := os.Remove(abs); err != nil {
		t.Fatal(err)
	}
	// A change still pending from the rewrite may come first.
	got = collectUntil(t, conn, "file.changed unlink for notes/doc.txt", isFileEvent(abs, "unlink"))
	for _, ev := range only(got, isFileEvent(abs, "")) {
		if ev.Event != "change" && ev.Event != "unlink" {
			t.Errorf("after the removal: %s, want only a pending change, then unlink", ev.Raw)
		}
	}
	checkFileChanged(t, got[len(got)-1], before, time.Now())
	if late := only(marker(t, e, conn), isFileEvent(abs, "")); len(late) > 0 {
		t.Errorf("events for notes/doc.txt after its unlink:\n%s", eventLines(late))
	}

	// mkdir -p and a file at once: the file is found although it may be
	// written before the new directories' watches are in.
	deep := filepath.Join(e.dir, "a", "b", "c", "f.txt")
	if err := os.MkdirAll(filepath.Dir(deep), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(deep, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got = collectUntil(t, conn, "file.changed add for a/b/c/f.txt", isFileEvent(deep, "add"))
	got = append(got, marker(t, e, conn)...)
	// Directories are not files.
	for _, dir := range []string{"a", "a/b", "a/b/c", "notes"} {
		if evs := only(got, isFileEvent(filepath.Join(e.dir, dir), "")); len(evs) > 0 {
			t.Errorf("file.changed for the directory %s:\n%s", dir, eventLines(evs))
		}
	}

	// A save by rename over the old file, as editors do, is a change.
	saved := writeWS(t, e.dir, "notes/saved.txt", "old\n")
	collectUntil(t, conn, "file.changed add for notes/saved.txt", isFileEvent(saved, "add"))
	marker(t, e, conn)
	tmp := writeWS(t, e.dir, "notes/.saved.txt.swp", "new content\n")
	if err := os.Rename(tmp, saved); err != nil {
		t.Fatal(err)
	}
	got = collectUntil(t, conn, "file.changed for notes/saved.txt saved by rename", isFileEvent(saved, ""))
	got = append(got, marker(t, e, conn)...)
	for _, ev := range only(got, isFileEvent(saved, "")) {
		if ev.Event != "change" {
			t.Errorf("save by rename: %s, want only change", ev.Raw)
		}
	}

	// A directory moved in brings its files; moved out, it takes them.
	outside := t.TempDir()
	writeWS(t, outside, "pkg/a.txt", "a\n")
	writeWS(t, outside, "pkg/sub/b.txt", "b\n")
	pkgFiles := []string{filepath.Join(e.dir, "pkg", "a.txt"), filepath.Join(e.dir, "pkg", "sub", "b.txt")}
	if err := os.Rename(filepath.Join(outside, "pkg"), filepath.Join(e.dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	waitFileEvents(t, conn, "add", pkgFiles...)
	if err := os.Rename(filepath.Join(e.dir, "pkg"), filepath.Join(outside, "gone")); err != nil {
		t.Fatal(err)
	}
	waitFileEvents(t, conn, "unlink", pkgFiles...)
	// Out of the workspace it is no longer watched.
	writeWS(t, outside, "gone/c.txt", "c\n")
	writeWS(t, outside, "gone/sub/b.txt", "changed\n")
	for _, ev := range marker(t, e, conn) {
		if strings.Contains(ev.Path, "/pkg/") || strings.HasPrefix(ev.Path, outside) {
			t.Errorf("event from a directory moved out of the workspace: %s", ev.Raw)
		}
	}

	// A directory removed with its files.
	rmFiles := []string{writeWS(t, e.dir, "rm/x.txt", "x\n"), writeWS(t, e.dir, "rm/deeper/y.txt", "y\n")}
	waitFileEvents(t, conn, "add", rmFiles...)
	if err := os.RemoveAll(filepath.Join(e.dir, "rm")); err != nil {
		t.Fatal(err)
	}
	waitFileEvents(t, conn, "unlink", rmFiles...)
}

// waitFileEvents reads until a file.changed with op has come for every one
// of paths.
func waitFileEvents(t testing.TB, conn *websocket.Conn, op string, paths ...string) {
	t.Helper()
	missing := map[string]bool{}
	for _, p := range paths {
		missing[p] = true
	}
	collectUntil(t, conn, fmt.Sprintf("file.changed %s for %q", op, paths), func(ev watchEvent) bool {
		if ev.Type == wire.TypeFileChanged && ev.Event == op {
			delete(missing, ev.Path)
		}
		return len(missing) == 0
	})
}

// hangBound bounds waits that only a hang makes long: the events waited for
// come within the watcher's 500 ms windows.
const hangBound = 5 * time.Second

// TestWatchFileReplacedByDirectory: a file removed and a directory made in
// its place (rm x && mkdir x) is an unlink for the file; the directory is
// then watched like any new one.
func TestWatchFileReplacedByDirectory(t *testing.T) {
	e := newAPI(t)
	conn := watchWS(t, e)
	p := writeWS(t, e.dir, "build", "a file at first\n")
	collectUntil(t, conn, "file.changed add for build", isFileEvent(p, "add"))
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := collectWithin(t, conn, hangBound, "file.changed unlink for build, now a directory", isFileEvent(p, "unlink")); !ok {
		t.FailNow()
	}
	inner := writeWS(t, e.dir, "build/out.txt", "x\n")
	collectUntil(t, conn, "file.changed add for build/out.txt", isFileEvent(inner, "add"))
}

// TestWatchWorkflowFileReplacedByFifo: a workflow status file replaced by a
// FIFO before its debounced read must not stop the watcher: reading a FIFO
// waits for a writer that may never come.
func TestWatchWorkflowFileReplacedByFifo(t *testing.T) {
	e := newAPI(t)
	statusFile := filepath.Join(e.dir, "docs", "bmm-workflow-status.yaml")
	// Should the watcher be stuck reading the FIFO, a writer's open frees
	// it, so the server can stop. Runs before newAPI's cleanup.
	release := func() {
		if w, err := os.OpenFile(statusFile, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // a reader was waiting; ENXIO means none
		}
	}
	t.Cleanup(release)
	conn := watchWS(t, e)

	writeWS(t, e.dir, "docs/bmm-workflow-status.yaml", flatWorkflowYAML)
	collectUntil(t, conn, "file.changed add for the status file", isFileEvent(statusFile, "add"))
	// Within the 500 ms debounce: the read, when due, finds a FIFO.
	if err := os.Remove(statusFile); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(statusFile, 0o644); err != nil {
		t.Fatal(err)
	}
	// Another status file, written later, is read later: its
	// workflow.updated proves the watcher got past the FIFO.
	writeWS(t, e.dir, "_bmad-output/sprint-status.yaml", sprintYAML)
	got, ok := collectWithin(t, conn, hangBound, "workflow.updated for the sprint file, read after the FIFO's turn", isWorkflowUpdated)
	if !ok {
		release()
		t.FailNow()
	}
	checkWorkflowUpdated(t, got[len(got)-1], sprintJSON, "_bmad-output/sprint-status.yaml")
	getWorkflow(t, e, sprintJSON, "_bmad-output/sprint-status.yaml")
}

// TestWatchLayoutShift: a markdown file written under docs/ suggests the
// split layout with its path; one elsewhere does not.
func TestWatchLayoutShift(t *testing.T) {
	e := newAPI(t)
	conn := watchWS(t, e)

	prd := writeWS(t, e.dir, "docs/prd.md", "# PRD\n")
	got := collectUntil(t, conn, "layout.shift for docs/prd.md", func(ev watchEvent) bool { return ev.Type == wire.TypeLayoutShift })
	shift := got[len(got)-1]
	if len(only(got, isFileEvent(prd, "add"))) != 1 {
		t.Errorf("layout.shift without the file.changed add of docs/prd.md before it:\n%s", eventLines(got))
	}
	var fields map[string]any
	if err := json.Unmarshal(shift.Raw, &fields); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "layout.shift", "mode": "split", "trigger": "file_write", "path": "docs/prd.md"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("layout.shift = %s, want exactly %v", shift.Raw, want)
	}

	// Markdown outside docs/, and a non-markdown file inside it.
	notes := writeWS(t, e.dir, "notes/x.md", "# x\n")
	data := writeWS(t, e.dir, "docs/data.json", "{}\n")
	got = marker(t, e, conn)
	for _, abs := range []string{notes, data} {
		if len(only(got, isFileEvent(abs, "add"))) != 1 {
			t.Errorf("no file.changed add for %s before the marker:\n%s", abs, eventLines(got))
		}
	}
	for _, ev := range only(got, func(ev watchEvent) bool { return ev.Type == wire.TypeLayoutShift }) {
		// docs/prd.md may still have a trailing change, and with it a
		// layout.shift; nothing else may.
		if ev.Path != "docs/prd.md" {
			t.Errorf("unexpected layout.shift: %s", ev.Raw)
		}
	}
}

// TestWatchIgnored: node_modules, .git and --watch-ignore patterns produce
// nothing.
func TestWatchIgnored(t *testing.T) {
	e := newAPI(t, "--watch-ignore", "*.tmp, scratch")
	conn := watchWS(t, e)

	ignored := []string{
		writeWS(t, e.dir, "node_modules/left-pad/index.js", "module.exports = 1\n"),
		writeWS(t, e.dir, "src/node_modules/x/y.js", "1\n"),
		writeWS(t, e.dir, ".git/HEAD", "ref: refs/heads/main\n"),
		writeWS(t, e.dir, "build.tmp", "tmp\n"),
		writeWS(t, e.dir, "docs/draft.tmp", "tmp\n"),
		writeWS(t, e.dir, "scratch/notes.md", "tmp\n"),
	}
	kept := writeWS(t, e.dir, "src/main.go", "package main\n")
	// mentionsIgnored reports the messages that name an ignored path.
	mentionsIgnored := func(evs []watchEvent) {
		t.Helper()
		for _, ev := range evs {
			for _, abs := range ignored {
				rel := strings.TrimPrefix(abs, e.dir+"/")
				first, _, _ := strings.Cut(rel, "/")
				if strings.Contains(ev.Path, rel) || ev.Path == filepath.Join(e.dir, first) {
					t.Errorf("message about an ignored path: %s", ev.Raw)
				}
			}
		}
	}
	got := marker(t, e, conn)
	mentionsIgnored(got)
	if len(only(got, isFileEvent(kept, "add"))) != 1 {
		t.Errorf("no file.changed add for src/main.go, written among the ignored files:\n%s", eventLines(got))
	}

	// Changing and removing them is just as silent.
	for _, abs := range ignored {
		if err := os.WriteFile(abs, []byte("changed, longer than before\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"node_modules", "scratch", "build.tmp", ".git"} {
		if err := os.RemoveAll(filepath.Join(e.dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	mentionsIgnored(marker(t, e, conn))
}

// Workflow status files of the test and what the protocol makes of them.
const (
	flatWorkflowYAML = "workflow_status: {brainstorm: docs/brainstorm.md, prd: in-progress, architecture: required}\n"
	flatWorkflowJSON = `{"currentStep":"prd","completedSteps":["brainstorm"],"steps":[
		{"name":"brainstorm","status":"completed"},
		{"name":"prd","status":"in_progress"},
		{"name":"architecture","status":"pending"}]}`

	sprintYAML = `# generated by sprint-planning
generated: 2025-06-01
project: demo
development_status:
  epic-1: in-progress
  1-1-project-setup: done
  1-2-user-login: review
  1-3-logout: backlog
`
	sprintJSON = `{"currentStep":"epic-1","completedSteps":["1-1-project-setup"],"steps":[
		{"name":"epic-1","status":"in_progress"},
		{"name":"1-1-project-setup","status":"completed"},
		{"name":"1-2-user-login","status":"in_progress"},
		{"name":"1-3-logout","status":"pending"}]}`

	// An unclosed flow sequence: not YAML.
	malformedYAML = "workflow_status: {brainstorm: done, prd: [in-progress\n"
)

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t testing.TB, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// getWorkflow checks GET /api/workflow against the workflow JSON want and
// its file ("" for none: both null).
func getWorkflow(t testing.TB, e *apiEnv, wantWorkflow, wantFile string) {
	t.Helper()
	resp, b := e.do(http.MethodGet, "/api/workflow", "")
	wantStatus(t, "GET /api/workflow", resp, b, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("GET /api/workflow: Content-Type %q, want JSON", ct)
	}
	want := `{"workflow":null,"file":null}`
	if wantFile != "" {
		file, _ := json.Marshal(wantFile)
		want = `{"workflow":` + wantWorkflow + `,"file":` + string(file) + `}`
	}
	if !jsonEqual(t, b, []byte(want)) {
		t.Errorf("GET /api/workflow = %s, want %s", b, want)
	}
}

// checkWorkflowUpdated checks a workflow.updated frame is exactly
// {"type","workflow","file"} with the workflow want, read from file.
func checkWorkflowUpdated(t testing.TB, ev watchEvent, want, file string) {
	t.Helper()
	quoted, _ := json.Marshal(file)
	if !jsonEqual(t, ev.Raw, []byte(`{"type":"workflow.updated","workflow":`+want+`,"file":`+string(quoted)+`}`)) {
		t.Errorf("workflow.updated = %s, want workflow %s from %s", ev.Raw, want, file)
	}
}

func isWorkflowUpdated(ev watchEvent) bool { return ev.Type == wire.TypeWorkflowUpdated }

// TestWatchWorkflow: BMAD status files are read into workflow.updated and
// GET /api/workflow; a malformed one is logged once and changes nothing.
func TestWatchWorkflow(t *testing.T) {
	e := newAPI(t)
	conn := watchWS(t, e)
	getWorkflow(t, e, "", "")

	const statusRel = "docs/bmm-workflow-status.yaml"
	writeWS(t, e.dir, statusRel, flatWorkflowYAML)
	got := collectUntil(t, conn, "workflow.updated for "+statusRel, isWorkflowUpdated)
	checkWorkflowUpdated(t, got[len(got)-1], flatWorkflowJSON, statusRel)
	getWorkflow(t, e, flatWorkflowJSON, statusRel)

	// Malformed: one warning, no message, the good workflow stays.
	writeWS(t, e.dir, statusRel, malformedYAML)
	testutil.Eventually(t, waitTimeout, "a warning about the malformed "+statusRel, func() bool {
		return len(linesWith(e.log.String(), "level=WARN", statusRel)) > 0
	})
	getWorkflow(t, e, flatWorkflowJSON, statusRel)

	// The sprint file goes through the same debounce, so it is the marker
	// for workflow messages: none may come before its own.
	const sprintRel = "_bmad-output/sprint-status.yaml"
	writeWS(t, e.dir, sprintRel, sprintYAML)
	got = collectUntil(t, conn, "workflow.updated for "+sprintRel, isWorkflowUpdated)
	checkWorkflowUpdated(t, got[len(got)-1], sprintJSON, sprintRel)
	getWorkflow(t, e, sprintJSON, sprintRel)
	// Anything still due from the malformed file has been read by now: its
	// last event came before the sprint file's, with the same debounce.
	if late := only(marker(t, e, conn), isWorkflowUpdated); len(late) > 0 {
		t.Errorf("workflow.updated after the sprint file's:\n%s", eventLines(late))
	}
	if warns := linesWith(e.log.String(), "level=WARN", statusRel); len(warns) != 1 {
		t.Errorf("want exactly one WARN about the malformed %s, got %d:\n%s", statusRel, len(warns), strings.Join(warns, "\n"))
	}
	if errs := linesWith(e.log.String(), "level=ERROR"); len(errs) > 0 {
		t.Errorf("errors logged:\n%s", strings.Join(errs, "\n"))
	}
}

// TestWatchWorkflowAtStart: a status file already in the workspace, at the
// protocol's own location, is served from the start, and a later change to
// it reaches clients.
func TestWatchWorkflowAtStart(t *testing.T) {
	dir := t.TempDir()
	const rel = ".bmad/bmm/status/project.yaml"
	writeWS(t, dir, rel, `workflow_status:
  - phase: 1
    name: Analysis
    workflows:
      - id: brainstorm-project
        name: Brainstorm
        status: docs/brainstorm.md
  - phase: 2
    name: Planning
    workflows:
      - id: prd
        name: PRD
        status: required
`)
	e := newAPI(t, "--workspace", dir)
	e.dir = dir
	conn := watchWS(t, e) // the initial scan has read it
	getWorkflow(t, e, `{"currentStep":"prd","completedSteps":["brainstorm-project"],"steps":[
		{"name":"brainstorm-project","status":"completed","displayName":"Brainstorm"},
		{"name":"prd","status":"pending","displayName":"PRD"}]}`, rel)

	writeWS(t, dir, rel, "phase_2_planning:\n  name: Planning\n  workflows:\n    - {id: prd, name: PRD, status: done}\n    - {id: architecture, status: in-progress}\n")
	want := `{"currentStep":"architecture","completedSteps":["prd"],"steps":[
		{"name":"prd","status":"completed","displayName":"PRD"},
		{"name":"architecture","status":"in_progress"}]}`
	got := collectUntil(t, conn, "workflow.updated for "+rel, isWorkflowUpdated)
	checkWorkflowUpdated(t, got[len(got)-1], want, rel)
	getWorkflow(t, e, want, rel)
}

// rawGet sends GET e.ts.URL+pathAndQuery exactly as given: the query is not
// re-encoded.
func rawGet(t testing.TB, e *apiEnv, pathAndQuery string) (*http.Response, []byte) {
	t.Helper()
	return e.api().At(t).RawGet(pathAndQuery)
}

// resources is GET /api/resources.
type resources struct {
	UsedBytes            uint64  `json:"usedBytes"`
	LimitBytes           uint64  `json:"limitBytes"`
	Percent              float64 `json:"percent"`
	Source               string  `json:"source"`
	Level                string  `json:"level"`
	AcceptingNewSessions bool    `json:"acceptingNewSessions"`
	Sessions             []struct {
		ID       string `json:"id"`
		RSSBytes uint64 `json:"rssBytes"`
	} `json:"sessions"`
	raw []byte
}

// getResources reads GET /api/resources and checks its shape: exactly the
// fields of SPEC 3, sessions an array.
func getResources(t testing.TB, e *apiEnv) resources {
	t.Helper()
	resp, b := e.do(http.MethodGet, "/api/resources", "")
	wantStatus(t, "GET /api/resources", resp, b, http.StatusOK)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	want := []string{"acceptingNewSessions", "level", "limitBytes", "percent", "sessions", "source", "usedBytes"}
	if keys := slices.Sorted(maps.Keys(fields)); !slices.Equal(keys, want) {
		t.Errorf("GET /api/resources %s: fields %q, want %q", b, keys, want)
	}
	if s := strings.TrimSpace(string(fields["sessions"])); !strings.HasPrefix(s, "[") {
		t.Errorf("GET /api/resources %s: sessions is not an array", b)
	}
	var r resources
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	r.raw = b
	return r
}

// sampledResources waits for the memory monitor's first sample (before it
// the reading is all zero) and checks the reading.
func sampledResources(t testing.TB, e *apiEnv) resources {
	t.Helper()
	var r resources
	testutil.Eventually(t, waitTimeout, "a memory sample", func() bool {
		r = getResources(t, e)
		return r.UsedBytes > 0
	})
	if r.LimitBytes < r.UsedBytes {
		t.Errorf("resources %s: limitBytes below usedBytes", r.raw)
	}
	if r.Percent <= 0 || r.Percent > 100 {
		t.Errorf("resources %s: percent outside (0, 100]", r.raw)
	}
	if want := float64(r.UsedBytes) * 100 / float64(r.LimitBytes); r.Percent < want-0.01 || r.Percent > want+0.01 {
		t.Errorf("resources %s: percent is not usedBytes over limitBytes (%.3f)", r.raw, want)
	}
	if !slices.Contains([]string{"cgroup2", "cgroup1", "host"}, r.Source) {
		t.Errorf("resources %s: source %q, want cgroup2, cgroup1 or host", r.raw, r.Source)
	}
	if r.AcceptingNewSessions != (r.Level != "critical") {
		t.Errorf("resources %s: acceptingNewSessions must be true exactly when the level is not critical", r.raw)
	}
	return r
}

// vmRSS reads a process's VmRSS in bytes.
func vmRSS(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, false
			}
			n, err := strconv.ParseUint(f[0], 10, 64)
			return n << 10, err == nil
		}
	}
	return 0, false
}

// TestResources: at the default thresholds, the reading, the level and each
// running session's process tree (its children included).
func TestResources(t *testing.T) {
	e := newAPI(t)
	r := sampledResources(t, e)
	t.Logf("memory: %s", r.raw)
	if r.Percent < 85 && (r.Level != "ok" || !r.AcceptingNewSessions) {
		t.Errorf("resources %s: at %.1f%% with thresholds 87/93 the level must be ok and sessions accepted", r.raw, r.Percent)
	}
	if len(r.Sessions) != 0 {
		t.Errorf("resources %s: sessions listed before any was made", r.raw)
	}

	s := e.createCommand([]string{"sh", "-c", "sleep 60 & exec sleep 60"})
	other := e.create("{}") // the default sleeper
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	pid := sess.Pid()
	if pid == 0 {
		t.Fatal("the session has no process")
	}
	testutil.Eventually(t, waitTimeout, "the session's tree, its background sleep included, in /api/resources", func() bool {
		r = getResources(t, e)
		own, ok := vmRSS(pid)
		if !ok {
			return false
		}
		for _, entry := range r.Sessions {
			if entry.ID == s.ID {
				// More than the agent's own process: the child counts.
				return entry.RSSBytes > own
			}
		}
		return false
	})
	ids := []string{}
	for _, entry := range r.Sessions {
		ids = append(ids, entry.ID)
		if entry.RSSBytes == 0 {
			t.Errorf("resources %s: session %s with rssBytes 0", r.raw, entry.ID)
		}
	}
	slices.Sort(ids)
	want := []string{s.ID, other.ID}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("resources %s: sessions %q, want %q", r.raw, ids, want)
	}

	// A stopped session is no longer listed.
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+other.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	r = getResources(t, e)
	for _, entry := range r.Sessions {
		if entry.ID == other.ID {
			t.Errorf("resources %s: deleted session %s still listed", r.raw, other.ID)
		}
	}
}

// TestMemoryCritical: with thresholds below this machine's real use the
// level is critical: the API says so, a new connection is told first
// thing, and new and resumed agents are refused, by the API and the
// WebSocket alike.
func TestMemoryCritical(t *testing.T) {
	// One workspace for both servers: a server restores only its own
	// workspace's sessions.
	dataDir, ws := t.TempDir(), t.TempDir()
	var saved wire.Session
	var pct float64
	// A first server at the default thresholds reads the real use and
	// leaves a session in the database, idle after the restart below.
	t.Run("default thresholds", func(t *testing.T) {
		e := newAPI(t, "--data-dir", dataDir, "--workspace", ws)
		pct = sampledResources(t, e).Percent
		saved = e.create(`{"name":"before the squeeze"}`)
	})
	if t.Failed() {
		t.FailNow()
	}
	if pct < 0.2 {
		t.Skipf("memory use reads %.3f%%: too low to set thresholds below it", pct)
	}
	warn, crit := pct/4, pct/2
	e := newAPI(t, "--data-dir", dataDir, "--workspace", ws,
		"--mem-warn", strconv.FormatFloat(warn, 'f', -1, 64),
		"--mem-critical", strconv.FormatFloat(crit, 'f', -1, 64),
		"--mem-interval", "100ms")
	r := sampledResources(t, e)
	if r.Percent < crit {
		t.Skipf("memory use fell from %.3f%% to %.3f%%, below the critical threshold %.3f%%", pct, r.Percent, crit)
	}
	// The level is critical from the first sample on. The hub learns it
	// from the monitor within the sample that set it, so once admission is
	// refused one more sample, which waits for the one before to finish,
	// makes sure the hub has it too.
	testutil.Eventually(t, waitTimeout, "admission to be refused", func() bool { return e.srv.memory.Admit() != nil })
	if _, err := e.srv.memory.Sample(); err != nil {
		t.Fatal(err)
	}
	r = getResources(t, e)
	if r.Level != "critical" || r.AcceptingNewSessions {
		t.Errorf("resources %s at %.3f%% over critical %.3f%%: want level critical, acceptingNewSessions false", r.raw, r.Percent, crit)
	}
	if r.Sessions == nil || len(r.Sessions) != 0 {
		t.Errorf("resources %s: want sessions [] (the restored session runs no process)", r.raw)
	}

	// A new connection hears of it before anything else.
	conn, _, err := dialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	first, err := readWatchEvent(conn, time.Now().Add(waitTimeout))
	if err != nil {
		t.Fatalf("first message: %v", err)
	}
	var warning map[string]any
	if err := json.Unmarshal(first.Raw, &warning); err != nil {
		t.Fatal(err)
	}
	if keys := slices.Sorted(maps.Keys(warning)); !slices.Equal(keys, []string{"isAcceptingNewSessions", "level", "memoryUsagePercent", "message", "type"}) {
		t.Errorf("first message %s: fields %q, want a resource.warning's", first.Raw, keys)
	}
	if warning["type"] != "resource.warning" || warning["level"] != "critical" || warning["isAcceptingNewSessions"] != false {
		t.Errorf("first message %s: want resource.warning, level critical, isAcceptingNewSessions false", first.Raw)
	}
	if p, ok := warning["memoryUsagePercent"].(float64); !ok || p <= 0 || p > 100 {
		t.Errorf("first message %s: memoryUsagePercent not in (0, 100]", first.Raw)
	}
	if m, ok := warning["message"].(string); !ok || m == "" {
		t.Errorf("first message %s: no message", first.Raw)
	}

	// No new agent through the API, and nothing changes.
	for _, body := range []string{"", "{}", `{"command":["sh","-c","exec sleep 60"]}`} {
		resp, b := e.do(http.MethodPost, "/api/sessions", body)
		wantError(t, "create "+body, resp, b, http.StatusServiceUnavailable, wire.CodeMemoryCritical)
	}
	// The manager admits agents: a session it has is refused for memory,
	// an unknown id is not found, as ever.
	resp, b := e.do(http.MethodPost, "/api/sessions/"+saved.ID+"/resume", "")
	wantError(t, "resume the restored session", resp, b, http.StatusServiceUnavailable, wire.CodeMemoryCritical)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+uuid.NewString()+"/resume", "")
	wantError(t, "resume an unknown id", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	list := e.list()
	if len(list) != 1 || list[0].ID != saved.ID || list[0].Status != "idle" {
		t.Errorf("sessions after the refusals: %+v, want only %s, idle", list, saved.ID)
	}

	// Nor through the WebSocket.
	for id, code := range map[string]string{saved.ID: wire.CodeMemoryCritical, uuid.NewString(): wire.CodeSessionNotFound} {
		if err := conn.WriteJSON(map[string]any{"type": "session.resume", "sessionId": id}); err != nil {
			t.Fatal(err)
		}
		got := collectUntil(t, conn, "the error for session.resume", func(ev watchEvent) bool { return ev.Type == "error" })
		if ev := got[len(got)-1]; ev.Code != code || ev.SessionID != id {
			t.Errorf("session.resume %s: %s, want error %s for that session", id, ev.Raw, code)
		}
	}
	roundTrip(t, conn) // the connection carries on
	if got := e.get(saved.ID); got.Status != "idle" {
		t.Errorf("the restored session after the refused resumes: status %q, want idle", got.Status)
	}
	if r := getResources(t, e); len(r.Sessions) != 0 {
		t.Errorf("resources %s: a process was started", r.raw)
	}
	if lines := linesWith(e.log.String(), "level=WARN", "memory level changed", "to=critical"); len(lines) != 1 {
		t.Errorf("want one WARN for the change to critical, got:\n%s", strings.Join(lines, "\n"))
	}
}

// TestWatchConfig: memory thresholds out of order and bad ignore patterns
// are refused before anything starts.
func TestWatchConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want []string
		// oneLine: refused after parsing, so run prints the one error
		// line; a flag value the flag package refuses also brings the
		// usage.
		oneLine bool
	}{
		{[]string{"--mem-warn", "93", "--mem-critical", "93"}, nil, []string{"--mem-warn", "--mem-critical", "93"}, true},
		{[]string{"--mem-warn", "95", "--mem-critical", "90"}, nil, []string{"--mem-warn", "--mem-critical", "95", "90"}, true},
		{[]string{"--mem-warn", "95"}, nil, []string{"--mem-warn", "--mem-critical", "95", "93"}, true},
		{nil, map[string]string{"AGENTMUX_MEM_WARN": "95", "AGENTMUX_MEM_CRITICAL": "90"}, []string{"--mem-warn", "--mem-critical"}, true},
		{[]string{"--mem-warn", "0", "--mem-critical", "50"}, nil, []string{"--mem-warn", "--mem-critical"}, true},
		{[]string{"--mem-warn", "50", "--mem-critical", "101"}, nil, []string{"--mem-warn", "--mem-critical"}, true},
		{[]string{"--watch-ignore", "["}, nil, []string{"watch-ignore", `"["`}, false},
		{[]string{"--watch-ignore", "dist, [abc"}, nil, []string{"watch-ignore", `"[abc"`}, false},
		{nil, map[string]string{"AGENTMUX_WATCH_IGNORE": "["}, []string{"AGENTMUX_WATCH_IGNORE", `"["`}, true},
	} {
		_, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
		if err == nil {
			t.Errorf("%q %v: parseConfig accepted it", tc.args, tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q %v: error %q does not name %q", tc.args, tc.env, err, w)
			}
		}
		var out testutil.SyncBuffer
		if code := run(make(chan os.Signal, 1), tc.args, envOf(tc.env), &out, nil); code != 2 {
			t.Errorf("%q %v: run returned %d, want 2", tc.args, tc.env, code)
		}
		last := strings.TrimSpace(out.String())
		if i := strings.LastIndexByte(last, '\n'); i >= 0 {
			if tc.oneLine {
				t.Errorf("%q %v: want one line, got:\n%s", tc.args, tc.env, out.String())
			}
			last = last[i+1:]
		}
		if !strings.HasPrefix(last, "agentmux: ") {
			t.Errorf("%q %v: last line %q is not agentmux's error", tc.args, tc.env, last)
		}
		for _, w := range tc.want {
			if !strings.Contains(last, w) {
				t.Errorf("%q %v: run's error line does not name %q: %s", tc.args, tc.env, w, last)
			}
		}
	}

	// What is fine.
	for _, tc := range []struct {
		args         []string
		warn, crit   float64
		interval     time.Duration
		ignore       []string
		ignoreAbsent bool
	}{
		{args: nil, warn: 87, crit: 93, interval: 5 * time.Second, ignoreAbsent: true},
		{args: []string{"--mem-warn", "0.5", "--mem-critical", "1", "--mem-interval", "100ms"}, warn: 0.5, crit: 1, interval: 100 * time.Millisecond, ignoreAbsent: true},
		{args: []string{"--mem-warn", "99", "--mem-critical", "100"}, warn: 99, crit: 100, interval: 5 * time.Second, ignoreAbsent: true},
		{args: []string{"--watch-ignore", " *.tmp, dist ,,[a-z]*.log"}, warn: 87, crit: 93, interval: 5 * time.Second, ignore: []string{"*.tmp", "dist", "[a-z]*.log"}},
	} {
		cfg, err := parseConfig(tc.args, noEnv, io.Discard)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if cfg.MemWarn != tc.warn || cfg.MemCritical != tc.crit || cfg.MemInterval != tc.interval {
			t.Errorf("%q: warn %g critical %g interval %v, want %g %g %v", tc.args, cfg.MemWarn, cfg.MemCritical, cfg.MemInterval, tc.warn, tc.crit, tc.interval)
		}
		if tc.ignoreAbsent && len(cfg.WatchIgnore) != 0 || !tc.ignoreAbsent && !slices.Equal(cfg.WatchIgnore, tc.ignore) {
			t.Errorf("%q: WatchIgnore %q, want %q", tc.args, cfg.WatchIgnore, tc.ignore)
		}
	}
}
