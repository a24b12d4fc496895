package ws_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentmux/agentmux/collab"
	"github.com/agentmux/agentmux/watcher"
	"github.com/agentmux/agentmux/wire"
)

// TestRecentFilesOnConnect: a connection opened after file events, as a
// page reloaded opens one, is sent the last of them in one file.recent,
// oldest first, byte for byte what a connection open all along was sent
// as file.changed; an event after it comes as file.changed, once.
func TestRecentFilesOnConnect(t *testing.T) {
	e := newEnv(t, envOptions{})
	before := e.dial(nil)
	before.sync()
	start := time.Date(2026, 11, 21, 22, 40, 0, 0, time.UTC)
	const n = collab.MaxRecentFiles + 20
	for i := range n {
		e.app.OnFile(watcher.FileEvent{Path: fmt.Sprintf("/w/src/f%d.go", i), Rel: fmt.Sprintf("src/f%d.go", i), Op: watcher.FileAdded, Time: start.Add(time.Duration(i) * time.Millisecond)})
	}
	var seen []wire.RecentFile
	for _, m := range before.sync() {
		if m.Type == wire.TypeFileChanged {
			var ts string
			if err := json.Unmarshal(m.Timestamp, &ts); err != nil {
				t.Fatalf("file.changed's timestamp %s: %v", m.Timestamp, err)
			}
			seen = append(seen, wire.RecentFile{Path: m.Path, Event: "add", Timestamp: ts})
		}
	}
	if len(seen) != n {
		t.Fatalf("the connection open all along got %d file.changed, want %d", len(seen), n)
	}

	reloaded := e.dial(nil)
	var recent *msg
	for _, m := range reloaded.sync() {
		switch m.Type {
		case wire.TypeFileRecent:
			if recent != nil {
				t.Fatal("two file.recent on one connection")
			}
			recent = &m
		case wire.TypeFileChanged:
			t.Errorf("a new connection was sent file.changed %s for an event before it", m.Path)
		}
	}
	if recent == nil {
		t.Fatal("a connection opened after file events got no file.recent")
	}
	if want := seen[n-collab.MaxRecentFiles:]; !slices.Equal(recent.Files, want) {
		t.Errorf("file.recent lists %d events from %v, want the last %d from %v, oldest first", len(recent.Files), recent.Files[0], len(want), want[0])
	}

	e.app.OnFile(watcher.FileEvent{Path: "/w/src/late.go", Rel: "src/late.go", Op: watcher.FileChanged, Time: start.Add(time.Hour)})
	var late []string
	for _, m := range reloaded.sync() {
		if m.Type == wire.TypeFileChanged || m.Type == wire.TypeFileRecent {
			late = append(late, m.Type+" "+m.Path)
		}
	}
	if !slices.Equal(late, []string{"file.changed /w/src/late.go"}) {
		t.Errorf("after the connection opened, an event came as %v; want one file.changed", late)
	}
}
