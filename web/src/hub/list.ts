// The inbox's list (hub/main.ts feeds it from the model, inbox.ts): a row
// per session, those that wait for someone first, each with what it waits
// for and the answer it takes there (Allow and Deny at a permission whose
// dialog agentmux knows, else a reply), and Open, a link to the session in
// its workspace's own UI (the hub never shows a terminal). A table's row
// on a desktop, a card on a phone (hub.css).
//
// Rows are kept by session across the hub's pushes and redrawn only where
// they changed: a reply being written keeps its text and the focus while
// its session still asks the same thing.

import { showAgo } from '../shared/ages';
import { agentIcon } from '../shared/avatars';
import { h } from '../shared/dom';
import { problemOf, sessionKey, waitIdentity, waitOf } from './inbox';
import type { Answer, InboxSession, InboxWorkspace } from './types';

export interface InboxListDeps {
  /** Sends an answer to the session's workspace; resolves true once it took it. */
  answer(s: InboxSession, a: Answer): Promise<boolean>;
}

export class InboxList {
  private readonly rows = new Map<string, Row>();

  constructor(
    private readonly list: HTMLElement,
    private readonly problems: HTMLElement,
    private readonly deps: InboxListDeps,
  ) {}

  /** Shows these sessions, in this order. */
  render(sessions: readonly InboxSession[]): void {
    const keep = new Set<string>();
    const els: HTMLElement[] = [];
    for (const s of sessions) {
      const key = sessionKey(s);
      keep.add(key);
      let row = this.rows.get(key);
      if (!row) {
        row = new Row(this.deps);
        this.rows.set(key, row);
      }
      row.update(s);
      els.push(row.el);
    }
    for (const [key, row] of this.rows) {
      if (!keep.has(key)) {
        row.el.remove();
        this.rows.delete(key);
      }
    }
    // Moved only when the order changed: a row taken out of the page
    // loses the focus, which is then given back.
    const current = [...this.list.children];
    if (current.length !== els.length || current.some((el, i) => el !== els[i])) {
      const focused = document.activeElement instanceof HTMLElement && this.list.contains(document.activeElement) ? document.activeElement : null;
      const range = focused instanceof HTMLInputElement ? [focused.selectionStart, focused.selectionEnd] as const : null;
      this.list.replaceChildren(...els);
      if (focused?.isConnected && document.activeElement !== focused) {
        focused.focus({ preventScroll: true });
        if (range && focused instanceof HTMLInputElement) focused.setSelectionRange(range[0], range[1]);
      }
    }
  }

  /** The workspaces the hub cannot reach, each with why, over the list. */
  renderProblems(workspaces: readonly InboxWorkspace[]): void {
    const down = workspaces.filter((w) => !w.reachable);
    this.problems.hidden = down.length === 0;
    this.problems.replaceChildren(...down.map((w) => {
      const p = problemOf(w);
      return h(
        'li',
        { class: 'hub-problem', 'data-testid': 'hub-workspace-problem', 'data-workspace': w.url, 'data-kind': p.kind, title: `${w.url}\n${p.advice}` },
        h('span', { class: 'banner-icon', 'aria-hidden': 'true' }),
        h('strong', { class: 'hub-problem-name', text: w.name }),
        h('span', { class: 'hub-problem-kind', 'data-testid': 'hub-workspace-problem-kind', text: p.kind }),
        h('span', { class: 'hub-problem-detail', 'data-testid': 'hub-workspace-problem-detail', text: p.detail || p.advice }),
      );
    }));
  }
}

/** One session's row. Its cells stay; what they say is redrawn when it changes. */
class Row {
  readonly el: HTMLLIElement;
  private readonly statusCell = h('div', { class: 'hub-cell hub-cell-status' });
  private readonly whoCell = h('div', { class: 'hub-cell hub-cell-who' });
  private readonly waitCell = h('div', { class: 'hub-cell hub-cell-wait' });
  private readonly branchCell = h('div', { class: 'hub-cell hub-cell-branch' });
  private readonly ageCell = h('div', { class: 'hub-cell hub-cell-age' });
  private readonly openCell = h('div', { class: 'hub-cell hub-cell-open' });
  private session: InboxSession | null = null;
  /** What the row shows, to redraw only on a change. */
  private shown = '';
  /** The wait the answer controls are for: kept (with a reply's text) while it holds. */
  private waitId: string | null = null;
  private waitText: HTMLElement | null = null;
  private buttons: HTMLButtonElement[] = [];
  /** An answer on its way: the row's buttons wait for it. */
  private busy = false;

  constructor(private readonly deps: InboxListDeps) {
    this.el = h('li', { class: 'hub-row', 'data-testid': 'hub-session' },
      this.statusCell, this.whoCell, this.waitCell, this.branchCell, this.ageCell, this.openCell);
  }

