package changes

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
)

// told is one summary Live told, and whom.
type told struct {
	id string
	s  Summarized
}

// recorder records what a Live tells, in order.
type recorder struct {
	mu  sync.Mutex
	got []told
}

func (r *recorder) notify(id string, s Summarized) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, told{id, s})
}

// of returns the summaries told to id so far, oldest first.
func (r *recorder) of(id string) []Summarized {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Summarized
	for _, t := range r.got {
		if t.id == id {
			out = append(out, t.s)
		}
	}
	return out
}

// await waits for a summary told to id, after the first skip of them,
// that satisfies ok, and returns it.
func (r *recorder) await(t *testing.T, id string, skip int, what string, ok func(Summarized) bool) Summarized {
	t.Helper()
	var found Summarized
	testutil.Eventually(t, testTimeout, id+": "+what, func() bool {
		all := r.of(id)
		for i := skip; i < len(all); i++ {
			if ok(all[i]) {
				found = all[i]
				return true
			}
		}
		return false
	})
	return found
}

// liveEnv is a running Live, what it told and what it logged.
type liveEnv struct {
	live *Live
	rec  *recorder
	log  *testutil.SyncBuffer
}

// startLive runs a Live with opts (Notify and Logger are the env's) until
// the test ends, and waits for Run to return then.
func startLive(t *testing.T, opts LiveOptions) *liveEnv {
	t.Helper()
	e := &liveEnv{rec: &recorder{}, log: &testutil.SyncBuffer{}}
	opts.Notify = e.rec.notify
	opts.Logger = slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.live = NewLive(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.live.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return e
}

// settle returns once Run has finished with everything handed to it
// before: it follows a fresh session in a tree of its own and waits for
// the session's first summary, which Run makes only after what came
// earlier.
func (e *liveEnv) settle(t *testing.T) {
	t.Helper()
	id := fmt.Sprintf("settle-%d", time.Now().UnixNano())
	e.live.Follow(id, repo(t, map[string]string{"s.txt": "s\n"}), "")
	e.rec.await(t, id, 0, "the first summary", func(Summarized) bool { return true })
}

// fileNames lists a summary's paths.
func fileNames(s Summarized) []string {
	var out []string
	for _, f := range s.Files {
		out = append(out, f.Path)
	}
	return out
}

func clean(s Summarized) bool { return len(s.Files) == 0 && s.Base != "" }

// TestLiveFollowsWrites: a session is told its clean tree, then each
// write it is told of, with counts; a second session in the tree hears
// the last summary at once, then every update; a commit moves the base,
// so the change is no longer the sessions'.
func TestLiveFollowsWrites(t *testing.T) {
	dir := repo(t, map[string]string{"README.md": "hello\n"})
	e := startLive(t, LiveOptions{BasePoll: 50 * time.Millisecond})
	e.live.Follow("a", dir, "")
	e.rec.await(t, "a", 0, "the clean tree", clean)

	write(t, dir, "notes/plan.txt", "one\ntwo\nthree\n")
	e.live.Changed(filepath.Join(dir, "notes/plan.txt"))
	s := e.rec.await(t, "a", 1, "the new file", func(s Summarized) bool { return len(s.Files) > 0 })
	if len(s.Files) != 1 || s.Files[0].Path != "notes/plan.txt" || s.Files[0].Status != Added || s.Additions != 3 {
		t.Errorf("after the write: %+v", s)
	}

	e.live.Follow("b", dir, "")
	if got := e.rec.await(t, "b", 0, "the last summary", func(Summarized) bool { return true }); got.Additions != 3 {
		t.Errorf("the newcomer heard %+v, want the last summary", got)
	}

	write(t, dir, "README.md", "hello\nworld\n")
	e.live.Changed(filepath.Join(dir, "README.md"))
	for _, id := range []string{"a", "b"} {
		e.rec.await(t, id, 0, "README.md", func(s Summarized) bool { return len(s.Files) == 2 && s.Additions == 4 })
	}

	na, nb := len(e.rec.of("a")), len(e.rec.of("b"))
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", "plan")
	for id, skip := range map[string]int{"a": na, "b": nb} {
		e.rec.await(t, id, skip, "the clean tree after the commit", clean)
	}
}

// TestLiveBurstIsOneUpdate: writes that come together are one update,
// which has them all.
func TestLiveBurstIsOneUpdate(t *testing.T) {
	dir := repo(t, map[string]string{"README.md": "hello\n"})
	e := startLive(t, LiveOptions{})
	e.live.Follow("a", dir, "")
	e.rec.await(t, "a", 0, "the clean tree", clean)
	const n = 10
	for i := range n {
		write(t, dir, fmt.Sprintf("f%d.txt", i), "x\n")
	}
	for i := range n {
		e.live.Changed(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)))
	}
	e.rec.await(t, "a", 1, "the burst", func(s Summarized) bool { return len(s.Files) > 0 })
	if got := e.rec.of("a"); len(got[1].Files) != n {
		t.Errorf("the first update after a burst of %d writes has %v", n, fileNames(got[1]))
	}
}

