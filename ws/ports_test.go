package ws_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
)

// listing is a ports.Listing of the given ports, each held by pid.
func listing(pid int, list ...int) ports.Listing {
	l := ports.Listing{Ports: []ports.Port{}, More: len(list)}
	for _, p := range list {
		l.Ports = append(l.Ports, ports.Port{Port: p, PID: pid, Command: "node"})
	}
	return l
}

// readPorts reads up to the next ports.changed and applies it to list,
// failing on a change the list cannot take. It counts the file.changed
// it skips in files, when not nil.
func (c *client) readPorts(list map[int]ports.Port, files *int) (wire.PortsMessage, map[int]ports.Port) {
	c.t.Helper()
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		if !strings.Contains(string(b), `"type":"ports.changed"`) {
			if files != nil && strings.Contains(string(b), `"type":"file.changed"`) {
				*files++
			}
			continue
		}
		var m wire.PortsMessage
		if err := json.Unmarshal(b, &m); err != nil {
			c.t.Fatalf("decode %s: %v", b, err)
		}
		if m.Reset {
			list = make(map[int]ports.Port)
		} else if list == nil {
			c.t.Fatalf("a change before the whole listing: %s", b)
		}
		for _, p := range m.Removed {
			if _, ok := list[p]; !ok {
				c.t.Fatalf("port %d removed, not listed: %s", p, b)
			}
			delete(list, p)
		}
		for _, p := range m.Added {
			list[p.Port] = p
		}
		return m, list
	}
}

// asMap is l's ports by number.
func asMap(l ports.Listing) map[int]ports.Port {
	m := make(map[int]ports.Port)
	for _, p := range l.Ports {
		m[p.Port] = p
	}
	return m
}

// TestPortsReachAStalledClient: a client that stops reading while file
// events pile up (which it misses, as it may) and the ports change twenty
// times is sent, once it reads again, one message that takes its list
// from what it had to the last listing: no change is lost, and none
// queues behind another.
func TestPortsReachAStalledClient(t *testing.T) {
	e := newEnv(t, envOptions{sendBuffer: 32 << 10, writeTimeout: 2 * waitTimeout})
	c, err := e.tryDial(nil, smallReceiveBuffer)
	if err != nil {
		t.Fatal(err)
	}
	c.sync()
	e.app.OnPorts(listing(10, 3000, 3001, 3002))
	m, list := c.readPorts(nil, nil)
	if !m.Reset || !maps.Equal(list, asMap(listing(10, 3000, 3001, 3002))) {
		t.Fatalf("the first ports.changed: %+v", m)
	}

	// The client reads nothing now: file events fill the sockets'
	// buffers, then its queue, past which they are dropped.
	long := strings.Repeat("d", 4000)
	for i := range 1000 {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/%s/%d", long, i), Rel: fmt.Sprintf("%s/%d", long, i), Op: watcher.FileAdded, Time: time.Now()})
	}
	var last ports.Listing
	for i := range 20 {
		last = listing(20+i, 3001, 4000+i, 5000)
		e.app.OnPorts(last)
	}
	for i := range 300 {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/after/%d", i), Rel: fmt.Sprintf("after/%d", i), Op: watcher.FileAdded, Time: time.Now()})
	}
	if e.hub.Connections() != 1 {
		t.Fatal("the stalled client was dropped")
	}

	n, files := 0, 0
	for !maps.Equal(list, asMap(last)) {
		m, list = c.readPorts(list, &files)
		n++
		if m.Reset {
			t.Errorf("ports.changed %+v: want a change, not the whole listing again", m)
		}
	}
	if m.More != last.More {
		t.Errorf("the last ports.changed counts %d more, want %d", m.More, last.More)
	}
	if n > 2 {
		t.Errorf("%d ports.changed for twenty changes made while the client did not read, want them taken together", n)
	}
	for _, m := range c.sync() {
		if m.Type == wire.TypeFileChanged {
			files++
		}
	}
	if files >= 1300 {
		t.Errorf("the client got all %d file events: it was never stalled, and the test tested nothing", files)
	}
	t.Logf("%d of 1300 file events reached the stalled client; %d ports.changed took it to the last listing", files, n)
}

// TestPortsWholeListingForANewConnection: a connection that opens while
// collab has a listing gets it whole at once; one that opens while
// there is none (nobody was connected) asks the poller for it, and gets
// it whole once given.
func TestPortsWholeListingForANewConnection(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.app.OnPorts(listing(7, 5173)) // nobody connected: not kept
	a := e.dial(nil)
	select {
	case <-e.app.PortsWanted():
	case <-time.After(waitTimeout):
		t.Fatal("a connection that opened with no listing did not ask for one")
	}
	e.app.OnPorts(listing(7, 5173))
	if m, list := a.readPorts(nil, nil); !m.Reset || !maps.Equal(list, asMap(listing(7, 5173))) {
		t.Errorf("the first connection's first ports.changed: %+v", m)
	}

	b := e.dial(nil)
	if m, list := b.readPorts(nil, nil); !m.Reset || !maps.Equal(list, asMap(listing(7, 5173))) {
		t.Errorf("a later connection's first ports.changed: %+v", m)
	}
	select {
	case <-e.app.PortsWanted():
		t.Error("a connection that opened with a listing there asked for one")
	default:
	}
}
