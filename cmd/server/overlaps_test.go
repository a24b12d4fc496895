package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/wire"
)

// numberedLines is lines "1" to "10", with line k replaced by repl[k].
func numberedLines(repl map[int]string) string {
	var b strings.Builder
	for k := 1; k <= 10; k++ {
		if r, ok := repl[k]; ok {
			b.WriteString(r + "\n")
		} else {
			b.WriteString(strings.Repeat("x", k) + "\n")
		}
	}
	return b.String()
}

// TestOverlapsAndMergePreview: two worktree sessions that change the
// same file are told to every connection as overlaps.changed and listed
// by GET /api/overlaps, first as the same file, then as the same lines
// once their changes touch; once both have committed, the preview of a
// merge of one names the other and the file, touching nothing; the real
// merges confirm it: the first merges, the second conflicts in that file.
// Another page can ask neither route.
func TestOverlapsAndMergePreview(t *testing.T) {
	e := newShipAPI(t)
	writeIn(t, e.dir, "shared.txt", numberedLines(nil))
	git(t, e.dir, "add", "shared.txt")
	git(t, e.dir, "commit", "-q", "-m", "Add shared.txt")
	conn := watchWS(t, e)
	sleep := `,"command":["sh","-c","exec sleep 60"]`
	a := e.create(`{"name":"a","worktree":{"branch":"feat/a"}` + sleep + `}`)
	b := e.create(`{"name":"b","worktree":{"branch":"feat/b"}` + sleep + `}`)
	pair := []string{a.ID, b.ID}
	if pair[0] > pair[1] {
		pair[0], pair[1] = pair[1], pair[0]
	}
	isOverlaps := func(want func([]wire.Overlap) bool) func(watchEvent) bool {
		return func(ev watchEvent) bool {
			if ev.Type != wire.TypeOverlapsChanged {
				return false
			}
			var m wire.OverlapsMessage
			return json.Unmarshal(ev.Raw, &m) == nil && want(m.Overlaps)
		}
	}

	writeIn(t, a.Worktree.Path, "shared.txt", numberedLines(map[int]string{2: "a's line 2"}))
	writeIn(t, b.Worktree.Path, "shared.txt", numberedLines(map[int]string{9: "b's line 9"}))
	sameFile := []wire.Overlap{{Sessions: pair, Path: "shared.txt"}}
	collectUntil(t, conn, "the overlap of the same file", isOverlaps(func(o []wire.Overlap) bool { return reflect.DeepEqual(o, sameFile) }))

	writeIn(t, b.Worktree.Path, "shared.txt", numberedLines(map[int]string{3: "b's line 3"}))
	got := collectUntil(t, conn, "the overlap of touching lines", isOverlaps(func(o []wire.Overlap) bool { return len(o) == 1 && o[0].Lines }))
	var m wire.OverlapsMessage
	decodeJSON(t, got[len(got)-1].Raw, &m)
	wantHunks := map[string]wire.OverlapHunk{
		a.ID: {SessionID: a.ID, OldStart: 2, OldLines: 1, NewStart: 2, NewLines: 1},
		b.ID: {SessionID: b.ID, OldStart: 3, OldLines: 1, NewStart: 3, NewLines: 1},
	}
	if len(m.Overlaps[0].Hunks) != 2 || m.Overlaps[0].Hunks[0] != wantHunks[m.Overlaps[0].Hunks[0].SessionID] || m.Overlaps[0].Hunks[1] != wantHunks[m.Overlaps[0].Hunks[1].SessionID] {
		t.Errorf("the overlapping hunks: %+v, want line 2 of a's and line 3 of b's", m.Overlaps[0].Hunks)
	}
	resp, body := e.do(http.MethodGet, "/api/overlaps", "")
	wantStatus(t, "GET /api/overlaps", resp, body, http.StatusOK)
	var listed httpapi.OverlapsReply
	decodeJSON(t, body, &listed)
	if !reflect.DeepEqual(listed.Overlaps, m.Overlaps) {
		t.Errorf("GET /api/overlaps: %s, want what overlaps.changed said: %+v", body, m.Overlaps)
	}

	// A connection that opens now is told at once.
	later, _, err := dialWS(t, "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	collectUntil(t, later, "the overlaps on connecting", isOverlaps(func(o []wire.Overlap) bool { return reflect.DeepEqual(o, m.Overlaps) }))

	for _, s := range []wire.Session{a, b} {
		git(t, s.Worktree.Path, "commit", "-q", "-am", "Change shared.txt")
	}
	main := strings.TrimSpace(git(t, e.dir, "rev-parse", "refs/heads/main"))
	resp, body = e.do(http.MethodGet, "/api/sessions/"+a.ID+"/merge", "")
	wantStatus(t, "the merge preview", resp, body, http.StatusOK)
	var preview httpapi.MergePreviewReply
	decodeJSON(t, body, &preview)
	if preview.Base != "main" || len(preview.Conflicts) != 0 || len(preview.Others) != 1 ||
		preview.Others[0].ID != b.ID || !reflect.DeepEqual(preview.Others[0].Files, []string{"shared.txt"}) {
		t.Fatalf("the merge preview: %s, want b to conflict in shared.txt", body)
	}
	if now := strings.TrimSpace(git(t, e.dir, "rev-parse", "refs/heads/main")); now != main {
		t.Errorf("main moved from %s to %s during a preview", main, now)
	}
	if st := git(t, e.dir, "status", "--porcelain", "--untracked-files=no"); st != "" {
		t.Errorf("the workspace changed during a preview:\n%s", st)
	}

	resp, body = e.do(http.MethodPost, "/api/sessions/"+a.ID+"/merge", `{}`)
	wantStatus(t, "the previewed merge", resp, body, http.StatusOK)
	resp, body = e.do(http.MethodPost, "/api/sessions/"+b.ID+"/merge", `{}`)
	wantError(t, "the merge the preview said conflicts", resp, body, http.StatusConflict, wire.CodeMergeConflict)
	var conflict struct {
		Error struct{ Files []string } `json:"error"`
	}
	decodeJSON(t, body, &conflict)
	if !reflect.DeepEqual(conflict.Error.Files, []string{"shared.txt"}) {
		t.Errorf("the conflict: %s, want shared.txt as predicted", body)
	}

	for _, path := range []string{"/api/overlaps", "/api/sessions/" + a.ID + "/merge"} {
		resp, body := e.browserRequest(http.MethodGet, path, "http://evil.test", "cross-site", "", "")
		wantError(t, "GET "+path+" from another page", resp, body, http.StatusForbidden, wire.CodePermissionDenied)
	}
}
