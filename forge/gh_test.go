package forge_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/forge/githubtest"
)

// TestGHAgainstStandIn runs the real gh CLI's `gh api` against the
// stand-in, showing its answers are in shapes GitHub's own client reads:
// creating a pull request, the 422 for a second one, paging with
// --paginate (Link rel="next"), and GraphQL. Skipped without gh (CI
// installs none).
//
// gh speaks https to any host but one: "github.localhost", its local
// development host, whose API it calls at http://api.github.localhost/
// (GraphQL at /graphql). HTTP_PROXY sends those requests to the stand-in,
// which serves absolute-form requests like any other. GH_TOKEN is used for
// that host, and a fresh GH_CONFIG_DIR keeps the user's gh config out.
func TestGHAgainstStandIn(t *testing.T) {
	gh, err := exec.LookPath("gh")
	if err != nil {
		t.Skip("gh is not installed")
	}
	s := githubtest.New(t)
	s.AddRepo("o", "r", "main")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, gh, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GH_CONFIG_DIR=" + dir, "GH_HOST=github.localhost",
			"GH_TOKEN=" + githubtest.Token, "HTTP_PROXY=" + s.URL, "GH_NO_UPDATE_NOTIFIER=1", "GH_PROMPT_DISABLED=1"}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("api", "-X", "POST", "repos/o/r/pulls", "-f", "title=From gh", "-f", "head=feature", "-f", "base=main", "--jq", ".html_url")
	if err != nil || strings.TrimSpace(out) != "https://github.com/o/r/pull/1" {
		t.Fatalf("gh api POST pulls: %v\n%s", err, out)
	}
	out, err = run("api", "-X", "POST", "repos/o/r/pulls", "-f", "title=Again", "-f", "head=feature", "-f", "base=main")
	if err == nil || !strings.Contains(out, "A pull request already exists for o:feature.") || !strings.Contains(out, "HTTP 422") {
		t.Errorf("gh api POST a second pull request: %v\n%s", err, out)
	}
	for i := range 40 {
		s.AddReview("o", "r", 1, githubtest.Review{User: "u", State: "COMMENTED", Body: string(rune('a' + i%26))})
	}
	out, err = run("api", "--paginate", "repos/o/r/pulls/1/reviews?per_page=15", "--jq", ".[].id")
	if n := len(strings.Fields(out)); err != nil || n != 40 {
		t.Errorf("gh api --paginate reviews: %d ids, %v\n%s", n, err, out)
	}
	out, err = run("api", "graphql", "-f", "query=query($owner:String!,$name:String!,$number:Int!){repository(owner:$owner,name:$name){pullRequest(number:$number){reviewThreads(first:10){pageInfo{hasNextPage endCursor} nodes{isResolved path}}}}}",
		"-F", "owner=o", "-F", "name=r", "-F", "number=1")
	var res struct {
		Data struct {
			Repository struct {
				PullRequest struct {
					ReviewThreads struct {
						Nodes []any `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		} `json:"data"`
	}
	if err != nil || json.Unmarshal([]byte(out), &res) != nil || res.Data.Repository.PullRequest.ReviewThreads.Nodes == nil {
		t.Errorf("gh api graphql: %v\n%s", err, out)
	}
}
