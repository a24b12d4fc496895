package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/internal/bytesize"
	"github.com/agentmux/agentmux/wire"
)

// AttachmentReply is POST /api/sessions/:id/attachments's: where the file
// was stored.
type AttachmentReply struct {
	// AbsolutePath is Path from the root: what the UI types at the
	// prompt, since Claude Code takes a pasted image path only when it
	// is absolute, and a shell may have left the tree.
	AbsolutePath string `json:"absolutePath"`
	// Path is relative to the session's tree, where its agent starts.
	Path string `json:"path"`
}

// AttachmentField is the multipart field that carries the file.
const AttachmentField = "file"

// multipartSlack is what a multipart body may hold beyond the file: its
// boundaries and part headers, and small fields the route skips.
const multipartSlack = 64 << 10

// uploadReadTimeout is how long the request of an upload may take to
// arrive, in place of the listener's 30 s, which a phone on a slow
// network needs more than for 20 MiB.
const uploadReadTimeout = 10 * time.Minute

// postAttachment stores the file of a multipart body's field "file" in
// the session's tree (package attachments) and answers where. The body
// streams to disk: it is never held in memory, and reading stops at the
// first byte over the bound.
func (a *API) postAttachment(c echo.Context) error {
	store := a.opts.Attachments
	if store == nil {
		return errorJSON(c, http.StatusNotFound, wire.CodeNotFound, "attachments are not served here")
	}
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	req := c.Request()
	if mt, _, err := mime.ParseMediaType(req.Header.Get("Content-Type")); err != nil || mt != "multipart/form-data" {
		return errorJSON(c, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType,
			fmt.Sprintf("send the file as multipart/form-data, in a field named %q", AttachmentField))
	}
	if err := http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(uploadReadTimeout)); err != nil {
		a.log.Debug("cannot give an upload more time", "session", sess.ID(), "err", err)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, store.MaxFile()+multipartSlack)
	mr, err := req.MultipartReader()
	if err != nil {
		return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, "bad multipart body: "+clip(err.Error()))
	}
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("no file: send it in a field named %q", AttachmentField))
		}
		if err != nil {
			return a.uploadError(c, store, err)
		}
		if part.FormName() != AttachmentField {
			continue // NextRawPart skips what is left of it
		}
		tree, _ := sess.Info().Tree()
		saved, err := store.Save(req.Context(), sess.ID(), tree, rawFileName(part), part)
		if err != nil {
			return a.uploadError(c, store, err)
		}
		return c.JSON(http.StatusCreated, AttachmentReply{Path: saved.Path, AbsolutePath: filepath.Join(tree, filepath.FromSlash(saved.Path))})
	}
}

// rawFileName is the file name the part's Content-Disposition gives, as
// sent: Part.FileName would cut a path down to its last element, and a
// path is refused, not quietly taken for a name.
func rawFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return ""
	}
	return params["filename"]
}

// uploadError answers a failed upload: the body over even the file's
// bound plus its framing is the file too large, as the store says of a
// file it cut short.
func (a *API) uploadError(c echo.Context, store *attachments.Store, err error) error {
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		err = fmt.Errorf("%w: a file may have at most %s (--attachment-max)", attachments.ErrTooLarge, bytesize.Format(store.MaxFile()))
	}
	code, status := wire.ErrorStatus(err)
	if status == http.StatusInternalServerError {
		a.log.Error("upload failed", "session", c.Param("id"), "err", err)
	}
	return errorJSON(c, status, code, err.Error())
}
