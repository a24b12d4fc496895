package forge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// ReviewComment is an unresolved review thread of a pull request: its
// first comment, with the replies appended to Body.
type ReviewComment struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`      // the line in the head's file (RIGHT side); 0 when outdated
	StartLine int    `json:"startLine"` // for a multi-line comment, else 0
	Author    string `json:"author"`
	Body      string `json:"body"`
	URL       string `json:"url"`
}

// maxThreadBody bounds one thread's Body, replies included (GitHub caps a
// comment at 65536 characters).
const maxThreadBody = 64 << 10

// threadsQuery asks for a pull request's review threads, a page at a
// time. The fields are the PullRequestReviewThread object's
// (docs.github.com/en/graphql/reference/objects#pullrequestreviewthread)
// and the PullRequestReviewComment's (…#pullrequestreviewcomment). REST
// has no way to tell resolved threads: only GraphQL's isResolved does.
const threadsQuery = `query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          isResolved
          isOutdated
          path
          line
          startLine
          comments(first: 100) {
            nodes { author { login } body url }
          }
        }
      }
    }
  }
}`

// graphQLError is one of a GraphQL answer's errors
// (docs.github.com/en/graphql/guides/forming-calls-with-graphql).
type graphQLError struct {
	Type    string `json:"type"` // NOT_FOUND, RATE_LIMITED, FORBIDDEN...
	Message string `json:"message"`
}

// UnresolvedComments returns a pull request's unresolved review threads
// that are not outdated (their lines are gone), one entry per thread:
// its first comment, with later replies appended to Body as
// "\n\n<author>: <reply>". GraphQL: POST {API}/graphql (Enterprise:
// https://<host>/api/graphql), repository.pullRequest.reviewThreads,
// paged by 100, at most maxPages pages.
func (c *Client) UnresolvedComments(ctx context.Context, r Repo, number int) ([]ReviewComment, error) {
	out := []ReviewComment{}
	var cursor *string
	for range maxPages {
		payload := map[string]any{"query": threadsQuery, "variables": map[string]any{"owner": r.Owner, "name": r.Name, "number": number, "cursor": cursor}}
		a, err := c.do(ctx, c.http, http.MethodPost, r.graphQL(), payload)
		if err != nil {
			return nil, fmt.Errorf("list the review threads of pull request #%d of %s: %w", number, r, err)
		}
		var res struct {
			Data struct {
				Repository *struct {
					PullRequest *struct {
						ReviewThreads struct {
							PageInfo struct {
								HasNextPage bool   `json:"hasNextPage"`
								EndCursor   string `json:"endCursor"`
							} `json:"pageInfo"`
							Nodes []struct {
								IsResolved bool   `json:"isResolved"`
								IsOutdated bool   `json:"isOutdated"`
								Path       string `json:"path"`
								Line       *int   `json:"line"`
								StartLine  *int   `json:"startLine"`
								Comments   struct {
									Nodes []struct {
										Author *struct {
											Login string `json:"login"`
										} `json:"author"`
										Body string `json:"body"`
										URL  string `json:"url"`
									} `json:"nodes"`
								} `json:"comments"`
							} `json:"nodes"`
						} `json:"reviewThreads"`
					} `json:"pullRequest"`
				} `json:"repository"`
			} `json:"data"`
			Errors []graphQLError `json:"errors"`
		}
		if err := json.Unmarshal(a.body, &res); err != nil {
			return nil, fmt.Errorf("list the review threads of pull request #%d of %s: %w: the answer is not GraphQL's JSON: %v", number, r, ErrUnreachable, err)
		}
		if err := graphQLErrors(a, res.Errors); err != nil {
			return nil, fmt.Errorf("list the review threads of pull request #%d of %s: %w", number, r, err)
		}
		if res.Data.Repository == nil || res.Data.Repository.PullRequest == nil {
			return nil, fmt.Errorf("list the review threads of pull request #%d of %s: %w", number, r, ErrNotFound)
		}
		threads := res.Data.Repository.PullRequest.ReviewThreads
		for _, th := range threads.Nodes {
			if th.IsResolved || th.IsOutdated || len(th.Comments.Nodes) == 0 {
				continue
			}
			first := th.Comments.Nodes[0]
			rc := ReviewComment{Path: th.Path, Body: first.Body, URL: first.URL}
			if th.Line != nil {
				rc.Line = *th.Line
			}
			if th.StartLine != nil && *th.StartLine != rc.Line {
				rc.StartLine = *th.StartLine
			}
			if first.Author != nil {
				rc.Author = first.Author.Login
			}
			var b strings.Builder
			b.WriteString(first.Body)
			for _, reply := range th.Comments.Nodes[1:] {
				who := "ghost" // GitHub's name for a deleted account
				if reply.Author != nil {
					who = reply.Author.Login
				}
				b.WriteString("\n\n" + who + ": " + reply.Body)
			}
			rc.Body = clip(b.String(), maxThreadBody)
			out = append(out, rc)
		}
		if !threads.PageInfo.HasNextPage {
			return out, nil
		}
		cursor = &threads.PageInfo.EndCursor
	}
	c.log.Debug("github review threads cut at the page limit", "repo", r.String(), "number", number, "pages", maxPages)
	return out, nil
}

// graphQLErrors turns a GraphQL answer's errors (sent with 200) into the
// package's: NOT_FOUND is ErrNotFound, RATE_LIMITED is *RateLimited (from
// the answer's headers), any other a *Refused quoting GitHub.
func graphQLErrors(a answer, errs []graphQLError) error {
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs {
		switch e.Type {
		case "NOT_FOUND":
			return fmt.Errorf("%s: %w", clip(e.Message, maxMessage), ErrNotFound)
		case "RATE_LIMITED":
			if rl := rateLimited(a.header, "rate limit", http.StatusForbidden); rl != nil {
				return rl
			}
		}
	}
	r := &Refused{Status: a.status, Message: "GraphQL"}
	for _, e := range errs[:min(len(errs), 5)] {
		r.Errors = append(r.Errors, clip(e.Message, maxMessage))
	}
	return r
}
