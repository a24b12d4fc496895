package ws_test

// Chaos tests: real PTYs, real sockets, clients that misbehave in every way
// a network or a browser tab can, while sessions flood. Each one ends by
// checking that the server is back where it started (goroutines, file
// descriptors, heap) and still serves.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// chaosFlood floods its terminal with a recognisable line forever, as fast
// as the terminal takes it.
var chaosFlood = []string{"sh", "-c", "exec yes agentmux-chaos-flood"}

// chaosFloodLine is a line of chaosFlood's output as the terminal shows it.
const chaosFloodLine = "agentmux-chaos-flood\r\n"

// Slack allowed over a baseline once chaos is over: runtime and test
// plumbing may hold one or two more, while a leak per connection shows as
// dozens or hundreds.
const (
	goroutineSlack = 3
	fdSlack        = 3
	heapSlack      = 64 << 20
)

// footprint is what the process holds; chaos must not grow it.
type footprint struct {
	goroutines int
	fds        int
	heap       uint64 // HeapInuse after a GC
}

func (f footprint) String() string {
	return fmt.Sprintf("%d goroutines, %d fds, %d MiB heap in use", f.goroutines, f.fds, f.heap>>20)
}

func takeFootprint() footprint {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return footprint{goroutines: runtime.NumGoroutine(), fds: openFDs(), heap: ms.HeapInuse}
}

// openFDs counts this process's open file descriptors; -1 when /proc is
// not there.
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// settled waits until the hub has no connections and the process is back
// to base (within the slack), and fails the test with a goroutine dump
// when it does not get there.
func (e *env) settled(t *testing.T, base footprint) {
	t.Helper()
	e.settledWithin(t, base, waitTimeout)
}

// settledWithin is settled with a timeout of its own for each of the two
// waits, for tests where the server should settle at once.
func (e *env) settledWithin(t *testing.T, base footprint, timeout time.Duration) {
	t.Helper()
	var now footprint
	ok := holdsWithin(timeout, func() bool { return e.hub.Connections() == 0 }) && holdsWithin(timeout, func() bool {
		now = footprint{goroutines: runtime.NumGoroutine(), fds: openFDs()}
		return now.goroutines <= base.goroutines+goroutineSlack && now.fds <= base.fds+fdSlack
	})
	now = takeFootprint()
	t.Logf("before: %v; after: %v", base, now)
	if !ok {
		var dump bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		t.Fatalf("after the chaos the hub has %d connections and the process holds %v, want none and at most %d goroutines and %d fds as before; goroutines:\n%s",
			e.hub.Connections(), now, base.goroutines+goroutineSlack, base.fds+fdSlack, dump.String())
	}
	if now.heap > base.heap+heapSlack {
		t.Fatalf("heap in use grew from %d MiB to %d MiB", base.heap>>20, now.heap>>20)
	}
}

// holdsWithin polls cond until it holds or timeout passes, and reports which.
func holdsWithin(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond) // polling, not waiting for an outcome
	}
	return true
}

// warmUp runs one ordinary connection to the end, so that what the first
// connection of a process starts once (pools, the poller) is counted in a
// baseline taken after it.
func (e *env) warmUp(t *testing.T, sid string) {
	t.Helper()
	c := e.dial(nil)
	c.attach(sid, nil)
	closeGracefully(c.conn)
	testutil.Eventually(t, waitTimeout, "the warm-up connection to end", func() bool { return e.hub.Connections() == 0 })
}

// closeGracefully sends a close frame, reads until the server's close
// comes back (or the deadline), and drops the socket.
func closeGracefully(conn *websocket.Conn) {
	deadline := time.Now().Add(waitTimeout)
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), deadline)
	_ = conn.SetReadDeadline(deadline)
	for {
		if _, _, err := conn.NextReader(); err != nil {
			break
		}
	}
	_ = conn.Close()
}

