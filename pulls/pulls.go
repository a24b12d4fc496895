// Package pulls opens and follows the pull requests of sessions' branches
// on the user's behalf, on GitHub (package forge): it finds the forge a
// session's repository is on and the token to use there, pushes the
// branch and opens its pull request (or links the open one), suggests
// what it says, follows its state, reviews and checks while someone
// watches the session, and turns what reviewers and checks say into work
// for the agent (the unresolved comments, the failing checks' logs).
//
// The token is the server's alone: it goes in requests to the forge and
// nowhere else, not in a reply, a log line or an agent's environment.
// Which one is used (its source) may be told.
//
// One goroutine, Run, follows the pull requests: about once a minute
// (Options.Refresh), for each session with a pull request that a client
// watches, it asks the forge with conditional requests (an unchanged
// answer costs none of the rate limit) and tells Notify what changed.
// While the forge's rate limit is spent it asks nothing until the reset.
package pulls

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/forge"
	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/review"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
)

// DefaultRefresh is how often a watched session's pull request is asked
// after.
const DefaultRefresh = time.Minute

// Bounds of what is asked and kept.
const (
	// forgeTimeout bounds one request's worth of calls to the forge.
	forgeTimeout = 30 * time.Second
	// maxClients bounds the forge clients kept, one per token and API:
	// each keeps its conditional requests' cache.
	maxClients = 8
	// maxLogTail bounds the log quoted of one failing check, and
	// maxFailing the failing checks quoted in one prompt.
	maxLogTail = 4 << 10
	maxFailing = 8
)

// Why a request about a pull request fails, besides forge's and ship's
// errors, which pass through.
var (
	// ErrNoPullRequest: the session has no pull request yet.
	ErrNoPullRequest = errors.New("no pull request")
	// ErrNoFailingChecks: fix-checks, while no check fails.
	ErrNoFailingChecks = errors.New("no failing checks")
)

// Forge says whether pull requests can be opened for a session, and
// through what: the host, its API, and where the token comes from, or in
// words what is missing.
type Forge struct {
	Host         string `json:"host,omitempty"`
	API          string `json:"api,omitempty"`
	Source       string `json:"source,omitempty"`
	SourceDetail string `json:"sourceDetail,omitempty"`
	Ready        bool   `json:"ready"`
	Missing      string `json:"missing,omitempty"`
}

// View is a pull request as clients are shown it.
type View struct {
	Number int    `json:"number"`
	URL    string `json:"url"`
	// State is open, draft, merged or closed; "" when no look has seen
	// it yet (Error says why).
	State string `json:"state"`
	Title string `json:"title"`
	// ReviewDecision is approved, changes_requested, or "" for neither.
	ReviewDecision string `json:"reviewDecision"`
	// Reviews are each reviewer's latest review, the oldest first.
	Reviews []Review `json:"reviews"`
	Checks  Checks   `json:"checks"`
	// Unresolved counts the review threads not resolved.
	Unresolved int       `json:"unresolved"`
	CheckedAt  time.Time `json:"checkedAt"`
	// Error says why the last look failed, when it did: the rest is
	// what the look before it saw.
	Error string `json:"error,omitempty"`
}

// Review is a reviewer's latest review.
type Review struct {
	Author string `json:"author"`
	// State is approved, changes_requested, commented or dismissed.
	State       string    `json:"state"`
	SubmittedAt time.Time `json:"submittedAt"`
}

// latestReviews is each author's latest review, the oldest first.
func latestReviews(all []forge.Review) []Review {
	latest := map[string]forge.Review{}
	for _, rv := range all {
		if prev, ok := latest[rv.Author]; !ok || !rv.SubmittedAt.Before(prev.SubmittedAt) {
			latest[rv.Author] = rv
		}
	}
	out := make([]Review, 0, len(latest))
	for _, rv := range latest {
		out = append(out, Review{Author: rv.Author, State: strings.ToLower(rv.State), SubmittedAt: rv.SubmittedAt})
	}
	slices.SortFunc(out, func(a, b Review) int {
		return cmp.Or(a.SubmittedAt.Compare(b.SubmittedAt), cmp.Compare(a.Author, b.Author))
	})
	return out
}

// Checks is what a pull request's head's checks add up to.
type Checks struct {
	// State is passing, failing, pending, or none.
	State   string   `json:"state"`
	Failing []string `json:"failing"`
	Pending []string `json:"pending"`
	Passed  int      `json:"passed"`
}

