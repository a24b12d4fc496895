// Recent documents: the docs/*.md files the server lists (GET
// /api/documents, at start and on every reconnection) and those seen in
// file.changed and layout.shift since, most recently written first. A
// click opens one in the artifact pane.

import { byId, h } from '../shared/dom';
import { shownParts } from '../shared/paths';

const MAX_DOCS = 30;

export class RecentDocs {
  private docs: string[] = [];
  private current: string | null = null;
  /**
   * The notes made while a load is in flight, by load number: applied
   * again on top of its (older) answer, so a document written meanwhile
   * is neither lost nor brought back.
   */
  private readonly loads = new Map<number, { path: string; removed: boolean }[]>();
  private lastLoad = 0;
  private appliedLoad = 0;
  private readonly list = byId('recent-docs');
  private readonly count = byId('recent-docs-count');

  constructor(private readonly open: (path: string) => void) {
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=recent-doc]');
      if (btn?.dataset.path) this.open(btn.dataset.path);
    });
    this.render();
  }

  /** A document was written (or removed, when removed is true). */
  note(path: string, removed = false): void {
    for (const log of this.loads.values()) log.push({ path, removed });
    this.apply(path, removed);
    this.render();
  }

  /** A load of the server's list begins; its number goes to loaded() or abandoned(). */
  beginLoad(): number {
    const n = ++this.lastLoad;
    this.loads.set(n, []);
    return n;
  }

  /** The server's list (newest first) for load n. */
  loaded(n: number, paths: string[]): void {
    const log = this.loads.get(n);
    for (const k of this.loads.keys()) if (k <= n) this.loads.delete(k);
    if (n <= this.appliedLoad || !log) return; // a newer answer is shown
    this.appliedLoad = n;
    this.docs = [...new Set(paths)].slice(0, MAX_DOCS);
    for (const m of log) this.apply(m.path, m.removed);
    this.render();
  }

  /** Load n failed: what is listed stays. */
  abandoned(n: number): void {
    this.loads.delete(n);
  }

  private apply(path: string, removed: boolean): void {
    const i = this.docs.indexOf(path);
    if (i >= 0) this.docs.splice(i, 1);
    if (!removed) this.docs.unshift(path);
    if (this.docs.length > MAX_DOCS) this.docs.length = MAX_DOCS;
  }

  /** Marks the document open in the artifact pane. */
  setCurrent(path: string | null): void {
    this.current = path;
    this.render();
  }

  private render(): void {
    this.count.textContent = this.docs.length ? String(this.docs.length) : '';
    if (this.docs.length === 0) {
      this.list.replaceChildren(h('li', { class: 'muted empty-line', text: 'Documents under docs/ appear here as the agent writes them.' }));
      return;
    }
    this.list.replaceChildren(
      ...this.docs.map((p) => {
        const { dir, name } = shownParts(p);
        return h('li', {},
          h('button', {
            type: 'button',
            class: 'doc-item',
            'data-testid': 'recent-doc',
            'data-path': p,
            title: p,
            'aria-current': p === this.current ? 'true' : null,
          },
          h('span', { class: 'doc-icon', 'aria-hidden': 'true' }),
          h('span', { class: 'doc-name', text: name }),
          h('span', { class: 'doc-dir', text: docDir(dir) }),
          ),
        );
      }),
    );
  }
}

/**
 * A document's folder as the list shows it: below docs/, and for a
 * worktree's document the worktree's directory first ("feat-x: plans").
 */
function docDir(dir: string): string {
  const m = /^(?:\.worktrees\/([^/]+)\/)?docs\/(.*?)\/?$/.exec(dir);
  if (!m) return dir.replace(/\/$/, '');
  const [, worktree, sub] = m;
  return worktree ? `${worktree}${sub ? `: ${sub}` : ''}` : sub ?? '';
}
