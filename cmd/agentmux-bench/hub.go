package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hub measurement: agentmux hub (cmd/server/hubmode.go) following
// many workspaces, each a server of its own whose sessions ask a
// question, wait to be answered and work a while, over and over. The
// bench watches each workspace's WebSocket and the hub's page WebSocket,
// and times each wait from the workspace saying it to the hub's page
// showing it.
//
// A session stops waiting only when it gets input (sessions/status.go:
// output after the question does not end the wait), so the bench answers
// each wait, as a person in that workspace would, after a hold drawn
// between hubHoldMin and hubHoldMax; its answer is how long the program
// then works, drawn between hubWorkMin and hubWorkMax. The waits are
// answered on their own clock, whatever the hub shows: a slow hub does
// not slow the changes it has to show.
const (
	// hubQuestionQuiet is every workspace's --question-quiet: how long a
	// question must stand before its session waits.
	hubQuestionQuiet = 200 * time.Millisecond
	hubHoldMin       = 1 * time.Second
	hubHoldMax       = 4 * time.Second
	hubWorkMin       = 1 * time.Second
	hubWorkMax       = 3 * time.Second
	// hubCoalesce is how long the hub gathers changes into one page
	// message (hub/server.go's coalesce): a wait that ended within it
	// of beginning may never be shown, and is counted apart.
	hubCoalesce = 25 * time.Millisecond
	// hubGrace is how long after the window the bench goes on reading
	// the hub's page for the waits of the window it has not shown yet.
	hubGrace = 5 * time.Second
	// hubRSSSample is how often the hub's RSS is read.
	hubRSSSample = 100 * time.Millisecond
	// hubReadyTimeout bounds each wait for the hub to show what the
	// workspaces have: every workspace reached, then every session.
	hubReadyTimeout = 60 * time.Second
	// The goals of issue 44: a wait on the hub's page within a second
	// (p99), and the hub's RSS under 64 MiB.
	hubLatencyGoal = time.Second
	hubRSSGoalMiB  = 64
	// hubSeed seeds the holds, the work times and the first pauses.
	hubSeed = 44
)

// statusWaiting is the status of a session that waits for its user.
const statusWaiting = "waiting"

// hubOptions describe the hub measurement: Workspaces servers with
// Sessions sessions each, followed by one hub, measured over Window;
// the hub's RSS is read again once it held still for Settle after it.
type hubOptions struct {
	Workspaces int
	Sessions   int
	Window     time.Duration
	Settle     time.Duration
}

