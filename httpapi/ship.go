package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/checkpoint"
	textclip "github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/ship"
	"github.com/agentmux/agentmux/wire"
)

// shipTimeout bounds the git of one request: a push may wait on a slow
// remote, a commit on its hooks.
const shipTimeout = 2 * time.Minute

// shipRoutes adds the routes that take a session's work from its tree to
// its base or a remote, and its checkpoints.
func (a *API) shipRoutes(api *echo.Group) {
	const inTree, inWorktree = false, true
	api.GET("/sessions/:id/commit", a.onTree(inTree, a.suggestCommit), boundSessionID)
	api.POST("/sessions/:id/commit", a.onTree(inTree, a.commit), boundSessionID)
	api.GET("/sessions/:id/branch", a.onTree(inWorktree, a.branch), boundSessionID)
	api.GET("/sessions/:id/merge", a.onTree(inWorktree, a.previewMerge), boundSessionID)
	api.POST("/sessions/:id/merge", a.onTree(inWorktree, a.merge), boundSessionID)
	api.POST("/sessions/:id/update", a.onTree(inWorktree, a.updateFromBase), boundSessionID)
	api.POST("/sessions/:id/archive", a.onTree(inWorktree, a.archive), boundSessionID)
	api.POST("/sessions/:id/push", a.onTree(inTree, a.push), boundSessionID)
	api.GET("/sessions/:id/checkpoints", a.onTree(inTree, a.listCheckpoints), boundSessionID)
	api.POST("/sessions/:id/checkpoints", a.onTree(inTree, a.takeCheckpoint), boundSessionID)
	api.GET("/sessions/:id/checkpoints/:cp", a.onTree(inTree, a.checkpointDiff), boundSessionID)
	api.POST("/sessions/:id/checkpoints/:cp/restore", a.onTree(inTree, a.restoreCheckpoint), boundSessionID)
}

// treeHandler answers a request about one session's tree; ctx bounds
// its git.
type treeHandler func(ctx context.Context, c echo.Context, g gitSession) error

// onTree finds the request's session (with a worktree of its own when
// worktree is set) and runs h with its git bounded by shipTimeout.
func (a *API) onTree(worktree bool, h treeHandler) echo.HandlerFunc {
	return func(c echo.Context) error {
		g, ok, err := a.gitSessionOf(c, worktree)
		if !ok {
			return err
		}
		ctx, cancel := context.WithTimeout(c.Request().Context(), shipTimeout)
		defer cancel()
		return h(ctx, c, g)
	}
}

// gitSession is a session a git action is asked of, with the tree it
// works in.
type gitSession struct {
	info sessions.Info
	// dir is its tree: its worktree, or the directory it runs in.
	dir string
}

// gitSessionOf finds the session of the request, whose tree must still
// be there (an archived session's worktree is gone); with worktree set it
// must have a worktree that records its base. When it reports false, the
// request has been answered.
func (a *API) gitSessionOf(c echo.Context, worktree bool) (gitSession, bool, error) {
	sess, err := a.mgr.Get(c.Param("id"))
	if err != nil {
		return gitSession{}, false, sessionError(c, err)
	}
	info := sess.Info()
	dir, _ := info.Tree()
	if wt := info.Worktree; wt != nil && wt.Archived {
		return gitSession{}, false, errorJSON(c, http.StatusConflict, wire.CodeNotAWorktree,
			"the session is archived: its worktree was removed after its branch "+wt.Branch+" was merged; work with the branch from the workspace")
	}
	if worktree {
		switch wt := info.Worktree; {
		case wt == nil:
			return gitSession{}, false, errorJSON(c, http.StatusConflict, wire.CodeNotAWorktree,
				"the session works in the workspace itself, not in a worktree of its own: it has no branch to merge; commit its changes instead")
		case wt.Base == "":
			return gitSession{}, false, errorJSON(c, http.StatusConflict, wire.CodeNotAWorktree,
				"the session's worktree was made before agentmux recorded what it was made from: it has no base to merge into")
		}
	}
	return gitSession{info: info, dir: dir}, true, nil
}

// base is the branch a worktree session's work goes into.
func (g gitSession) base() string { return g.info.Worktree.Base }