// closeAbruptly drops the socket with a TCP reset: no close frame, no FIN.
func closeAbruptly(conn *websocket.Conn) {
	if tc, ok := conn.UnderlyingConn().(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

var outputPrefix = []byte(`{"type":"` + wire.TypeTerminalOutput + `","sessionId":"`)

// readOutputBytes reads frames from conn until at least n bytes of
// terminal.output frames have come (counted as sent, undecoded: a client
// that decodes under the race detector measures itself). It is safe off
// the test goroutine: it returns errors rather than failing the test.
func readOutputBytes(conn *websocket.Conn, n int) error {
	got := 0
	_ = conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for got < n {
		_, b, err := conn.ReadMessage()
		if err != nil {
			return fmt.Errorf("after %d bytes of output: %w", got, err)
		}
		if bytes.HasPrefix(b, outputPrefix) {
			got += len(b)
		}
	}
	return nil
}

func attachMsg(sid string) map[string]any {
	return map[string]any{"type": wire.TypeSessionAttach, "sessionId": sid}
}

// churn is one client's life in TestChaosConnectChurnWhileFlooding. It
// returns an error only for what the server did wrong.
func churn(url, sid string, kind int, rng *rand.Rand) error {
	d := websocket.Dialer{HandshakeTimeout: waitTimeout}
	conn, resp, err := d.Dial(url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	conn.SetReadLimit(-1)
	_ = conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	if err := conn.WriteJSON(attachMsg(sid)); err != nil {
		conn.Close()
		return fmt.Errorf("send attach: %w", err)
	}
	switch kind {
	case 0: // reads a little, then says goodbye properly
		err = readOutputBytes(conn, 1+rng.IntN(32<<10))
		closeGracefully(conn)
	case 1: // reads a little, then vanishes
		err = readOutputBytes(conn, 1+rng.IntN(32<<10))
		closeAbruptly(conn)
	case 2: // vanishes with the attach maybe not even read
		closeAbruptly(conn)
	case 3: // detaches, reattaches, resizes, and goes away without a word
		err = readOutputBytes(conn, 1)
		for _, m := range []map[string]any{
			{"type": wire.TypeSessionDetach, "sessionId": sid},
			attachMsg(sid),
			{"type": wire.TypeTerminalResize, "sessionId": sid, "cols": 80 + rng.IntN(40), "rows": 24 + rng.IntN(20)},
			attachMsg(sid),
		} {
			if err == nil {
				err = conn.WriteJSON(m)
			}
		}
		if err == nil {
			err = readOutputBytes(conn, 1+rng.IntN(16<<10))
		}
		_ = conn.Close() // a FIN, not a close frame
	}
	if err != nil {
		return fmt.Errorf("client kind %d: %w", kind, err)
	}
	return nil
}

// TestChaosConnectChurnWhileFlooding connects, attaches, reads a little and
// disconnects 200 times from four goroutines while a session floods its
// terminal as fast as it can; only a quarter of the clients say goodbye
// with a close frame, the others reset the connection or just close it.
// Afterwards the server holds no more goroutines, descriptors or heap
// than before, the flooding session still streams to a new client, and
// another session still echoes.
//
// The ring is small: every connection is sent a replay of it, and JSON
// encoding under the race detector would otherwise make this test about
// CPU time on a busy machine rather than about connections.
func TestChaosConnectChurnWhileFlooding(t *testing.T) {
	const (
		workers    = 4
		iterations = 200
	)
	e := newEnv(t, envOptions{scrollback: 64 << 10})
	flood := e.session(chaosFlood...)
	echo := e.session("cat")
	e.warmUp(t, flood.ID())
	base := takeFootprint()

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	var (
		wg    sync.WaitGroup
		next  atomic.Int64
		kinds [4]atomic.Int64
		errs  = make(chan error, iterations)
	)
	start := time.Now()
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for next.Add(1) <= iterations {
				kind := rng.IntN(len(kinds))
				kinds[kind].Add(1)
				if err := churn(e.url, flood.ID(), kind, rng); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	t.Logf("%d connections (graceful %d, abrupt after reading %d, abrupt at once %d, detach/reattach %d) in %v; the session wrote %d MiB",
		iterations, kinds[0].Load(), kinds[1].Load(), kinds[2].Load(), kinds[3].Load(), time.Since(start).Round(time.Millisecond), flood.StreamState().End>>20)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	e.settled(t, base)
	if info := flood.Info(); !info.Running {
		t.Fatalf("the flooding session stopped: %+v", info)
	}
	c := e.dial(nil)
	c.attach(flood.ID(), nil)
	var st stream
	c.readUntil(flood.ID(), &st, func(s *stream) bool { return strings.Count(string(s.data), chaosFloodLine) > 1000 })
	c.attach(echo.ID(), nil)
	c.send(input(echo.ID(), "still echoing\n"))
	var est stream
	c.readUntil(echo.ID(), &est, contains("still echoing\r\n"))
}

// upgradeRequest is a WebSocket handshake as a browser sends it.
const upgradeRequest = "GET / HTTP/1.1\r\n" +
	"Host: 127.0.0.1\r\n" +
	"Upgrade: websocket\r\n" +
	"Connection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" +
	"Sec-WebSocket-Version: 13\r\n" +
	"\r\n"

// halfHandshake is one way of dropping a connection during the handshake
// in TestChaosDroppedHandshakes. It returns an error only for what the
// server did wrong.
func halfHandshake(addr string, kind int, rng *rand.Rand) error {
	conn, err := net.DialTimeout("tcp", addr, waitTimeout)
	if err != nil {
		return err
	}
	tc := conn.(*net.TCPConn)
	defer tc.Close()
	if rng.IntN(2) == 0 {
		_ = tc.SetLinger(0) // a reset rather than a FIN
	}
	_ = tc.SetDeadline(time.Now().Add(waitTimeout))
	switch kind {
	case 0: // part of the request, cut anywhere
		_, err = io.WriteString(tc, upgradeRequest[:1+rng.IntN(len(upgradeRequest)-2)])
	case 1: // the whole request, gone before the 101
		_, err = io.WriteString(tc, upgradeRequest)
	case 2: // the 101, then half a frame header
		if _, err = io.WriteString(tc, upgradeRequest); err != nil {
			break
		}
		if err = expect101(tc); err != nil {
			break
		}
		_, err = tc.Write([]byte{0x81, 0xfe}) // masked text, 16-bit length follows: never does
	case 3: // the 101, then a frame promising more than it sends
		if _, err = io.WriteString(tc, upgradeRequest); err != nil {
			break
		}
		if err = expect101(tc); err != nil {
			break
		}
		_, err = tc.Write([]byte{0x81, 0x80 | 100, 1, 2, 3, 4, 'x'})
	}
	if err != nil {
		return fmt.Errorf("handshake kind %d: %w", kind, err)
	}
	return nil
}

// expect101 reads the server's handshake response and checks it switches
// protocols.
func expect101(c net.Conn) error {
	var resp []byte
	buf := make([]byte, 512)
	for !bytes.Contains(resp, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		if err != nil {
			return fmt.Errorf("read the handshake response: %w (got %q)", err, resp)
		}
		resp = append(resp, buf[:n]...)
	}
	if !bytes.HasPrefix(resp, []byte("HTTP/1.1 101 ")) {
		return fmt.Errorf("handshake response %q, want 101", resp)
	}
	return nil
}

// TestChaosDroppedHandshakes opens 100 raw TCP connections that give up
// at every stage of the handshake (mid-request, before reading the 101,
// mid-frame just after it), some with a reset: nothing of them stays in
// the server, and a normal client still works.
func TestChaosDroppedHandshakes(t *testing.T) {
	const (
		workers = 10
		total   = 100
	)
	e := newEnv(t, envOptions{})
	echo := e.session("cat")
	e.warmUp(t, echo.ID())
	base := takeFootprint()

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	addr := e.srv.Listener.Addr().String()
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make(chan error, total)
	)
	for w := range workers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for i := next.Add(1); i <= total; i = next.Add(1) {
				if err := halfHandshake(addr, int(i%4), rng); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	e.settled(t, base)
	c := e.dial(nil)
	c.attach(echo.ID(), nil)
	c.send(input(echo.ID(), "after the storm\n"))
	var st stream
	c.readUntil(echo.ID(), &st, contains("after the storm\r\n"))
}

// smallReceiveBuffer is a dialer whose sockets have a fixed 16 KiB receive
// buffer, set before connecting so the window is small from the start: a
// client that stops reading stops the server's writes within a frame.
var smallReceiveBuffer = &websocket.Dialer{
	HandshakeTimeout: waitTimeout,
	NetDialContext: (&net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		}); cerr != nil {
			return cerr
		}
		return err
	}}).DialContext,
}