// same reports whether v and o show the same, when they were looked at
// aside.
func (v View) same(o View) bool {
	v.CheckedAt, o.CheckedAt = time.Time{}, time.Time{}
	return v.Number == o.Number && v.URL == o.URL && v.State == o.State && v.Title == o.Title &&
		v.ReviewDecision == o.ReviewDecision && slices.Equal(v.Reviews, o.Reviews) && v.Unresolved == o.Unresolved && v.Error == o.Error &&
		v.Checks.State == o.Checks.State && v.Checks.Passed == o.Checks.Passed &&
		slices.Equal(v.Checks.Failing, o.Checks.Failing) && slices.Equal(v.Checks.Pending, o.Checks.Pending)
}

// Options configure a Service. Zero values are documented per field.
type Options struct {
	// Sessions finds the sessions and keeps which pull request each has.
	// Required.
	Sessions *sessions.Manager
	// Token says where the forge's token is found (forge.FindToken),
	// asked at each use, so a rotated or newly made token is taken.
	Token forge.TokenOptions
	// API is --github-api: the forge's API base, for every repository;
	// "" takes it from the remote's host.
	API string
	// HTTP sends the forge's requests; nil is forge's default.
	HTTP *http.Client
	// UserAgent names agentmux to the forge.
	UserAgent string
	// Refresh is how often Run looks; 0 means DefaultRefresh.
	Refresh time.Duration
	// Watched reports whether a client watches a session; Run asks
	// about those only. Nil watches none.
	Watched func(sessionID string) bool
	// Notify is told each session's pull request when what it shows
	// changed. It must not block. Nil tells nobody.
	Notify func(sessionID string, v View)
	// SentReviews gives the review comments sent to a session's agent,
	// for a pull request's description. Nil gives none.
	SentReviews func(sessionID string) []review.Comment
	// Drafts takes the comments AddressReview brings to a session's
	// review draft (collab). Required for AddressReview.
	Drafts Drafts
	// Logger receives what happened; nil discards it. It is never given
	// the token.
	Logger *slog.Logger
}

// Drafts adds comments to sessions' review drafts, as many as each
// takes, and says how many it added and left.
type Drafts interface {
	AddComments(id string, author sessions.Author, comments []review.Comment) (added, left int, err error)
}

// Service opens and follows pull requests. Its methods are safe for
// concurrent use.
type Service struct {
	opts Options
	log  *slog.Logger

	// mu protects the fields below; never held across a call to the
	// forge, git, or Notify.
	mu sync.Mutex
	// clients by token and API (hashed, so the map holds no token), in
	// the order they were made.
	clients map[string]*forge.Client
	order   []string
	// views are the last views told, by session.
	views map[string]View
	// quietUntil is when the forge's rate limit resets, while it is
	// spent: Run asks nothing before.
	quietUntil time.Time
}

// New returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Sessions == nil {
		return nil, errors.New("pulls: Options.Sessions is required")
	}
	opts.Refresh = cmp.Or(opts.Refresh, DefaultRefresh)
	if opts.Watched == nil {
		opts.Watched = func(string) bool { return false }
	}
	if opts.Notify == nil {
		opts.Notify = func(string, View) {}
	}
	if opts.SentReviews == nil {
		opts.SentReviews = func(string) []review.Comment { return nil }
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{opts: opts, log: log, clients: make(map[string]*forge.Client), views: make(map[string]View)}, nil
}

// target is where a session's pull request lives and how to reach it.
type target struct {
	id     string
	dir    string
	branch string
	base   string
	repo   forge.Repo
	source forge.TokenSource
	client *forge.Client
	pr     *sessions.PullRequest
}

