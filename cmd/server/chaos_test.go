package main

// Chaos tests of the whole server process: it is SIGKILLed at random
// moments while it saves flooding sessions, and every time the next server
// must find a whole database and the sessions as they were last saved.

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	bolt "go.etcd.io/bbolt"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions/store"
)

// chaosFloodLine is a line of chaosFloodCmd's flood as the terminal shows
// it.
const chaosFloodLine = "agentmux-chaos-flood\r\n"

// chaosFloodCmd first prints "round N", N read from roundFile, so a client
// can tell where each run's output begins, then floods its terminal in
// bursts of about 100 KB, fast enough that every save has a changed 1 MiB
// screen to write and slow enough for a client under the race detector to
// keep up.
func chaosFloodCmd(roundFile string) []string {
	return []string{"sh", "-c", `echo "round $(cat "$0")"; while :; do yes agentmux-chaos-flood | head -n 5000; sleep 0.02; done`, roundFile}
}

func roundMarker(round int) string { return fmt.Sprintf("round %d\r\n", round) }

// chaosSample is how far a client had seen a session's stream, and when.
type chaosSample struct {
	at  time.Time
	seq uint64
}

// chaosReader follows one session's stream on its own goroutine: it
// reports where a run's marker begins, and keeps what it saw when, for the
// test to compare with what a crash kept.
type chaosReader struct {
	id     string
	marker string
	// found receives the stream offset at which marker begins.
	found chan uint64
	// done is closed when the connection ended; then samples, err and end
	// are the reader's.
	done    chan struct{}
	samples []chaosSample
	err     error // what the server got wrong, if anything
	end     error // how the connection ended
}

// followRun reads conn, attached to id and read up to offset from, until
// the connection ends. A resync (session.attached with reset) is followed.
func followRun(conn *websocket.Conn, id, marker string, from uint64) *chaosReader {
	r := &chaosReader{id: id, marker: marker, found: make(chan uint64, 1), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var (
			next  = from // where the next frame must start
			data  []byte // output up to next, while the marker is looked for
			found bool
		)
		for {
			f, err := readFrame(conn)
			if err != nil {
				r.end = err
				return
			}
			if f.SessionID != id {
				continue
			}
			switch f.Type {
			case "session.attached":
				if f.Reset {
					next, data = f.Seq, data[:0]
				}
			case "terminal.output":
				if start := f.Seq - uint64(len(f.Data)); start != next {
					r.err = fmt.Errorf("output frame covers [%d, %d), want it to start at %d", start, f.Seq, next)
					return
				}
				next = f.Seq
				r.samples = append(r.samples, chaosSample{time.Now(), f.Seq})
				if found {
					continue
				}
				data = append(data, f.Data...)
				if i := bytes.Index(data, []byte(marker)); i >= 0 {
					found = true
					r.found <- next - uint64(len(data)) + uint64(i)
					data = nil
				}
			}
		}
	}()
	return r
}

// seenBy returns the furthest offset the reader had seen at t.
func (r *chaosReader) seenBy(t time.Time) uint64 {
	var seq uint64
	for _, s := range r.samples {
		if s.at.After(t) {
			break
		}
		seq = s.seq
	}
	return seq
}

// awaitWrite returns as soon as the file at path changes: a transaction
// has begun writing it.
func awaitWrite(t *testing.T, path string) {
	t.Helper()
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		now, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if !now.ModTime().Equal(before.ModTime()) || now.Size() != before.Size() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing was written to %s within %v", path, waitTimeout)
		}
		time.Sleep(100 * time.Microsecond) // polling: the kill must follow the write closely
	}
}

