// The latest session.diff of each session: what it changed in its working
// tree, in short (files and line counts), the newest last; and whose a
// summary is (ownsDiff): a worktree session's own, or the workspace's,
// which every session sharing it reports alike.
//
// It touches no DOM: the tabs, the status bar's WorkspaceDiff
// (changes/diffs.ts) and the Changes view render from it.

import type { Session, SessionDiffMessage } from '../shared/types';

type Listener = (sessionId: string) => void;

/** Every session's latest session.diff, the newest last: see the file's comment. */
export class DiffSummaries {
  private readonly byId = new Map<string, SessionDiffMessage>();
  private readonly listeners: Listener[] = [];

  get(sessionId: string): SessionDiffMessage | undefined {
    return this.byId.get(sessionId);
  }

  /** Called with the session's id whenever its summary changes. */
  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  set(m: SessionDiffMessage): void {
    // Kept in the order they came: the newest last (see latest).
    this.byId.delete(m.sessionId);
    this.byId.set(m.sessionId, m);
    for (const fn of this.listeners) fn(m.sessionId);
  }

  /** The newest summary of the sessions for which pick holds. */
  latest(pick: (sessionId: string) => boolean): SessionDiffMessage | undefined {
    let found: SessionDiffMessage | undefined;
    for (const [id, m] of this.byId) if (pick(id)) found = m;
    return found;
  }

  /** Forgets the sessions that are gone. */
  prune(has: (sessionId: string) => boolean): void {
    for (const id of [...this.byId.keys()]) {
      if (!has(id)) this.byId.delete(id);
    }
  }
}

/**
 * Reports whether a session's session.diff is its own: a worktree's. A
 * session in the workspace reports the workspace's changes, whoever made
 * them, the same as every other session there.
 */
export function ownsDiff(s: Session): boolean {
  return !!s.worktree;
}

/** The tab's "+N −M", or '' when nothing changed. */
export function formatTotals(m: Pick<SessionDiffMessage, 'additions' | 'deletions'> | undefined): string {
  if (!m || (m.additions === 0 && m.deletions === 0)) return '';
  return `+${m.additions} \u2212${m.deletions}`;
}
