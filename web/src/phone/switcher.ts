// The session switcher of small screens (phone.css shows it at 800 px and
// below, where the tab strip is hidden): a button naming the session on
// screen and its status, and a sheet listing every session with its name
// and status, to pick one or close one. Tabs cut to a letter or two, or
// scrolled out of sight, left a phone user guessing which sessions exist.

import { h } from '../shared/dom';
import { agentIcon } from '../shared/avatars';
import { startedByTitle, type SessionStore } from '../models/store';
import { limitDetails, statusShown } from '../models/usage';

export interface SwitcherDeps {
  store: SessionStore;
  /** The user picked a session in the sheet. */
  onSelect(id: string): void;
  /** The user asked to close a session (the tab bar's confirmation). */
  onClose(id: string): void;
  /** The user asked for a new session (the tab bar's dialog). */
  onNew(): void;
  canAct(): boolean;
}

export class SessionSwitcher {
  /** The top bar's control: its accessible name is "Sessions", what it shows describes it. */
  readonly button: HTMLButtonElement;
  private readonly label = h('span', { class: 'switcher-label', id: 'switcher-label', 'data-testid': 'switcher-current' });
  private readonly badge = h('span', { class: 'badge', 'data-testid': 'switcher-current-status' });
  private readonly waiting = h('span', { class: 'switcher-waiting', 'data-testid': 'switcher-waiting', hidden: true });
  readonly sheet: HTMLDialogElement;
  private readonly list = h('ul', { class: 'switcher-list', role: 'list' });
  private readonly newBtn: HTMLButtonElement;

  constructor(private readonly deps: SwitcherDeps) {
    this.button = h(
      'button',
      {
        type: 'button',
        class: 'switcher',
        'data-testid': 'switcher',
        'aria-label': 'Sessions',
        'aria-describedby': 'switcher-label',
        'aria-haspopup': 'dialog',
        'aria-expanded': 'false',
      },
      this.label,
      this.badge,
      this.waiting,
      chevron(),
    );
    const close = h('button', { type: 'button', class: 'sheet-close', 'data-testid': 'switcher-close', 'aria-label': 'Close the session list' }, closeIcon());
    this.newBtn = h('button', { type: 'button', class: 'btn btn-primary switcher-new', 'data-testid': 'switcher-new' }, 'New session');
    this.sheet = h(
      'dialog',
      { class: 'sheet switcher-sheet', 'data-testid': 'switcher-sheet', 'aria-labelledby': 'switcher-title' },
      h('div', { class: 'sheet-head' }, h('h2', { id: 'switcher-title', class: 'sheet-title', text: 'Sessions' }), h('span', { class: 'grow' }), close),
      this.list,
      h('div', { class: 'sheet-foot' }, this.newBtn),
    );
    document.body.append(this.sheet);

    this.button.addEventListener('click', () => this.open());
    close.addEventListener('click', () => this.sheet.close());
    this.newBtn.addEventListener('click', () => {
      this.sheet.close();
      this.deps.onNew();
    });
    // A tap on the backdrop (the dialog box itself, outside its content) closes it.
    this.sheet.addEventListener('click', (ev) => {
      if (ev.target === this.sheet) this.sheet.close();
    });
    this.sheet.addEventListener('close', () => this.button.setAttribute('aria-expanded', 'false'));
    this.list.addEventListener('click', (ev) => this.onListClick(ev));
    this.list.addEventListener('keydown', (ev) => this.onListKey(ev));
    deps.store.subscribe(() => this.render());
    this.render();
  }

  open(): void {
    this.renderList();
    this.sheet.showModal();
    this.button.setAttribute('aria-expanded', 'true');
    const current = this.list.querySelector<HTMLElement>('[aria-current="true"]') ?? this.list.querySelector<HTMLElement>('.switcher-item');
    current?.focus();
  }

  render(): void {
    const { store } = this.deps;
    const active = store.active;
    const all = store.all();
    this.label.textContent = active ? active.session.name : all.length ? 'Sessions' : 'No sessions';
    this.badge.hidden = !active;
    if (active) {
      this.badge.textContent = statusShown(active.session, Date.now());
      this.badge.className = `badge badge-${active.session.status}`;
    }
    // Another session waiting for the user shows on the button: it is out of sight.
    const others = all.filter((e) => e.needsInput && e.session.id !== store.activeId).length;
    this.waiting.hidden = others === 0;
    this.waiting.textContent = others ? String(others) : '';
    this.waiting.title = others ? `${others} other session${others === 1 ? '' : 's'} need${others === 1 ? 's' : ''} your input` : '';
    this.button.title = `${all.length} session${all.length === 1 ? '' : 's'}${others ? `; ${this.waiting.title}` : ''}`;
    if (this.sheet.open) this.renderList();
  }

