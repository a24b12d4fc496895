package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentmux/agentmux/httpapi"
	"github.com/agentmux/agentmux/internal/testutil"
	"github.com/agentmux/agentmux/wire"
)

// documentsResponse is GET /api/documents.
type documentsResponse struct {
	Documents []struct {
		Path       string `json:"path"`
		SessionID  string `json:"sessionId"`
		ModifiedAt string `json:"modifiedAt"`
	} `json:"documents"`
}

func getDocuments(t *testing.T, e *apiEnv) documentsResponse {
	t.Helper()
	resp, b := e.do(http.MethodGet, "/api/documents", "")
	wantStatus(t, "GET /api/documents", resp, b, http.StatusOK)
	var r documentsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("GET /api/documents: %v in %s", err, b)
	}
	return r
}

// TestDocumentsList: GET /api/documents lists the markdown documents under
// docs/ that are on disk when the server starts (a restart, a reload, a
// second page), newest first, at most httpapi.MaxDocuments, and follows writes.
func TestDocumentsList(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-24 * time.Hour).Truncate(time.Second)
	n := httpapi.MaxDocuments + 5
	for i := range n {
		rel := fmt.Sprintf("docs/d%03d.md", i)
		writeWS(t, dir, rel, "# "+rel+"\n")
		at := old.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(rel)), at, at); err != nil {
			t.Fatal(err)
		}
	}
	writeWS(t, dir, "README.md", "# not a document of docs/\n")
	writeWS(t, dir, "docs/data.json", "{}\n")
	e := newAPI(t, "--workspace", dir)
	e.dir = dir

	got := getDocuments(t, e).Documents
	if len(got) != httpapi.MaxDocuments {
		t.Fatalf("%d documents, want the newest %d", len(got), httpapi.MaxDocuments)
	}
	for i, d := range got {
		wantRel := fmt.Sprintf("docs/d%03d.md", n-1-i)
		wantAt := old.Add(time.Duration(n-1-i) * time.Minute).UTC().Format(time.RFC3339Nano)
		if d.Path != wantRel || d.ModifiedAt != wantAt || d.SessionID != "" {
			t.Fatalf("document %d = %+v, want %s modified at %s", i, d, wantRel, wantAt)
		}
	}

	// A document written now comes first; one removed leaves the list.
	writeWS(t, dir, "docs/plan/new.md", "# new\n")
	if err := os.Remove(filepath.Join(dir, "docs", fmt.Sprintf("d%03d.md", n-1))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, waitTimeout, "the new document first, the removed one gone", func() bool {
		got := getDocuments(t, e).Documents
		return len(got) == httpapi.MaxDocuments && got[0].Path == "docs/plan/new.md" &&
			got[1].Path == fmt.Sprintf("docs/d%03d.md", n-2)
	})
}

// TestDocumentsOfWorktrees: a document written in a session's worktree is
// listed with the session's id and a workspace-relative path.
func TestDocumentsOfWorktrees(t *testing.T) {
	e := newRepoAPI(t)
	writeWS(t, e.dir, "docs/main.md", "# main\n")
	s := e.create(`{"worktree":{"branch":"feature/docs"}}`)
	writeWS(t, s.Worktree.Path, "docs/prd.md", "# prd\n")
	testutil.Eventually(t, waitTimeout, "the worktree's document, first", func() bool {
		got := getDocuments(t, e).Documents
		paths := make([]string, len(got))
		for i, d := range got {
			paths[i] = d.Path
		}
		return slices.Equal(paths, []string{".worktrees/feature-docs/docs/prd.md", "docs/main.md"}) && got[0].SessionID == s.ID
	})
}

// TestDocumentsRefusedToOtherPages: another web page cannot read the list.
func TestDocumentsRefusedToOtherPages(t *testing.T) {
	e := newAPI(t)
	resp, b := e.browserRequest(http.MethodGet, "/api/documents", "http://evil.test", "cross-site", "", "")
	wantError(t, "GET /api/documents from another site", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	resp, b = e.browserRequest(http.MethodGet, "/api/documents", e.ts.URL, "same-origin", "", "")
	wantStatus(t, "GET /api/documents from the UI", resp, b, http.StatusOK)

	withToken := newAPI(t, "--token", "s3cret")
	resp, b = withToken.do(http.MethodGet, "/api/documents", "")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/documents without the token: %d %s, want 401", resp.StatusCode, b)
	}
}