// gitError answers a failed git action with the code that names why, as
// wire's mapping gives it; a failure it does not name is GIT_FAILED. A
// conflict's body names the conflicted files.
func gitError(c echo.Context, step string, err error) error {
	code, status := wire.ErrorStatus(err)
	if code == wire.CodeInternal {
		code = wire.CodeGitFailed
	}
	body := wire.NewErrorBody(code, textclip.Message(step+": "+err.Error()))
	if conflict := (*ship.ConflictError)(nil); errors.As(err, &conflict) {
		body.Error.Files = conflict.Files
	}
	return c.JSON(status, body)
}

// suggestCommit proposes a commit message for the session's change.
func (a *API) suggestCommit(ctx context.Context, c echo.Context, g gitSession) error {
	msg, err := ship.Suggest(ctx, g.dir)
	if err != nil {
		return gitError(c, "suggest a commit message", err)
	}
	return c.JSON(http.StatusOK, MessageReply{Message: msg})
}

// commit commits everything in the session's tree.
func (a *API) commit(ctx context.Context, c echo.Context, g gitSession) error {
	var req struct {
		Message string `json:"message"`
	}
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	done, err := ship.Commit(ctx, g.dir, req.Message)
	if err != nil {
		return gitError(c, "commit", err)
	}
	a.log.Info("committed", "session", g.info.ID, "commit", done.SHA, "branch", done.Branch)
	a.announceBranch(ctx, g, wire.BranchMessage{Action: "commit", Commit: done.SHA, Branch: done.Branch})
	return c.JSON(http.StatusOK, CommitReply{Commit: done.SHA, Branch: done.Branch})
}

// branch says where a worktree session's branch stands against its base.
func (a *API) branch(ctx context.Context, c echo.Context, g gitSession) error {
	st, err := ship.Status(ctx, g.dir, g.base(), mark(g.info.Worktree))
	if err != nil {
		return gitError(c, "compare the branch with its base", err)
	}
	return c.JSON(http.StatusOK, BranchReply{
		Branch: st.Branch, Base: st.Base, Ahead: st.Ahead, Behind: st.Behind,
		Merged: g.info.Worktree.Merged,
	})
}

// merge brings a worktree session's branch into its base.
func (a *API) merge(ctx context.Context, c echo.Context, g gitSession) error {
	var req struct {
		Mode    string `json:"mode"`
		Message string `json:"message"`
	}
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	m, err := ship.Merge(ctx, g.dir, g.base(), ship.MergeOptions{Mode: ship.Mode(cmp.Or(req.Mode, string(ship.MergeCommit))), Message: req.Message})
	if err != nil {
		return gitError(c, "merge", err)
	}
	if err := a.mgr.MarkMerged(g.info.ID, m.SHA, m.Tip); err != nil {
		a.log.Warn("merge not recorded on the session", "session", g.info.ID, "err", err)
	}
	a.log.Info("merged", "session", g.info.ID, "branch", m.Branch, "base", m.Base, "mode", m.Mode, "commit", m.SHA)
	g.info.Worktree.Merged, g.info.Worktree.MergedTip = m.SHA, m.Tip
	a.announceBranch(ctx, g, wire.BranchMessage{Action: "merge", Commit: m.SHA})
	return c.JSON(http.StatusOK, MergeReply{Commit: m.SHA})
}

// previewMerge tells what a merge of a worktree session's branch into
// its base would do: whether it conflicts, and which other sessions
// working towards the same base would conflict once it is done.
func (a *API) previewMerge(ctx context.Context, c echo.Context, g gitSession) error {
	var others []ship.Other
	for _, sess := range a.mgr.List() {
		info := sess.Info()
		wt := info.Worktree
		if info.ID == g.info.ID || wt == nil || wt.Archived || wt.Base != g.base() || wt.Path == g.dir {
			continue // merges elsewhere, or nothing, or shares the tree
		}
		others = append(others, ship.Other{ID: info.ID, Dir: wt.Path})
	}
	p, err := ship.PreviewMerge(ctx, g.dir, g.base(), others)
	if err != nil {
		return gitError(c, "preview the merge", err)
	}
	return c.JSON(http.StatusOK, MergePreviewReply{Branch: p.Branch, Base: p.Base, Conflicts: p.Conflicts, Others: p.Others})
}

