// Recent documents: the docs/*.md files seen in file.changed and
// layout.shift, most recently written first. A click opens one in the
// artifact pane.

import { byId, h } from './dom';
import { splitPath } from './paths';

const MAX_DOCS = 30;

export class RecentDocs {
  private docs: string[] = [];
  private current: string | null = null;
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
    const i = this.docs.indexOf(path);
    if (i >= 0) this.docs.splice(i, 1);
    if (!removed) this.docs.unshift(path);
    if (this.docs.length > MAX_DOCS) this.docs.length = MAX_DOCS;
    this.render();
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
        const { dir, name } = splitPath(p);
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
