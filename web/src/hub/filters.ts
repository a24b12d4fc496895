// The inbox's filters: one workspace or all, one status or all, each
// choice with what it would show. On a desktop they are the side panel; at
// 800 px and below (phone.css's breakpoint) they move into a sheet, which
// a switcher in the top bar opens as agentmux's session switcher does, and
// which names the filter in force and how many waiting sessions it hides.

import { h } from '../shared/dom';
import { chevron, closeIcon } from '../phone/switcher';
import { STATUS_FILTERS, problemOf, statusLabel, type Counts, type Filter, type StatusFilter } from './inbox';
import type { InboxWorkspace } from './types';

export interface FiltersDeps {
  /** The user chose another filter. */
  onChange(f: Filter): void;
}

/** Where the filters are a sheet (phone.css's breakpoint). */
const NARROW = window.matchMedia('(max-width: 800px)');

export class Filters {
  private readonly workspacesEl: HTMLElement;
  private readonly statusesEl: HTMLElement;
  /** The top bar's control on a phone. */
  readonly button: HTMLButtonElement;
  private readonly label = h('span', { class: 'switcher-label', id: 'hub-filters-label', 'data-testid': 'hub-filters-current' });
  private readonly badge = h('span', { class: 'badge', 'data-testid': 'hub-filters-current-status' });
  private readonly waiting = h('span', { class: 'switcher-waiting', 'data-testid': 'hub-filters-waiting', hidden: true });
  readonly sheet: HTMLDialogElement;
  private readonly body = h('div', { class: 'hub-sheet-body' });
  private readonly done = h('button', { type: 'button', class: 'btn btn-primary switcher-new', 'data-testid': 'hub-filters-done' });
  private filter: Filter = { workspace: '', status: 'all' };

  constructor(
    private readonly side: HTMLElement,
    private readonly block: HTMLElement,
    private readonly deps: FiltersDeps,
  ) {
    this.workspacesEl = block.querySelector<HTMLElement>('#hub-workspaces')!;
    this.statusesEl = block.querySelector<HTMLElement>('#hub-statuses')!;
    this.button = h(
      'button',
      {
        type: 'button',
        class: 'switcher hub-switcher',
        'data-testid': 'hub-filters-open',
        'aria-label': 'Filters',
        'aria-describedby': 'hub-filters-label',
        'aria-haspopup': 'dialog',
        'aria-expanded': 'false',
      },
      this.label,
      this.badge,
      this.waiting,
      chevron(),
    );
    const close = h('button', { type: 'button', class: 'sheet-close', 'data-testid': 'hub-filters-close', 'aria-label': 'Close the filters' }, closeIcon());
    this.sheet = h(
      'dialog',
      { class: 'sheet switcher-sheet hub-filters-sheet', 'data-testid': 'hub-filters-sheet', 'aria-labelledby': 'hub-filters-title' },
      h('div', { class: 'sheet-head' }, h('h2', { id: 'hub-filters-title', class: 'sheet-title', text: 'Show' }), h('span', { class: 'grow' }), close),
      this.body,
      h('div', { class: 'sheet-foot' }, this.done),
    );
    document.body.append(this.sheet);
    this.button.addEventListener('click', () => this.open());
    close.addEventListener('click', () => this.sheet.close());
    this.done.addEventListener('click', () => this.sheet.close());
    // A tap on the backdrop (the dialog box itself, outside its content) closes it.
    this.sheet.addEventListener('click', (ev) => {
      if (ev.target === this.sheet) this.sheet.close();
    });
    this.sheet.addEventListener('close', () => this.button.setAttribute('aria-expanded', 'false'));
    block.addEventListener('click', (ev) => this.onClick(ev));
    NARROW.addEventListener('change', () => this.place());
    this.place();
  }

  /** The filters live in the side panel on a desktop and in the sheet on a phone. */
  private place(): void {
    if (NARROW.matches) {
      if (filtersIn(this.body) !== this.block) this.body.append(this.block);
    } else {
      if (this.sheet.open) this.sheet.close();
      if (filtersIn(this.side) !== this.block) this.side.append(this.block);
    }
  }

  private open(): void {
    this.sheet.showModal();
    this.button.setAttribute('aria-expanded', 'true');
    this.block.querySelector<HTMLElement>('[aria-pressed="true"]')?.focus();
  }

  private onClick(ev: MouseEvent): void {
    const b = (ev.target as Element).closest<HTMLElement>('.hub-choice');
    if (!b) return;
    const f = { ...this.filter };
    if (b.dataset.testid === 'hub-filter-workspace') f.workspace = b.dataset.workspace ?? '';
    else f.status = (b.dataset.status ?? 'all') as StatusFilter;
    this.deps.onChange(f);
  }