// TestLiveForget: a forgotten session hears nothing more, and its tree
// is not followed for it.
func TestLiveForget(t *testing.T) {
	dir := repo(t, map[string]string{"README.md": "hello\n"})
	e := startLive(t, LiveOptions{})
	e.live.Follow("a", dir, "")
	e.live.Follow("b", dir, "")
	e.rec.await(t, "a", 0, "the clean tree", clean)
	e.rec.await(t, "b", 0, "the clean tree", clean)
	told := len(e.rec.of("b"))
	e.live.Forget("b")
	write(t, dir, "new.txt", "new\n")
	e.live.Changed(filepath.Join(dir, "new.txt"))
	e.rec.await(t, "a", 1, "new.txt", func(s Summarized) bool { return len(s.Files) == 1 })
	e.settle(t)
	if got := e.rec.of("b"); len(got) != told {
		t.Errorf("a forgotten session was told %+v after it was forgotten", got[told:])
	}
}

// TestLiveForgetBeforeRunLooks: a session made and destroyed between two
// looks of Run is not followed: its tree is not diffed, now or later.
func TestLiveForgetBeforeRunLooks(t *testing.T) {
	l := NewLive(LiveOptions{})
	l.Follow("gone", repo(t, map[string]string{"README.md": "hello\n"}), "")
	l.Forget("gone")
	ts := trees{byKey: map[string]*tree{}, bySession: map[string]string{}}
	l.apply(ctx(t), &ts, l.take(), time.Now())
	if len(ts.byKey) != 0 || len(ts.bySession) != 0 {
		t.Errorf("after a session came and went: trees %v, sessions %v; want none followed", ts.byKey, ts.bySession)
	}
}

// TestLiveNewcomerBeforeFirstSummary: a session that joins a tree before
// its first summary is told that summary with the others, and no empty
// one before it.
func TestLiveNewcomerBeforeFirstSummary(t *testing.T) {
	rec := &recorder{}
	l := NewLive(LiveOptions{Notify: rec.notify})
	dir := repo(t, map[string]string{"README.md": "hello\n"})
	l.Follow("a", dir, "")
	l.Follow("b", dir, "")
	ts := trees{byKey: map[string]*tree{}, bySession: map[string]string{}}
	now := time.Now()
	l.apply(ctx(t), &ts, l.take(), now)
	l.updateDue(ctx(t), &ts, now)
	for _, id := range []string{"a", "b"} {
		if got := rec.of(id); len(got) != 1 || !clean(got[0]) {
			t.Errorf("%s was told %+v, want the clean tree once", id, got)
		}
	}
}

// TestLiveNestedTrees: a write in a worktree inside the workspace is the
// worktree's, not the workspace's; the worktree's changes count from
// where its branch left the workspace's.
func TestLiveNestedTrees(t *testing.T) {
	dir := repo(t, map[string]string{".gitignore": ".worktrees/\n", "README.md": "hello\n"})
	wt := filepath.Join(dir, ".worktrees", "feature")
	gitT(t, dir, "worktree", "add", "-q", "-b", "feature", wt)
	write(t, wt, "committed.txt", "feature\n")
	gitT(t, wt, "add", "committed.txt")
	gitT(t, wt, "commit", "-q", "-m", "feature work")

	e := startLive(t, LiveOptions{})
	e.live.Follow("main", dir, "")
	e.live.Follow("feature", wt, "main")
	e.rec.await(t, "main", 0, "the clean tree", clean)
	e.rec.await(t, "feature", 0, "the committed change", func(s Summarized) bool {
		return len(s.Files) == 1 && s.Files[0].Path == "committed.txt"
	})

	write(t, wt, "wip.txt", "uncommitted\n")
	e.live.Changed(filepath.Join(wt, "wip.txt"))
	s := e.rec.await(t, "feature", 1, "wip.txt", func(s Summarized) bool { return len(s.Files) == 2 })
	if got := strings.Join(fileNames(s), " "); got != "committed.txt wip.txt" {
		t.Errorf("the worktree's change: %s", got)
	}
	e.settle(t)
	if got := e.rec.of("main"); len(got) != 1 {
		t.Errorf("the workspace's session was told %d summaries (%+v), want only the first", len(got), got)
	}
}