// checkDatabase checks the database a killed server left at path without
// changing it, so the next server opens it as the crash left it: every
// page passes bbolt's consistency check, and a copy opens as the server
// opens its database.
func checkDatabase(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatalf("open the database read-only: %v", err)
	}
	var problems []string
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			problems = append(problems, err.Error())
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("check the database: %v", err)
	}
	if len(problems) > 0 {
		t.Fatalf("the database is inconsistent:\n%s", strings.Join(problems, "\n"))
	}

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), dbFile)
	if err := os.WriteFile(cp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(cp, time.Second)
	if err != nil {
		t.Fatalf("open a copy of the database: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// restoredScreen checks a server just started on a database a killed
// server left: it lists the session, idle, and attaching replays its
// screen. It returns the connection, attached, and the offset up to which
// it has read the replay.
func restoredScreen(t *testing.T, hc *http.Client, h *helperProc, id string) (*websocket.Conn, uint64) {
	t.Helper()
	list := listAt(t, hc, h.url(""))
	if len(list) != 1 || list[0].ID != id || list[0].Status != "idle" {
		t.Fatalf("after kill -9 and a restart the list is %+v, want %s idle", list, id)
	}
	conn, att := attach(t, h.addr, id)
	if !att.Reset || att.Status != "idle" {
		t.Fatalf("session.attached after the restart: %+v, want a reset replay of an idle session", att)
	}
	for {
		f, err := readFrame(conn)
		if err != nil {
			t.Fatalf("waiting for the replay: %v", err)
		}
		if f.Type != "terminal.output" || f.SessionID != id {
			continue
		}
		if from := f.Seq - uint64(len(f.Data)); from != att.Seq {
			t.Fatalf("the replay starts at %d, want %d as session.attached said", from, att.Seq)
		}
		if !strings.Contains(f.Data, chaosFloodLine) {
			t.Fatalf("the replay's first frame holds no flood: %.300q", f.Data)
		}
		return conn, f.Seq
	}
}

// TestChaosServerKilledWhileSaving SIGKILLs a server saving every 100 ms
// while its session floods, four times over, each time on the database
// the last killed server left: at a random moment, or just as a save
// begins writing the file. After each kill the database opens and passes
// bbolt's consistency check, the session's processes die with their
// terminal, and the next server lists the session idle and replays its
// screen, which keeps everything a client had seen 1.5 s before the
// kill; a resume runs the agent again, continuing the stream where the
// screen ended.
func TestChaosServerKilledWhileSaving(t *testing.T) {
	const (
		rounds = 4
		// lossWindow is how much output before a kill may be lost:
		// fifteen save intervals, for a busy machine under the race
		// detector whose disk may be slow to sync.
		lossWindow = 1500 * time.Millisecond
		// runFor is how long each server floods before the random moment
		// of its death; longer than lossWindow, so that each run's output
		// is partly beyond it.
		runFor = 2 * time.Second
	)
	workspace, dataDir := t.TempDir(), t.TempDir()
	dbPath := filepath.Join(dataDir, dbFile)
	roundFile := filepath.Join(workspace, "round")
	args := serverArgs(workspace, dataDir, "--save-interval", "100ms")
	hc := newHTTPClient(t)
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)

	var (
		id   string
		seen uint64 // what a client had seen lossWindow before the last kill
	)
	// Registered first, so it runs after every helper is killed.
	t.Cleanup(func() {
		if id != "" {
			killSessionProcs(t, id)
		}
	})
	for round := range rounds + 1 {
		if err := os.WriteFile(roundFile, []byte(strconv.Itoa(round)), 0o600); err != nil {
			t.Fatal(err)
		}
		h := startHelper(t, args...)
		h.waitServing()
		var (
			conn *websocket.Conn
			read uint64 // how far conn has read the stream
		)
		if round == 0 {
			s := createAt(t, hc, h.url(""), map[string]any{"command": chaosFloodCmd(roundFile)})
			id = s.ID
			var att frame
			conn, att = attach(t, h.addr, id)
			read = att.Seq
		} else {
			conn, read = restoredScreen(t, hc, h, id)
		}
		marker := roundMarker(round)
		rd := followRun(conn, id, marker, read)
		if round > 0 {
			resp, err := hc.Post(h.url("/api/sessions/"+id+"/resume"), "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantStatus(t, "resume", resp, b, http.StatusOK)
		}
		var (
			runStart uint64
			started  time.Time
		)
		select {
		case runStart = <-rd.found:
			started = time.Now()
		case <-rd.done:
			t.Fatalf("round %d: the connection ended before %q: %v", round, marker, cmp.Or(rd.err, rd.end))
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: %q did not come within %v", round, marker, waitTimeout)
		}
		if round > 0 {
			// The new run continues the stream where the restored screen
			// ended: nothing the client saw before the kill's loss window
			// is missing.
			if runStart < seen {
				t.Errorf("round %d: the restored screen ends at %d, before %d, which a client had seen %v before the kill", round, runStart, seen, lossWindow)
			}
		}
		if round == rounds {
			// The last kill's aftermath is checked; stop cleanly.
			if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if code := h.wait(waitTimeout); code != 0 {
				t.Errorf("the last server exited %d after SIGTERM, want 0", code)
			}
			select {
			case <-rd.done:
			case <-time.After(waitTimeout):
				t.Fatal("the client's connection outlived the last server")
			}
			if rd.err != nil {
				t.Error(rd.err)
			}
			checkDatabase(t, dbPath)
			break
		}

		// The server floods and saves for a bounded, random time: the kill
		// must land at an arbitrary point of the save cycle. Every other
		// round it lands as soon as a save starts writing the file, in
		// the middle of the transaction.
		time.Sleep(runFor + time.Duration(rng.Int64N(int64(300*time.Millisecond))))
		how := "at a random moment"
		if round%2 == 1 {
			how = "as a save wrote the database"
			awaitWrite(t, dbPath)
		}
		killed := time.Now()
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		h.wait(waitTimeout)
		if st, ok := h.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || st.Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the server ended with %v, want SIGKILL", round, h.cmd.ProcessState)
		}
		select {
		case <-rd.done:
		case <-time.After(waitTimeout):
			t.Fatalf("round %d: the client's connection outlived the server", round)
		}
		seen = rd.seenBy(killed.Add(-lossWindow))
		t.Logf("round %d: run from %d, killed %s %v after the marker; the client saw %d by then, %d %v before; its connection ended with %v",
			round, runStart, how, killed.Sub(started).Round(time.Millisecond), rd.seenBy(killed), seen, lossWindow, rd.end)
		if rd.err != nil {
			t.Fatalf("round %d: %v", round, rd.err)
		}
		if seen <= runStart {
			t.Fatalf("round %d: the client saw none of the run's flood %v before the kill", round, lossWindow)
		}

		// The agent loses its terminal with the server: the hang-up ends
		// it.
		testutil.Eventually(t, waitTimeout, "the session's processes to die with the server", func() bool {
			return len(sessionProcs(id)) == 0
		})
		checkDatabase(t, dbPath)
	}
}