  update(s: InboxSession): void {
    this.session = s;
    const shown = JSON.stringify(s);
    if (shown === this.shown) return;
    this.shown = shown;
    const el = this.el;
    el.dataset.workspace = s.workspace;
    el.dataset.sessionId = s.id;
    el.dataset.status = s.status;
    el.dataset.needsInput = String(s.needsInput);
    el.setAttribute('aria-label', `${s.name} in ${s.workspaceName}: ${s.needsInput ? 'needs you' : s.status}`);

    this.statusCell.replaceChildren(h('span', { class: `badge badge-${s.status}`, 'data-testid': 'hub-session-status', text: s.status }));
    this.whoCell.replaceChildren(
      h('span', { class: 'hub-name', 'data-testid': 'hub-session-name', text: s.name, title: s.name }),
      h('span', { class: 'hub-where' },
        h('span', { class: 'hub-workspace', 'data-testid': 'hub-session-workspace', text: s.workspaceName, title: s.workspace }),
        h('span', { class: 'hub-agent', 'data-testid': 'hub-session-agent', title: `Agent: ${s.agent}` }, agentIcon(), s.agent)),
    );
    this.renderWait(s);
    const added = s.additions ?? 0;
    const removed = s.deletions ?? 0;
    this.branchCell.replaceChildren(
      s.branch ? h('span', { class: 'tab-branch hub-branch', 'data-testid': 'hub-session-branch', text: s.branch, title: s.branch }) : '',
      added || removed
        ? h('span', { class: 'hub-diff', 'data-testid': 'hub-session-diff', 'data-additions': added, 'data-deletions': removed, title: `${added} lines added, ${removed} deleted` },
          h('span', { class: 'tab-diff-add', text: `+${added}` }), ' ', h('span', { class: 'tab-diff-del', text: `−${removed}` }))
        : '',
    );
    const age = h('span', { class: 'hub-age', 'data-testid': 'hub-session-activity' });
    const at = Date.parse(s.lastActivityAt);
    if (Number.isFinite(at)) showAgo(age, at);
    this.ageCell.replaceChildren(age);
    const open = h('a', {
      class: 'btn btn-ghost hub-open',
      'data-testid': 'hub-open',
      href: s.openUrl,
      target: '_blank',
      rel: 'noopener noreferrer',
      title: `Open ${s.name} in ${s.workspaceName}'s own page`,
    }, 'Open', openIcon());
    this.openCell.replaceChildren(open);
  }

  /** What the session waits for and its answer: kept as they are while the same wait holds. */
  private renderWait(s: InboxSession): void {
    const id = waitIdentity(s);
    const wait = waitOf(s);
    this.el.dataset.wait = wait?.kind ?? '';
    if (id !== null && id === this.waitId && this.waitText && wait) {
      this.waitText.textContent = wait.text;
      this.sync();
      return;
    }
    this.waitId = id;
    this.buttons = [];
    if (!wait) {
      this.waitText = null;
      const reason = s.status === 'limited' && s.reason ? s.reason : '';
      this.waitCell.replaceChildren(reason ? h('span', { class: 'hub-quiet', text: reason }) : '');
      return;
    }
    this.waitText = h('p', { class: `hub-wait hub-wait-${wait.kind}`, 'data-testid': 'hub-session-waits', text: wait.text });
    let actions: HTMLElement;
    // Every row has its Allow: each says whose it is to a screen reader.
    const whose = `${s.name} in ${s.workspaceName}`;
    if (wait.kind === 'permission' && wait.canAllow) {
      const tool = s.permission?.tool ?? 'it';
      actions = h('div', { class: 'hub-actions' },
        this.button('Deny', `Deny ${tool} to ${whose}`, 'btn btn-ghost', 'hub-deny', () => this.send('deny')),
        this.button('Allow', `Allow ${tool} for ${whose}`, 'btn btn-primary', 'hub-allow', () => this.send('allow')));
    } else if (wait.kind === 'permission') {
      // Whose dialog agentmux has not seen: its keys would be a guess.
      actions = h('div', { class: 'hub-actions' }, h('span', { class: 'hub-quiet', text: 'Answer it in its workspace (Open).' }));
    } else {
      actions = this.replyForm(whose);
    }
    this.waitCell.replaceChildren(this.waitText, actions);
    this.sync();
  }

  private button(label: string, name: string, cls: string, testid: string, onClick: () => void): HTMLButtonElement {
    const b = h('button', { class: cls, type: 'button', 'data-testid': testid, 'aria-label': name }, label);
    b.addEventListener('click', onClick);
    this.buttons.push(b);
    return b;
  }

  /** A reply, which the workspace types as the text, then Enter. */
  private replyForm(whose: string): HTMLFormElement {
    const input = h('input', {
      class: 'answer-reply hub-reply',
      type: 'text',
      'data-testid': 'hub-reply',
      'aria-label': `Reply to ${whose}`,
      placeholder: 'Reply…',
      autocomplete: 'off',
      enterkeyhint: 'send',
    });
    const send = h('button', { class: 'btn btn-primary', type: 'submit', 'data-testid': 'hub-send', 'aria-label': `Send the reply to ${whose}` }, 'Send');
    this.buttons.push(send);
    const form = h('form', { class: 'hub-actions hub-reply-form', novalidate: true }, input, send);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.send({ text: input.value }).then((ok) => {
        if (ok) input.value = '';
      });
    });
    return form;
  }

  private async send(a: Answer): Promise<boolean> {
    const s = this.session;
    if (!s || this.busy) return false;
    this.busy = true;
    this.sync();
    try {
      return await this.deps.answer(s, a);
    } finally {
      this.busy = false;
      this.sync();
    }
  }

  private sync(): void {
    for (const b of this.buttons) b.disabled = this.busy;
    this.el.toggleAttribute('aria-busy', this.busy);
  }
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function openIcon(): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(SVG_NS, 'path');
  p.setAttribute('d', 'M6.5 3.5h-3v9h9v-3M9 2.5h4.5V7M13.5 2.5L7.5 8.5');
  svg.append(p);
  return svg;
}
