package httpapi

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// MaxDocuments bounds GET /api/documents: the Documents list shows the
// newest few, and the answer must not grow with a workspace of thousands.
const MaxDocuments = 100

// documentsScanWait bounds how long GET /api/documents waits for the
// workspace's first scan (a large tree on a slow mount takes seconds).
const documentsScanWait = 5 * time.Second

// Document is one entry of GET /api/documents.
type Document struct {
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
func (a *API) getDocuments(c echo.Context) error {
	// Right after a restart the first scan may still run: the page that
	// reloads then gets the whole list, not the part scanned so far.
	select {
	case <-a.opts.Files.Ready():
	case <-c.Request().Context().Done():
		return nil // the client left
	case <-time.After(documentsScanWait):
		a.log.Debug("GET /api/documents before the workspace scan ended; the list may be partial")
	}
	var docs []Document
	for _, d := range a.opts.Files.Documents(MaxDocuments) {
		docs = append(docs, Document{Path: d.Rel, modified: d.ModTime})
	}
	for _, wt := range a.opts.Worktrees() {
		for _, d := range wt.Watcher.Documents(MaxDocuments) {
			docs = append(docs, Document{Path: wt.Prefix + d.Rel, SessionID: wt.SessionID, modified: d.ModTime})
		}
	}
	slices.SortFunc(docs, func(x, y Document) int {
		return cmp.Or(y.modified.Compare(x.modified), strings.Compare(x.Path, y.Path))
	})
	if len(docs) > MaxDocuments {
		docs = docs[:MaxDocuments]
	}
	for i := range docs {
		docs[i].ModifiedAt = docs[i].modified.UTC().Format(time.RFC3339Nano)
	}
	if docs == nil {
		docs = []Document{}
	}
	return c.JSON(http.StatusOK, DocumentsReply{Documents: docs})
}