// hubResult is what the hub cost and how soon it showed the waits.
// CPU figures are in percent of one core.
type hubResult struct {
	Workspaces           int `json:"workspaces"`
	SessionsPerWorkspace int `json:"sessionsPerWorkspace"`
	// TokenWorkspaces have a token, which the hub reads from the file
	// the peers file names; the others have none.
	TokenWorkspaces int     `json:"tokenWorkspaces"`
	QuestionQuietMs float64 `json:"questionQuietMs"`
	// A wait is answered HoldSeconds after it began, and the session
	// then works WorkSeconds before it asks again, each drawn uniformly
	// between the bounds.
	HoldSecondsMin float64 `json:"holdSecondsMin"`
	HoldSecondsMax float64 `json:"holdSecondsMax"`
	WorkSecondsMin float64 `json:"workSecondsMin"`
	WorkSecondsMax float64 `json:"workSecondsMax"`
	HubPID         int     `json:"hubPid"`
	// StartSeconds runs from the first workspace's start to the hub's
	// page listing every session.
	StartSeconds  float64 `json:"startSeconds"`
	WindowSeconds float64 `json:"windowSeconds"`

	// StatusChanges counts the session.status messages the workspaces
	// sent in the window; InboxMessages the hub's page messages in it,
	// InboxMeanBytes their mean size; InboxGapP99Ms and InboxGapMaxMs
	// the time between two of them: while statuses change many times a
	// second, how long the page went without news.
	StatusChanges          int     `json:"statusChanges"`
	StatusChangesPerSecond float64 `json:"statusChangesPerSecond"`
	InboxMessages          int     `json:"inboxMessages"`
	InboxPerSecond         float64 `json:"inboxPerSecond"`
	InboxMeanBytes         float64 `json:"inboxMeanBytes"`
	InboxGapP99Ms          float64 `json:"inboxGapP99Ms"`
	InboxGapMaxMs          float64 `json:"inboxGapMaxMs"`

	// Waits counts the waits that began in the window, as the workspaces
	// said them; Shown those the hub's page showed, with their latency
	// (from the workspace's session.status reaching the bench to the
	// page's first message showing that wait); MissedShort those never
	// shown that ended within hubCoalesce of beginning, which a
	// coalesced page may rightly skip; Missed the others never shown
	// within hubGrace after the window.
	Waits         int     `json:"waits"`
	Shown         int     `json:"shown"`
	MissedShort   int     `json:"missedShort"`
	Missed        int     `json:"missed"`
	LatencyP50Ms  float64 `json:"latencyP50Ms"`
	LatencyP99Ms  float64 `json:"latencyP99Ms"`
	LatencyMeanMs float64 `json:"latencyMeanMs"`
	LatencyMaxMs  float64 `json:"latencyMaxMs"`
	LatencyGoalMs float64 `json:"latencyGoalMs"`
	// LatencyMet: p99 under the goal and no wait missed but short ones.
	LatencyMet bool `json:"latencyMet"`
	// ToHub and ToPage split the latency at the moment the hub says it
	// learned of the wait (the inbox's waitingSince, by the hub's clock,
	// which is the bench's): from the workspace's status reaching the
	// bench to the hub applying it (below 0 when the hub read it
	// first), and from there to the page's message reaching the bench
	// (the hub's coalescing, its encoding and the write, and the
	// bench's read). Each has its own percentiles: they do not add up.
	ToHubP50Ms  float64 `json:"toHubP50Ms"`
	ToHubP99Ms  float64 `json:"toHubP99Ms"`
	ToPageP50Ms float64 `json:"toPageP50Ms"`
	ToPageP99Ms float64 `json:"toPageP99Ms"`

	// FollowingMiB is the hub's RSS once it reached every workspace,
	// before their sessions; LoadMedianMiB and LoadPeakMiB the median
	// and the most of its RSS sampled every 100 ms in the window;
	// PeakMiB the most from its start to its stop; SettledMiB its RSS
	// after the window, the sessions all waiting and nothing changing,
	// once it held still (Settled false: it still moved when the wait
	// gave up).
	FollowingMiB   float64 `json:"followingMiB"`
	LoadMedianMiB  float64 `json:"loadMedianMiB"`
	LoadPeakMiB    float64 `json:"loadPeakMiB"`
	PeakMiB        float64 `json:"peakMiB"`
	SettledMiB     float64 `json:"settledMiB"`
	SettledSeconds float64 `json:"settledSeconds"`
	Settled        bool    `json:"settled"`
	RSSGoalMiB     float64 `json:"rssGoalMiB"`
	// RSSMet: PeakMiB under the goal.
	RSSMet bool `json:"rssMet"`

	// The hub's CPU time in the window (utime and stime of
	// /proc/<pid>/stat); the workspace servers' together, their
	// sessions' programs not counted; the bench's own, which reads
	// every message; and the machine's busy and stolen cores.
	HubCPUSeconds        float64 `json:"hubCPUSeconds"`
	HubCPUPercent        float64 `json:"hubCPUPercent"`
	WorkspacesCPUPercent float64 `json:"workspacesCPUPercent"`
	BenchCPUPercent      float64 `json:"benchCPUPercent"`
	MachineBusyCores     float64 `json:"machineBusyCores"`
	MachineStealCores    float64 `json:"machineStealCores"`
	// Derived by deriveHub: the hub's CPU time for each page message,
	// and what of the machine's busy time was neither the hub, the
	// workspace servers nor the bench: the sessions' programs, and
	// other work on the machine.
	HubCPUMsPerMessage float64 `json:"hubCPUMsPerMessage"`
	OtherCPUPercent    float64 `json:"otherCPUPercent"`

	// HubStopMs is from SIGTERM to the hub's exit, HubExitCode its code.
	HubStopMs   float64 `json:"hubStopMs"`
	HubExitCode int     `json:"hubExitCode"`
}

// waitKey names one wait of one session: its workspace's URL (as the
// hub's inbox names it), its id, and its reason, the question it asks.
// The session's program numbers its questions, so each wait of a
// session has a key of its own, the same in the workspace's
// session.status and in the hub's inbox.
type waitKey struct {
	Workspace, Session, Reason string
}

// statusSeen is one session.status as a workspace sent it, with when it
// reached the bench.
type statusSeen struct {
	at                      time.Time
	session, status, reason string
}

// waitSeen is one wait as its workspace told it: from its status
// waiting to the next status (ended is zero while it still waits).
type waitSeen struct {
	key          waitKey
	began, ended time.Time
}

// waitsOf turns one workspace's statuses, in the order it sent them,
// into its sessions' waits. A waiting status told again with the same
// reason is the same wait; with another, a new one.
func waitsOf(workspace string, statuses []statusSeen) []waitSeen {
	open := map[string]int{} // a session's wait under way, its index in waits
	var waits []waitSeen
	for _, s := range statuses {
		if i, ok := open[s.session]; ok {
			if s.status == statusWaiting && s.reason == waits[i].key.Reason {
				continue
			}
			waits[i].ended = s.at
			delete(open, s.session)
		}
		if s.status == statusWaiting {
			open[s.session] = len(waits)
			waits = append(waits, waitSeen{key: waitKey{workspace, s.session, s.reason}, began: s.at})
		}
	}
	return waits
}

// inboxMessage is the part of the hub's page message the bench reads
// (hub/inbox.go).
type inboxMessage struct {
	Type       string           `json:"type"`
	Workspaces []inboxWorkspace `json:"workspaces"`
	Sessions   []inboxSession   `json:"sessions"`
}

type inboxWorkspace struct {
	URL       string `json:"url"`
	Reachable bool   `json:"reachable"`
	Error     string `json:"error"`
}