// TestLiveWorkspaceLink: a workspace reached through a symbolic link is
// named so by the watchers and by its real path by git; writes under the
// link reach the tree.
func TestLiveWorkspaceLink(t *testing.T) {
	dir := repo(t, map[string]string{"README.md": "hello\n"})
	link := filepath.Join(t.TempDir(), "ws")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	e := startLive(t, LiveOptions{Workspace: link})
	e.live.Follow("a", link, "")
	e.rec.await(t, "a", 0, "the clean tree", clean)
	write(t, link, "new.txt", "new\n")
	e.live.Changed(filepath.Join(link, "new.txt"))
	e.rec.await(t, "a", 1, "new.txt", func(s Summarized) bool { return len(s.Files) == 1 && s.Files[0].Path == "new.txt" })

	// Only paths under the link are its: not a sibling that starts alike.
	for in, want := range map[string]string{
		link:                  dir,
		link + "/a/b.txt":     dir + "/a/b.txt",
		link + "x/a.txt":      link + "x/a.txt",
		"/elsewhere/ws/a.txt": "/elsewhere/ws/a.txt",
	} {
		if got := e.live.real(in); got != want {
			t.Errorf("real(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLiveNoRepository: a session outside any repository is not followed,
// which is said at debug level with the session's id, not warned about.
func TestLiveNoRepository(t *testing.T) {
	e := startLive(t, LiveOptions{})
	e.live.Follow("plain", t.TempDir(), "")
	testutil.Eventually(t, testTimeout, "the debug line", func() bool {
		return strings.Contains(e.log.String(), "level=DEBUG msg=\"cannot follow the session's changes\" session=plain")
	})
	e.settle(t)
	if got := e.rec.of("plain"); len(got) != 0 {
		t.Errorf("a session outside a repository was told %+v", got)
	}
	if strings.Contains(e.log.String(), "level=WARN") {
		t.Errorf("warned:\n%s", e.log)
	}
}

// TestLiveFetchesNothing: in a workspace that claims to be a partial
// clone, missing the blob its diff needs, with a promisor remote whose
// transport runs a command of the config's choosing (ssh with
// core.sshCommand, or ext::), the summaries Live makes, at the session's
// start and after a write, run nothing. They fail instead.
func TestLiveFetchesNothing(t *testing.T) {
	for _, transport := range []string{"ssh", "ext"} {
		t.Run(transport, func(t *testing.T) {
			dir, ran := lazyFetchRepo(t, transport)
			e := startLive(t, LiveOptions{})
			// The failures are the points to look at the marker.
			failures := func(n int) func() bool {
				return func() bool { return strings.Count(e.log.String(), "cannot summarize a session's changes") >= n }
			}
			e.live.Follow("a", dir, "")
			testutil.Eventually(t, testTimeout, "the first summary to fail", failures(1))
			testutil.NotRun(t, "the first summary", ran)

			write(t, dir, "a.txt", "three\n")
			e.live.Changed(filepath.Join(dir, "a.txt"))
			testutil.Eventually(t, testTimeout, "the summary after a write to fail", failures(2))
			testutil.NotRun(t, "the summary after a write", ran)
			if got := e.rec.of("a"); len(got) != 0 {
				t.Errorf("summaries told: %+v", got)
			}
		})
	}
}

// TestChangedIsBounded: past maxChanged writes between two looks, the
// list is cut short, and Run diffs every tree whole instead.
func TestChangedIsBounded(t *testing.T) {
	l := NewLive(LiveOptions{})
	for range maxChanged + 10 {
		l.Changed("/ws/f")
	}
	in := l.take()
	if len(in.changed) != maxChanged+1 {
		t.Fatalf("%d paths kept, want %d", len(in.changed), maxChanged+1)
	}
	ts := trees{byKey: map[string]*tree{
		"a": {tracker: NewTracker("/ws", ""), sessions: map[string]bool{"a": true}},
		"b": {tracker: NewTracker("/elsewhere", ""), sessions: map[string]bool{"b": true}},
	}}
	ts.note(in.changed, time.Now())
	for key, tr := range ts.byKey {
		if !tr.full {
			t.Errorf("tree %s: not marked for a full diff after the list was cut short", key)
		}
	}
}

// TestDueIn: an update waits for its tree's writes to pause, but not
// longer than maxWait after the first; a full one with no write to wait
// for is due at once.
func TestDueIn(t *testing.T) {
	const quiet, maxWait = 500 * time.Millisecond, time.Second
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name        string
		tree        tree
		now         time.Time
		wait        time.Duration
		wantPending bool
	}{
		{"nothing pending", tree{}, t0, 0, false},
		{"a full update", tree{full: true}, t0, 0, true},
		{"one write", tree{first: t0, last: t0}, t0.Add(100 * time.Millisecond), 400 * time.Millisecond, true},
		{"quiet long enough", tree{first: t0, last: t0}, t0.Add(quiet), 0, true},
		{"still writing", tree{first: t0, last: t0.Add(800 * time.Millisecond)}, t0.Add(900 * time.Millisecond), 100 * time.Millisecond, true},
		{"writing past maxWait", tree{first: t0, last: t0.Add(1100 * time.Millisecond)}, t0.Add(1200 * time.Millisecond), -200 * time.Millisecond, true},
		{"a full update waits for writes", tree{full: true, first: t0, last: t0}, t0, quiet, true},
	} {
		wait, pending := tc.tree.dueIn(tc.now, quiet, maxWait)
		if wait != tc.wait || pending != tc.wantPending {
			t.Errorf("%s: dueIn = %v, %v; want %v, %v", tc.name, wait, pending, tc.wait, tc.wantPending)
		}
	}
}
