package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/wire"
)

// holdPorts starts a process of this binary holding n listeners, not a
// session's (TestMain's "hold-ports").
func holdPorts(t *testing.T, n int) *testutil.Listeners {
	t.Helper()
	return testutil.StartListeners(t, exec.Command(os.Args[0], "hold-ports", strconv.Itoa(n)))
}

// portsMessage is a ports.changed as read, with its size.
type portsMessage struct {
	wire.PortsMessage
	size int
	at   time.Time
}

// portsClient keeps a list of ports from ports.changed, as the UI does,
// and fails the test when a message does not fit the list it has: a
// delta before the whole listing, a removal of a port it does not list,
// an addition of an entry it already has as it is, or a list over the
// bound.
type portsClient struct {
	t    *testing.T
	conn *websocket.Conn
	list map[int]ports.Port
	more int
	got  []portsMessage
}

func newPortsClient(t *testing.T, conn *websocket.Conn) *portsClient {
	return &portsClient{t: t, conn: conn}
}

// next reads up to the next ports.changed, applies it and returns it.
func (c *portsClient) next(deadline time.Time) (portsMessage, error) {
	c.t.Helper()
	for {
		_ = c.conn.SetReadDeadline(deadline)
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			return portsMessage{}, err
		}
		var head struct{ Type string }
		if err := json.Unmarshal(b, &head); err != nil {
			c.t.Fatalf("decode %q: %v", b, err)
		}
		if head.Type != wire.TypePortsChanged {
			continue
		}
		m := portsMessage{size: len(b), at: time.Now()}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m.PortsMessage); err != nil || m.Added == nil || m.Removed == nil {
			c.t.Fatalf("ports.changed %s: %v, want added and removed arrays", b, err)
		}
		c.apply(m, b)
		c.got = append(c.got, m)
		return m, nil
	}
}

func (c *portsClient) apply(m portsMessage, raw []byte) {
	c.t.Helper()
	switch {
	case m.Reset:
		if len(m.Removed) > 0 {
			c.t.Errorf("a reset removes ports: %s", raw)
		}
		c.list = make(map[int]ports.Port)
	case c.list == nil:
		c.t.Fatalf("a change before the whole listing: %s", raw)
	}
	for _, p := range m.Removed {
		if _, ok := c.list[p]; !ok {
			c.t.Errorf("port %d removed, but the client does not list it: %s", p, raw)
		}
		delete(c.list, p)
	}
	for _, p := range m.Added {
		if old, ok := c.list[p.Port]; ok && old == p {
			c.t.Errorf("port %d added as the client already lists it: %s", p.Port, raw)
		}
		c.list[p.Port] = p
	}
	c.more = m.More
	if len(c.list) > ports.MaxListed {
		c.t.Errorf("the client lists %d ports, over %d: %s", len(c.list), ports.MaxListed, raw)
	}
}

// until reads ports.changed until the client's list satisfies cond.
func (c *portsClient) until(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for c.list == nil || !cond() {
		if _, err := c.next(deadline); err != nil {
			c.t.Fatalf("waiting for %s: %v; the client lists %v, %d more", what, err, c.list, c.more)
		}
	}
}

// portsWS opens a WebSocket on e's server and reads it as a portsClient.
func portsWS(t *testing.T, e *apiEnv) *portsClient {
	t.Helper()
	conn, _, err := dialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return newPortsClient(t, conn)
}

// listedPorts answers GET /api/ports.
func listedPorts(t *testing.T, e *apiEnv) (list []portEntry, more int) {
	t.Helper()
	resp, b := e.do(http.MethodGet, "/api/ports", "")
	wantStatus(t, "list ports", resp, b, http.StatusOK)
	var got struct {
		Ports []portEntry `json:"ports"`
		More  *int        `json:"more"`
	}
	if err := json.Unmarshal(b, &got); err != nil || got.Ports == nil || got.More == nil {
		t.Fatalf("GET /api/ports: %s (%v), want ports and more", b, err)
	}
	return got.Ports, *got.More
}