  render(f: Filter, workspaces: readonly InboxWorkspace[], counts: Counts, shown: number, hiddenWaiting: number): void {
    this.filter = f;
    const focused = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>('.hub-choice');
    const focusKey = focused ? `${focused.dataset.testid}\n${focused.dataset.workspace ?? focused.dataset.status}` : null;
    const all = counts.workspaces.get('') ?? { sessions: 0, waiting: 0 };
    this.workspacesEl.replaceChildren(
      choice({ testid: 'hub-filter-workspace', attr: ['workspace', ''], pressed: f.workspace === '', name: 'All workspaces', waiting: all.waiting, count: all.sessions }),
      ...workspaces.map((w) => {
        const c = counts.workspaces.get(w.url) ?? { sessions: 0, waiting: 0 };
        return choice({
          testid: 'hub-filter-workspace',
          attr: ['workspace', w.url],
          pressed: f.workspace === w.url,
          name: w.name,
          title: w.reachable ? w.url : `${w.url}: ${w.error || 'unreachable'}`,
          error: w.reachable ? undefined : problemOf(w).kind,
          waiting: c.waiting,
          count: c.sessions,
        });
      }),
    );
    this.statusesEl.replaceChildren(...STATUS_FILTERS.map((st) => choice({
      testid: 'hub-filter-status',
      attr: ['status', st],
      pressed: f.status === st,
      name: statusLabel(st),
      status: st,
      count: counts.statuses.get(st) ?? 0,
    })));
    if (focusKey) {
      for (const b of this.block.querySelectorAll<HTMLElement>('.hub-choice')) {
        if (`${b.dataset.testid}\n${b.dataset.workspace ?? b.dataset.status}` === focusKey) b.focus({ preventScroll: true });
      }
    }
    // The phone's switcher: the filter in force, and what waits out of sight.
    const ws = workspaces.find((w) => w.url === f.workspace);
    this.label.textContent = ws ? ws.name : 'All workspaces';
    this.badge.hidden = f.status === 'all';
    this.badge.textContent = statusLabel(f.status);
    this.badge.className = `badge badge-${f.status === 'waiting' ? 'waiting' : f.status}`;
    this.waiting.hidden = hiddenWaiting === 0;
    this.waiting.textContent = hiddenWaiting ? String(hiddenWaiting) : '';
    this.waiting.title = hiddenWaiting ? `${hiddenWaiting} session${hiddenWaiting === 1 ? '' : 's'} the filter hides need${hiddenWaiting === 1 ? 's' : ''} you` : '';
    this.button.title = `Showing ${shown} session${shown === 1 ? '' : 's'}${hiddenWaiting ? `; ${this.waiting.title}` : ''}`;
    this.done.textContent = `Show ${shown} session${shown === 1 ? '' : 's'}`;
  }
}

/** The filters' block inside el, if it is there. */
function filtersIn(el: HTMLElement): Element | null {
  return el.querySelector('.hub-filters');
}

interface ChoiceOptions {
  testid: string;
  attr: ['workspace' | 'status', string];
  pressed: boolean;
  name: string;
  title?: string;
  /** Why the workspace is out of reach. */
  error?: string;
  status?: StatusFilter;
  waiting?: number;
  count: number;
}

function choice(o: ChoiceOptions): HTMLLIElement {
  const b = h(
    'button',
    {
      type: 'button',
      class: 'hub-choice',
      'data-testid': o.testid,
      [`data-${o.attr[0]}`]: o.attr[1],
      'data-reachable': o.attr[0] === 'workspace' && o.attr[1] !== '' ? String(!o.error) : null,
      'aria-pressed': String(o.pressed),
      title: o.title ?? null,
    },
    o.status && o.status !== 'all' ? h('span', { class: `hub-choice-dot dot-${o.status}`, 'aria-hidden': 'true' }) : null,
    o.attr[0] === 'workspace' && o.attr[1] !== '' ? h('span', { class: 'hub-choice-dot', 'aria-hidden': 'true' }) : null,
    h('span', { class: 'hub-choice-text' },
      h('span', { class: 'hub-choice-name', 'data-testid': 'hub-choice-name', text: o.name }),
      o.error ? h('span', { class: 'hub-choice-error', 'data-testid': 'hub-workspace-error', text: o.error }) : null),
    o.waiting ? h('span', { class: 'switcher-waiting hub-choice-waiting', title: `${o.waiting} need${o.waiting === 1 ? 's' : ''} you`, text: String(o.waiting) }) : null,
    h('span', { class: 'hub-choice-count', 'data-testid': 'hub-choice-count', text: String(o.count) }),
  );
  return h('li', {}, b);
}