// TestChaosStalledClientIsDroppedWithoutSlowingOthers attaches a client
// that never reads, with a small receive buffer, next to one that reads,
// while the session writes 2 MB/s. The server drops the stalled one once
// a write to it times out (2 s, then a second's grace for its close), and
// meanwhile the reader keeps receiving without a pause as long as that
// timeout: a stalled socket must not hold up anybody else's output.
func TestChaosStalledClientIsDroppedWithoutSlowingOthers(t *testing.T) {
	const writeTimeout = 2 * time.Second
	e := newEnv(t, envOptions{writeTimeout: writeTimeout, sendBuffer: 32 << 10})
	s := e.session(pacedFlood(2)...)
	reader := e.dial(nil)
	reader.attach(s.ID(), nil)
	reader.start(s.ID())
	reader.expect(wire.TypeTerminalOutput, s.ID())
	closeGracefully(reader.conn)
	testutil.Eventually(t, waitTimeout, "the warm-up connection to end", func() bool { return e.hub.Connections() == 0 })
	base := takeFootprint()

	stalled, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	stalled.send(attachMsg(s.ID())) // and never read again, until dropped
	// The reader takes live output only, no replay: what it gets while
	// the stalled client holds on is what the session writes meanwhile.
	reader = e.dial(nil)
	now := s.StreamState().End
	if att := reader.attach(s.ID(), &now); att.Reset {
		t.Fatalf("attach since %d: %+v, want no replay", now, att)
	}

	const afterDrop = 4 << 20 // what the reader must still get once the stalled one is gone
	var (
		total      int // output frame bytes the reader received
		atDrop     = -1
		stallStart = time.Now()
		last       = time.Now()
		maxGap     time.Duration
		dropped    time.Duration
		readerConn = reader.conn
	)
	for atDrop < 0 || total < atDrop+afterDrop {
		_ = readerConn.SetReadDeadline(time.Now().Add(waitTimeout))
		_, b, err := readerConn.ReadMessage()
		if err != nil {
			t.Fatalf("the reading client, after %d bytes: %v", total, err)
		}
		now := time.Now()
		if bytes.HasPrefix(b, outputPrefix) {
			total += len(b)
			maxGap = max(maxGap, now.Sub(last))
			last = now
		}
		if atDrop < 0 && e.hub.Connections() == 1 {
			atDrop, dropped = total, now.Sub(stallStart)
		}
		if atDrop < 0 && now.Sub(stallStart) > waitTimeout {
			t.Fatalf("the stalled client was not dropped within %v (the reader got %d bytes meanwhile)", waitTimeout, total)
		}
	}
	t.Logf("the stalled client was dropped after %v; meanwhile the reader got %d KiB, %d KiB since; longest gap between its frames %v",
		dropped.Round(time.Millisecond), atDrop>>10, (total-atDrop)>>10, maxGap.Round(time.Millisecond))
	if atDrop < 1<<20 {
		t.Errorf("while the stalled client held on (%v), the reader got only %d KiB, want at least 1 MiB", dropped, atDrop>>10)
	}
	if maxGap >= writeTimeout {
		t.Errorf("the reader waited %v between frames: as long as a write to the stalled client may block", maxGap)
	}

	// The stalled client finds its connection closed once it reads what
	// its buffers held.
	_ = stalled.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	for {
		_, _, err := stalled.conn.NextReader()
		if err == nil {
			continue
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the stalled client's connection is still open: %v", err)
		}
		t.Logf("the stalled client's connection ended with: %v", err)
		break
	}
	stalled.conn.Close()
	closeGracefully(readerConn)
	e.settled(t, base)
}