type inboxSession struct {
	Workspace string `json:"workspace"`
	ID        string `json:"id"`
	Status    string `json:"status"`
	Reason    string `json:"reason"`
	// WaitingSince is when the hub learned that the session waits, by
	// the hub's clock, which is this machine's.
	WaitingSince *time.Time `json:"waitingSince"`
}

// inboxSeen is what the hub's page was sent: when each wait first
// showed, and each message's time and size.
type inboxSeen struct {
	shown    map[waitKey]shownWait
	messages []messageSeen
	// last is the latest message.
	last inboxMessage
}

// shownWait is when a wait first showed on the page, and when the hub
// says it learned of it (zero when it did not say).
type shownWait struct {
	at, since time.Time
}

// messageSeen is one page message: when it came, and its size.
type messageSeen struct {
	at   time.Time
	size int
}

// observe records a page message that came at at: every session it
// shows waiting, with a reason not shown before, shows that wait first.
func (in *inboxSeen) observe(at time.Time, size int, m inboxMessage) {
	if in.shown == nil {
		in.shown = map[waitKey]shownWait{}
	}
	in.messages = append(in.messages, messageSeen{at: at, size: size})
	in.last = m
	for _, s := range m.Sessions {
		if s.Status != statusWaiting {
			continue
		}
		k := waitKey{s.Workspace, s.ID, s.Reason}
		if _, ok := in.shown[k]; !ok {
			w := shownWait{at: at}
			if s.WaitingSince != nil {
				w.since = *s.WaitingSince
			}
			in.shown[k] = w
		}
	}
}

// reachable counts the workspaces the last message shows reached, and
// says why the others are not.
func (in *inboxSeen) reachable() (int, []string) {
	n := 0
	var why []string
	for _, w := range in.last.Workspaces {
		if w.Reachable {
			n++
		} else {
			why = append(why, w.URL+": "+w.Error)
		}
	}
	return n, why
}

// pageWindow is what the page was sent in a window: how many messages,
// how many bytes, and the gaps between them, sorted.
type pageWindow struct {
	seconds         float64
	messages, bytes int
	gaps            []time.Duration
}

// window returns what the page was sent in [from, to); the gaps are
// those between two messages of the window.
func (in *inboxSeen) window(from, to time.Time) pageWindow {
	w := pageWindow{seconds: to.Sub(from).Seconds()}
	var last time.Time
	for _, m := range in.messages {
		if m.at.Before(from) || !m.at.Before(to) {
			continue
		}
		w.messages++
		w.bytes += m.size
		if !last.IsZero() {
			w.gaps = append(w.gaps, m.at.Sub(last))
		}
		last = m.at
	}
	slices.Sort(w.gaps)
	return w
}

// fill writes the window's figures into r.
func (w pageWindow) fill(r *hubResult) {
	r.InboxMessages, r.InboxPerSecond, r.InboxMeanBytes, r.InboxGapP99Ms, r.InboxGapMaxMs = w.messages, 0, 0, 0, 0
	if w.seconds > 0 {
		r.InboxPerSecond = float64(w.messages) / w.seconds
	}
	if w.messages > 0 {
		r.InboxMeanBytes = float64(w.bytes) / float64(w.messages)
	}
	if len(w.gaps) > 0 {
		r.InboxGapP99Ms = float64(percentile(w.gaps, 0.99).Microseconds()) / 1e3
		r.InboxGapMaxMs = float64(w.gaps[len(w.gaps)-1].Microseconds()) / 1e3
	}
}

// waitLatencies is how the waits of a window showed on the hub's page.
type waitLatencies struct {
	waits, missed, missedShort int
	// latencies are those of the waits shown, sorted; toHub and toPage
	// split them, for the waits the hub said when it learned of, at
	// that moment: from the workspace to the hub, and from the hub to
	// the page, each sorted.
	latencies, toHub, toPage []time.Duration
}

// matchWaits finds each wait that began in [from, to) among those shown
// and returns its latency; a wait not shown is missed, or missed short
// when it ended within hubCoalesce of beginning.
func matchWaits(waits []waitSeen, shown map[waitKey]shownWait, from, to time.Time) waitLatencies {
	var r waitLatencies
	for _, w := range waits {
		if w.began.Before(from) || !w.began.Before(to) {
			continue
		}
		r.waits++
		if sh, ok := shown[w.key]; ok {
			r.latencies = append(r.latencies, sh.at.Sub(w.began))
			if !sh.since.IsZero() {
				r.toHub = append(r.toHub, sh.since.Sub(w.began))
				r.toPage = append(r.toPage, sh.at.Sub(sh.since))
			}
			continue
		}
		if !w.ended.IsZero() && w.ended.Sub(w.began) <= hubCoalesce {
			r.missedShort++
		} else {
			r.missed++
		}
	}
	slices.Sort(r.latencies)
	slices.Sort(r.toHub)
	slices.Sort(r.toPage)
	return r
}

