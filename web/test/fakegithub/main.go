// Command fakegithub serves forge/githubtest's stand-in for GitHub's API
// as a process, for the UI test 68-pull-request.test.mjs, with a control
// API the test drives.
//
//	go run ./web/test/fakegithub -addr 127.0.0.1:0 -token T
//
// It prints exactly one line to stdout, "listening http://127.0.0.1:PORT",
// once it accepts connections, and stops on SIGTERM or SIGINT. The API is
// served at the root (as https://api.github.com: pass the URL as
// --github-api) and under /api/v3 with GraphQL at /api/graphql (as GitHub
// Enterprise Server); pull requests' html_url is https://github.com/o/r/pull/n.
//
// Control API: JSON bodies, no token; 204 on success, 400 with a text body
// when a body is wrong or names an unknown repository or pull request.
// "pull": n in place of "sha" means the head commit of pull request n.
//
//	POST /_control/repos      {"owner","name","defaultBranch"}             add a repository (default branch "main")
//	POST /_control/checks     {"owner","name","sha"|"pull","runs":[{"id","name","status","conclusion","detailsUrl","app","title","summary","text"}]}
//	                          set a commit's check runs (status: queued|in_progress|completed, completed when a conclusion is given;
//	                          app "github-actions" by default, whose run id is its job's id for /_control/joblog)
//	POST /_control/statuses   {"owner","name","sha"|"pull","statuses":[{"state","context","targetUrl","description"}]}
//	POST /_control/reviews    {"owner","name","pull","user","state","body"} state: APPROVED|CHANGES_REQUESTED|COMMENTED|DISMISSED
//	POST /_control/threads    {"owner","name","pull","resolved","outdated","path","line","startLine","comments":[{"author","body"}]}
//	POST /_control/joblog     {"jobId","text"}                              an Actions job's log
//	POST /_control/ratelimit  {"resetInSeconds"} spend the rate limit (403) | {"retryAfterSeconds"} a secondary limit (429)
//	POST /_control/pullstate  {"owner","name","pull","state"}               open | closed | merged
//	GET  /_control/pulls?owner=o&name=r  -> [{"number","title","body","head","base","headSha","draft","state","merged"}]
//	GET  /_control/requests              -> [{"method","path","query","headers","conditional","notModified","authorized","status"}]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentmux/agentmux/forge/githubtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	token := flag.String("token", githubtest.Token, "the token the API accepts")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	gh := githubtest.NewHandler(*token)
	mux := http.NewServeMux()
	mux.Handle("/_control/", control(gh))
	mux.Handle("/", gh)

	l, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("fakegithub: %v", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening http://%s\n", l.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }() // ends when Shutdown closes the listener
	select {
	case err := <-done:
		log.Fatalf("fakegithub: %v", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Printf("fakegithub: shutdown: %v", err)
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("fakegithub: %v", err)
	}
}

// target is where a control call points: a repository, and a commit by
// sha or as the head of a pull request.
type target struct {
	Owner string `json:"owner"`
	Name  string `json:"name"`
	SHA   string `json:"sha"`
	Pull  int    `json:"pull"`
}

func (t target) commit() string {
	if t.SHA == "" && t.Pull > 0 {
		return "pull/" + strconv.Itoa(t.Pull)
	}
	return t.SHA
}

// control is the JSON API the UI test drives the stand-in with.
func control(gh *githubtest.Server) http.Handler {
	m := http.NewServeMux()
	post := func(path string, do func(body []byte) error) {
		m.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
			if err == nil {
				err = do(body)
			}
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		})
	}
	post("/_control/repos", func(b []byte) error {
		var in struct{ Owner, Name, DefaultBranch string }
		if err := decode(b, &in); err != nil {
			return err
		}
		gh.AddRepo(in.Owner, in.Name, in.DefaultBranch)
		return nil
	})
	post("/_control/checks", func(b []byte) error {
		var in struct {
			target
			Runs []struct {
				ID                                   int64
				Name, Status, Conclusion, DetailsURL string
				App, Title, Summary, Text            string
			}
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		runs := make([]githubtest.CheckRun, len(in.Runs))
		for i, x := range in.Runs {
			runs[i] = githubtest.CheckRun{ID: x.ID, Name: x.Name, Status: x.Status, Conclusion: x.Conclusion, DetailsURL: x.DetailsURL, App: x.App, Title: x.Title, Summary: x.Summary, Text: x.Text}
		}
		return gh.SetChecks(in.Owner, in.Name, in.commit(), runs)
	})
	post("/_control/statuses", func(b []byte) error {
		var in struct {
			target
			Statuses []struct{ State, Context, TargetURL, Description string }
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		sts := make([]githubtest.Status, len(in.Statuses))
		for i, x := range in.Statuses {
			sts[i] = githubtest.Status{State: x.State, Context: x.Context, TargetURL: x.TargetURL, Description: x.Description}
		}
		return gh.SetStatuses(in.Owner, in.Name, in.commit(), sts)
	})
	post("/_control/reviews", func(b []byte) error {
		var in struct {
			target
			User, State, Body string
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		return gh.AddReview(in.Owner, in.Name, in.Pull, githubtest.Review{User: in.User, State: in.State, Body: in.Body})
	})
	post("/_control/threads", func(b []byte) error {
		var in struct {
			target
			Resolved, Outdated bool
			Path               string
			Line, StartLine    int
			Comments           []struct{ Author, Body string }
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		th := githubtest.Thread{Resolved: in.Resolved, Outdated: in.Outdated, Path: in.Path, Line: in.Line, StartLine: in.StartLine}
		for _, c := range in.Comments {
			th.Comments = append(th.Comments, githubtest.Comment{Author: c.Author, Body: c.Body})
		}
		return gh.AddThread(in.Owner, in.Name, in.Pull, th)
	})
	post("/_control/joblog", func(b []byte) error {
		var in struct {
			JobID int64
			Text  string
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		gh.SetJobLog(in.JobID, in.Text)
		return nil
	})
	post("/_control/ratelimit", func(b []byte) error {
		var in struct{ ResetInSeconds, RetryAfterSeconds int }
		if err := decode(b, &in); err != nil {
			return err
		}
		if in.RetryAfterSeconds > 0 {
			gh.SecondaryRateLimit(time.Duration(in.RetryAfterSeconds) * time.Second)
			return nil
		}
		gh.ExhaustRateLimit(time.Duration(max(in.ResetInSeconds, 1)) * time.Second)
		return nil
	})
	post("/_control/pullstate", func(b []byte) error {
		var in struct {
			target
			State string
		}
		if err := decode(b, &in); err != nil {
			return err
		}
		return gh.SetPullState(in.Owner, in.Name, in.Pull, in.State)
	})
	m.HandleFunc("GET /_control/pulls", func(w http.ResponseWriter, r *http.Request) {
		type pull struct {
			Number  int    `json:"number"`
			Title   string `json:"title"`
			Body    string `json:"body"`
			Head    string `json:"head"`
			Base    string `json:"base"`
			HeadSHA string `json:"headSha"`
			Draft   bool   `json:"draft"`
			State   string `json:"state"`
			Merged  bool   `json:"merged"`
		}
		out := []pull{}
		for _, p := range gh.Pulls(r.URL.Query().Get("owner"), r.URL.Query().Get("name")) {
			out = append(out, pull{p.Number, p.Title, p.Body, p.Head, p.Base, p.HeadSHA, p.Draft, p.State, p.Merged})
		}
		writeJSON(w, out)
	})
	m.HandleFunc("GET /_control/requests", func(w http.ResponseWriter, r *http.Request) {
		type request struct {
			Method      string   `json:"method"`
			Path        string   `json:"path"`
			Query       string   `json:"query"`
			Headers     []string `json:"headers"`
			Conditional bool     `json:"conditional"`
			NotModified bool     `json:"notModified"`
			Authorized  bool     `json:"authorized"`
			Status      int      `json:"status"`
		}
		out := []request{}
		for _, q := range gh.Requests() {
			out = append(out, request{q.Method, q.Path, q.Query, q.Headers, q.Conditional, q.NotModified, q.Authorized, q.Status})
		}
		writeJSON(w, out)
	})
	return m
}

// decode reads a control body; field names match case-insensitively
// (encoding/json's rule), so "defaultBranch" fills DefaultBranch.
func decode(b []byte, v any) error {
	if len(strings.TrimSpace(string(b))) == 0 {
		return errors.New("a JSON body is expected")
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the body: %w", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
