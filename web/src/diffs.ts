// The latest session.diff of each session: what it changed in its working
// tree, in short (files and line counts). A session with a worktree of its
// own shows its totals on its tab; the sessions that share the workspace
// all report the workspace's changes, which are nobody's in particular, so
// those show once, in the status bar (WorkspaceDiff). The Changes view
// refreshes when the shown session's summary changes.

import { byId, h } from './dom';
import type { SessionStore } from './store';
import type { Session, SessionDiffMessage } from './types';

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

/** The tab's "+N −M", or '' when nothing changed. */
export function formatTotals(m: Pick<SessionDiffMessage, 'additions' | 'deletions'> | undefined): string {
  if (!m || (m.additions === 0 && m.deletions === 0)) return '';
  return `+${m.additions} \u2212${m.deletions}`;
}

/**
 * Reports whether a session's session.diff is its own: a worktree's. A
 * session in the workspace reports the workspace's changes, whoever made
 * them, the same as every other session there.
 */
export function ownsDiff(s: Session): boolean {
  return !!s.worktree;
}

/**
 * The workspace's "+N −M" in the status bar, once, from the sessions that
 * share it; a click shows them in the Changes view, through one of those
 * sessions (the active one when it is one).
 */
export class WorkspaceDiff {
  private readonly el = h(
    'button',
    { class: 'stat workspace-diff', type: 'button', 'data-testid': 'workspace-diff', hidden: true },
    h('span', { class: 'workspace-diff-label' }, 'workspace'),
    h('span', { class: 'tab-diff-add' }),
    h('span', { class: 'tab-diff-del' }),
  );

  constructor(
    private readonly diffs: DiffSummaries,
    private readonly store: SessionStore,
    show: (sessionId: string) => void,
  ) {
    byId('session-count').after(this.el);
    this.el.addEventListener('click', () => {
      const m = this.current();
      if (m) show(m.sessionId);
    });
    diffs.subscribe(() => this.render());
    store.subscribe(() => this.render());
    this.render();
  }

  /** The workspace's latest summary: the active session's if it shares the workspace. */
  private current(): SessionDiffMessage | undefined {
    const shares = (id: string) => {
      const e = this.store.get(id);
      return !!e && !ownsDiff(e.session);
    };
    const active = this.store.activeId;
    if (active && shares(active)) return this.diffs.get(active) ?? this.diffs.latest(shares);
    return this.diffs.latest(shares);
  }

  private render(): void {
    const m = this.current();
    const text = formatTotals(m);
    this.el.hidden = !text;
    if (!m || !text) {
      delete this.el.dataset.additions;
      delete this.el.dataset.deletions;
      return;
    }
    this.el.dataset.additions = String(m.additions);
    this.el.dataset.deletions = String(m.deletions);
    const [, add, del] = this.el.children;
    if (add) add.textContent = ` +${m.additions}`;
    if (del) del.textContent = ` \u2212${m.deletions}`;
    const files = m.truncated ? `${m.files.length}+ files` : `${m.files.length} file${m.files.length === 1 ? '' : 's'}`;
    this.el.title =
      `The workspace's uncommitted changes, shared by the sessions without a worktree: ${files}, ` +
      `${m.additions} line${m.additions === 1 ? '' : 's'} added, ${m.deletions} removed. Click to see them (Alt+4).`;
  }
}
