package httpapi_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/ports"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
	"github.com/agentmux/agentmux/wire"
)

// TestRepliesKeepTheirJSON: each typed reply encodes to the very bytes
// the map it replaced did (encoding/json sorts a map's keys), zero values,
// nulls and left-out fields included, so no client sees a difference.
func TestRepliesKeepTheirJSON(t *testing.T) {
	pos := 0
	rel := "_bmad-output/sprint-status.yaml"
	wf := wire.Workflow{}
	cp := checkpoint.Checkpoint{ID: 3, Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tokens, usd := int64(120), 0.25
	spent := sessions.Spent{Turns: 2, InputTokens: &tokens, CostUSD: &usd}
	for _, tc := range []struct {
		name  string
		typed any
		was   any
	}{
		{"health", httpapi.HealthReply{Status: "ok", Version: "v1", UptimeMs: 12},
			map[string]any{"status": "ok", "version": "v1", "uptimeMs": int64(12)}},
		{"config without a refusal", httpapi.ConfigReply{Workspace: "/w", MaxSessions: 4, KeepSessions: 100, Version: "v1", Name: "alice"},
			map[string]any{"workspace": "/w", "maxSessions": 4, "keepSessions": 100, "version": "v1", "gitRepository": false, "name": "alice"}},
		{"config refused", httpapi.ConfigReply{Workspace: "/w", GitRefusal: "owned by 1000"},
			map[string]any{"workspace": "/w", "maxSessions": 0, "keepSessions": 0, "version": "", "gitRepository": false, "gitRefusal": "owned by 1000", "name": ""}},
		{"no sessions", httpapi.SessionsReply{Sessions: []wire.Session{}}, map[string]any{"sessions": []wire.Session{}}},
		{"a session", httpapi.SessionReply{Session: wire.Session{ID: "x"}}, map[string]any{"session": wire.Session{ID: "x"}}},
		{"queued", httpapi.QueuedReply{PromptID: "p", Position: 0}, map[string]any{"promptId": "p", "position": 0}},
		{"attachment", httpapi.AttachmentReply{Path: ".agentmux/attachments/s/a.png", AbsolutePath: "/w/.agentmux/attachments/s/a.png"},
			map[string]any{"path": ".agentmux/attachments/s/a.png", "absolutePath": "/w/.agentmux/attachments/s/a.png"}},
		{"no documents", httpapi.DocumentsReply{Documents: []httpapi.Document{}}, map[string]any{"documents": []httpapi.Document{}}},
		{"no workflow", httpapi.WorkflowReply{}, map[string]any{"workflow": nil, "file": nil}},
		{"a workflow", httpapi.WorkflowReply{Workflow: &wf, File: &rel}, map[string]any{"workflow": wf, "file": rel}},
		{"resources", httpapi.ResourcesReply{UsedBytes: 1, LimitBytes: 2, Percent: 50, Source: memory.Source("host"), Level: memory.OK, AcceptingNewSessions: true, Sessions: []httpapi.SessionRSS{}},
			map[string]any{"usedBytes": uint64(1), "limitBytes": uint64(2), "percent": 50.0, "source": memory.Source("host"), "level": memory.OK, "acceptingNewSessions": true, "sessions": []httpapi.SessionRSS{}}},
		{"ports", httpapi.PortsReply{Ports: []httpapi.PortView{{Port: ports.Port{Port: 3000}, URL: "http://3000.localhost/"}}, More: 2},
			map[string]any{"ports": []httpapi.PortView{{Port: ports.Port{Port: 3000}, URL: "http://3000.localhost/"}}, "more": 2}},
		{"preview url", httpapi.URLReply{URL: "u"}, map[string]string{"url": "u"}},
		{"message", httpapi.MessageReply{Message: "m"}, map[string]string{"message": "m"}},
		{"commit", httpapi.CommitReply{Commit: "c", Branch: ""}, map[string]string{"commit": "c", "branch": ""}},
		{"branch", httpapi.BranchReply{Branch: "b", Base: "main", Ahead: 1}, map[string]any{"branch": "b", "base": "main", "ahead": 1, "behind": 0, "merged": ""}},
		{"merge", httpapi.MergeReply{Commit: "c"}, map[string]string{"commit": "c"}},
		{"merge preview", httpapi.MergePreviewReply{Branch: "b", Base: "main", Conflicts: []string{}, Others: []ship.Predicted{{ID: "s", Files: []string{"a"}}}},
			map[string]any{"branch": "b", "base": "main", "conflicts": []string{}, "others": []map[string]any{{"sessionId": "s", "files": []string{"a"}}}}},
		{"no overlaps", httpapi.OverlapsReply{Overlaps: []wire.Overlap{}}, map[string]any{"overlaps": []any{}}},
		{"update without conflicts", httpapi.UpdateReply{Commit: "c"}, map[string]any{"commit": "c", "conflicts": []string(nil)}},
		{"update with conflicts", httpapi.UpdateReply{Commit: "c", Conflicts: []string{"a"}, PromptID: "p", Position: &pos},
			map[string]any{"commit": "c", "conflicts": []string{"a"}, "promptId": "p", "position": 0}},
		{"push", httpapi.PushReply{Remote: "origin", Branch: "b"}, map[string]string{"remote": "origin", "branch": "b", "pullRequestUrl": ""}},
		{"no checkpoints", httpapi.CheckpointsReply{Checkpoints: []httpapi.CheckpointView{}}, map[string]any{"checkpoints": []checkpoint.Checkpoint{}}},
		{"a checkpoint with its turns", httpapi.CheckpointsReply{Checkpoints: []httpapi.CheckpointView{{Checkpoint: cp, Usage: &spent}}},
			json.RawMessage(`{"checkpoints":[{"id":3,"time":"2026-01-02T03:04:05Z","commit":"","files":0,"insertions":0,"deletions":0,"usage":{"turns":2,"inputTokens":120,"costUsd":0.25}}]}`)},
		{"checkpoint", httpapi.CheckpointReply{ID: cp.ID, Checkpoint: cp, Created: true}, map[string]any{"id": cp.ID, "checkpoint": cp, "created": true}},
		{"restored", httpapi.RestoredReply{Restored: 2, Saved: 0}, map[string]any{"restored": 2, "saved": 0}},
	} {
		got, err := json.Marshal(tc.typed)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, err := json.Marshal(tc.was)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, want)
		}
	}
}