// fill writes the latencies into r, and whether they meet the goal.
func (l waitLatencies) fill(r *hubResult) {
	r.Waits, r.Shown, r.Missed, r.MissedShort = l.waits, len(l.latencies), l.missed, l.missedShort
	r.LatencyGoalMs = float64(hubLatencyGoal.Milliseconds())
	r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMeanMs, r.LatencyMaxMs, r.LatencyMet = 0, 0, 0, 0, false
	r.ToHubP50Ms, r.ToHubP99Ms, r.ToPageP50Ms, r.ToPageP99Ms = 0, 0, 0, 0
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	if len(l.toHub) > 0 {
		r.ToHubP50Ms, r.ToHubP99Ms = ms(percentile(l.toHub, 0.50)), ms(percentile(l.toHub, 0.99))
		r.ToPageP50Ms, r.ToPageP99Ms = ms(percentile(l.toPage, 0.50)), ms(percentile(l.toPage, 0.99))
	}
	if len(l.latencies) == 0 {
		return
	}
	var sum time.Duration
	for _, d := range l.latencies {
		sum += d
	}
	p99 := percentile(l.latencies, 0.99)
	r.LatencyP50Ms, r.LatencyP99Ms = ms(percentile(l.latencies, 0.50)), ms(p99)
	r.LatencyMeanMs, r.LatencyMaxMs = ms(sum/time.Duration(len(l.latencies))), ms(l.latencies[len(l.latencies)-1])
	r.LatencyMet = p99 < hubLatencyGoal && l.missed == 0
}

// hubLog is what the bench's readers saw: each workspace's statuses and
// the hub's page messages. mu guards all of it.
type hubLog struct {
	mu       sync.Mutex
	statuses map[string][]statusSeen // by workspace URL
	inbox    inboxSeen
}

func (l *hubLog) addStatus(workspace string, s statusSeen) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.statuses[workspace] = append(l.statuses[workspace], s)
}

func (l *hubLog) addInbox(at time.Time, size int, m inboxMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inbox.observe(at, size, m)
}

// asked counts the sessions that have waited: that asked a question.
// mu must be held.
func (l *hubLog) asked() int {
	n := 0
	for _, st := range l.statuses {
		seen := map[string]bool{}
		for _, s := range st {
			if s.status == statusWaiting && !seen[s.session] {
				seen[s.session] = true
				n++
			}
		}
	}
	return n
}

// waits returns every workspace's waits so far.
func (l *hubLog) waits() []waitSeen {
	l.mu.Lock()
	defer l.mu.Unlock()
	var all []waitSeen
	for ws, st := range l.statuses {
		all = append(all, waitsOf(ws, st)...)
	}
	return all
}

// latencies matches the waits that began in [from, to) with the page's
// messages so far.
func (l *hubLog) latencies(from, to time.Time) waitLatencies {
	waits := l.waits()
	l.mu.Lock()
	defer l.mu.Unlock()
	return matchWaits(waits, l.inbox.shown, from, to)
}

// hubWorkspace is one workspace server of the measurement, and the
// bench's connection to it.
type hubWorkspace struct {
	srv   *serverProc
	url   string
	token string
	// tokenFile holds token for the hub; empty without a token.
	tokenFile string
	conn      *wsConn
}

// hubCommand is a session's program: after a first pause of delay it
// asks a numbered question, reads the answer, a number of seconds, works
// (sleeps) that long, and asks again. It ends when its terminal does.
func hubCommand(delay time.Duration) []string {
	return []string{"sh", "-c",
		`sleep "$0"; i=0; while :; do i=$((i+1)); printf 'Question %d: continue? ' "$i"; read x || exit; echo working; sleep "$x"; done`,
		fmt.Sprintf("%.2f", delay.Seconds())}
}

