package main

import (
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/regfile"
	"github.com/agentmux/agentmux/wire"
)

// maxFileBytes bounds what GET /api/files serves: documents, not builds.
const maxFileBytes = 8 << 20

// errOutside is the answer for a path that leaves the workspace.
var errOutside = errors.New("path is outside the workspace")

// resolveWorkspaceFile returns the real path of rel inside root, following
// symlinks, or errOutside when it, or anything it links to, leaves the
// workspace.
func resolveWorkspaceFile(root, rel string) (string, error) {
	if rel == "" || strings.ContainsRune(rel, 0) {
		return "", errors.New("a path is required")
	}
	if filepath.IsAbs(rel) || path.IsAbs(rel) {
		return "", errOutside
	}
	clean := filepath.Clean(filepath.FromSlash(rel))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", errOutside
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolve workspace: %w", err)
	}
	joined := filepath.Join(realRoot, clean)
	real, err := filepath.EvalSymlinks(joined)
	if err != nil {
		// A link that points nowhere is refused like one that points out:
		// telling them apart would tell whether an outside path exists.
		if fi, lerr := os.Lstat(joined); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", errOutside
		}
		return "", err // fs.ErrNotExist for a missing file
	}
	if real != realRoot && !strings.HasPrefix(real, realRoot+string(filepath.Separator)) {
		return "", errOutside
	}
	return real, nil
}

// getFile serves a workspace file's raw content, for the artifact pane.
func (s *server) getFile(c echo.Context) error {
	rel := c.QueryParam("path")
	real, err := resolveWorkspaceFile(s.cfg.Workspace, rel)
	switch {
	case errors.Is(err, errOutside):
		return errorJSON(c, http.StatusForbidden, wire.CodePermissionDenied, fmt.Sprintf("%s: %v", textclip.Quote(rel), err))
	case errors.Is(err, fs.ErrNotExist):
		return errorJSON(c, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no file %s in the workspace", textclip.Quote(rel)))
	case err != nil:
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, err.Error())
	}
	// Opening a FIFO (or a device) for reading must not wait for a
	// writer; regfile.Open returns at once and refuses it.
	f, fi, err := regfile.Open(real)
	var pathErr *fs.PathError
	switch {
	case errors.Is(err, regfile.ErrNotRegular):
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("%s is not a file", textclip.Quote(rel)))
	case errors.As(err, &pathErr) && pathErr.Op == "open":
		return errorJSON(c, http.StatusNotFound, wire.CodeNotFound, fmt.Sprintf("no file %s in the workspace", textclip.Quote(rel)))
	case err != nil:
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
	}
	defer f.Close()
	// A hard link is the same file under another name, maybe one outside
	// the workspace (/etc/shadow linked in by whoever could write there):
	// no path check can tell, so a file with more than one is not served.
	// Asked of the open file, so nothing can swap it in between.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return errorJSON(c, http.StatusForbidden, wire.CodePermissionDenied, fmt.Sprintf(
			"%s has %d hard links, and a file linked from elsewhere may be outside the workspace, so it is not served; copy it to show it", textclip.Quote(rel), st.Nlink))
	}
	if fi.Size() > maxFileBytes {
		return errorJSON(c, http.StatusRequestEntityTooLarge, wire.CodeInvalidMessage, fmt.Sprintf("%s is %d bytes; at most %d are served", textclip.Quote(rel), fi.Size(), maxFileBytes))
	}
	ctype := mime.TypeByExtension(filepath.Ext(real))
	switch strings.ToLower(filepath.Ext(real)) {
	case ".md", ".markdown":
		ctype = "text/markdown; charset=utf-8"
	case ".yaml", ".yml":
		ctype = "text/yaml; charset=utf-8"
	}
	if ctype == "" {
		ctype = "text/plain; charset=utf-8"
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, ctype)
	// Raw content for the UI to render: never sniffed into HTML, never run.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	// A document being written changes within the second; Last-Modified
	// has one-second resolution, so any revalidation could serve the old
	// text. Never cache, and give no modification time to revalidate by.
	h.Set("Cache-Control", "no-store")
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, f)
	return nil
}
