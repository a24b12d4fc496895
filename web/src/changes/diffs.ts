// The latest session.diff of each session (DiffSummaries, models/diffs.ts),
// shown: what it changed in its working tree, in short (files and line
// counts). A session with a worktree of its
// own shows its totals on its tab; the sessions that share the workspace
// all report the workspace's changes, which are nobody's in particular, so
// those show once, in the status bar (WorkspaceDiff). The Changes view
// refreshes when the shown session's summary changes.

import { byId, h } from '../shared/dom';
import type { SessionStore } from '../models/store';
import type { SessionDiffMessage } from '../shared/types';
import { formatTotals, ownsDiff, type DiffSummaries } from '../models/diffs';

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
