package main

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// maxDocuments bounds GET /api/documents: the Documents list shows the
// newest few, and the answer must not grow with a workspace of thousands.
const maxDocuments = 100

// documentsScanWait bounds how long GET /api/documents waits for the
// workspace's first scan (a large tree on a slow mount takes seconds).
const documentsScanWait = 5 * time.Second

// document is one entry of GET /api/documents.
type document struct {
	// Path is relative to the workspace, a worktree's documents included,
	// so GET /api/files serves it.
	Path string `json:"path"`
	// SessionID names the session whose worktree holds it.
	SessionID  string `json:"sessionId,omitempty"`
	ModifiedAt string `json:"modifiedAt"`
	modified   time.Time
}

// getDocuments serves the documents the UI lists (markdown under docs/, the
// workspace's and its sessions' worktrees'), newest first. The page built
// the list from the events it saw, so a reload, a restart or a second page
// showed none; it loads this at start and on every reconnection.
func (s *server) getDocuments(c echo.Context) error {
	// Right after a restart the first scan may still run: the page that
	// reloads then gets the whole list, not the part scanned so far.
	select {
	case <-s.workspace.Ready():
	case <-c.Request().Context().Done():
		return nil // the client left
	case <-time.After(documentsScanWait):
		s.log.Debug("GET /api/documents before the workspace scan ended; the list may be partial")
	}
	var docs []document
	for _, d := range s.workspace.Documents(maxDocuments) {
		docs = append(docs, document{Path: d.Rel, modified: d.ModTime})
	}
	for _, wt := range s.worktrees.all() {
		for _, d := range wt.w.Documents(maxDocuments) {
			docs = append(docs, document{Path: wt.prefix + d.Rel, SessionID: wt.id, modified: d.ModTime})
		}
	}
	slices.SortFunc(docs, func(a, b document) int {
		return cmp.Or(b.modified.Compare(a.modified), strings.Compare(a.Path, b.Path))
	})
	if len(docs) > maxDocuments {
		docs = docs[:maxDocuments]
	}
	for i := range docs {
		docs[i].ModifiedAt = docs[i].modified.UTC().Format(time.RFC3339Nano)
	}
	if docs == nil {
		docs = []document{}
	}
	return c.JSON(http.StatusOK, map[string]any{"documents": docs})
}