// locate finds a session's forge: its worktree's branch and base, the
// repository its origin remote names, and the token for that host. The
// error says what is missing (ship's ErrNotWorktree, ErrNoRemote; forge's
// ErrNotGitHub, ErrNoToken).
func (s *Service) locate(ctx context.Context, sess *sessions.Session) (target, error) {
	info := sess.Info()
	t := target{id: info.ID, pr: info.PullRequest}
	if info.Worktree == nil || info.Worktree.Branch == "" {
		return t, fmt.Errorf("%w: session %s has no worktree branch; pull requests are opened from worktree sessions", ship.ErrNotWorktree, info.ID)
	}
	if info.Worktree.Base == "" {
		return t, fmt.Errorf("%w: session %s's worktree records no base branch to open the pull request against", ship.ErrNoBase, info.ID)
	}
	t.dir, t.branch, t.base = info.Worktree.Path, info.Worktree.Branch, info.Worktree.Base
	out, err := gitexec.Run(ctx, t.dir, "remote", "get-url", "origin")
	if err != nil {
		return t, fmt.Errorf("%w: the repository has no remote \"origin\" to open a pull request on (%v)", ship.ErrNoRemote, err)
	}
	if t.repo, err = forge.RepoOf(strings.TrimSpace(out), s.opts.API); err != nil {
		return t, err
	}
	token, src, err := forge.FindToken(ctx, t.repo.Host, s.opts.Token)
	if err != nil {
		return t, err
	}
	t.source, t.client = src, s.client(token, t.repo.API)
	return t, nil
}

// client returns the forge client for token at api, made once so that
// its conditional requests' cache serves every look.
func (s *Service) client(token, api string) *forge.Client {
	sum := sha256.Sum256([]byte(token + "\x00" + api))
	key := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[key]; ok {
		return c
	}
	if len(s.order) >= maxClients {
		delete(s.clients, s.order[0])
		s.order = s.order[1:]
	}
	c := forge.New(forge.Options{Token: token, HTTP: s.opts.HTTP, UserAgent: s.opts.UserAgent, Logger: s.log})
	s.clients[key] = c
	s.order = append(s.order, key)
	return c
}

// Forge says whether a pull request can be opened for sess, and through
// what.
func (s *Service) Forge(ctx context.Context, sess *sessions.Session) Forge {
	ctx, cancel := context.WithTimeout(ctx, forgeTimeout)
	defer cancel()
	t, err := s.locate(ctx, sess)
	f := Forge{Host: t.repo.Host, API: t.repo.API, Source: t.source.Kind, SourceDetail: t.source.Detail, Ready: err == nil}
	if err != nil {
		f.Missing = err.Error()
	}
	return f
}

// Suggestion is what a pull request of a session's branch could say.
type Suggestion struct {
	Title string `json:"title"`
	Body  string `json:"body"`
	Head  string `json:"head"`
	Base  string `json:"base"`
	Draft bool   `json:"draft"`
}

// Suggest proposes a pull request's title and description: the branch's
// one commit's subject, or its name; the commits, the review comments
// sent to the agent, and the last turn's check.
func (s *Service) Suggest(ctx context.Context, sess *sessions.Session) (Suggestion, error) {
	info := sess.Info()
	if info.Worktree == nil || info.Worktree.Branch == "" || info.Worktree.Base == "" {
		return Suggestion{}, fmt.Errorf("%w: session %s has no worktree branch and base; pull requests are opened from worktree sessions", ship.ErrNotWorktree, info.ID)
	}
	bc, err := ship.Commits(ctx, info.Worktree.Path, info.Worktree.Base)
	if err != nil {
		return Suggestion{}, err
	}
	return Suggestion{
		Title: suggestTitle(bc),
		Body:  suggestBody(bc, s.opts.SentReviews(info.ID), info.Check),
		Head:  bc.Branch,
		Base:  bc.Base,
	}, nil
}

// Request is what opening a pull request asks; empty fields take the
// suggestion's.
type Request struct {
	Title, Body string
	Draft       bool
}

// Bounds of what a pull request is opened with: GitHub takes a title of
// 256 characters and a body of 65536.
const (
	maxRequestTitle = 256
	maxRequestBody  = 60 << 10
)

// check refuses a title or body the forge would, or that holds what
// text shown to people may not.
func (r Request) check() error {
	switch {
	case utf8.RuneCountInString(r.Title) > maxRequestTitle:
		return fmt.Errorf("%w: title: at most %d characters", sessions.ErrInvalid, maxRequestTitle)
	case len(r.Body) > maxRequestBody:
		return fmt.Errorf("%w: body: at most %d bytes", sessions.ErrInvalid, maxRequestBody)
	case !utf8.ValidString(r.Title) || !utf8.ValidString(r.Body):
		return fmt.Errorf("%w: title and body must be UTF-8", sessions.ErrInvalid)
	}
	if c, bad := textrule.FirstNotLine(r.Title); bad {
		return fmt.Errorf("%w: title: one line, without %q", sessions.ErrInvalid, c)
	}
	if c, _, bad := textrule.FirstNotText(r.Body); bad {
		return fmt.Errorf("%w: body: may not hold %q", sessions.ErrInvalid, c)
	}
	return nil
}