// readToExit reads c until sid's terminal.exit and its error status have
// come.
func (c *client) readToExit(sid string, st *stream) *msg {
	c.t.Helper()
	var status *msg
	for st.exit == nil || status == nil {
		m := c.read()
		st.apply(m, sid)
		if m.Type == wire.TypeSessionStatus && m.SessionID == sid && m.Status == string(sessions.StatusError) {
			status = &m
		}
	}
	return status
}

// TestChaosAgentKilledMidFlood SIGKILLs a flooding agent's whole process
// group, three times over, with three clients attached: each time the
// session ends in error "killed by signal 9 (killed)", every client gets
// terminal.exit with signal 9 and the error status, a fresh client gets
// the output up to the end replayed, and a resume runs the agent again.
func TestChaosAgentKilledMidFlood(t *testing.T) {
	const reason = "killed by signal 9 (killed)"
	e := newEnv(t, envOptions{})
	// A pipeline: the shell and both programs share the process group.
	s := e.session("sh", "-c", `echo "run $$"; yes agentmux-chaos-flood | cat`)
	clients := []*client{e.dial(nil), e.dial(nil), e.dial(nil)}
	streams := make([]*stream, len(clients))
	for i, c := range clients {
		c.attach(s.ID(), nil)
		streams[i] = &stream{}
	}
	var pids []int
	for round := range 3 {
		from := s.StreamState().End
		testutil.Eventually(t, waitTimeout, "the flood to run", func() bool { return s.StreamState().End > from+256<<10 })
		pid := s.Pid()
		if pid == 0 {
			t.Fatalf("round %d: no process runs", round)
		}
		pids = append(pids, pid)
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the process group %d: %v", pid, err)
		}

		for i, c := range clients {
			st := streams[i]
			status := c.readToExit(s.ID(), st)
			if st.exit.Signal != 9 || st.exit.ExitCode != 128+9 {
				t.Errorf("round %d, client %d: terminal.exit %+v, want signal 9, code 137", round, i, *st.exit)
			}
			if status.Reason != reason {
				t.Errorf("round %d, client %d: session.status %q %q, want error %q", round, i, status.Status, status.Reason, reason)
			}
		}
		info := s.Info()
		if info.Status != sessions.StatusError || info.Reason != reason || info.Exit == nil || info.Exit.Signal != 9 || info.Running {
			t.Errorf("round %d: session info %+v, want error %q, exit signal 9, not running", round, info, reason)
		}
		end := s.StreamState().End

		// The ring kept the output: a new client gets it replayed, to the
		// same end as those who watched it live.
		fresh := e.dial(nil)
		att := fresh.attach(s.ID(), nil)
		if !att.Reset || att.Status != string(sessions.StatusError) {
			t.Errorf("round %d: fresh attach %+v, want a reset replay of an errored session", round, att)
		}
		rst := &stream{seq: att.Seq}
		fresh.readUntil(s.ID(), rst, exited)
		if rst.seq != end || len(rst.data) < 64<<10 || !strings.Contains(string(rst.data), chaosFloodLine) {
			t.Errorf("round %d: replay of %d bytes ends at %d, want a ring's worth of flood ending at %d", round, len(rst.data), rst.seq, end)
		}
		for i, st := range streams {
			tail := min(len(st.data), len(rst.data), 4096)
			if st.seq != end || !bytes.Equal(st.data[len(st.data)-tail:], rst.data[len(rst.data)-tail:]) {
				t.Errorf("round %d: client %d's stream ends at %d, want %d with the replay's last %d bytes", round, i, st.seq, end, tail)
			}
		}
		closeGracefully(fresh.conn)
		if t.Failed() {
			t.FailNow()
		}

		clients[0].send(map[string]any{"type": wire.TypeSessionResume, "sessionId": s.ID()})
		for i, c := range clients {
			st := streams[i]
			st.exit = nil
			c.readUntil(s.ID(), st, func(st *stream) bool {
				return len(st.statuses) > 0 && st.statuses[len(st.statuses)-1] == string(sessions.StatusActive) && st.seq > end
			})
		}
		if s.Pid() == pid || s.Pid() == 0 {
			t.Fatalf("round %d: after the resume the agent's pid is %d (was %d)", round, s.Pid(), pid)
		}
	}
	t.Logf("killed process groups %v", pids)
}

