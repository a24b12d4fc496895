// The workflows the server reads (workflow.updated, GET /api/workflow):
// the workspace's, and each session's that came from its worktree; and
// which of them the workflow panel shows: the active session's own if one
// came for it, else the workspace's.
//
// It touches no DOM: the workflow panel (views/workflow.ts) draws what
// show says.

import type { Session, Workflow } from '../shared/types';

/** What the workflow panel shows: a workflow, whose (a session's, or the workspace's: null), and the label it goes by. */
export interface ShownWorkflow {
  wf: Workflow | null;
  sessionId: string | null;
  label: string;
}

/** The workspace's and the sessions' workflows: see the file's comment. */
export class Workflows {
  private workspace: Workflow | null = null;
  private readonly bySession = new Map<string, Workflow>();
  private shown: ShownWorkflow | undefined;

  /** The workspace's workflow. */
  setWorkspace(wf: Workflow | null): void {
    this.workspace = wf;
  }

  /** A session's workflow, read from its worktree. */
  setSession(sessionId: string, wf: Workflow): void {
    this.bySession.set(sessionId, wf);
  }

  /** Forgets the workflows of sessions that are gone. */
  prune(exists: (sessionId: string) => boolean): void {
    for (const id of this.bySession.keys()) if (!exists(id)) this.bySession.delete(id);
  }

  /**
   * What the panel shows with active on screen, or null when it shows
   * that already.
   */
  show(active: Session | undefined): ShownWorkflow | null {
    const own = active ? this.bySession.get(active.id) : undefined;
    const next = {
      wf: own ?? this.workspace,
      sessionId: own && active ? active.id : null,
      label: active?.worktree?.branch ?? active?.name ?? '',
    };
    const cur = this.shown;
    if (cur && cur.wf === next.wf && cur.sessionId === next.sessionId && cur.label === next.label) return null;
    this.shown = next;
    return next;
  }
}
