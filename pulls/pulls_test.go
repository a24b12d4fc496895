package pulls_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/forge/githubtest"
	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/sessions"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFollowsOnlyWhileWatched: Run asks the forge nothing about a pull
// request nobody watches, however many times it looks; once someone
// watches, it asks, and asks again conditionally, which the forge answers
// with 304 while nothing changed; what changes is told once.
func TestFollowsOnlyWhileWatched(t *testing.T) {
	apitest.SkipWithoutGit(t)
	gh := githubtest.New(t)
	gh.AddRepo("octo", "demo", "main")
	repo := t.TempDir()
	if err := gitexec.Trust(repo, filepath.Join(repo, sessions.WorktreesDir)); err != nil {
		t.Fatal(err)
	}
	apitest.InitRepo(t, repo)
	bare := filepath.Join(t.TempDir(), "demo.git")
	apitest.Git(t, repo, "init", "-q", "--bare", bare)
	apitest.Git(t, repo, "remote", "add", "origin", "git@github.com:octo/demo.git")
	apitest.Git(t, repo, "config", "remote.origin.pushurl", bare)

	mgr, err := sessions.NewManager(sessions.Options{MaxSessions: 2, KeepSessions: 2, Scrollback: 1 << 16, Workspace: repo,
		DefaultProfile: sessions.CustomProfile(apitest.Sleeper())})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), apitest.Timeout)
		defer cancel()
		if err := mgr.Shutdown(ctx, time.Second); err != nil {
			t.Error(err)
		}
	}()
	sess, err := mgr.Create(sessions.CreateOptions{WorktreeBranch: "feat-watch"})
	if err != nil {
		t.Fatal(err)
	}
	tree := sess.Info().Worktree.Path
	if err := os.WriteFile(filepath.Join(tree, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apitest.Git(t, tree, "add", "a.txt")
	apitest.Git(t, tree, "commit", "-q", "-m", "Add a")

	var watched atomic.Bool
	var looks atomic.Int64
	var mu sync.Mutex
	var told []pulls.View
	svc, err := pulls.New(pulls.Options{
		Sessions: mgr,
		Token:    forge.TokenOptions{Getenv: func(k string) string { return map[string]string{"GITHUB_TOKEN": githubtest.Token}[k] }},
		API:      gh.URL,
		Refresh:  10 * time.Millisecond,
		Watched: func(string) bool {
			looks.Add(1)
			return watched.Load()
		},
		Notify: func(_ string, v pulls.View) {
			mu.Lock()
			told = append(told, v)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	opened, err := svc.Open(context.Background(), sess, pulls.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if !opened.Created || opened.Title != "Add a" {
		t.Fatalf("opened %+v, want a new pull request titled by the commit", opened)
	}
	before := len(gh.Requests())

	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { svc.Run(ctx) })
	defer func() {
		cancel()
		run.Wait()
	}()
	testutil.Eventually(t, apitest.Timeout, "Run to look five times", func() bool { return looks.Load() >= 5 })
	if n := len(gh.Requests()) - before; n != 0 {
		t.Fatalf("the forge was asked %d times about a pull request nobody watches", n)
	}

	watched.Store(true)
	testutil.Eventually(t, apitest.Timeout, "conditional requests answered 304", func() bool {
		unchanged := 0
		for _, rq := range gh.Requests()[before:] {
			if rq.Conditional && rq.NotModified {
				unchanged++
			}
		}
		return unchanged >= 6
	})
	// What a look costs: every REST request conditional and, nothing
	// having changed, answered 304, which GitHub's rate limit does not
	// count; the threads' GraphQL query, one a look, is the only cost.
	cancel()
	run.Wait()
	// Each look starts with the pull request's GET; the last, cut short
	// by cancel, may lack the rest.
	var asked, gets, graphql int
	for _, rq := range gh.Requests()[before:] {
		switch {
		case rq.Method == "GET" && (!rq.Conditional || !rq.NotModified):
			t.Errorf("%s %s: conditional %v, not modified %v; want every look's GET answered 304", rq.Method, rq.Path, rq.Conditional, rq.NotModified)
		case rq.Method == "GET":
			gets++
			if strings.HasSuffix(rq.Path, "/pulls/"+strconv.Itoa(opened.Number)) {
				asked++
			}
		case rq.Path == "/graphql":
			graphql++
		}
	}
	if asked == 0 || gets > 4*asked || gets < 4*(asked-1) || graphql > asked || graphql < asked-1 {
		t.Errorf("%d looks, %d GETs, %d GraphQL queries: want 4 GETs (pull, reviews, check runs, statuses) and one query a look", asked, gets, graphql)
	}
	t.Logf("%d looks: %d GETs, all 304; %d GraphQL queries", asked, gets, graphql)
	mu.Lock()
	n := len(told)
	mu.Unlock()
	if n != 1 {
		t.Errorf("told %d views of an unchanged pull request, want 1 (the first look's)", n)
	}
}
