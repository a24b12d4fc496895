// Each session's review draft (docs/protocol.md, review.draft): the
// comments people wrote on its diff, which the server keeps and shows
// everyone in the session until one of them sends it to the agent or
// discards it; the latest by rev, any after a reconnection.
//
// It touches no DOM: the review view (changes/review.ts) renders from it.

import type { ReviewComment, ReviewDraftMessage } from '../shared/types';

interface SessionDraft {
  comments: ReviewComment[];
  rev: number;
  /**
   * Whether rev orders what comes next: not after a reconnection, as a
   * server that restarted counts again from 0.
   */
  known: boolean;
}

/** Every session's latest review draft: see the file's comment. */
export class ReviewDrafts {
  private readonly bySession = new Map<string, SessionDraft>();
  private readonly listeners: ((sessionId: string) => void)[] = [];

  subscribe(fn: (sessionId: string) => void): void {
    this.listeners.push(fn);
  }

  get(sessionId: string): ReviewComment[] {
    return this.bySession.get(sessionId)?.comments ?? [];
  }

  apply(m: ReviewDraftMessage): void {
    const cur = this.bySession.get(m.sessionId);
    if (cur?.known && m.rev <= cur.rev) return;
    this.bySession.set(m.sessionId, { comments: Array.isArray(m.comments) ? m.comments : [], rev: m.rev, known: true });
    for (const fn of this.listeners) fn(m.sessionId);
  }

  /** The connection dropped: each session's next draft is taken whatever its rev. */
  stale(): void {
    for (const d of this.bySession.values()) d.known = false;
  }

  forget(sessionId: string): void {
    this.bySession.delete(sessionId);
  }
}