// uniform draws a duration uniformly from [lo, hi).
func uniform(rng *mrand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// measureHub starts o.Workspaces workspace servers from bin, each on
// fresh directories with o.Sessions sessions, and a hub following them
// all; it times each wait from its workspace to the hub's page over
// o.Window, and reads the hub's RSS and CPU.
func measureHub(ctx context.Context, e *benchEnv, bin string, o hubOptions) (*hubResult, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout+o.Window+hubGrace+max(settleMax, 3*o.Settle))
	defer cancel()
	r := &hubResult{
		Workspaces: o.Workspaces, SessionsPerWorkspace: o.Sessions, QuestionQuietMs: float64(hubQuestionQuiet.Milliseconds()),
		HoldSecondsMin: hubHoldMin.Seconds(), HoldSecondsMax: hubHoldMax.Seconds(), WorkSecondsMin: hubWorkMin.Seconds(), WorkSecondsMax: hubWorkMax.Seconds(),
		WindowSeconds: o.Window.Seconds(), RSSGoalMiB: hubRSSGoalMiB, LatencyGoalMs: float64(hubLatencyGoal.Milliseconds()),
	}
	dir, err := os.MkdirTemp(e.tmp, "hub")
	if err != nil {
		return nil, fmt.Errorf("make the hub's directory: %w", err)
	}
	began := time.Now()

	// The workspaces, stopped together at the end, after the hub.
	var wss []*hubWorkspace
	defer func() {
		var wg sync.WaitGroup
		for _, w := range wss {
			wg.Go(w.srv.close)
		}
		wg.Wait()
	}()
	for i := range o.Workspaces {
		name := fmt.Sprintf("ws-%02d", i+1)
		so := serverOptions{Bin: bin, MaxSessions: o.Sessions, Args: []string{
			"--agent", "shell", "--question-quiet", hubQuestionQuiet.String(), "--name", name,
		}}
		if i%2 == 0 {
			tok, err := newToken()
			if err != nil {
				return nil, err
			}
			so.Token = tok
		}
		srv, _, err := startFreshServer(ctx, dir, name+"-", so)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", name, err)
		}
		w := &hubWorkspace{srv: srv, url: srv.url, token: so.Token}
		wss = append(wss, w)
		if w.token != "" {
			w.tokenFile = filepath.Join(dir, name+".token")
			if err := os.WriteFile(w.tokenFile, []byte(w.token+"\n"), 0o600); err != nil {
				return nil, fmt.Errorf("write the token file of %s: %w", name, err)
			}
			r.TokenWorkspaces++
		}
	}
	e.logf("hub: %d workspaces started in %.1f s", len(wss), time.Since(began).Seconds())

	peers := filepath.Join(dir, "peers")
	var b strings.Builder
	b.WriteString("# the hub measurement's workspaces: URL TOKEN-FILE\n")
	for _, w := range wss {
		tf := w.tokenFile
		if tf == "" {
			tf = "-"
		}
		fmt.Fprintf(&b, "%s %s\n", w.url, tf)
	}
	if err := os.WriteFile(peers, []byte(b.String()), 0o600); err != nil {
		return nil, fmt.Errorf("write the peers file: %w", err)
	}
	hub, err := startProcess(ctx, bin, []string{"hub", "--addr", "127.0.0.1:0", "--peers", peers}, hubListenRE)
	if err != nil {
		return nil, fmt.Errorf("start the hub: %w", err)
	}
	defer hub.close()
	r.HubPID = hub.pid()
	rss := sampleRSS(ctx, r.HubPID, hubRSSSample)
	defer rss.stop()

	// The readers and the answerers: one goroutine reads each connection
	// and one writes it (the answerer; the hub's page gets nothing). They
	// end when their connection closes, or the answerers when answering
	// does; closing says the errors from then on are the bench's own.
	log := &hubLog{statuses: map[string][]statusSeen{}}
	var (
		wg      sync.WaitGroup
		closing atomic.Bool
		errMu   sync.Mutex
		readErr error
	)
	failed := func(what string, err error) {
		if err == nil || closing.Load() {
			return
		}
		errMu.Lock()
		defer errMu.Unlock()
		if readErr == nil {
			readErr = fmt.Errorf("%s: %w", what, err)
		}
	}
	answering, stopAnswering := context.WithCancel(ctx)
	defer stopAnswering()
	var conns []*wsConn
	defer func() {
		closing.Store(true)
		stopAnswering()
		for _, c := range conns {
			c.close()
		}
		wg.Wait()
	}()
	for i, w := range wss {
		if w.conn, err = dialWS(ctx, strings.Replace(w.url, "http", "ws", 1)+"/ws", w.token); err != nil {
			return nil, fmt.Errorf("workspace %s: %w", w.url, err)
		}
		conns = append(conns, w.conn)
		waits := make(chan string, 2*o.Sessions)
		wg.Go(func() { failed("read workspace "+w.url, observeWorkspace(answering, w, log, waits)) })
		rng := mrand.New(mrand.NewPCG(hubSeed, uint64(i)))
		wg.Go(func() { failed("answer workspace "+w.url, answerWaits(answering, w.conn, waits, rng)) })
	}
	page, err := dialWS(ctx, strings.Replace(hub.url, "http", "ws", 1)+"/ws", "")
	if err != nil {
		return nil, fmt.Errorf("the hub's page: %w", err)
	}
	conns = append(conns, page)
	wg.Go(func() { failed("read the hub's page", readInbox(page, log)) })

	// The hub reaches every workspace; then the sessions start, and the
	// window once every one has asked its first question, and the hub
	// lists them all.
	err = waitLog(ctx, log, func(l *hubLog) (bool, string) {
		n, why := l.inbox.reachable()
		return n == len(wss) && len(l.inbox.last.Workspaces) == len(wss),
			fmt.Sprintf("%d of %d workspaces reached; %s", n, len(wss), strings.Join(why, "; "))
	})
	if err != nil {
		return nil, fmt.Errorf("the hub reaching the workspaces: %w", err)
	}
	following, err := processRSS(r.HubPID)
	if err != nil {
		return nil, err
	}
	r.FollowingMiB = mib(following)
	e.logf("hub: the hub reached the %d workspaces after %.1f s, its RSS %.1f MiB; starting %d sessions in each",
		len(wss), time.Since(began).Seconds(), r.FollowingMiB, o.Sessions)
	if err := createHubSessions(ctx, wss, o.Sessions); err != nil {
		return nil, err
	}
	all := len(wss) * o.Sessions
	err = waitLog(ctx, log, func(l *hubLog) (bool, string) {
		asked := l.asked()
		return len(l.inbox.last.Sessions) == all && asked == all,
			fmt.Sprintf("the hub lists %d of %d sessions, %d asked their first question", len(l.inbox.last.Sessions), all, asked)
	})
	if err != nil {
		return nil, fmt.Errorf("the sessions' start: %w", err)
	}
	r.StartSeconds = time.Since(began).Seconds()
	e.logf("hub: every session asked its first question after %.1f s; measuring for %v", r.StartSeconds, o.Window)

	// The window.
	pids := make([]int, len(wss))
	for i, w := range wss {
		pids[i] = w.srv.pid()
	}
	from := time.Now()
	c0, err := hubCPUs(r.HubPID, pids)
	if err != nil {
		return nil, errors.Join(err, hubExited(hub, wss))
	}
	if err := sleepCtx(ctx, o.Window); err != nil {
		return nil, err
	}
	c1, err := hubCPUs(r.HubPID, pids)
	if err != nil {
		return nil, errors.Join(err, hubExited(hub, wss))
	}
	to := time.Now()
	stopAnswering()
	if err := hubExited(hub, wss); err != nil {
		return nil, err
	}
	seconds := to.Sub(from).Seconds()
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / seconds }
	r.HubCPUSeconds = (c1.hub - c0.hub).Seconds()
	r.HubCPUPercent, r.WorkspacesCPUPercent, r.BenchCPUPercent = pct(c1.hub-c0.hub), pct(c1.workspaces-c0.workspaces), pct(c1.bench-c0.bench)
	ticks := seconds * clockTicks
	r.MachineBusyCores = float64(c1.machine.busy-c0.machine.busy) / ticks
	r.MachineStealCores = float64(c1.machine.steal-c0.machine.steal) / ticks
	r.WindowSeconds = seconds
	inWindow := rss.between(from, to)
	if len(inWindow) > 0 {
		r.LoadMedianMiB, r.LoadPeakMiB = mib(medianOf(inWindow)), mib(slices.Max(inWindow))
	}

	// The waits of the window still to show get hubGrace; a short one,
	// which may never show, is not waited for.
	grace := time.NewTimer(hubGrace)
	defer grace.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for l := log.latencies(from, to); l.missed > 0; l = log.latencies(from, to) {
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-grace.C:
		case <-tick.C:
			continue
		}
		break
	}
	errMu.Lock()
	err = readErr
	errMu.Unlock()
	if err != nil {
		return nil, err
	}
	log.latencies(from, to).fill(r)
	log.mu.Lock()
	for _, st := range log.statuses {
		for _, s := range st {
			if !s.at.Before(from) && s.at.Before(to) {
				r.StatusChanges++
			}
		}
	}
	log.inbox.window(from, to).fill(r)
	log.mu.Unlock()
	r.StatusChangesPerSecond = float64(r.StatusChanges) / seconds
	deriveHub(r)
	e.logf("hub: %d waits, %d shown: p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d never shown (%d short); hub CPU %.1f %%, RSS median %.1f MiB, peak %.1f",
		r.Waits, r.Shown, r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyMaxMs, r.Missed+r.MissedShort, r.MissedShort, r.HubCPUPercent, r.LoadMedianMiB, r.LoadPeakMiB)

	// Nothing changes any more: every session waits for an answer that
	// will not come. What the hub holds then.
	m, took, settled, err := settleRSS(ctx, r.HubPID, o.Settle)
	if err != nil {
		return nil, fmt.Errorf("the hub's RSS after the window: %w", err)
	}
	r.SettledMiB, r.SettledSeconds, r.Settled = mib(m.RSS), took.Seconds(), settled
	r.PeakMiB = max(mib(slices.Max(append(rss.stop(), following))), r.SettledMiB)
	r.RSSMet = r.PeakMiB < hubRSSGoalMiB

	closing.Store(true)
	stopAnswering()
	for _, c := range conns {
		c.close()
	}
	wg.Wait()
	stopped, code, err := hub.stop()
	if err != nil {
		return nil, fmt.Errorf("stop the hub: %w", err)
	}
	r.HubStopMs, r.HubExitCode = float64(stopped.Microseconds())/1e3, code
	return r, nil
}

