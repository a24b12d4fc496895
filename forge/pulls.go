package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// PullRequest is a pull request as agentmux shows it.
type PullRequest struct {
	Number  int    `json:"number"`
	URL     string `json:"url"`   // its page (html_url)
	State   string `json:"state"` // "open" | "draft" | "merged" | "closed"
	Title   string `json:"title"`
	Head    string `json:"head"` // branch name
	Base    string `json:"base"` // branch name
	HeadSHA string `json:"headSha"`
}

// NewPull is a pull request to open. An empty Base is the repository's
// default branch.
type NewPull struct {
	Title, Body, Head, Base string
	Draft                   bool
}

// pullJSON is the part of GitHub's pull request object read here
// (docs.github.com/en/rest/pulls/pulls#get-a-pull-request).
type pullJSON struct {
	Number   int        `json:"number"`
	HTMLURL  string     `json:"html_url"`
	State    string     `json:"state"` // open | closed
	Title    string     `json:"title"`
	Draft    bool       `json:"draft"`
	Merged   bool       `json:"merged"` // only in a single pull request's answer
	MergedAt *time.Time `json:"merged_at"`
	Head     struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (p pullJSON) pullRequest() PullRequest {
	state := p.State
	switch {
	case p.Merged || p.MergedAt != nil:
		state = "merged"
	case p.State == "open" && p.Draft:
		state = "draft"
	}
	return PullRequest{Number: p.Number, URL: p.HTMLURL, State: state, Title: p.Title, Head: p.Head.Ref, Base: p.Base.Ref, HeadSHA: p.Head.SHA}
}

// FindOpen returns the open pull request of branch head into r (from r's
// owner: GitHub's head filter is owner:branch), or nil, nil when there is
// none. GET /repos/{o}/{r}/pulls?head={o}:{head}&state=open.
func (c *Client) FindOpen(ctx context.Context, r Repo, head string) (*PullRequest, error) {
	q := url.Values{"head": {r.Owner + ":" + head}, "state": {"open"}, "per_page": {"1"}}
	var pulls []pullJSON
	if err := c.getJSON(ctx, endpoint(r, q, "pulls"), &pulls); err != nil {
		return nil, fmt.Errorf("find the open pull request of %s in %s: %w", head, r, err)
	}
	if len(pulls) == 0 {
		return nil, nil
	}
	p := pulls[0].pullRequest()
	return &p, nil
}

// Create opens a pull request. POST /repos/{o}/{r}/pulls; when p.Base is
// "", the repository's default branch is asked for first. A second pull
// request of one head is refused by GitHub (422 "A pull request already
// exists for o:b."): callers look with FindOpen first.
func (c *Client) Create(ctx context.Context, r Repo, p NewPull) (PullRequest, error) {
	if p.Base == "" {
		var repo struct {
			DefaultBranch string `json:"default_branch"`
		}
		if err := c.getJSON(ctx, endpoint(r, nil), &repo); err != nil {
			return PullRequest{}, fmt.Errorf("find %s's default branch: %w", r, err)
		}
		p.Base = repo.DefaultBranch
	}
	payload := map[string]any{"title": p.Title, "body": p.Body, "head": p.Head, "base": p.Base, "draft": p.Draft}
	a, err := c.do(ctx, c.http, http.MethodPost, endpoint(r, nil, "pulls"), payload)
	if err != nil {
		return PullRequest{}, fmt.Errorf("open a pull request of %s into %s in %s: %w", p.Head, p.Base, r, err)
	}
	var pj pullJSON
	if err := json.Unmarshal(a.body, &pj); err != nil {
		return PullRequest{}, fmt.Errorf("open a pull request in %s: %w: the answer is not a pull request: %v", r, ErrUnreachable, err)
	}
	return pj.pullRequest(), nil
}

// Pull returns pull request number (conditionally: an unchanged one costs
// no rate limit). GET /repos/{o}/{r}/pulls/{n}.
func (c *Client) Pull(ctx context.Context, r Repo, number int) (PullRequest, error) {
	var pj pullJSON
	if err := c.getJSON(ctx, endpoint(r, nil, "pulls", strconv.Itoa(number)), &pj); err != nil {
		return PullRequest{}, fmt.Errorf("get pull request #%d of %s: %w", number, r, err)
	}
	return pj.pullRequest(), nil
}

// Review is one submitted review of a pull request.
type Review struct {
	Author      string
	State       string // APPROVED | CHANGES_REQUESTED | COMMENTED | DISMISSED
	SubmittedAt time.Time
}

// Reviews returns a pull request's reviews, oldest first, all pages
// (conditionally). GET /repos/{o}/{r}/pulls/{n}/reviews
// (docs.github.com/en/rest/pulls/reviews#list-reviews-for-a-pull-request).
// The caller's own PENDING review (not submitted) is left out.
func (c *Client) Reviews(ctx context.Context, r Repo, number int) ([]Review, error) {
	var out []Review
	u := endpoint(r, url.Values{"per_page": {strconv.Itoa(perPage)}}, "pulls", strconv.Itoa(number), "reviews")
	err := c.pages(ctx, u, func(body []byte) error {
		var page []struct {
			User *struct {
				Login string `json:"login"`
			} `json:"user"`
			State       string     `json:"state"`
			SubmittedAt *time.Time `json:"submitted_at"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		for _, rv := range page {
			if rv.State == "PENDING" {
				continue
			}
			x := Review{State: rv.State}
			if rv.User != nil {
				x.Author = rv.User.Login // a deleted account's reviews have no user
			}
			if rv.SubmittedAt != nil {
				x.SubmittedAt = *rv.SubmittedAt
			}
			out = append(out, x)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the reviews of pull request #%d of %s: %w", number, r, err)
	}
	return out, nil
}

// Decision is a pull request's review decision as GitHub's page tells it:
// each author's latest review that is not COMMENTED counts (a DISMISSED
// one takes back the author's earlier verdict); any CHANGES_REQUESTED
// among them is "changes_requested", else any APPROVED is "approved",
// else "". Reviews are taken in the order given when times are equal.
func Decision(reviews []Review) string {
	latest := map[string]Review{}
	for _, rv := range reviews {
		if rv.State == "COMMENTED" || rv.State == "PENDING" {
			continue
		}
		if prev, ok := latest[rv.Author]; ok && rv.SubmittedAt.Before(prev.SubmittedAt) {
			continue
		}
		latest[rv.Author] = rv
	}
	decision := ""
	for _, rv := range latest {
		switch rv.State {
		case "CHANGES_REQUESTED":
			return "changes_requested"
		case "APPROVED":
			decision = "approved"
		}
	}
	return decision
}
