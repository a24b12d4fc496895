package main

import (
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestWaitsOf makes a workspace's statuses into waits: a waiting status
// begins one, the session's next status ends it, the same wait told
// again is one, and a wait with another question is another.
func TestWaitsOf(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	const ws = "http://127.0.0.1:1"
	got := waitsOf(ws, []statusSeen{
		{at(0), "a", "active", "started"},
		{at(100), "a", statusWaiting, "the agent asks: Question 1: continue?"},
		{at(150), "b", statusWaiting, "the agent asks: Question 1: continue?"},
		{at(200), "a", statusWaiting, "the agent asks: Question 1: continue?"}, // told again
		{at(1100), "a", "active", "input from the user"},
		{at(2000), "b", statusWaiting, "the agent asks: Question 2: continue?"}, // another question, no answer between
		{at(3000), "a", statusWaiting, "the agent asks: Question 2: continue?"},
		{at(3010), "a", "active", "input from the user"},
		{at(4000), "a", "idle", "no output"}, // no wait under way: nothing ends
	})
	key := func(s string, q int) waitKey {
		return waitKey{ws, s, "the agent asks: Question " + string(rune('0'+q)) + ": continue?"}
	}
	want := []waitSeen{
		{key("a", 1), at(100), at(1100)},
		{key("b", 1), at(150), at(2000)},
		{key("b", 2), at(2000), time.Time{}},
		{key("a", 2), at(3000), at(3010)},
	}
	if !slices.Equal(got, want) {
		t.Errorf("waits\n%+v\nwant\n%+v", got, want)
	}
}

// TestInboxSeen takes the first page message that shows a wait as the
// time it showed, with the hub's waitingSince; a later message still
// showing it, or showing the session active, changes nothing.
func TestInboxSeen(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	since := t0.Add(10 * time.Millisecond)
	later := t0.Add(70 * time.Millisecond)
	type s = inboxSession
	msg := func(sessions ...s) inboxMessage {
		return inboxMessage{Type: "inbox", Sessions: sessions, Workspaces: []inboxWorkspace{
			{"w1", true, ""}, {"w2", false, "refused: nothing listens there"},
		}}
	}
	var in inboxSeen
	in.observe(t0, 100, msg(s{"w1", "a", "active", "started", nil}))
	in.observe(t0.Add(30*time.Millisecond), 120, msg(s{"w1", "a", statusWaiting, "Q1", &since}, s{"w1", "b", statusWaiting, "Q1", nil}))
	in.observe(t0.Add(60*time.Millisecond), 120, msg(s{"w1", "a", statusWaiting, "Q1", &later}, s{"w1", "b", "active", "input", nil}))
	in.observe(t0.Add(90*time.Millisecond), 130, msg(s{"w1", "a", statusWaiting, "Q1", &since}, s{"w1", "b", statusWaiting, "Q2", &later}))
	want := map[waitKey]shownWait{
		{"w1", "a", "Q1"}: {t0.Add(30 * time.Millisecond), since},
		{"w1", "b", "Q1"}: {t0.Add(30 * time.Millisecond), time.Time{}},
		{"w1", "b", "Q2"}: {t0.Add(90 * time.Millisecond), later},
	}
	if len(in.shown) != len(want) {
		t.Errorf("shown %v, want %v", in.shown, want)
	}
	for k, sh := range want {
		if got, ok := in.shown[k]; !ok || got != sh {
			t.Errorf("%+v shown %+v (%v), want %+v", k, got, ok, sh)
		}
	}
	if len(in.messages) != 4 || in.messages[3].size != 130 {
		t.Errorf("messages %+v", in.messages)
	}
	// The window from 30 ms to 100 ms holds the last three messages, 30
	// ms apart.
	var r hubResult
	w := in.window(t0.Add(30*time.Millisecond), t0.Add(100*time.Millisecond))
	w.fill(&r)
	if w.messages != 3 || w.bytes != 370 || !slices.Equal(w.gaps, []time.Duration{30 * time.Millisecond, 30 * time.Millisecond}) ||
		r.InboxMessages != 3 || math.Abs(r.InboxPerSecond-3/0.07) > 1e-9 || math.Abs(r.InboxMeanBytes-370.0/3) > 1e-9 || r.InboxGapP99Ms != 30 || r.InboxGapMaxMs != 30 {
		t.Errorf("window %+v, filled %+v", w, r)
	}
	if n, why := in.reachable(); n != 1 || len(why) != 1 || !strings.Contains(why[0], "w2: refused") {
		t.Errorf("reachable %d, %q", n, why)
	}
}

// TestMatchWaits times the waits of the window from the workspace to the
// page, leaves out those before or after it, and counts apart a wait
// never shown that was too short to be.
func TestMatchWaits(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	k := func(s string) waitKey { return waitKey{"w", s, "Q"} }
	waits := []waitSeen{
		{k("before"), at(-10), at(2000)}, // began before the window
		{k("a"), at(0), at(2000)},
		{k("b"), at(100), time.Time{}},
		{k("c"), at(200), at(210)},  // short, never shown
		{k("d"), at(300), at(1300)}, // never shown
		{k("e"), at(400), at(5000)},
		{k("after"), at(1000), time.Time{}}, // at the window's end: out
	}
	shown := map[waitKey]shownWait{
		k("before"): {at(20), at(5)}, k("a"): {at(30), at(4)}, k("b"): {at(1100), at(1070)}, k("e"): {at(420), time.Time{}}, k("after"): {at(1030), at(1005)},
	}
	got := matchWaits(waits, shown, at(0), at(1000))
	ms := func(v ...int) []time.Duration {
		var ds []time.Duration
		for _, m := range v {
			ds = append(ds, time.Duration(m)*time.Millisecond)
		}
		return ds
	}
	// e's hub did not say when it learned of it: it has no split.
	if got.waits != 5 || got.missed != 1 || got.missedShort != 1 || !slices.Equal(got.latencies, ms(20, 30, 1000)) ||
		!slices.Equal(got.toHub, ms(4, 970)) || !slices.Equal(got.toPage, ms(26, 30)) {
		t.Errorf("matched %+v, want 5 waits, 1 missed, 1 short, latencies 20, 30, 1000 ms, to the hub 4, 970, to the page 26, 30", got)
	}

	// A wait that ended just past the coalesce window is a miss.
	edge := []waitSeen{{k("x"), at(0), at(0).Add(hubCoalesce)}, {k("y"), at(0), at(0).Add(hubCoalesce + time.Millisecond)}}
	if got := matchWaits(edge, nil, at(0), at(1)); got.missedShort != 1 || got.missed != 1 {
		t.Errorf("edge %+v, want one short and one missed", got)
	}
}

// TestLatencyFill gives percentiles by nearest rank, and meets the goal
// only with the p99 under a second and nothing missed but short waits.
func TestLatencyFill(t *testing.T) {
	var l waitLatencies
	for i := 1; i <= 200; i++ {
		l.latencies = append(l.latencies, time.Duration(i)*5*time.Millisecond) // 5 ms to 1 s
	}
	l.waits = 201
	l.missedShort = 1
	l.toHub = []time.Duration{-time.Millisecond, 2 * time.Millisecond, 900 * time.Millisecond}
	l.toPage = []time.Duration{26 * time.Millisecond, 30 * time.Millisecond, 60 * time.Millisecond}
	var r hubResult
	l.fill(&r)
	if r.ToHubP50Ms != 2 || r.ToHubP99Ms != 900 || r.ToPageP50Ms != 30 || r.ToPageP99Ms != 60 {
		t.Errorf("split %+v", r)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Nearest rank: index int(p*n), so p50 is the 101st, p99 the 199th.
	if r.Waits != 201 || r.Shown != 200 || r.MissedShort != 1 || r.Missed != 0 || !near(r.LatencyP50Ms, 505) || !near(r.LatencyP99Ms, 995) ||
		!near(r.LatencyMaxMs, 1000) || !near(r.LatencyMeanMs, 502.5) || r.LatencyGoalMs != 1000 || !r.LatencyMet {
		t.Errorf("filled %+v", r)
	}
	l.missed = 1
	l.fill(&r)
	if r.LatencyMet || r.Missed != 1 {
		t.Errorf("a wait missed: met %v, missed %d", r.LatencyMet, r.Missed)
	}
	l = waitLatencies{waits: 1, missed: 0, latencies: []time.Duration{time.Second}}
	l.fill(&r)
	if r.LatencyMet || !near(r.LatencyP99Ms, 1000) {
		t.Errorf("p99 of 1 s: %+v, want the goal missed", r)
	}
	l = waitLatencies{waits: 3, missed: 3}
	l.fill(&r)
	if r.LatencyMet || r.LatencyP50Ms != 0 || r.Shown != 0 || r.ToHubP99Ms != 0 {
		t.Errorf("nothing shown: %+v", r)
	}
}

// TestUniform draws within its bounds, from a seed, the same every time.
func TestUniform(t *testing.T) {
	a, b := mrand.New(mrand.NewPCG(1, 2)), mrand.New(mrand.NewPCG(1, 2))
	lo, hi := time.Second, 4*time.Second
	var sum time.Duration
	for range 1000 {
		d := uniform(a, lo, hi)
		if d < lo || d >= hi || d != uniform(b, lo, hi) {
			t.Fatalf("drew %v, want in [%v, %v) and the same from the same seed", d, lo, hi)
		}
		sum += d
	}
	if mean := sum / 1000; mean < 2400*time.Millisecond || mean > 2600*time.Millisecond {
		t.Errorf("mean %v, want about 2.5 s", mean)
	}
	if m := medianOf([]uint64{5, 1, 4, 2}); m != 2 {
		t.Errorf("median %d, want the lower middle, 2", m)
	}
}

// TestHubRows writes the latency with its goal and what was missed, and
// the hub's memory with its goal.
func TestHubRows(t *testing.T) {
	h := &hubResult{
		Workspaces: 50, SessionsPerWorkspace: 4, WindowSeconds: 60, Waits: 2500, Shown: 2497, Missed: 2, MissedShort: 1,
		LatencyP50Ms: 31, LatencyP99Ms: 180, LatencyMeanMs: 40, LatencyMaxMs: 1250, LatencyGoalMs: 1000,
		ToHubP50Ms: 1, ToHubP99Ms: 40, ToPageP50Ms: 29, ToPageP99Ms: 150,
		StatusChangesPerSecond: 83.3, InboxPerSecond: 30.1, InboxMeanBytes: 120 << 10, InboxGapP99Ms: 180, InboxGapMaxMs: 1500,
		FollowingMiB: 14.7, LoadMedianMiB: 22.5, LoadPeakMiB: 30.25, PeakMiB: 30.5, RSSGoalMiB: 64, RSSMet: true, SettledMiB: 20, SettledSeconds: 30,
		HubCPUSeconds: 7.5, HubCPUPercent: 12.5, WorkspacesCPUPercent: 60, BenchCPUPercent: 15.2, MachineBusyCores: 1.9, MachineStealCores: 0.1, HubStopMs: 12, HubExitCode: 0,
		InboxMessages: 1500,
	}
	deriveHub(h)
	if math.Abs(h.HubCPUMsPerMessage-5) > 1e-9 || math.Abs(h.OtherCPUPercent-102.3) > 1e-9 {
		t.Errorf("derived %v ms a message, %v %% other; want 5 and 102.3", h.HubCPUMsPerMessage, h.OtherCPUPercent)
	}
	rows := hubRows(h, 2)
	if len(rows) != 2 {
		t.Fatalf("%d rows: %q", len(rows), rows)
	}
	for i, want := range []struct {
		what    string
		results []string
	}{
		{"hub: 50 workspaces of 4 sessions, a wait from the workspace to the hub's page", []string{
			"p50 31 ms, p99 180 ms (goal under 1.00 s: MISSED), mean 40 ms, max 1.25 s; to the hub's waitingSince p50 1 ms, p99 40 ms, from there to the page p50 29 ms, p99 150 ms; 2500 waits in 60 s, 2 never shown, and 1 that ended within 25 ms of beginning;",
			"the workspaces sent 83.3 statuses/s, the page got 30.1 messages/s of 120 KiB, p99 180 ms apart, at most 1.50 s",
		}},
		{"hub: its RSS and CPU meanwhile", []string{
			"RSS 14.7 MiB following the workspaces before their sessions, 22.5 median and 30.2 peak in the window, 30.5 at the most (goal under 64 MiB: met), 20.0 settled after (still moving after 30 s); CPU 12.5 % of a core, 5.0 ms a page message;",
			"the workspace servers 60.0 %, the bench 15.2 %, the sessions' programs and other work 102 %: the machine busy 1.9 of 2 cores, 0.1 taken by the host; SIGTERM to exit 12 ms, exit 0",
		}},
	} {
		if rows[i][0] != want.what {
			t.Errorf("row %d is %q, want %q", i, rows[i][0], want.what)
		}
		for _, s := range want.results {
			if !strings.Contains(rows[i][1], s) {
				t.Errorf("row %q lacks %q:\n%s", rows[i][0], s, rows[i][1])
			}
		}
	}

	h.Missed, h.MissedShort, h.LatencyMet, h.Settled, h.ToHubP50Ms, h.ToHubP99Ms = 0, 0, true, true, -0.3, -2
	if got := hubRows(h, 2)[0][1]; !strings.Contains(got, "to the hub's waitingSince p50 0 ms, p99 -2 ms,") {
		t.Errorf("the hub first: %s", got)
	}
	if got := hubRows(h, 2)[0][1]; !strings.Contains(got, "(goal under 1.00 s: met)") || !strings.Contains(got, "every one shown") {
		t.Errorf("all shown: %s", got)
	}
	h.MissedShort = 3
	if got := hubRows(h, 2)[0][1]; !strings.Contains(got, "all shown but 3 that ended within 25 ms of beginning") {
		t.Errorf("short waits missed: %s", got)
	}
	h.PeakMiB, h.RSSMet = 70, false
	if got := hubRows(h, 2)[1][1]; !strings.Contains(got, "70.0 at the most (goal under 64 MiB: MISSED)") || strings.Contains(got, "still moving") {
		t.Errorf("RSS over the goal: %s", got)
	}
}
