package forge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Check is one check of a commit: a check run, or a commit status (whose
// name is its context).
type Check struct {
	Name  string `json:"name"`
	State string `json:"state"` // "passing" | "failing" | "pending" | "neutral"
	URL   string `json:"url"`
	// JobID is the GitHub Actions job's id when the check run is one, for
	// LogTail; 0 otherwise.
	JobID int64 `json:"-"`
	// Summary is a check run's output (title, summary, text) or a
	// status's description, bounded; LogTail's fallback.
	Summary string `json:"-"`
}

// Checks is a commit's checks and what they add up to.
type Checks struct {
	// State: any failing is "failing"; else any pending is "pending"; else
	// "passing" (neutral ones count as passed, as they do for GitHub's
	// required checks); "none" when there is no check.
	State  string  `json:"state"`
	Checks []Check `json:"checks"`
}

// maxSummary bounds a check's Summary.
const maxSummary = 16 << 10

// actionsJob finds an Actions job's id in a check run's details URL:
// https://github.com/o/r/actions/runs/123/job/456.
var actionsJob = regexp.MustCompile(`/actions/runs/\d+/jobs?/(\d+)`)

// Checks returns a commit's checks: its check runs (the latest of each
// name, all pages) and its commit statuses, conditionally. A status and a
// check run of one name are one check: the check run's.
// GET /repos/{o}/{r}/commits/{sha}/check-runs (docs.github.com/en/rest/checks/runs#list-check-runs-for-a-git-reference)
// and GET /repos/{o}/{r}/commits/{sha}/status (docs.github.com/en/rest/commits/statuses#get-the-combined-status-for-a-specific-reference).
func (c *Client) Checks(ctx context.Context, r Repo, sha string) (Checks, error) {
	byName := map[string]Check{}
	q := url.Values{"per_page": {strconv.Itoa(perPage)}, "filter": {"latest"}}
	err := c.pages(ctx, endpoint(r, q, "commits", sha, "check-runs"), func(body []byte) error {
		var page struct {
			CheckRuns []checkRunJSON `json:"check_runs"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		for _, cr := range page.CheckRuns {
			byName[cr.Name] = cr.check()
		}
		return nil
	})
	if err != nil {
		return Checks{}, fmt.Errorf("list the check runs of %s in %s: %w", short(sha), r, err)
	}
	q = url.Values{"per_page": {strconv.Itoa(perPage)}}
	err = c.pages(ctx, endpoint(r, q, "commits", sha, "status"), func(body []byte) error {
		var combined struct {
			Statuses []struct {
				State       string `json:"state"` // error | failure | pending | success
				Context     string `json:"context"`
				TargetURL   string `json:"target_url"`
				Description string `json:"description"`
			} `json:"statuses"`
		}
		if err := json.Unmarshal(body, &combined); err != nil {
			return err
		}
		for _, st := range combined.Statuses {
			if _, ok := byName[st.Context]; ok {
				continue
			}
			state := "pending"
			switch st.State {
			case "success":
				state = "passing"
			case "failure", "error":
				state = "failing"
			}
			byName[st.Context] = Check{Name: st.Context, State: state, URL: st.TargetURL, Summary: clip(st.Description, maxSummary)}
		}
		return nil
	})
	if err != nil {
		return Checks{}, fmt.Errorf("get the commit statuses of %s in %s: %w", short(sha), r, err)
	}
	out := Checks{State: "none", Checks: make([]Check, 0, len(byName))}
	for _, ch := range byName {
		out.Checks = append(out.Checks, ch)
	}
	sort.Slice(out.Checks, func(i, j int) bool { return out.Checks[i].Name < out.Checks[j].Name })
	out.State = Sum(out.Checks)
	return out, nil
}

// Sum is the state checks add up to: any failing is "failing"; else any
// pending is "pending"; else "passing"; "none" when there is none.
func Sum(checks []Check) string {
	if len(checks) == 0 {
		return "none"
	}
	state := "passing"
	for _, ch := range checks {
		switch ch.State {
		case "failing":
			return "failing"
		case "pending":
			state = "pending"
		}
	}
	return state
}

// checkRunJSON is the part of a check run read here
// (docs.github.com/en/rest/checks/runs#get-a-check-run).
type checkRunJSON struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	Status     string `json:"status"`     // queued | in_progress | completed | waiting | requested | pending
	Conclusion string `json:"conclusion"` // when completed: success | failure | neutral | cancelled | skipped | timed_out | action_required | stale
	HTMLURL    string `json:"html_url"`
	DetailsURL string `json:"details_url"`
	App        *struct {
		Slug string `json:"slug"`
	} `json:"app"`
	Output struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
		Text    string `json:"text"`
	} `json:"output"`
}

func (cr checkRunJSON) check() Check {
	ch := Check{Name: cr.Name, State: "pending", URL: cr.HTMLURL}
	if ch.URL == "" {
		ch.URL = cr.DetailsURL
	}
	if cr.Status == "completed" {
		switch cr.Conclusion {
		case "success":
			ch.State = "passing"
		case "neutral", "skipped", "stale":
			ch.State = "neutral"
		default: // failure, cancelled, timed_out, action_required, startup_failure: GitHub's merge box shows these as failed
			ch.State = "failing"
		}
	}
	if m := actionsJob.FindStringSubmatch(cr.DetailsURL); m != nil {
		ch.JobID, _ = strconv.ParseInt(m[1], 10, 64)
	} else if cr.App != nil && cr.App.Slug == "github-actions" {
		ch.JobID = cr.ID // an Actions job's check run has the job's id
	}
	var parts []string
	for _, s := range []string{cr.Output.Title, cr.Output.Summary, cr.Output.Text} {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	ch.Summary = clip(strings.Join(parts, "\n\n"), maxSummary)
	return ch
}

// maxLogRead bounds how much of a job's log is read to find its tail.
const maxLogRead = 64 << 20

// defaultTail is LogTail's bound when the caller gives none.
const defaultTail = 16 << 10

// LogTail returns the last maxBytes (at most; from a line's start) of a
// check's Actions job log, or its Summary when it has no job or the log
// is gone (logs expire) or not ours to read, or "" when neither.
// GET /repos/{o}/{r}/actions/jobs/{id}/logs answers 302 with a short-lived
// download URL (docs.github.com/en/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run);
// the redirect is followed here without the Authorization header, which
// belongs to GitHub's API and not to the storage the URL points to.
func (c *Client) LogTail(ctx context.Context, r Repo, ch Check, maxBytes int) (string, error) {
	if maxBytes <= 0 {
		maxBytes = defaultTail
	}
	if ch.JobID == 0 {
		return tailString(ch.Summary, maxBytes), nil
	}
	text, err := c.jobLog(ctx, r, ch.JobID, maxBytes)
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrRefused) {
		c.log.Debug("github job log unavailable, using the check's summary", "job", ch.JobID, "err", err)
		return tailString(ch.Summary, maxBytes), nil
	}
	if err != nil {
		return "", fmt.Errorf("get the log of %s (job %d) in %s: %w", ch.Name, ch.JobID, r, err)
	}
	return text, nil
}

// jobLog asks for a job's log's URL and reads its tail.
func (c *Client) jobLog(ctx context.Context, r Repo, job int64, maxBytes int) (string, error) {
	u := endpoint(r, nil, "actions", "jobs", strconv.FormatInt(job, 10), "logs")
	noFollow := *c.http
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	a, err := c.do(ctx, &noFollow, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	loc := a.header.Get("Location")
	if a.status != http.StatusFound && a.status != http.StatusSeeOther && a.status != http.StatusTemporaryRedirect || loc == "" {
		// Some servers send the log itself.
		return tail(strings.NewReader(string(a.body)), maxBytes)
	}
	to, err := url.Parse(u)
	if err != nil {
		return "", err
	}
	if to, err = to.Parse(loc); err != nil {
		return "", fmt.Errorf("%w: GET %s: a redirect to a URL that does not parse", ErrUnreachable, pathOf(u))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, to.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("User-Agent", c.ua)
	res, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: download the log: %v", ErrUnreachable, transportError(err))
	}
	defer res.Body.Close()
	c.log.Debug("github job log download", "host", to.Host, "status", res.StatusCode)
	switch {
	case res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusGone:
		return "", fmt.Errorf("download the log: %w", ErrNotFound)
	case res.StatusCode/100 != 2:
		return "", fmt.Errorf("%w: download the log: %d %s", ErrUnreachable, res.StatusCode, http.StatusText(res.StatusCode))
	}
	return tail(io.LimitReader(res.Body, maxLogRead), maxBytes)
}

// tail reads r to its end keeping the last n bytes, then drops a cut
// first line.
func tail(r io.Reader, n int) (string, error) {
	buf := make([]byte, 0, n+32<<10)
	chunk := make([]byte, 32<<10)
	cut := false
	for {
		m, err := r.Read(chunk)
		buf = append(buf, chunk[:m]...)
		if len(buf) > n {
			copy(buf, buf[len(buf)-n:])
			buf = buf[:n]
			cut = true
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", fmt.Errorf("%w: reading the log: %v", ErrUnreachable, transportError(err))
		}
	}
	return dropCutLine(string(buf), cut), nil
}

// tailString is s's last n bytes, from a line's start.
func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return dropCutLine(s[len(s)-n:], true)
}

// dropCutLine drops the partial first line of a cut text (or, for one
// long line, its partial first rune).
func dropCutLine(s string, cut bool) string {
	if !cut {
		return s
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)-1 {
		return s[i+1:]
	}
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}

// short is a commit id's first 12 hex digits, for messages.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