  private renderList(): void {
    const { store } = this.deps;
    const focusedId = (document.activeElement as HTMLElement | null)?.closest<HTMLElement>('.switcher-row')?.dataset.sessionId;
    const canAct = this.deps.canAct();
    // As the top bar's "+" has it: disabled at the session limit, with the reason.
    const plus = document.getElementById('new-session') as HTMLButtonElement | null;
    this.newBtn.disabled = !canAct || !!plus?.disabled;
    this.newBtn.title = plus?.title ?? '';
    const rows = store.all().map((e) => {
      const s = e.session;
      const current = s.id === store.activeId;
      const starter = store.starterOf(s);
      const item = h(
        'button',
        {
          type: 'button',
          class: 'switcher-item',
          'data-testid': 'switcher-item',
          'data-session-id': s.id,
          'data-status': s.status,
          'aria-current': current ? 'true' : null,
        },
        e.needsInput ? h('span', { class: 'tab-dot', 'aria-label': 'needs input', title: 'Needs your input' }) : null,
        // The branch under the name, where it has the sheet's width (beside it, it was cut to "featu…").
        h(
          'span',
          { class: 'switcher-text' },
          h('span', { class: 'switcher-name', 'data-testid': 'switcher-name', text: s.name }),
          s.worktree ? h('span', { class: 'tab-branch switcher-branch', text: s.worktree.branch }) : null,
          starter
            ? h('span', { class: 'switcher-started', 'data-testid': 'switcher-started-by', 'data-started-by': starter.id, title: startedByTitle(starter) },
              agentIcon(),
              h('span', { class: 'switcher-started-text', text: starter.name === null ? 'started by an agent (its session was deleted)' : `started by ${starter.name}` }))
            : null,
        ),
        h('span', { class: `badge badge-${s.status}`, 'data-testid': 'switcher-status', text: statusShown(s, Date.now()), title: s.limit ? limitDetails(s.limit, Date.now()) : '' }),
      );
      const close = h(
        'button',
        { type: 'button', class: 'switcher-item-close', 'data-testid': 'switcher-item-close', 'aria-label': `Close ${s.name}`, title: `Close ${s.name}` },
        closeIcon(),
      );
      close.disabled = !canAct || e.closing;
      return h('li', { class: 'switcher-row', 'data-session-id': s.id }, item, close);
    });
    this.list.replaceChildren(...(rows.length ? rows : [h('li', { class: 'switcher-empty', text: 'No sessions yet.' })]));
    if (focusedId) this.list.querySelector<HTMLElement>(`.switcher-row[data-session-id="${CSS.escape(focusedId)}"] .switcher-item`)?.focus();
  }

  private onListClick(ev: MouseEvent): void {
    const target = ev.target as Element;
    const row = target.closest<HTMLElement>('.switcher-row');
    const id = row?.dataset.sessionId;
    if (!id) return;
    if (target.closest('.switcher-item-close')) {
      this.sheet.close();
      this.deps.onClose(id);
      return;
    }
    if (!target.closest('.switcher-item')) return;
    this.sheet.close();
    this.deps.onSelect(id);
  }

  /** Up and down move along the sessions, as in a menu; Enter or Space picks (the button's own). */
  private onListKey(ev: KeyboardEvent): void {
    const items = [...this.list.querySelectorAll<HTMLElement>('.switcher-item')];
    const at = items.indexOf(document.activeElement as HTMLElement);
    let next = -1;
    if (ev.key === 'ArrowDown') next = at < 0 ? 0 : (at + 1) % items.length;
    else if (ev.key === 'ArrowUp') next = at < 0 ? items.length - 1 : (at - 1 + items.length) % items.length;
    else if (ev.key === 'Home') next = 0;
    else if (ev.key === 'End') next = items.length - 1;
    if (next < 0 || !items[next]) return;
    ev.preventDefault();
    items[next]!.focus();
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function icon(d: string): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(SVG_NS, 'path');
  p.setAttribute('d', d);
  svg.append(p);
  return svg;
}

export function chevron(): SVGSVGElement {
  return icon('M4 6l4 4 4-4');
}

export function closeIcon(): SVGSVGElement {
  return icon('M4 4l8 8M12 4l-8 8');
}