// updateFromBase merges the base into the session's branch inside its
// worktree, for the agent to resolve what conflicts: the conflicted files
// are left marked there, and a prompt naming them is queued.
func (a *API) updateFromBase(ctx context.Context, c echo.Context, g gitSession) error {
	var req struct {
		Author string `json:"author"`
	}
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	author := cmp.Or(req.Author, "api")
	if err := sessions.CheckName(author); err != nil {
		return sessionError(c, fmt.Errorf("author: %w", err))
	}
	sess, err := a.mgr.Get(g.info.ID)
	if err != nil {
		return sessionError(c, err)
	}
	u, err := ship.UpdateFromBase(ctx, g.dir, g.base())
	if err != nil {
		return gitError(c, "update the branch from its base", err)
	}
	reply := UpdateReply{Commit: u.SHA, Conflicts: u.Conflicts}
	if len(u.Conflicts) > 0 {
		p, pos, err := sess.QueuePrompt(sessions.Author{ID: "api", Name: author}, conflictPrompt(u))
		if err != nil {
			return sessionError(c, fmt.Errorf("the conflicts are in the worktree, but the prompt was not queued: %w", err))
		}
		reply.PromptID, reply.Position = p.ID, &pos
	}
	a.announceBranch(ctx, g, wire.BranchMessage{Action: "update", Commit: u.SHA, Conflicts: u.Conflicts})
	return c.JSON(http.StatusOK, reply)
}

// conflictPrompt asks the agent to resolve what an update left. Names are
// shown as textrule.Shown shows them: a file's is anyone's choice, and an
// escape in one would be a key typed into the agent (the queue refuses
// such a prompt whole).
func conflictPrompt(u ship.Updated) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I merged %s into your branch %s to bring it up to date, and these files conflict:\n", textrule.Shown(u.Base), textrule.Shown(u.Branch))
	for _, f := range u.Conflicts {
		b.WriteString("- " + textrule.Shown(f) + "\n")
	}
	b.WriteString("Please resolve the conflicts (keep what both sides meant), run the tests, and commit the merge.\n")
	return b.String()
}

// archive removes a merged session's worktree (never its branch) and
// keeps the session listed as archived.
func (a *API) archive(ctx context.Context, c echo.Context, g gitSession) error {
	if err := a.mgr.Archive(ctx, g.info.ID); err != nil {
		return sessionError(c, err)
	}
	sess, err := a.mgr.Get(g.info.ID)
	if err != nil {
		return sessionError(c, err)
	}
	info := sess.Info()
	a.opts.Announce.OnBranch(wire.BranchMessage{SessionID: info.ID, Action: "archive", Branch: info.Worktree.Branch,
		Base: info.Worktree.Base, Merged: info.Worktree.Merged, Archived: true})
	return c.JSON(http.StatusOK, SessionReply{Session: wire.SessionView(info)})
}

// push pushes the session's branch and names the page that opens a pull
// request for it.
func (a *API) push(ctx context.Context, c echo.Context, g gitSession) error {
	var req struct {
		Remote string `json:"remote"`
	}
	if ok, err := decodeBody(c, &req); !ok {
		return err
	}
	var base string
	if wt := g.info.Worktree; wt != nil {
		base = wt.Base
	}
	p, err := ship.Push(ctx, g.dir, ship.PushOptions{Remote: cmp.Or(req.Remote, "origin"), Base: base})
	if err != nil {
		return gitError(c, "push", err)
	}
	a.log.Info("pushed", "session", g.info.ID, "remote", p.Remote, "branch", p.Branch)
	a.announceBranch(ctx, g, wire.BranchMessage{Action: "push", Branch: p.Branch, Remote: p.Remote, PullRequestURL: p.PullRequestURL})
	return c.JSON(http.StatusOK, PushReply{Remote: p.Remote, Branch: p.Branch, PullRequestURL: p.PullRequestURL})
}

// announceBranch tells every client what was done to a session's branch,
// with where it now stands against its base for a worktree session.
func (a *API) announceBranch(ctx context.Context, g gitSession, m wire.BranchMessage) {
	m.SessionID = g.info.ID
	if wt := g.info.Worktree; wt != nil {
		m.Branch, m.Base, m.Merged = wt.Branch, wt.Base, wt.Merged
		if st, err := ship.Status(ctx, g.dir, wt.Base, mark(wt)); err == nil {
			m.Ahead, m.Behind = st.Ahead, st.Behind
		} else {
			a.log.Debug("branch status not announced", "session", g.info.ID, "err", err)
		}
	}
	a.opts.Announce.OnBranch(m)
}

