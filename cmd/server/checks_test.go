package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// checkEvent is a session.check as a client reads it.
type checkEvent struct {
	SessionID    string          `json:"sessionId"`
	Check        *sessions.Check `json:"check"`
	SendFailures bool            `json:"sendFailures"`
}

// nextCheck reads events until the session's check of checkpoint cp
// reaches status, and returns it; the checks read before are returned
// too, oldest first.
func nextCheck(t *testing.T, conn *websocket.Conn, id string, cp int, status string) (sessions.Check, []sessions.Check) {
	t.Helper()
	var seen []sessions.Check
	got := collectUntil(t, conn, fmt.Sprintf("checkpoint %d's check %s", cp, status), func(ev watchEvent) bool {
		if ev.Type != wire.TypeSessionCheck || ev.SessionID != id {
			return false
		}
		var m checkEvent
		decodeJSON(t, ev.Raw, &m)
		if m.Check == nil {
			return false
		}
		seen = append(seen, *m.Check)
		return m.Check.Checkpoint == cp && string(m.Check.Status) == status
	})
	var m checkEvent
	decodeJSON(t, got[len(got)-1].Raw, &m)
	return *m.Check, seen
}

// untilChecks reads events until the session's checks have reached each
// of wants ("checkpoint:status"), in whatever order they come (a
// superseded check can end after the next one started), and returns
// them by checkpoint.
func untilChecks(t *testing.T, conn *websocket.Conn, id string, wants ...string) map[int]sessions.Check {
	t.Helper()
	got := map[int]sessions.Check{}
	left := map[string]bool{}
	for _, w := range wants {
		left[w] = true
	}
	collectUntil(t, conn, "checks "+strings.Join(wants, ", "), func(ev watchEvent) bool {
		if ev.Type != wire.TypeSessionCheck || ev.SessionID != id {
			return false
		}
		var m checkEvent
		decodeJSON(t, ev.Raw, &m)
		if m.Check != nil {
			key := fmt.Sprintf("%d:%s", m.Check.Checkpoint, m.Check.Status)
			if left[key] {
				delete(left, key)
				got[m.Check.Checkpoint] = *m.Check
			}
		}
		return len(left) == 0
	})
	return got
}

// checkpointsWithChecks is GET /api/sessions/:id/checkpoints, by id.
func checkpointsWithChecks(t *testing.T, e *apiEnv, id string) map[int]*struct {
	Status     string
	ExitCode   int
	DurationMs int64
	Output     string
} {
	t.Helper()
	resp, b := e.do(http.MethodGet, "/api/sessions/"+id+"/checkpoints", "")
	wantStatus(t, "the checkpoints", resp, b, http.StatusOK)
	var list struct {
		Checkpoints []struct {
			ID    int
			Check *struct {
				Status     string
				ExitCode   int
				DurationMs int64
				Output     string
			}
		}
	}
	decodeJSON(t, b, &list)
	out := map[int]*struct {
		Status     string
		ExitCode   int
		DurationMs int64
		Output     string
	}{}
	for _, cp := range list.Checkpoints {
		out[cp.ID] = cp.Check
	}
	return out
}

// turnAgent ends a turn (rings the bell) at its start and after each line
// it reads, which it writes to turn.txt first.
var turnAgent = []string{"sh", "-c", `printf 'ready\a'; while IFS= read -r l; do printf '%s\n' "$l" > turn.txt; printf 'done\a'; done`}