// hubCreators is how many workspaces get their sessions at once.
const hubCreators = 8

// createHubSessions creates n sessions in each workspace, hubCreators
// workspaces at a time, each with a first pause drawn from a fixed seed
// so that their questions do not all come at once.
func createHubSessions(ctx context.Context, wss []*hubWorkspace, n int) error {
	rng := mrand.New(mrand.NewPCG(hubSeed, hubSeed))
	delays := make([][]time.Duration, len(wss))
	for i := range delays {
		for range n {
			delays[i] = append(delays[i], uniform(rng, 0, hubHoldMax))
		}
	}
	slots := make(chan struct{}, hubCreators)
	errs := make([]error, len(wss))
	var wg sync.WaitGroup
	for i, w := range wss {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			api := newAPIClient(w.url, w.token)
			defer api.close()
			for j, d := range delays[i] {
				if _, err := api.create(ctx, fmt.Sprintf("s%d", j+1), hubCommand(d)); err != nil {
					errs[i] = fmt.Errorf("workspace %s: %w", w.url, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// hubExited says which of the hub and the workspaces has exited, with its
// log's end, or nil when none has.
func hubExited(hub *serverProc, wss []*hubWorkspace) error {
	procs := []*serverProc{hub}
	for _, w := range wss {
		procs = append(procs, w.srv)
	}
	var errs []error
	for i, p := range procs {
		select {
		case <-p.done:
		default:
			continue
		}
		what := "the hub"
		if i > 0 {
			what = "workspace " + wss[i-1].url
		}
		errs = append(errs, fmt.Errorf("%s (pid %d) exited with %v; its log:\n%s", what, p.pid(), p.cmd.ProcessState, p.log.tail()))
	}
	return errors.Join(errs...)
}

// newToken returns a random token.
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("make a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// waitLog waits until ready holds of what the readers saw, looking
// every 20 ms for up to hubReadyTimeout; ready, called with log.mu held,
// also says where things stand, for the error.
func waitLog(ctx context.Context, log *hubLog, ready func(*hubLog) (bool, string)) error {
	deadline := time.NewTimer(hubReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		log.mu.Lock()
		ok, state := ready(log)
		log.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", state, context.Cause(ctx))
		case <-deadline.C:
			return fmt.Errorf("not within %v: %s", hubReadyTimeout, state)
		case <-tick.C:
		}
	}
}

// observeWorkspace reads w's WebSocket until it closes, logging each
// session.status and handing each wait's session to the answerer until
// answering ends.
func observeWorkspace(answering context.Context, w *hubWorkspace, log *hubLog, waits chan<- string) error {
	for {
		b, err := w.conn.readMessage(idleFrameTimeout)
		if err != nil {
			return err
		}
		at := time.Now()
		var m struct {
			Type      string `json:"type"`
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
			Reason    string `json:"reason"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("decode %.200q: %w", b, err)
		}
		if m.Type != "session.status" {
			continue
		}
		log.addStatus(w.url, statusSeen{at: at, session: m.SessionID, status: m.Status, reason: m.Reason})
		if m.Status != statusWaiting {
			continue
		}
		select {
		case waits <- m.SessionID:
		case <-answering.Done():
		}
	}
}

// answerWaits answers each wait handed over on waits, on c, after a hold
// drawn from rng; the answer is the time the session then works, drawn
// from rng too. It returns when answering ends.
func answerWaits(answering context.Context, c *wsConn, waits <-chan string, rng *mrand.Rand) error {
	type due struct {
		session string
		at      time.Time
	}
	var pending []due // by time, earliest first
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if len(pending) > 0 {
			timer.Reset(time.Until(pending[0].at))
		}
		select {
		case <-answering.Done():
			return nil
		case id := <-waits:
			d := due{session: id, at: time.Now().Add(uniform(rng, hubHoldMin, hubHoldMax))}
			i, _ := slices.BinarySearchFunc(pending, d, func(a, b due) int { return a.at.Compare(b.at) })
			pending = slices.Insert(pending, i, d)
		case now := <-timer.C:
			for len(pending) > 0 && !pending[0].at.After(now) {
				work := uniform(rng, hubWorkMin, hubWorkMax)
				if err := c.input(pending[0].session, fmt.Sprintf("%.2f\r", work.Seconds())); err != nil {
					return err
				}
				pending = pending[1:]
			}
		}
	}
}

// readInbox reads the hub's page messages until the connection closes.
func readInbox(c *wsConn, log *hubLog) error {
	for {
		b, err := c.readMessage(idleFrameTimeout)
		if err != nil {
			return err
		}
		at := time.Now()
		var m inboxMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("decode %.200q: %w", b, err)
		}
		if m.Type != "inbox" {
			return fmt.Errorf("a page message of type %q, not inbox", m.Type)
		}
		log.addInbox(at, len(b), m)
	}
}

// readMessage reads the next message whole, waiting at most timeout; the
// bytes are valid until the next read.
func (c *wsConn) readMessage(timeout time.Duration) ([]byte, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
	_, r, err := c.conn.NextReader()
	if err != nil {
		return nil, c.failed("read", err)
	}
	c.raw.Reset()
	if _, err := c.raw.ReadFrom(r); err != nil {
		return nil, c.failed("read", err)
	}
	return c.raw.Bytes(), nil
}

// hubCPU is the CPU time, at one moment, of the hub, of the workspace
// servers together, of the bench, and of the machine.
type hubCPU struct {
	hub, workspaces, bench time.Duration
	machine                cpuTimes
}

func hubCPUs(hub int, workspaces []int) (hubCPU, error) {
	var c hubCPU
	var err error
	if c.machine, err = machineCPU(); err != nil {
		return c, err
	}
	if c.hub, err = processCPU(hub); err != nil {
		return c, err
	}
	for _, pid := range workspaces {
		d, err := processCPU(pid)
		if err != nil {
			return c, err
		}
		c.workspaces += d
	}
	if c.bench, err = processCPU(os.Getpid()); err != nil {
		return c, err
	}
	return c, nil
}

// rssSamples reads a process's RSS every so often from sampleRSS on and
// keeps every sample. Its one goroutine belongs to whoever called
// sampleRSS, who must call stop.
type rssSamples struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu protects the samples.
	mu      sync.Mutex
	at      []time.Time
	samples []uint64
}

// sampleRSS starts reading the RSS of process pid every every, until
// stop or the end of ctx.
func sampleRSS(ctx context.Context, pid int, every time.Duration) *rssSamples {
	ctx, cancel := context.WithCancel(ctx)
	s := &rssSamples{cancel: cancel}
	s.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			if v, err := processRSS(pid); err == nil {
				s.mu.Lock()
				s.at, s.samples = append(s.at, time.Now()), append(s.samples, v)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	return s
}

// between returns the samples taken in [from, to).
func (s *rssSamples) between(from, to time.Time) []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for i, at := range s.at {
		if !at.Before(from) && at.Before(to) {
			out = append(out, s.samples[i])
		}
	}
	return out
}

// stop ends the sampling, waits for it, and returns every sample; it
// may be called more than once.
func (s *rssSamples) stop() []uint64 {
	s.cancel()
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.samples)
}

// medianOf returns the median of vs, the lower of the middle two when
// there are two; vs must not be empty.
func medianOf(vs []uint64) uint64 {
	s := slices.Sorted(slices.Values(vs))
	return s[(len(s)-1)/2]
}

// deriveHub fills in the figures derived from those measured.
func deriveHub(r *hubResult) {
	r.HubCPUMsPerMessage = 0
	if r.InboxMessages > 0 {
		r.HubCPUMsPerMessage = 1e3 * r.HubCPUSeconds / float64(r.InboxMessages)
	}
	r.OtherCPUPercent = max(0, 100*r.MachineBusyCores-r.HubCPUPercent-r.WorkspacesCPUPercent-r.BenchCPUPercent)
}

// signedMillis is millis for a figure that may be below 0, without a
// "-0 ms".
func signedMillis(ms float64) string {
	if math.Abs(ms) < 0.5 {
		ms = 0
	}
	return millis(ms)
}

// hubRows are the hub measurement's rows: how soon a wait shows, and
// what the hub costs.
func hubRows(h *hubResult, cpus int) [][2]string {
	var rows [][2]string
	add := func(what, result string, args ...any) {
		rows = append(rows, [2]string{what, fmt.Sprintf(result, args...)})
	}
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	short := millis(float64(hubCoalesce.Milliseconds()))
	missed := "every one shown"
	switch {
	case h.Missed > 0 && h.MissedShort > 0:
		missed = fmt.Sprintf("%d never shown, and %d that ended within %s of beginning", h.Missed, h.MissedShort, short)
	case h.Missed > 0:
		missed = fmt.Sprintf("%d never shown", h.Missed)
	case h.MissedShort > 0:
		missed = fmt.Sprintf("all shown but %d that ended within %s of beginning", h.MissedShort, short)
	}
	add(fmt.Sprintf("hub: %d workspaces of %d sessions, a wait from the workspace to the hub's page", h.Workspaces, h.SessionsPerWorkspace),
		"p50 %s, p99 %s (goal under %s: %s), mean %s, max %s; to the hub's waitingSince p50 %s, p99 %s, from there to the page p50 %s, p99 %s; %d waits in %.0f s, %s; the workspaces sent %.1f statuses/s, the page got %.1f messages/s of %s, p99 %s apart, at most %s",
		millis(h.LatencyP50Ms), millis(h.LatencyP99Ms), millis(h.LatencyGoalMs), met(h.LatencyMet), millis(h.LatencyMeanMs), millis(h.LatencyMaxMs),
		signedMillis(h.ToHubP50Ms), signedMillis(h.ToHubP99Ms), millis(h.ToPageP50Ms), millis(h.ToPageP99Ms),
		h.Waits, h.WindowSeconds, missed, h.StatusChangesPerSecond, h.InboxPerSecond, formatBytes(int64(h.InboxMeanBytes)), millis(h.InboxGapP99Ms), millis(h.InboxGapMaxMs))
	steal := ""
	if h.MachineStealCores >= 0.05 {
		steal = fmt.Sprintf(", %.1f taken by the host", h.MachineStealCores)
	}
	moving := ""
	if !h.Settled {
		moving = fmt.Sprintf(" (still moving after %.0f s)", h.SettledSeconds)
	}
	add("hub: its RSS and CPU meanwhile",
		"RSS %.1f MiB following the workspaces before their sessions, %.1f median and %.1f peak in the window, %.1f at the most (goal under %g MiB: %s), %.1f settled after%s; CPU %.1f %% of a core, %.1f ms a page message; "+
			"beside it the workspace servers %.1f %%, the bench %.1f %%, the sessions' programs and other work %.0f %%: the machine busy %.1f of %d cores%s; SIGTERM to exit %s, exit %d",
		h.FollowingMiB, h.LoadMedianMiB, h.LoadPeakMiB, h.PeakMiB, h.RSSGoalMiB, met(h.RSSMet), h.SettledMiB, moving, h.HubCPUPercent, h.HubCPUMsPerMessage,
		h.WorkspacesCPUPercent, h.BenchCPUPercent, h.OtherCPUPercent, h.MachineBusyCores, cpus, steal, millis(h.HubStopMs), h.HubExitCode)
	return rows
}