// mark is the worktree's last merge, as ship counts from it.
func mark(wt *sessions.Worktree) ship.Mark {
	if wt == nil {
		return ship.Mark{}
	}
	return ship.Mark{Commit: wt.Merged, Tip: wt.MergedTip}
}

// checkpointID reads the :cp parameter. When it reports false, the
// request has been answered.
func checkpointID(c echo.Context) (int, bool, error) {
	id, err := strconv.Atoi(c.Param("cp"))
	if err != nil || id < 1 {
		return 0, false, errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage,
			fmt.Sprintf("checkpoint id %q: want a number from 1, as the list gives", clip(c.Param("cp"))))
	}
	return id, true, nil
}

func (a *API) listCheckpoints(ctx context.Context, c echo.Context, g gitSession) error {
	cps, err := checkpoint.List(ctx, g.dir, g.info.ID)
	if err != nil {
		return gitError(c, "list checkpoints", err)
	}
	if cps == nil {
		cps = []checkpoint.Checkpoint{}
	}
	if a.opts.Checks != nil {
		results, err := a.opts.Checks.Results(g.info.ID)
		if err != nil {
			a.log.Warn("read the checks of a session's checkpoints", "session", g.info.ID, "err", err)
		}
		for i := range cps {
			if r, ok := results[cps[i].ID]; ok {
				cps[i].Check = &r
			}
		}
	}
	return c.JSON(http.StatusOK, CheckpointsReply{Checkpoints: a.withTurns(g.info.ID, cps)})
}

// withTurns gives each checkpoint what the turns whose tree it holds
// spent (sessions.Manager.NoteCheckpoint): a turn that changed nothing
// took no checkpoint, so it counts with the next.
func (a *API) withTurns(id string, cps []checkpoint.Checkpoint) []CheckpointView {
	var spent map[int]sessions.Spent
	if s, err := a.mgr.Get(id); err == nil {
		spent = s.SpentByCheckpoint()
	}
	views := make([]CheckpointView, len(cps))
	for n, cp := range cps {
		views[n].Checkpoint = cp
		if sp, ok := spent[cp.ID]; ok {
			views[n].Usage = &sp
		}
	}
	return views
}

func (a *API) takeCheckpoint(ctx context.Context, c echo.Context, g gitSession) error {
	began := time.Now()
	cp, created, err := checkpoint.Take(ctx, g.dir, g.info.ID, a.opts.Checkpoints)
	if err != nil {
		return gitError(c, "take a checkpoint", err)
	}
	if created {
		if err := a.mgr.NoteCheckpoint(g.info.ID, cp.ID, began); err != nil {
			a.log.Debug("note a checkpoint's turns", "session", g.info.ID, "err", err)
		}
		a.opts.Announce.OnCheckpoint(g.info.ID, cp)
	}
	return c.JSON(http.StatusOK, CheckpointReply{ID: cp.ID, Checkpoint: cp, Created: created})
}

func (a *API) checkpointDiff(ctx context.Context, c echo.Context, g gitSession) error {
	id, ok, err := checkpointID(c)
	if !ok {
		return err
	}
	d, err := checkpoint.Diff(ctx, g.dir, g.info.ID, id, 0)
	if err != nil {
		return gitError(c, "diff a checkpoint", err)
	}
	return c.JSON(http.StatusOK, d)
}

func (a *API) restoreCheckpoint(ctx context.Context, c echo.Context, g gitSession) error {
	id, ok, err := checkpointID(c)
	if !ok {
		return err
	}
	saved, err := checkpoint.Restore(ctx, g.dir, g.info.ID, id, a.opts.Checkpoints)
	if saved.ID != 0 {
		a.opts.Announce.OnCheckpoint(g.info.ID, saved)
	}
	if err != nil {
		return gitError(c, "restore a checkpoint", err)
	}
	a.log.Info("checkpoint restored", "session", g.info.ID, "checkpoint", id, "saved as", saved.ID)
	return c.JSON(http.StatusOK, RestoredReply{Restored: id, Saved: saved.ID})
}