// Opened is what Open did.
type Opened struct {
	forge.PullRequest
	// Created is false when an open pull request of the branch was
	// found and linked instead.
	Created bool
}

// Open pushes sess's branch (a push of a branch the remote has is a
// no-op; one it refuses is ship's error) and opens its pull request into
// the session's base, or links the one open already, and keeps which it
// is with the session.
func (s *Service) Open(ctx context.Context, sess *sessions.Session, req Request) (Opened, error) {
	req.Title = strings.TrimSpace(req.Title)
	if err := req.check(); err != nil {
		return Opened{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*forgeTimeout)
	defer cancel()
	t, err := s.locate(ctx, sess)
	if err != nil {
		return Opened{}, err
	}
	if req.Title == "" || req.Body == "" {
		sug, err := s.Suggest(ctx, sess)
		if err != nil {
			return Opened{}, err
		}
		req.Title, req.Body = cmp.Or(req.Title, sug.Title), cmp.Or(req.Body, sug.Body)
	}
	if _, err := ship.Push(ctx, t.dir, ship.PushOptions{Base: t.base}); err != nil {
		return Opened{}, err
	}
	var out Opened
	existing, err := t.client.FindOpen(ctx, t.repo, t.branch)
	switch {
	case err != nil:
		return Opened{}, err
	case existing != nil:
		out.PullRequest = *existing
	default:
		if out.PullRequest, err = t.client.Create(ctx, t.repo, forge.NewPull{Title: req.Title, Body: req.Body, Head: t.branch, Base: t.base, Draft: req.Draft}); err != nil {
			return Opened{}, err
		}
		out.Created = true
	}
	if err := s.opts.Sessions.SetPullRequest(t.id, sessions.PullRequest{Number: out.Number, URL: out.URL}); err != nil {
		return Opened{}, err
	}
	verb := "linked"
	if out.Created {
		verb = "opened"
	}
	s.log.Info("pull request "+verb, "session", t.id, "repository", t.repo.String(), "number", out.Number, "token", t.source.Kind)
	if _, err := s.Refresh(ctx, sess); err != nil {
		s.log.Debug("look at the new pull request", "session", t.id, "err", err)
	}
	return out, nil
}

// Refresh asks the forge how sess's pull request stands, and tells Notify
// when that changed. A failed look keeps what the last one saw, with the
// error.
func (s *Service) Refresh(ctx context.Context, sess *sessions.Session) (View, error) {
	asked := ctx
	ctx, cancel := context.WithTimeout(ctx, forgeTimeout)
	defer cancel()
	t, err := s.locate(ctx, sess)
	if err == nil && t.pr == nil {
		err = fmt.Errorf("%w: session %s has none yet", ErrNoPullRequest, t.id)
	}
	var v View
	if err == nil {
		v, err = s.look(ctx, t)
	}
	if err != nil {
		if errors.Is(err, ErrNoPullRequest) || asked.Err() != nil {
			// No pull request, or a look its caller gave up on (the
			// server stopping, a request gone): nothing was learned of
			// the forge to tell.
			return View{}, err
		}
		s.noteLimit(err)
		s.mu.Lock()
		v = s.views[t.id]
		s.mu.Unlock()
		if t.pr != nil && v.Number == 0 {
			v.Number, v.URL = t.pr.Number, t.pr.URL
		}
		if v.Checks.State == "" {
			// Never seen: no checks known, rather than none at all.
			v.Checks = Checks{State: "none", Failing: []string{}, Pending: []string{}}
			v.Reviews = []Review{}
		}
		v.Error = err.Error()
	}
	s.tell(sess.ID(), v)
	return v, err
}

// look asks the forge for t's pull request, its reviews, its head's
// checks and its unresolved threads.
func (s *Service) look(ctx context.Context, t target) (View, error) {
	pr, err := t.client.Pull(ctx, t.repo, t.pr.Number)
	if err != nil {
		return View{}, err
	}
	reviews, err := t.client.Reviews(ctx, t.repo, pr.Number)
	if err != nil {
		return View{}, err
	}
	checks, err := t.client.Checks(ctx, t.repo, pr.HeadSHA)
	if err != nil {
		return View{}, err
	}
	threads, err := t.client.UnresolvedComments(ctx, t.repo, pr.Number)
	if err != nil {
		return View{}, err
	}
	v := View{Number: pr.Number, URL: pr.URL, State: pr.State, Title: pr.Title, ReviewDecision: forge.Decision(reviews), Reviews: latestReviews(reviews),
		Checks: summarize(checks), Unresolved: len(threads), CheckedAt: time.Now().UTC()}
	return v, nil
}

// summarize is what checks add up to, with the names of those failing
// and pending.
func summarize(c forge.Checks) Checks {
	out := Checks{State: c.State, Failing: []string{}, Pending: []string{}}
	for _, ch := range c.Checks {
		switch ch.State {
		case "failing":
			out.Failing = append(out.Failing, ch.Name)
		case "pending":
			out.Pending = append(out.Pending, ch.Name)
		default:
			out.Passed++
		}
	}
	return out
}

// tell notes v as sess's and tells Notify when it shows something new.
func (s *Service) tell(id string, v View) {
	s.mu.Lock()
	last, seen := s.views[id]
	s.views[id] = v
	s.mu.Unlock()
	if seen && last.same(v) {
		return
	}
	if seen && v.Error == "" {
		s.logChange(id, last, v)
	}
	s.opts.Notify(id, v)
}

// logChange logs what reviewers and checks did, for whoever reads the
// log rather than the page.
func (s *Service) logChange(id string, was, now View) {
	if now.Checks.State != was.Checks.State {
		s.log.Info("pull request checks changed", "session", id, "number", now.Number, "checks", now.Checks.State, "failing", now.Checks.Failing)
	}
	if now.ReviewDecision != was.ReviewDecision {
		s.log.Info("pull request review changed", "session", id, "number", now.Number, "decision", now.ReviewDecision)
	}
	if now.State != was.State {
		s.log.Info("pull request state changed", "session", id, "number", now.Number, "state", now.State)
	}
}

// noteLimit keeps Run quiet until the forge's rate limit resets, when err
// says it is spent.
func (s *Service) noteLimit(err error) {
	var rl *forge.RateLimited
	if !errors.As(err, &rl) {
		return
	}
	s.mu.Lock()
	if rl.Reset.After(s.quietUntil) {
		s.quietUntil = rl.Reset
	}
	s.mu.Unlock()
	s.log.Warn("the forge's rate limit is spent; pull requests are not followed until it resets", "reset", rl.Reset, "resource", rl.Resource)
}

// Forget drops what is kept of a deleted session.
func (s *Service) Forget(id string) {
	s.mu.Lock()
	delete(s.views, id)
	s.mu.Unlock()
}

// Run follows the pull requests of watched sessions until ctx ends.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(s.opts.Refresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		quiet := time.Now().Before(s.quietUntil)
		s.mu.Unlock()
		if quiet {
			continue
		}
		for _, sess := range s.opts.Sessions.List() {
			if ctx.Err() != nil {
				return
			}
			if sess.Info().PullRequest == nil || !s.opts.Watched(sess.ID()) {
				continue
			}
			if _, err := s.Refresh(ctx, sess); err != nil {
				s.log.Debug("look at a pull request", "session", sess.ID(), "err", err)
				if errors.Is(err, forge.ErrRateLimited) {
					break
				}
			}
		}
	}
}

