// What the Changes view says of other sessions that change the same files
// (models/overlaps.ts): a banner naming each other session and the files,
// and, in each drawn diff, the lines of this session's hunks that meet the
// other's, marked (data-overlap) with a tooltip naming whom.
//
// Built with textContent: paths and names are untrusted.

import { h, byId } from '../shared/dom';
import { isMarked, overlapText, anyLines, type NumberedLine, type Overlaps } from '../models/overlaps';
import type { SessionStore } from '../models/store';
import type { ChangesObserver, ChangesState } from './changes';
import type { OverlapHunk } from '../shared/types';

export interface OverlapBannerDeps {
  store: SessionStore;
  overlaps: Overlaps;
}

export class OverlapBanner implements ChangesObserver {
  private readonly banner = byId('changes-overlaps');
  private sessionId: string | null = null;
  /** The bodies of the diffs drawn for the shown session, by path: marked again as the overlaps change. */
  private readonly bodies = new Map<string, HTMLElement>();

  constructor(private readonly deps: OverlapBannerDeps) {
    deps.overlaps.subscribe(() => this.render());
    deps.store.subscribe(() => this.renderBanner());
  }

  shown(sessionId: string | null, _state: ChangesState): void {
    if (sessionId !== this.sessionId) this.bodies.clear();
    this.sessionId = sessionId;
    this.renderBanner();
  }

  drawn(path: string, body: HTMLElement): void {
    this.bodies.set(path, body);
    if (this.sessionId) markLines(body, this.deps.overlaps.marks(this.sessionId, path), this.whoFor(path));
  }

  private render(): void {
    this.renderBanner();
    for (const [path, body] of this.bodies) {
      if (!body.isConnected) {
        this.bodies.delete(path);
        continue;
      }
      if (this.sessionId) markLines(body, this.deps.overlaps.marks(this.sessionId, path), this.whoFor(path));
    }
  }

  private nameOf = (id: string): string => this.deps.store.get(id)?.session.name ?? id.slice(0, 8);

  /** The names of the sessions whose change of path meets the shown session's. */
  private whoFor(path: string): string {
    if (!this.sessionId) return '';
    return this.deps.overlaps.of(this.sessionId)
      .filter((w) => w.files.some((f) => f.path === path && f.lines))
      .map((w) => `'${this.nameOf(w.other)}'`).join(', ');
  }

  private renderBanner(): void {
    const withs = this.sessionId ? this.deps.overlaps.of(this.sessionId) : [];
    this.banner.hidden = withs.length === 0;
    if (withs.length === 0) {
      this.banner.replaceChildren();
      delete this.banner.dataset.lines;
      return;
    }
    const lines = anyLines(withs);
    if (lines) this.banner.dataset.lines = '';
    else delete this.banner.dataset.lines;
    const texts = overlapText(withs, this.nameOf);
    this.banner.replaceChildren(
      h('strong', { text: lines ? 'Conflicting changes. ' : 'Overlapping changes. ' }),
      h('span', { text: lines
        ? 'Another session changes the same lines: whichever merges second will conflict (marked lines below).'
        : 'Another session changes the same files, not the same lines yet.' }),
      h('ul', {}, ...withs.map((w, i) => h('li', { 'data-testid': 'changes-overlap', 'data-with': w.other, text: texts[i] ?? '' }))),
    );
  }
}

/**
 * Marks the rows of a drawn diff whose line lies in one of hunks, unified
 * or side by side, from the numbers diff2html wrote; rows marked before
 * and no longer are unmarked.
 */
export function markLines(body: HTMLElement, hunks: readonly OverlapHunk[], who: string): void {
  for (const el of body.querySelectorAll<HTMLElement>('[data-overlap]')) {
    delete el.dataset.overlap;
    el.removeAttribute('title');
  }
  if (hunks.length === 0) return;
  const title = who ? `Also changed by ${who}: a merge of both conflicts here` : 'Another session changes these lines too';
  const mark = (tr: HTMLElement) => {
    tr.dataset.overlap = '';
    tr.title = title;
  };
  // Unified: one number cell per row holds both numbers.
  for (const td of body.querySelectorAll<HTMLElement>('td.d2h-code-linenumber')) {
    const tr = td.closest('tr');
    if (!tr) continue;
    const line: NumberedLine = {
      kind: td.classList.contains('d2h-ins') ? 'add' : td.classList.contains('d2h-del') ? 'del' : 'ctx',
      old: num(td.querySelector('.line-num1')),
      new: num(td.querySelector('.line-num2')),
    };
    if (isMarked(line, hunks)) mark(tr);
  }
  // Side by side: the left table numbers the base, the right the tree.
  for (const files of body.querySelectorAll('.d2h-files-diff')) {
    const [left, right] = files.querySelectorAll('.d2h-file-side-diff');
    for (const [side, kind] of [[left, 'del'], [right, 'add']] as const) {
      for (const td of side?.querySelectorAll<HTMLElement>('td.d2h-code-side-linenumber') ?? []) {
        const tr = td.closest('tr');
        const n = num(td);
        if (!tr || n === undefined || !td.classList.contains(kind === 'del' ? 'd2h-del' : 'd2h-ins')) continue;
        if (isMarked(kind === 'del' ? { kind, old: n } : { kind, new: n }, hunks)) mark(tr);
      }
    }
  }
}

function num(el: Element | null | undefined): number | undefined {
  const n = Number(el?.textContent?.trim() || NaN);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}
