package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/changes"
	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/wire"
)

// getDiff serves what a session changed in its tree, with patches:
// GET /api/sessions/:id/diff[?path=<file>].
func (a *API) getDiff(c echo.Context) error {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return sessionError(c, err)
	}
	var paths []string
	if p := c.QueryParam("path"); p != "" {
		clean := path.Clean(p)
		if strings.ContainsRune(p, 0) || path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") || clean == "." {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage,
				fmt.Sprintf("path %q: want a file of the session's tree, relative to its top, as the diff lists it", clip(p)))
		}
		paths = []string{clean}
	}
	info := sess.Info()
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Minute)
	defer cancel()
	dir, from := info.Tree()
	d, err := changes.TreeDiff(ctx, dir, from, paths, changes.DefaultLimits)
	if errors.Is(err, gitexec.ErrNotRepo) {
		// The table's code and status, with words for the user.
		code, status := wire.ErrorStatus(err)
		return errorJSON(c, status, code,
			fmt.Sprintf("the session works in %s, which is not inside a git repository: there is nothing to compare its files with", info.Cwd))
	}
	if err != nil {
		return diffError(c, err)
	}
	return c.JSON(http.StatusOK, d)
}

// diffError answers a diff whose step failed: as wire's mapping says when
// git refused the repository for its owner, which its message explains to
// the user, else 500.
func diffError(c echo.Context, err error) error {
	if errors.Is(err, gitexec.ErrUntrusted) {
		code, status := wire.ErrorStatus(err)
		return errorJSON(c, status, code, err.Error())
	}
	return errorJSON(c, http.StatusInternalServerError, wire.CodeInternal, err.Error())
}