// AddressReview brings the unresolved review threads of sess's pull
// request to the session's review draft, as comments by who asks, for a
// person to edit and send to the agent; it says how many it added and
// how many the draft had no room for.
func (s *Service) AddressReview(ctx context.Context, sess *sessions.Session, by string) (added, left int, err error) {
	if s.opts.Drafts == nil {
		return 0, 0, errors.New("pulls: no review drafts to bring the comments to (Options.Drafts)")
	}
	comments, err := s.unresolved(ctx, sess)
	if err != nil {
		return 0, 0, err
	}
	if added, left, err = s.opts.Drafts.AddComments(sess.ID(), sessions.Author{ID: actionAuthor, Name: by}, comments); err != nil {
		return 0, 0, err
	}
	s.log.Info("review comments brought to the draft", "session", sess.ID(), "comments", added, "left", left, "by", by)
	return added, left, nil
}

// actionAuthor is the author id of what the pull request's actions add
// on a person's behalf, under that person's name.
const actionAuthor = "pull-request"

// Fixing is the prompt FixChecks queued.
type Fixing struct {
	Prompt   sessions.Prompt
	Position int
	// Checks are the failing checks it names.
	Checks []string
}

// FixChecks queues for sess's agent, by who asks, a prompt naming its
// pull request's failing checks with the end of each one's log.
func (s *Service) FixChecks(ctx context.Context, sess *sessions.Session, by string) (Fixing, error) {
	text, names, err := s.failingPrompt(ctx, sess)
	if err != nil {
		return Fixing{}, err
	}
	p, pos, err := sess.QueuePrompt(sessions.Author{ID: actionAuthor, Name: by}, text)
	if err != nil {
		return Fixing{}, err
	}
	s.log.Info("failing checks queued for the agent", "session", sess.ID(), "checks", names, "by", by)
	return Fixing{Prompt: p, Position: pos, Checks: names}, nil
}

