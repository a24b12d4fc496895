// The latest session.diff of each session: what it changed in its working
// tree, in short (files and line counts). The tabs show the totals; the
// Changes view refreshes when the shown session's summary changes.

import type { SessionDiffMessage } from './types';

type Listener = (sessionId: string) => void;

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
    this.byId.set(m.sessionId, m);
    for (const fn of this.listeners) fn(m.sessionId);
  }

  /** Forgets the sessions that are gone. */
  prune(has: (sessionId: string) => boolean): void {
    for (const id of [...this.byId.keys()]) {
      if (!has(id)) this.byId.delete(id);
    }
  }
}

/** The tab's "+N −M", or '' when nothing changed. */
export function formatTotals(m: Pick<SessionDiffMessage, 'additions' | 'deletions'> | undefined): string {
  if (!m || (m.additions === 0 && m.deletions === 0)) return '';
  return `+${m.additions} \u2212${m.deletions}`;
}