// TestCheckAtEveryTurn: the check script runs on each turn's checkpoint,
// in the session's tree, with the session's environment; its result is
// told to every client, kept with the checkpoint and as the session's
// last; a check past its time limit is stopped.
func TestCheckAtEveryTurn(t *testing.T) {
	check := `echo "session=$AGENTMUX_SESSION_ID dir=$(pwd)"
case "$(cat turn.txt 2>/dev/null)" in
good) echo all 3 tests pass ;;
slow) exec sleep 60 ;;
*) printf '\033[31mnot ok\033[0m 2 - expected good, got "%s"\n' "$(cat turn.txt 2>/dev/null)"; exit 4 ;;
esac`
	e := newShipAPI(t, "--check-script", check, "--check-timeout", "1s")
	conn := watchWS(t, e)
	s := e.createCommand(turnAgent)

	// The first turn: no turn.txt, the check fails.
	running, _ := nextCheck(t, conn, s.ID, 1, "running")
	if running.ExitCode != -1 || running.Output != "" {
		t.Errorf("a running check: %+v", running)
	}
	failed, _ := nextCheck(t, conn, s.ID, 1, "failed")
	wantOut := fmt.Sprintf("session=%s dir=%s\nnot ok 2 - expected good, got \"\"\n", s.ID, e.dir)
	if failed.ExitCode != 4 || failed.Output != wantOut || failed.Sent || failed.Held {
		t.Fatalf("the first turn's check: %+v, want exit 4 with output %q (colours removed)", failed, wantOut)
	}

	e.typeInto(s.ID, "good\r")
	passed, _ := nextCheck(t, conn, s.ID, 2, "passed")
	if passed.ExitCode != 0 || !strings.HasSuffix(passed.Output, "all 3 tests pass\n") {
		t.Fatalf("the second turn's check: %+v", passed)
	}
	if got := e.get(s.ID).Check; got == nil || got.Checkpoint != 2 || got.Status != "passed" {
		t.Fatalf("the session's last check: %+v", got)
	}

	// A check that runs past --check-timeout is stopped.
	e.typeInto(s.ID, "slow\r")
	timedOut, _ := nextCheck(t, conn, s.ID, 3, "timeout")
	if timedOut.ExitCode != -1 || timedOut.DurationMs < 1000 {
		t.Fatalf("the slow turn's check: %+v", timedOut)
	}

	cps := checkpointsWithChecks(t, e, s.ID)
	for id, want := range map[int]string{1: "failed", 2: "passed", 3: "timeout"} {
		if cps[id] == nil || cps[id].Status != want {
			t.Errorf("checkpoint %d's check: %+v, want %s", id, cps[id], want)
		}
	}
	if cps[1] != nil && (cps[1].ExitCode != 4 || cps[1].Output != wantOut) {
		t.Errorf("checkpoint 1's check as listed: %+v", cps[1])
	}
}