// TestChaosInputIntoAgentThatNeverReads pastes 256 KiB into a session
// whose agent never reads its terminal (a hung agent, or a busy one and a
// big paste) and then vanishes, while a second client types a line into
// the same session. Neither client's connection may freeze for it: the
// second one's heartbeat is answered, and once both have gone nothing of
// them remains in the server.
func TestChaosInputIntoAgentThatNeverReads(t *testing.T) {
	// How long a connection may take to answer, or to be cleaned up: both
	// take milliseconds when nothing blocks them.
	const answerWithin = 5 * time.Second
	e := newEnv(t, envOptions{})
	deaf := e.session("sh", "-c", "stty raw -echo; echo ready; exec sleep 600")
	echo := e.session("cat")
	e.warmUp(t, echo.ID())
	base := takeFootprint()

	paster := e.dial(nil)
	paster.attach(deaf.ID(), nil)
	var st stream
	paster.readUntil(deaf.ID(), &st, contains(readyLine))
	// More than the terminal's input queue and the kernel's buffers in
	// front of it (about 68 KiB) take.
	_ = paster.conn.SetWriteDeadline(time.Now().Add(waitTimeout))
	chunk := strings.Repeat("p", 1024)
	for range 256 {
		paster.send(input(deaf.ID(), chunk))
	}

	typist := e.dial(nil)
	typist.attach(echo.ID(), nil)
	typist.send(input(echo.ID(), "before\n"))
	var est stream
	typist.readUntil(echo.ID(), &est, contains("before\r\n"))
	typist.send(input(deaf.ID(), "a line nobody reads\n"))
	typist.send(map[string]any{"type": wire.TypeHeartbeat, "timestamp": 7})
	_ = typist.conn.SetReadDeadline(time.Now().Add(answerWithin))
	for answered := false; !answered; {
		_, b, err := typist.conn.ReadMessage()
		if err != nil {
			t.Errorf("a client that typed into a session whose agent does not read got no heartbeat reply within %v: %v", answerWithin, err)
			break
		}
		answered = bytes.Contains(b, []byte(`"type":"`+wire.TypeHeartbeat+`"`))
	}

	closeAbruptly(paster.conn)
	closeAbruptly(typist.conn)
	e.settledWithin(t, base, answerWithin)
	if !deaf.Info().Running {
		t.Fatal("the deaf session stopped")
	}
}
