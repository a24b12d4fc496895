package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/memory"
	"github.com/agentmux/agentmux/wire"
)

// getOverlaps lists the overlaps between sessions' changes, as
// overlaps.changed last told them.
func (a *API) getOverlaps(c echo.Context) error {
	list := []wire.Overlap{}
	if a.opts.Overlaps != nil {
		list = a.opts.Overlaps.Overlaps()
	}
	return c.JSON(http.StatusOK, OverlapsReply{Overlaps: list})
}

// getWorkflow serves the current workflow, as workflow.updated carries it.
func (a *API) getWorkflow(c echo.Context) error {
	wf, rel, ok := a.opts.Files.Workflow()
	if !ok {
		return c.JSON(http.StatusOK, WorkflowReply{})
	}
	view := wire.WorkflowView(wf)
	return c.JSON(http.StatusOK, WorkflowReply{Workflow: &view, File: &rel})
}

// SessionRSS is one session's memory in GET /api/resources.
type SessionRSS struct {
	ID       string `json:"id"`
	RSSBytes uint64 `json:"rssBytes"`
}

// getResources serves the memory reading and each running session's
// process-tree resident set.
func (a *API) getResources(c echo.Context) error {
	st := a.opts.Memory.Status()
	list := []SessionRSS{}
	var tree *memory.ProcessTree
	for _, sess := range a.mgr.List() {
		pid := sess.Pid()
		if pid == 0 {
			continue
		}
		if tree == nil {
			// Read once, and only when a session runs: it is most of the cost.
			t, err := memory.ReadProcessTree("/proc")
			if err != nil {
				a.log.Debug("resources: no process tree", "err", err)
				break
			}
			tree = t
		}
		rss, err := tree.RSS(pid)
		if err != nil {
			continue // ended while we looked
		}
		list = append(list, SessionRSS{ID: sess.ID(), RSSBytes: rss})
	}
	level := st.Level
	if level == "" {
		level = memory.OK
	}
	return c.JSON(http.StatusOK, ResourcesReply{
		UsedBytes:            st.UsedBytes,
		LimitBytes:           st.LimitBytes,
		Percent:              st.Percent,
		Source:               st.Source,
		Level:                level,
		AcceptingNewSessions: level != memory.Critical,
		Sessions:             list,
	})
}