// TestPortsChangedSendsChanges: a client is sent the whole listing first,
// then only what changed: a port added when a session's dev server
// starts, replaced when another session's takes it over, removed when it
// stops; its list stays the server's. A connection that opens later is
// sent the whole listing at once.
func TestPortsChangedSendsChanges(t *testing.T) {
	e := newAPI(t)
	c := portsWS(t, e)
	first, err := c.next(time.Now().Add(waitTimeout))
	if err != nil {
		t.Fatalf("the first ports.changed: %v", err)
	}
	if !first.Reset {
		t.Fatalf("the first ports.changed is not the whole listing: %+v", first)
	}

	idA, port := startApp(t, e)
	c.until(fmt.Sprintf("port %d of session A", port), func() bool { return c.list[port].SessionID == idA })
	listedAt := len(c.got)
	added := c.got[len(c.got)-1]
	if added.Reset || added.size > 2048 {
		t.Errorf("port %d came in a message of %d bytes (reset %v), want a small change", port, added.size, added.Reset)
	}

	// Session B's server shares the port; once A's stops, the port is
	// B's without ever leaving the list: one message replaces it.
	idB, portB := startApp(t, e, strconv.Itoa(port))
	if portB != port {
		t.Fatalf("B listens on %d, want %d", portB, port)
	}
	resp, b := e.do(http.MethodDelete, "/api/sessions/"+idA, "")
	wantStatus(t, "delete A", resp, b, http.StatusNoContent)
	c.until(fmt.Sprintf("port %d to be B's", port), func() bool { return c.list[port].SessionID == idB })
	replaced := false
	for _, m := range c.got[listedAt:] {
		for _, p := range m.Added {
			replaced = replaced || !m.Reset && p.Port == port && p.SessionID == idB
		}
		if slices.Contains(m.Removed, port) {
			t.Errorf("port %d left the list while a server held it: %+v", port, m.PortsMessage)
		}
	}
	if !replaced {
		t.Errorf("no message replaced port %d with B's entry: %+v", port, c.got)
	}

	// A connection that opens now gets the whole listing, first.
	late := portsWS(t, e)
	m, err := late.next(time.Now().Add(waitTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Reset || late.list[port].SessionID != idB {
		t.Errorf("a new connection's first ports.changed: %+v, want the whole listing with port %d of B", m.PortsMessage, port)
	}

	resp, b = e.do(http.MethodDelete, "/api/sessions/"+idB, "")
	wantStatus(t, "delete B", resp, b, http.StatusNoContent)
	c.until(fmt.Sprintf("port %d to leave", port), func() bool { _, ok := c.list[port]; return !ok })
	last := c.got[len(c.got)-1]
	if last.Reset || !slices.Contains(last.Removed, port) {
		t.Errorf("port %d left by %+v, want a removal", port, last.PortsMessage)
	}
	late.until(fmt.Sprintf("port %d to leave the late client's list", port), func() bool { _, ok := late.list[port]; return !ok })
}

// maxPortsMessage is the largest ports.changed can be: ports.MaxListed
// ports added, each as long as a port can be written (a 7-digit pid, a
// 15-byte command of control characters, each escaped in 6 bytes, a
// session id of 64 bytes), and as many removed.
func maxPortsMessage(t *testing.T) int {
	t.Helper()
	worst := ports.Port{Port: 65535, PID: 4194304, Command: strings.Repeat("\x01", 15), SessionID: strings.Repeat("a", 64)}
	entry, err := wire.Marshal(worst)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := wire.Marshal(wire.PortsMessage{Type: wire.TypePortsChanged, Reset: true, Added: []ports.Port{}, Removed: []int{}, More: 65535})
	if err != nil {
		t.Fatal(err)
	}
	return len(empty) + ports.MaxListed*(len(entry)+1) + ports.MaxListed*len(",65535")
}

// TestPortsListingBounded: with thousands of ports listening, the listing
// holds ports.MaxListed of them, a session's dev server among them
// whatever its port, then the lowest of the others, and counts the rest,
// in GET /api/ports as in ports.changed; when every one of them is
// replaced at once, the message that says so stays under the bound.
func TestPortsListingBounded(t *testing.T) {
	const held = 2000
	e := newAPI(t)
	c := portsWS(t, e)
	h := holdPorts(t, held)
	id, app := startApp(t, e)
	bound := maxPortsMessage(t)

	// listedRightly reports whether a list of at most MaxListed ports
	// holds the session's app and, of the held ports, the lowest only;
	// other listeners of the machine come and go as they please.
	listedRightly := func(list []ports.Port, more int) bool {
		heldListed := 0
		highest := 0
		for _, p := range list {
			if slices.Contains(h.Ports, p.Port) {
				heldListed++
				highest = max(highest, p.Port)
			}
		}
		for _, p := range h.Ports {
			if p < highest && !slices.ContainsFunc(list, func(l ports.Port) bool { return l.Port == p }) {
				return false // a lower held port was left out
			}
		}
		return len(list) == ports.MaxListed && heldListed > 0 &&
			slices.ContainsFunc(list, func(p ports.Port) bool { return p.Port == app && p.SessionID == id }) &&
			more >= held+1-ports.MaxListed
	}
	sorted := func() []ports.Port {
		list := slices.Collect(func(yield func(ports.Port) bool) {
			for _, p := range c.list {
				if !yield(p) {
					return
				}
			}
		})
		slices.SortFunc(list, func(a, b ports.Port) int { return a.Port - b.Port })
		return list
	}
	c.until("the held ports and the app, bounded", func() bool { return listedRightly(sorted(), c.more) })

	list, more := listedPorts(t, e)
	got := make([]ports.Port, 0, len(list))
	for _, p := range list {
		got = append(got, ports.Port{Port: p.Port, PID: p.PID, Command: p.Command, SessionID: p.SessionID})
	}
	if !listedRightly(got, more) {
		t.Errorf("GET /api/ports lists %d ports and %d more, want %d with the app %d and the lowest held: %+v", len(got), more, ports.MaxListed, app, got)
	}

	// Every held port replaced: most of the listing changes at once.
	before := len(c.got)
	h.Replace(t, held)
	c.until("the new held ports, bounded", func() bool { return listedRightly(sorted(), c.more) })
	biggest := 0
	for _, m := range c.got {
		if m.size > bound {
			t.Errorf("a ports.changed of %d bytes, over the bound of %d: %d added, %d removed", m.size, bound, len(m.Added), len(m.Removed))
		}
	}
	for _, m := range c.got[before:] {
		biggest = max(biggest, len(m.Added))
	}
	if biggest < ports.MaxListed/2 {
		t.Errorf("replacing %d ports changed at most %d listed ports in one message: the test did not test the bound", held, biggest)
	}
	t.Logf("bound %d bytes; the largest message after the replacement added %d ports", bound, biggest)
}

// TestPortsChangedRate: however fast listeners come and go, a connection
// gets at most one ports.changed a poll, after its first.
func TestPortsChangedRate(t *testing.T) {
	e := newAPI(t)
	h := holdPorts(t, 200)
	c := portsWS(t, e)
	if _, err := c.next(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	// Twenty replacements a second, each moving the lowest of the held
	// ports, which are listed.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if err := h.TryReplace(10); err != nil {
				return
			}
		}
	}()
	defer func() {
		close(stop)
		<-done
	}()
	const window = 5 * time.Second
	start := time.Now()
	deadline := start.Add(window)
	n := 0
	for {
		if _, err := c.next(deadline); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				break
			}
			t.Fatal(err)
		}
		n++
	}
	if most := int(window/ports.PollEvery) + 1; n > most {
		t.Errorf("%d ports.changed in %v of churn, want at most %d", n, window, most)
	}
	if n == 0 {
		t.Errorf("no ports.changed in %v while the listed ports changed twenty times a second", window)
	}
	t.Logf("%d ports.changed in %v", n, window)
}