// unresolved returns the unresolved review comments of sess's pull
// request, as review comments for its draft: each at its path and line,
// its text the reviewer's words, prefixed by who said them.
func (s *Service) unresolved(ctx context.Context, sess *sessions.Session) ([]review.Comment, error) {
	ctx, cancel := context.WithTimeout(ctx, forgeTimeout)
	defer cancel()
	t, err := s.locate(ctx, sess)
	if err != nil {
		return nil, err
	}
	if t.pr == nil {
		return nil, fmt.Errorf("%w: session %s has none yet; open it first", ErrNoPullRequest, t.id)
	}
	threads, err := t.client.UnresolvedComments(ctx, t.repo, t.pr.Number)
	if err != nil {
		return nil, err
	}
	out := make([]review.Comment, 0, len(threads))
	for _, th := range threads {
		cm := review.Comment{Path: th.Path, Line: th.Line, Text: "@" + th.Author + ": " + th.Body}
		if th.StartLine > 0 && th.StartLine < th.Line {
			cm.Line, cm.EndLine = th.StartLine, th.Line
		}
		out = append(out, cm)
	}
	return out, nil
}

// failingPrompt returns a prompt for sess's agent that names its pull
// request's failing checks and quotes the tail of each one's log where
// the forge gives it, and the names.
func (s *Service) failingPrompt(ctx context.Context, sess *sessions.Session) (string, []string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*forgeTimeout)
	defer cancel()
	t, err := s.locate(ctx, sess)
	if err != nil {
		return "", nil, err
	}
	if t.pr == nil {
		return "", nil, fmt.Errorf("%w: session %s has none yet; open it first", ErrNoPullRequest, t.id)
	}
	pr, err := t.client.Pull(ctx, t.repo, t.pr.Number)
	if err != nil {
		return "", nil, err
	}
	checks, err := t.client.Checks(ctx, t.repo, pr.HeadSHA)
	if err != nil {
		return "", nil, err
	}
	var failing []forge.Check
	for _, ch := range checks.Checks {
		if ch.State == "failing" {
			failing = append(failing, ch)
		}
	}
	if len(failing) == 0 {
		return "", nil, fmt.Errorf("%w: pull request #%d's checks are %s", ErrNoFailingChecks, pr.Number, checks.State)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The checks of pull request #%d (%s) fail:", pr.Number, pr.URL)
	var names []string
	for i, ch := range failing {
		ch.Name = textrule.Plain(ch.Name)
		names = append(names, ch.Name)
		if i >= maxFailing {
			continue
		}
		fmt.Fprintf(&b, "\n\n%s", ch.Name)
		if ch.URL != "" {
			fmt.Fprintf(&b, " (%s)", ch.URL)
		}
		tail, err := t.client.LogTail(ctx, t.repo, ch, maxLogTail)
		if err != nil {
			s.log.Debug("read a failing check's log", "session", t.id, "check", ch.Name, "err", err)
		}
		// A log holds colours and carriage returns, which a prompt may
		// not: they would be keys, not text.
		if tail = strings.TrimSpace(textrule.Plain(tail)); tail != "" {
			fmt.Fprintf(&b, ", the end of its log:\n\n%s", indent(tail))
		}
	}
	if n := len(failing) - maxFailing; n > 0 {
		fmt.Fprintf(&b, "\n\nand %d more: %s", n, strings.Join(names[maxFailing:], ", "))
	}
	b.WriteString("\n\nFind out why they fail, fix it, and commit the fix.")
	return clip.String(b.String(), sessions.MaxPromptBytes-len("…"), "…"), names, nil
}

// indent sets text off as a block, four spaces a line, as a quote in
// Markdown: the agent reads it as the log, not as what to do.
func indent(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}
