package httpapi

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
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
func (a *API) getFile(c echo.Context) error {
	rel := c.QueryParam("path")
	real, err := resolveWorkspaceFile(a.opts.Workspace, rel)
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
	head := make([]byte, 512) // as much as http.DetectContentType reads
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, fmt.Sprintf("read %s: %v", textclip.Quote(rel), err))
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, servedType(real, head[:n]))
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

// servedType is the Content-Type GET /api/files gives the file name
// whose first bytes are head: what the UI needs to show it (markdown,
// YAML, images, text) and never a type a browser runs on agentmux's
// origin. Workspace files are the agent's to write: served as
// text/javascript, one would pass the page's script-src 'self' as a
// script or register as a service worker under /api/; as HTML, SVG or
// XML it would be a document of agentmux's origin. So every text,
// scripts, pages and stylesheets included, is text/plain; images keep
// their types (an SVG only in the sandbox every answer here has, which
// runs no script); anything else is bytes to download. The types come
// from the name and the bytes alone, not from the system's MIME table,
// which differs between machines.
func servedType(name string, head []byte) string {
	ext := strings.ToLower(filepath.Ext(name))
	switch ext {
	case ".md", ".markdown":
		return "text/markdown; charset=utf-8"
	case ".yaml", ".yml":
		return "text/yaml; charset=utf-8"
	}
	if t, ok := shownImages[ext]; ok {
		return t
	}
	sniffed := http.DetectContentType(head)
	switch {
	case strings.HasPrefix(sniffed, "text/plain"):
		return sniffed // with the charset a byte-order mark says
	case strings.HasPrefix(sniffed, "text/"):
		return "text/plain; charset=utf-8" // HTML, XML: shown as their text
	}
	return "application/octet-stream"
}

// shownImages are the types of the images the document pane shows, by
// extension: the UI's <img> needs them, and none runs in a browser (an
// SVG served here is sandboxed).
var shownImages = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp",
	".avif": "image/avif", ".bmp": "image/bmp", ".ico": "image/x-icon", ".svg": "image/svg+xml",
}
