package main

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/watcher/memory"
	"github.com/agentmux/agentmux/wire"
)

// getWorkflow serves the current workflow, as workflow.updated carries it.
func (s *server) getWorkflow(c echo.Context) error {
	wf, rel, ok := s.workspace.Workflow()
	if !ok {
		return c.JSON(http.StatusOK, map[string]any{"workflow": nil, "file": nil})
	}
	return c.JSON(http.StatusOK, map[string]any{"workflow": wire.WorkflowView(wf), "file": rel})
}

// sessionRSS is one session's memory in GET /api/resources.
type sessionRSS struct {
	ID       string `json:"id"`
	RSSBytes uint64 `json:"rssBytes"`
}

// getResources serves the memory reading and each running session's
// process-tree resident set.
func (s *server) getResources(c echo.Context) error {
	st := s.memory.Status()
	list := []sessionRSS{}
	var tree *memory.ProcessTree
	for _, sess := range s.mgr.List() {
		pid := sess.Pid()
		if pid == 0 {
			continue
		}
		if tree == nil {
			// Read once, and only when a session runs: it is most of the cost.
			t, err := memory.ReadProcessTree("/proc")
			if err != nil {
				s.log.Debug("resources: no process tree", "err", err)
				break
			}
			tree = t
		}
		rss, err := tree.RSS(pid)
		if err != nil {
			continue // ended while we looked
		}
		list = append(list, sessionRSS{ID: sess.ID(), RSSBytes: rss})
	}
	level := st.Level
	if level == "" {
		level = memory.OK
	}
	return c.JSON(http.StatusOK, map[string]any{
		"usedBytes":            st.UsedBytes,
		"limitBytes":           st.LimitBytes,
		"percent":              st.Percent,
		"source":               st.Source,
		"level":                level,
		"acceptingNewSessions": level != memory.Critical,
		"sessions":             list,
	})
}