// TestCheckSupersededWhenTheAgentWorksAgain: a check still running when
// the agent starts its next turn is stopped, with what it started, and
// counts as superseded; the next turn is checked in its place.
func TestCheckSupersededWhenTheAgentWorksAgain(t *testing.T) {
	pids := t.TempDir()
	// The first turn's check would run a minute: a test suite's server in
	// the background, waited for.
	check := `if [ ! -e turn.txt ]; then sleep 60 & echo $! > ` + pids + `/child; wait; fi; echo checked`
	e := newShipAPI(t, "--check-script", check)
	conn := watchWS(t, e)
	s := e.createCommand(turnAgent)
	nextCheck(t, conn, s.ID, 1, "running")
	testutil.Eventually(t, waitTimeout, "the check's child to start", func() bool {
		b, err := os.ReadFile(filepath.Join(pids, "child"))
		return err == nil && strings.HasSuffix(string(b), "\n")
	})

	e.typeInto(s.ID, "more\r")
	ended := untilChecks(t, conn, s.ID, "1:superseded", "2:passed")
	if superseded := ended[1]; superseded.ExitCode != -1 {
		t.Errorf("a superseded check: %+v", superseded)
	}
	b, err := os.ReadFile(filepath.Join(pids, "child"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	testutil.Eventually(t, waitTimeout, "the check's child to be gone", func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		return syscall.Kill(pid, 0) != nil || err == nil && strings.Contains(string(st), ") Z ")
	})
	if passed := ended[2]; passed.Output != "checked\n" {
		t.Errorf("the next turn's check: %+v", passed)
	}
	if got := e.get(s.ID).Check; got == nil || got.Checkpoint != 2 || got.Status != "passed" {
		t.Fatalf("the session's last check: %+v", got)
	}
}

// TestCheckFailuresSentToTheAgent: with sending on, a failed check is
// queued to the agent as a prompt with the output's end; after three in
// a row the next is held, not sent.
func TestCheckFailuresSentToTheAgent(t *testing.T) {
	e := newShipAPI(t, "--check-script", `echo "turn $(cat turn.txt 2>/dev/null || echo none) fails"; exit 1`)
	conn := watchWS(t, e)
	// An agent that never gets it right: each prompt that asks for a fix
	// is a turn that changes the tree.
	agent := []string{"sh", "-c", `n=0; while IFS= read -r l; do case "$l" in *"Please fix"*) n=$((n+1)); echo "fix $n" > turn.txt; printf 'done\a';; esac; done`}
	s := e.createCommand(agent)

	resp, b := e.do(http.MethodPatch, "/api/sessions/"+s.ID, `{"sendFailures":true}`)
	wantStatus(t, "turn sending on", resp, b, http.StatusOK)
	if !strings.Contains(string(b), `"sendFailures":true`) {
		t.Fatalf("the session after the patch: %s", b)
	}
	collectUntil(t, conn, "session.check saying sending is on", func(ev watchEvent) bool {
		return ev.Type == wire.TypeSessionCheck && strings.Contains(string(ev.Raw), `"sendFailures":true`)
	})
	for _, bad := range []string{`{}`, `{"sendFailures":"yes"}`, `{"sendFailures":true,"other":1}`} {
		resp, b := e.do(http.MethodPatch, "/api/sessions/"+s.ID, bad)
		wantStatus(t, "a bad patch "+bad, resp, b, http.StatusBadRequest)
	}
	resp, b = e.do(http.MethodPatch, "/api/sessions/nope", `{"sendFailures":true}`)
	wantStatus(t, "a patch of no session", resp, b, http.StatusNotFound)

	// The first turn's end: a prompt typed into the agent is what starts
	// it (it rings no bell at its start).
	e.typeInto(s.ID, "Please fix nothing\r")
	for i := 1; i <= sessions.MaxFailuresSent+1; i++ {
		c, _ := nextCheck(t, conn, s.ID, i, "failed")
		if i <= sessions.MaxFailuresSent && (!c.Sent || c.Held) || i > sessions.MaxFailuresSent && (c.Sent || !c.Held) {
			t.Fatalf("check %d: sent %v held %v", i, c.Sent, c.Held)
		}
	}
	// Each sent failure was a prompt with the check's output: the agent's
	// turns 2 to 4 came from them, and the fourth check says so.
	cps := checkpointsWithChecks(t, e, s.ID)
	if c := cps[4]; c == nil || c.Output != "turn fix 4 fails\n" {
		t.Fatalf("the fourth check: %+v", c)
	}
	sess, err := e.srv.mgr.Get(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if q := sess.Queue(); len(q.Prompts) != 0 {
		t.Errorf("prompts left in the queue: %+v", q.Prompts)
	}
}

// TestCheckRunsOnlyOnceApproved: a check script from the repository runs
// only once approved, and a changed one only once approved again.
func TestCheckRunsOnlyOnceApproved(t *testing.T) {
	e := newShipAPI(t)
	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"check": "echo first script"}}`)
	conn := watchWS(t, e)
	s := e.createCommand(turnAgent)
	isCheck := func(ev watchEvent) bool { return ev.Type == wire.TypeSessionCheck && ev.SessionID == s.ID }
	isCheckpoint := func(ev watchEvent) bool { return ev.Type == wire.TypeSessionCheckpoint && ev.SessionID == s.ID }
	// A check of checkpoint 1 would be announced before checkpoint 2 is
	// (one goroutine takes both, and starts checks as it takes them).
	noCheckUntil := func(what string, cp int) {
		t.Helper()
		for _, ev := range collectUntil(t, conn, what, func(ev watchEvent) bool {
			var m struct{ Checkpoint struct{ ID int } }
			decodeJSON(t, ev.Raw, &m)
			return isCheckpoint(ev) && m.Checkpoint.ID == cp
		}) {
			if isCheck(ev) {
				t.Fatalf("a check ran before it was approved: %s", ev.Raw)
			}
		}
	}
	noCheckUntil("the first checkpoint", 1)
	e.typeInto(s.ID, "one\r")
	noCheckUntil("the second checkpoint", 2)

	resp, b := e.do(http.MethodPost, "/api/scripts/approve", `{"all":true}`)
	wantStatus(t, "approve", resp, b, http.StatusOK)
	e.typeInto(s.ID, "two\r")
	if c, _ := nextCheck(t, conn, s.ID, 3, "passed"); c.Output != "first script\n" {
		t.Fatalf("the approved check: %+v", c)
	}

	writeIn(t, e.dir, "agentmux.json", `{"scripts": {"check": "echo changed script"}}`)
	e.typeInto(s.ID, "three\r")
	noCheckUntil("the fourth checkpoint", 4)
	e.typeInto(s.ID, "four\r")
	noCheckUntil("the fifth checkpoint", 5)
}
