// The tab bar (one tab per session, kept in step with the store), the
// new-session dialog and the close confirmation, which for a session with
// a git worktree offers to remove the worktree too. When the server keeps
// as many sessions as it may (SESSION_STORE_FULL), the new-session dialog
// offers to delete the ended ones, after a confirmation in place.

import { api, ApiError } from '../shared/api';
import { formatTotals } from '../models/diffs';
import { ownsDiff, type DiffSummaries } from '../models/diffs';
import { anyLines, overlapText, type Overlaps } from '../models/overlaps';
import { byId, h } from '../shared/dom';
import { renderTabPeople } from './participants';
import type { Participants } from '../models/participants';
import { isRunning, startedByTitle, type SessionEntry, type SessionStore } from '../models/store';
import { agentIcon } from '../shared/avatars';
import type { ToastKind } from '../shared/toast';
import type { Worktree } from '../shared/types';
import { checkFailed, checkMark, checkSummary, checkWords } from '../shared/checks';
import { limitDetails, nextLimitChange, statusShown, usageDetails, usageFigure, usageLevel, usageSummary } from '../models/usage';

export interface TabBarDeps {
  store: SessionStore;
  canAct(): boolean;
  /** The user picked a session (a click: focusing its terminal is fine). */
  onSelect(id: string): void;
  onCreated(id: string): void;
  /** The user clicked a tab's "+N −M": show that session's changes. */
  onShowChanges(id: string): void;
  /** Each session's latest session.diff, for the tab's "+N −M". */
  diffs: DiffSummaries;
  /** Who is in each session: the others show on its tab. */
  people: Participants;
  /** The sessions that change the same files as another: a mark on their tabs. */
  overlaps: Overlaps;
  /** This page's connection id (client.welcome), left off the tabs. */
  meId(): string | null;
  toast(message: string, kind?: ToastKind): void;
}

export class TabBar {
  private readonly bar = byId('tabs');
  private readonly newBtn = byId<HTMLButtonElement>('new-session');
  private readonly tabs = new Map<string, HTMLElement>();
  /** Each tab's tooltip but its overlap, which composeTitle puts between. */
  private readonly titles = new WeakMap<HTMLElement, { head: string[]; tail: string[] }>();
  private readonly dialog = byId<HTMLDialogElement>('new-session-dialog');
  private readonly form = byId<HTMLFormElement>('new-session-form');
  private readonly formError = byId('new-session-error');
  private readonly createBtn = byId<HTMLButtonElement>('create-session');
  private readonly storeFull = byId('store-full');
  private readonly deleteEndedBtn = byId<HTMLButtonElement>('delete-ended');
  private readonly deleteEndedConfirm = byId('delete-ended-confirm');
  private readonly deleteEndedText = byId('delete-ended-text');
  private readonly deleteEndedYes = byId<HTMLButtonElement>('delete-ended-yes');
  private readonly deleteEndedNo = byId<HTMLButtonElement>('delete-ended-no');
  /**
   * The ended sessions the user was asked about, while the in-place
   * confirmation shows: only these are deleted, and only if the server
   * still says they do not run.
   */
  private endedAsked: string[] | null = null;
  /** The ended sessions are being deleted (then the create is retried). */
  private deletingEnded = false;
  private readonly confirm = byId<HTMLDialogElement>('confirm-close');
  private readonly confirmText = byId('confirm-close-text');
  private readonly confirmYes = byId<HTMLButtonElement>('confirm-yes');
  private readonly worktreeField = byId('remove-worktree-field');
  private readonly worktreeBox = byId<HTMLInputElement>('remove-worktree');
  private readonly worktreeLabel = byId('remove-worktree-label');
  private readonly confirmError = byId('confirm-close-error');
  private readonly forceBtn = byId<HTMLButtonElement>('remove-worktree-force');
  /** The session the close confirmation is about. */
  private closingId: string | null = null;
  /** The selected session and the number of tabs when the strip last scrolled to it. */
  private revealed: { id: string | null; count: number } = { id: null, count: 0 };
  /** The frame that measures the strip, when one is due. */
  private measureFrame: number | undefined;
  private countdownTimer: number | undefined;
  /** The last removal was refused for uncommitted changes: offer to force it. */
  private worktreeDirty = false;
  private readonly branchField = byId('worktree-field');
  private readonly branchUnavailable = byId('worktree-unavailable');
  /** What the page says when the workspace is no repository: restored after a refusal is gone. */
  private readonly notRepositoryText = this.branchUnavailable.textContent ?? '';

  constructor(private readonly deps: TabBarDeps) {
    this.newBtn.addEventListener('click', () => this.openNewDialog());
    byId('empty-new-session').addEventListener('click', () => this.openNewDialog());
    this.bar.addEventListener('click', (ev) => this.onBarClick(ev));
    this.bar.addEventListener('keydown', (ev) => this.onBarKey(ev));
    this.bar.addEventListener('auxclick', (ev) => {
      // Middle click closes, as in a browser.
      const tab = (ev.target as Element).closest<HTMLElement>('[data-testid=tab]');
      if (ev.button === 1 && tab?.dataset.sessionId) {
        ev.preventDefault();
        this.askClose(tab.dataset.sessionId);
      }
    });
    // A vertical wheel scrolls the tabs sideways.
    this.bar.addEventListener('wheel', (ev) => {
      if (ev.deltaX === 0 && ev.deltaY !== 0 && this.bar.scrollWidth > this.bar.clientWidth) {
        this.bar.scrollLeft += ev.deltaY;
        ev.preventDefault();
      }
    }, { passive: false });
    this.bar.addEventListener('scroll', () => this.markOverflow(), { passive: true });
    new ResizeObserver(() => {
      // The window changed: the selected tab stays in view.
      this.revealActive();
      this.markOverflow();
    }).observe(this.bar);

    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.create();
    });
    byId('new-session-cancel').addEventListener('click', () => this.dialog.close());
    this.deleteEndedBtn.addEventListener('click', () => this.askDeleteEnded());
    this.deleteEndedNo.addEventListener('click', () => {
      this.endedAsked = null;
      this.renderStoreFull();
      this.deleteEndedBtn.focus();
    });
    this.deleteEndedYes.addEventListener('click', () => void this.deleteEnded());
    byId('confirm-no').addEventListener('click', () => this.confirm.close());
    this.confirmYes.addEventListener('click', () => this.confirmClose(false));
    this.forceBtn.addEventListener('click', () => this.confirmClose(true));
    this.worktreeBox.addEventListener('change', () => this.renderConfirmActions());
    for (const d of [this.dialog, this.confirm]) {
      // A click on the backdrop (the dialog box itself, outside its content) closes it.
      d.addEventListener('click', (ev) => {
        if (ev.target === d) d.close();
      });
    }
    deps.store.subscribe(() => this.render());
    deps.diffs.subscribe((id) => {
      const el = this.tabs.get(id);
      if (el) this.updateDiff(el, id);
    });
    deps.overlaps.subscribe(() => {
      for (const [id, el] of this.tabs) this.updateOverlap(el, id);
    });
    deps.people.subscribe((id) => {
      const el = this.tabs.get(id);
      if (el) this.updatePeople(el, id);
    });
    this.render();
  }

  /**
   * Enables "+" or disables it with the reason as its tooltip. A note
   * (the server keeps all the sessions it may) goes in the tooltip of an
   * enabled "+": the dialog is where the way out, deleting ended
   * sessions, is offered, so it must still open.
   */
  setNewSession(disabledReason: string | null, note: string | null = null): void {
    this.newBtn.disabled = disabledReason !== null;
    this.newBtn.title = disabledReason ?? (note ? `New session\n${note}` : 'New session');
    this.newBtn.setAttribute('aria-label', disabledReason ? `New session (unavailable: ${disabledReason})` : 'New session');
    byId<HTMLButtonElement>('empty-new-session').disabled = disabledReason !== null;
    byId('new-session-reason').textContent = disabledReason ?? '';
  }

  render(): void {
    const { store } = this.deps;
    const entries = store.all();
    for (const [id, el] of this.tabs) {
      if (!store.has(id)) {
        el.remove();
        this.tabs.delete(id);
      }
    }
    let prev: Element | null = null;
    for (const e of entries) {
      let el = this.tabs.get(e.session.id);
      if (!el) {
        el = this.createTab(e);
        this.tabs.set(e.session.id, el);
      }
      this.updateTab(el, e, e.session.id === store.activeId);
      // Keep DOM order equal to the store's (creation) order.
      const want: Element | null = prev ? prev.nextElementSibling : this.bar.firstElementChild;
      if (want !== el) this.bar.insertBefore(el, want);
      prev = el;
    }
    this.measureSoon();
    // A limited session's countdown is redrawn when its minute changes,
    // by a timer that runs only while one is shown.
    window.clearTimeout(this.countdownTimer);
    const wait = nextLimitChange(entries.map((e) => e.session), Date.now());
    this.countdownTimer = wait === null ? undefined : window.setTimeout(() => this.render(), wait);
    const canAct = this.deps.canAct();
    for (const btn of this.bar.querySelectorAll<HTMLButtonElement>('[data-testid=tab-close]')) {
      const id = btn.closest<HTMLElement>('[data-testid=tab]')?.dataset.sessionId;
      btn.disabled = !canAct || (id ? store.get(id)?.closing === true : false);
    }
    // The session being asked about went away (closed elsewhere): nothing left to confirm.
    if (this.confirm.open && this.closingId && !store.has(this.closingId)) this.confirm.close();
    this.renderStoreFull();
  }

  /**
   * Reveals the selected tab and marks the strip's overflow once per
   * frame, after the page's other changes: measuring here, between the
   * writes of a store change's other views, forced extra style and layout
   * passes (a reload's session list paid several before its first screen).
   */
  private measureSoon(): void {
    if (this.measureFrame !== undefined) return;
    this.measureFrame = requestAnimationFrame(() => {
      this.measureFrame = undefined;
      // Scroll to the selected tab when the selection or the set of tabs
      // changed, not on every status update: the user may be scrolling the strip.
      const { activeId } = this.deps.store;
      if (this.revealed.id !== activeId || this.revealed.count !== this.tabs.size) this.revealActive();
      this.markOverflow();
    });
  }

  /**
   * Scrolls the strip (only the strip) so that the selected tab shows
   * whole, clear of the faded edges (the strip's scroll-padding).
   */
  private revealActive(): void {
    const id = this.deps.store.activeId;
    this.revealed = { id, count: this.tabs.size };
    const el = id ? this.tabs.get(id) : undefined;
    if (!el) return;
    const bar = this.bar.getBoundingClientRect();
    const tab = el.getBoundingClientRect();
    const pad = parseFloat(getComputedStyle(this.bar).scrollPaddingInlineStart) || 0;
    if (tab.left < bar.left + pad) this.bar.scrollLeft -= bar.left + pad - tab.left;
    else if (tab.right > bar.right - pad) this.bar.scrollLeft += Math.min(tab.right - (bar.right - pad), tab.left - (bar.left + pad));
  }

  /** Fades the edge of the tab strip where more tabs are scrolled out of view. */
  private markOverflow(): void {
    const { scrollLeft, scrollWidth, clientWidth } = this.bar;
    this.bar.classList.toggle('more-left', scrollLeft > 1);
    this.bar.classList.toggle('more-right', scrollLeft + clientWidth < scrollWidth - 1);
  }

  private createTab(e: SessionEntry): HTMLElement {
    const name = h('span', { class: 'tab-name', 'data-testid': 'tab-name' });
    const branch = h('span', { class: 'tab-branch', 'data-testid': 'tab-branch', hidden: true });
    // The name and the branch share a line that keeps the name's room: the
    // branch shows beside a name only where it fits (app.css, .tab-label).
    const label = h('span', { class: 'tab-label' }, name, branch);
    // A session an agent started (startedBy): a small mark beside the
    // label, not in it, so that the name keeps its room (.tab-label's
    // min-width); whose agent it was is in its tooltip.
    const started = h('span', { class: 'tab-started', 'data-testid': 'tab-started-by', role: 'img', hidden: true }, agentIcon());
    const people = h('span', { class: 'people tab-people', 'data-testid': 'tab-people', hidden: true });
    // A control of its own: the rest of the tab selects the session, and
    // only this opens its changes (a click in a tab's middle landed on the
    // counts when they were part of the tab's face).
    const diff = h('button', { type: 'button', class: 'tab-diff', 'data-testid': 'tab-diff', hidden: true },
      h('span', { class: 'tab-diff-add' }), h('span', { class: 'tab-diff-del' }));
    // Another session changes the same files: a mark, its tooltip naming
    // whom and which (models/overlaps.ts).
    const overlap = h('span', { class: 'tab-overlap', 'data-testid': 'tab-overlap', role: 'img', hidden: true, text: '\u26a0' });
    // What the agent reported it spends: the context used and the cost.
    // They share a row with the label and show only where the name keeps
    // its room beside them, each part whole or not at all (app.css,
    // .tab-main).
    const usage = h('span', { class: 'tab-usage', 'data-testid': 'tab-usage', hidden: true },
      h('span', { class: 'tab-usage-context', 'data-testid': 'tab-usage-context' }),
      h('span', { class: 'tab-usage-spend', 'data-testid': 'tab-usage-spend' }));
    // The overlap mark shares the row too, after the figure, and gives way
    // first: the counts are underlined all the same (app.css), and the
    // tab's tooltip says whom and which.
    const main = h('span', { class: 'tab-main' }, label, usage, overlap);
    // The check of the last turn: whether the agent's "done" held.
    const check = h('span', { class: 'tab-check', 'data-testid': 'tab-check', hidden: true });
    // A usage limit's countdown to its reset, whatever room the tab has:
    // where the tab is short of room its status is only a dot.
    const limit = h('span', { class: 'tab-limit', 'data-testid': 'tab-limit', hidden: true });
    const status = h('span', { class: 'badge', 'data-testid': 'tab-status' });
    const close = h('button', { type: 'button', class: 'tab-close', 'data-testid': 'tab-close', text: '×' });
    return h('div', { class: 'tab', role: 'tab', 'data-testid': 'tab', 'data-session-id': e.session.id }, started, main, people, diff, check, limit, status, close);
  }

  private updateTab(el: HTMLElement, e: SessionEntry, selected: boolean): void {
    const s = e.session;
    el.dataset.status = s.status;
    el.setAttribute('aria-selected', String(selected));
    el.tabIndex = selected ? 0 : -1;
    el.classList.toggle('closing', e.closing);
    if (e.warning) el.dataset.warning = e.warning.severity;
    else delete el.dataset.warning;
    const starter = this.deps.store.starterOf(s);
    const startedBy = starter ? startedByTitle(starter) : '';
    // The tooltip's parts; the overlap goes between them (composeTitle).
    this.titles.set(el, {
      head: [
        `${s.name} · ${s.status}${e.reason ? ` (${e.reason})` : ''}`,
        startedBy,
        s.worktree ? `worktree ${s.worktree.path} on branch ${s.worktree.branch}` : '',
        `${s.agent} in ${s.cwd}`,
      ],
      tail: [
        // Said here too: where the tab is short of room its figure gives way.
        s.usage ? usageSummary(s.usage) : '',
        e.warning ? `${e.warning.severity === 'error' ? 'Error' : 'Warning'}: ${e.warning.message}` : '',
      ],
    });
    const name = el.querySelector<HTMLElement>('[data-testid=tab-name]')!;
    if (name.textContent !== s.name) name.textContent = s.name;
    const started = el.querySelector<HTMLElement>('[data-testid=tab-started-by]')!;
    started.hidden = !starter;
    if (starter) {
      started.dataset.startedBy = starter.id;
      started.title = startedBy;
      started.setAttribute('aria-label', startedBy);
    }
    const branch = el.querySelector<HTMLElement>('[data-testid=tab-branch]')!;
    const branchName = s.worktree?.branch ?? '';
    if (branch.textContent !== branchName) branch.textContent = branchName;
    branch.hidden = !branchName;
    this.updateDiff(el, s.id);
    this.updateOverlap(el, s.id);
    this.updateUsage(el, e);
    this.updatePeople(el, s.id);
    const check = el.querySelector<HTMLElement>('[data-testid=tab-check]')!;
    check.hidden = !s.check;
    if (s.check) {
      check.dataset.status = s.check.status;
      check.textContent = checkMark(s.check.status);
      const summary = checkFailed(s.check.status) ? checkSummary(s.check.output) : '';
      check.title = `Turn ${s.check.checkpoint}: ${checkWords(s.check)}${summary ? `\n${summary}` : ''}${s.check.sent ? '\nSent to the agent' : ''}${s.check.held ? '\nNot sent: three failures in a row were' : ''}`;
      check.setAttribute('aria-label', checkWords(s.check));
    }
    // The counts are in the tab order of the selected tab only: the arrows move between tabs.
    el.querySelector<HTMLElement>('[data-testid=tab-diff]')!.tabIndex = selected ? 0 : -1;
    const badge = el.querySelector<HTMLElement>('[data-testid=tab-status]')!;
    const now = Date.now();
    const shown = statusShown(s, now);
    const limit = el.querySelector<HTMLElement>('[data-testid=tab-limit]')!;
    limit.hidden = !s.limit || s.status !== 'limited';
    if (s.limit && !limit.hidden) {
      const countdown = shown.replace(/^limited · /, '');
      setTextIfChanged(limit, countdown === 'limited' ? 'limit' : `limit ${countdown}`);
      limit.title = limitDetails(s.limit, now);
    }
    if (badge.textContent !== shown) badge.textContent = shown;
    badge.className = `badge badge-${s.status}`;
    // Where the tab is short of room the status is a dot (app.css): the word stays in its tooltip.
    badge.title = s.limit ? `Status: ${shown}\n${limitDetails(s.limit, now)}` : `Status: ${s.status}`;
    const close = el.querySelector<HTMLElement>('[data-testid=tab-close]')!;
    close.setAttribute('aria-label', `Close ${s.name}`);
    close.title = `Close ${s.name}`;
    let dot = el.querySelector('[data-testid=tab-dot]');
    if (e.needsInput && !dot) {
      dot = h('span', { class: 'tab-dot', 'data-testid': 'tab-dot', title: 'Needs your input', 'aria-label': 'needs input' });
      el.prepend(dot);
    } else if (!e.needsInput && dot) {
      dot.remove();
    }
  }

  /**
   * What the session's agent reported it spends, short: "ctx 12%" and
   * "$0.42" (its tokens without a cost), every figure in the tooltip;
   * hidden until the agent reports.
   */
  private updateUsage(el: HTMLElement, e: SessionEntry): void {
    const span = el.querySelector<HTMLElement>('[data-testid=tab-usage]')!;
    const u = e.session.usage;
    const f = u ? usageFigure(u) : { context: '', spend: '' };
    span.hidden = !f.context && !f.spend;
    const [context, spend] = span.children as HTMLCollectionOf<HTMLElement>;
    if (!u || span.hidden || !context || !spend) {
      span.removeAttribute('title');
      return;
    }
    if (context.textContent !== f.context) context.textContent = f.context;
    if (spend.textContent !== f.spend) spend.textContent = f.spend;
    context.hidden = !f.context;
    spend.hidden = !f.spend;
    // A context nearly full reads as the account's windows do: amber, then red.
    if (u.contextPercent !== undefined) context.dataset.level = usageLevel(u.contextPercent);
    else delete context.dataset.level;
    span.title = usageDetails(u);
  }

  /** The others in the session (the server lists those attached to it). */
  private updatePeople(el: HTMLElement, id: string): void {
    const span = el.querySelector<HTMLElement>('[data-testid=tab-people]');
    if (span) renderTabPeople(span, this.deps.people, id, this.deps.meId());
  }

  /**
   * The mark of a session whose changes overlap another's: which sessions
   * and files in its tooltip; data-lines when their lines meet.
   */
  private updateOverlap(el: HTMLElement, id: string): void {
    const mark = el.querySelector<HTMLElement>('[data-testid=tab-overlap]');
    if (!mark) return;
    const withs = this.deps.overlaps.of(id);
    mark.hidden = withs.length === 0;
    if (withs.length === 0) {
      mark.removeAttribute('title');
      mark.removeAttribute('aria-label');
      delete mark.dataset.lines;
      delete mark.dataset.with;
      delete el.dataset.overlap;
      this.composeTitle(el);
      return;
    }
    const nameOf = (other: string) => this.deps.store.get(other)?.session.name ?? other.slice(0, 8);
    const text = overlapText(withs, nameOf).join('\n');
    const lines = anyLines(withs);
    mark.dataset.with = withs.map((w) => w.other).join(' ');
    if (lines) mark.dataset.lines = '';
    else delete mark.dataset.lines;
    el.dataset.overlap = lines ? 'lines' : 'files';
    mark.title = `${lines ? 'Conflicting changes' : 'Overlapping changes'}.\n${text}`;
    mark.setAttribute('aria-label', mark.title);
    this.composeTitle(el);
  }

  /**
   * The tab's tooltip: what the session is, then its overlap (said here
   * too: where the tab is short of room the mark gives way), then its
   * figures and warning.
   */
  private composeTitle(el: HTMLElement): void {
    const parts = this.titles.get(el);
    if (!parts) return;
    const mark = el.querySelector<HTMLElement>('[data-testid=tab-overlap]');
    const overlap = mark && !mark.hidden ? mark.title : '';
    el.title = [...parts.head, overlap, ...parts.tail].filter(Boolean).join('\n');
  }

  /**
   * The session's "+N −M" from its latest session.diff, when it is its own
   * (a worktree's: the workspace's shows once, in the status bar); hidden
   * when nothing changed.
   */
  private updateDiff(el: HTMLElement, id: string): void {
    const span = el.querySelector<HTMLElement>('[data-testid=tab-diff]');
    if (!span) return;
    const entry = this.deps.store.get(id);
    const m = entry && ownsDiff(entry.session) ? this.deps.diffs.get(id) : undefined;
    const text = formatTotals(m);
    span.hidden = !text;
    if (!entry || !m || !text) {
      span.removeAttribute('title');
      span.removeAttribute('aria-label');
      delete span.dataset.additions;
      delete span.dataset.deletions;
      for (const c of span.children) c.textContent = '';
      return;
    }
    span.dataset.additions = String(m.additions);
    span.dataset.deletions = String(m.deletions);
    const [add, del] = span.children;
    if (add) add.textContent = `+${m.additions}`;
    if (del) del.textContent = ` \u2212${m.deletions}`;
    const files = m.truncated ? `${m.files.length}+ files` : `${m.files.length} file${m.files.length === 1 ? '' : 's'}`;
    const lines = `${m.additions} line${m.additions === 1 ? '' : 's'} added, ${m.deletions} removed`;
    span.title = `${files} changed: ${lines}. Click to see the changes (Alt+4).`;
    span.setAttribute('aria-label', `Show the changes of ${entry.session.name}: ${files}, ${lines}`);
  }

  private onBarClick(ev: MouseEvent): void {
    const target = ev.target as Element;
    const tab = target.closest<HTMLElement>('[data-testid=tab]');
    const id = tab?.dataset.sessionId;
    if (!id) return;
    if (target.closest('[data-testid=tab-close]')) {
      ev.stopPropagation();
      this.askClose(id);
      return;
    }
    this.deps.onSelect(id);
    if (target.closest('[data-testid=tab-diff]')) this.deps.onShowChanges(id);
  }

  private onBarKey(ev: KeyboardEvent): void {
    const ids = this.deps.store.all().map((e) => e.session.id);
    const cur = ids.indexOf(this.deps.store.activeId ?? '');
    let next = -1;
    if (ev.key === 'ArrowRight') next = (cur + 1) % ids.length;
    else if (ev.key === 'ArrowLeft') next = (cur - 1 + ids.length) % ids.length;
    else if (ev.key === 'Home') next = 0;
    else if (ev.key === 'End') next = ids.length - 1;
    else if (ev.key === 'Delete' && cur >= 0) {
      this.askClose(ids[cur]!);
      return;
    }
    if (next < 0 || !ids[next]) return;
    ev.preventDefault();
    this.deps.store.select(ids[next]!);
    this.tabs.get(ids[next]!)?.focus(); // roving focus within the tab list, from a key press
  }

  /**
   * Whether the workspace is a git repository git will work in (GET
   * /api/config): otherwise the dialog offers no worktree, and says why,
   * instead of letting git's error come back. refusal is the server's
   * sentence when git refuses the workspace for its owner, which says
   * what to do; without it the workspace is no repository at all.
   */
  setWorktreesAvailable(available: boolean, refusal = ''): void {
    this.branchField.hidden = !available;
    this.branchUnavailable.hidden = available;
    this.branchUnavailable.textContent = refusal
      ? `Worktrees cannot be made here: ${refusal}${/[.!?]$/.test(refusal) ? '' : '.'}`
      : this.notRepositoryText;
    this.branchUnavailable.dataset.kind = refusal ? 'untrusted-repository' : 'not-a-repository';
  }

  openNewDialog(): void {
    if (this.newBtn.disabled) return;
    this.form.reset();
    this.formError.hidden = true;
    this.hideStoreFull();
    this.createBtn.disabled = false;
    this.createBtn.textContent = 'Create';
    this.dialog.showModal(); // the name field has autofocus
  }

  private async create(): Promise<void> {
    const data = new FormData(this.form);
    const name = String(data.get('name') ?? '').trim();
    const branch = this.branchField.hidden ? '' : String(data.get('branch') ?? '').trim();
    const req: { name?: string; worktree?: { branch: string } } = {};
    if (name) req.name = name;
    if (branch) req.worktree = { branch };
    this.createBtn.disabled = true;
    this.createBtn.textContent = 'Creating…';
    this.formError.hidden = true;
    this.hideStoreFull();
    try {
      const s = await api.createSession(req);
      this.deps.store.upsert(s);
      this.dialog.close();
      this.deps.onCreated(s.id);
    } catch (err) {
      const full = err instanceof ApiError && err.code === 'SESSION_STORE_FULL';
      this.formError.textContent = full ? describeStoreFull(err, this.endedSessions().length) : describeCreateError(err);
      this.formError.hidden = false;
      if (full) {
        this.storeFull.hidden = false;
        this.renderStoreFull();
      }
    } finally {
      this.createBtn.disabled = false;
      this.createBtn.textContent = 'Create';
    }
  }

  /** The sessions whose agent does not run (and that are not being closed): those the store-full offer deletes. */
  private endedSessions(): SessionEntry[] {
    return this.deps.store.all().filter((e) => !isRunning(e.session) && !e.closing);
  }

  private hideStoreFull(): void {
    this.storeFull.hidden = true;
    this.endedAsked = null;
    this.renderStoreFull();
  }

  /**
   * The store-full offer, kept in step with the store: the count follows
   * sessions that end or go meanwhile, and the question goes when none of
   * the sessions asked about is left to delete.
   */
  private renderStoreFull(): void {
    if (this.storeFull.hidden) return;
    const ended = this.endedSessions();
    const n = ended.length;
    const canAct = this.deps.canAct();
    this.deleteEndedBtn.textContent = `Delete ${n} ended session${n === 1 ? '' : 's'}`;
    this.deleteEndedBtn.title = 'Delete the sessions whose agent has ended, to make room for a new one. Running sessions are kept.';
    this.deleteEndedBtn.hidden = n === 0 || this.endedAsked !== null;
    this.deleteEndedBtn.disabled = !canAct || this.deletingEnded;
    if (this.endedAsked && !this.deletingEnded && !this.endedAsked.some((id) => ended.some((e) => e.session.id === id))) {
      this.endedAsked = null;
      this.deleteEndedBtn.hidden = n === 0;
    }
    this.deleteEndedConfirm.hidden = this.endedAsked === null;
    this.deleteEndedYes.disabled = !canAct || this.deletingEnded;
    this.deleteEndedNo.disabled = this.deletingEnded;
    this.deleteEndedYes.textContent = this.deletingEnded ? 'Deleting…' : 'Delete and create';
  }

  /** The first click: asks, in place, which sessions go and what is lost. */
  private askDeleteEnded(): void {
    const ended = this.endedSessions();
    if (ended.length === 0 || !this.deps.canAct()) return;
    this.endedAsked = ended.map((e) => e.session.id);
    const shown = ended.slice(0, 5);
    const names: (Node | string)[] = [];
    shown.forEach((e, i) => {
      if (i > 0) names.push(i === shown.length - 1 && ended.length === shown.length ? ' and ' : ', ');
      names.push(h('strong', { text: e.session.name }));
    });
    if (ended.length > shown.length) names.push(` and ${ended.length - shown.length} more`);
    const n = ended.length;
    const worktrees = ended.some((e) => e.session.worktree);
    this.deleteEndedText.replaceChildren(
      `Delete ${n === 1 ? 'the ended session' : `${n} ended sessions`} `,
      ...names,
      `? ${n === 1 ? 'Its' : 'Their'} saved screen and scrollback are discarded${worktrees ? '; worktrees stay on disk' : ''}. Running sessions are kept. Then the new session is created.`,
    );
    this.deleteEndedYes.setAttribute('aria-label', `Delete ${n} ended session${n === 1 ? '' : 's'} and create the new session`);
    this.renderStoreFull();
    this.deleteEndedNo.focus(); // as in the close confirmation: Enter does not destroy
  }

  /**
   * The user confirmed: deletes the sessions asked about that the server
   * still says are not running (one resumed meanwhile is kept), then
   * retries the create the user asked for, with the form as it was.
   */
  private async deleteEnded(): Promise<void> {
    const asked = this.endedAsked;
    if (!asked || this.deletingEnded || !this.deps.canAct()) return;
    const { store } = this.deps;
    this.deletingEnded = true;
    this.createBtn.disabled = true;
    this.renderStoreFull();
    let failure: string | null = null;
    try {
      const listed = await api.sessions();
      const notRunning = new Set(listed.filter((s) => !isRunning(s)).map((s) => s.id));
      // Gone already (deleted elsewhere): nothing to do but forget it here.
      for (const id of asked) if (!listed.some((s) => s.id === id) && !store.get(id)?.closing) store.remove(id);
      const ids = asked.filter((id) => notRunning.has(id) && store.has(id) && !store.get(id)?.closing);
      for (const id of ids) store.setClosing(id, true);
      const results = await Promise.allSettled(ids.map((id) => api.deleteSession(id)));
      let failed = 0;
      results.forEach((r, i) => {
        const id = ids[i]!;
        if (r.status === 'fulfilled' || (r.reason instanceof ApiError && r.reason.status === 404)) {
          store.remove(id);
          return;
        }
        store.setClosing(id, false);
        failed++;
        failure ??= (r.reason as Error).message;
      });
      if (failed > 0) failure = `Could not delete ${failed} of ${ids.length} ended sessions: ${failure}`;
    } catch (err) {
      failure = `Could not delete the ended sessions: ${(err as Error).message}`;
    } finally {
      this.deletingEnded = false;
      this.createBtn.disabled = false;
    }
    this.endedAsked = null;
    if (failure) {
      this.formError.textContent = failure;
      this.formError.hidden = false;
      this.renderStoreFull();
      return;
    }
    if (this.dialog.open) await this.create();
  }

  askClose(id: string): void {
    const e = this.deps.store.get(id);
    if (!e || e.closing || !this.deps.canAct()) return;
    this.closingId = id;
    const running = isRunning(e.session);
    this.confirmText.replaceChildren(
      'Close ',
      h('strong', { text: e.session.name }),
      running
        ? '? Its agent is stopped (SIGHUP, then SIGKILL after 3 s) and its scrollback is discarded.'
        : '? Its saved screen and scrollback are discarded.',
    );
    const wt = e.session.worktree;
    this.worktreeField.hidden = !wt;
    this.worktreeBox.checked = false;
    this.worktreeLabel.textContent = wt
      ? `Also remove its worktree ${worktreeDir(wt)}; the branch ${wt.branch} is kept`
      : '';
    this.worktreeDirty = false;
    this.showConfirmError(null);
    this.setConfirmBusy(false);
    this.confirm.showModal(); // Cancel has autofocus: Enter does not destroy
  }

  /**
   * The user confirmed. Without worktree removal the dialog closes at once
   * and the tab shows the close in flight. With it, the dialog stays until
   * the server answers: a worktree with uncommitted changes is refused
   * (409 WORKTREE_DIRTY, the session is kept) and the dialog then offers
   * to force the removal.
   */
  private confirmClose(force: boolean): void {
    const id = this.closingId;
    const { store } = this.deps;
    const e = id ? store.get(id) : undefined;
    if (!id || !e || e.closing) {
      this.confirm.close();
      return;
    }
    const removeWorktree = !!e.session.worktree && this.worktreeBox.checked;
    if (!removeWorktree) {
      this.closingId = null;
      this.confirm.close();
    } else {
      this.setConfirmBusy(true);
    }
    store.setClosing(id, true);
    const asking = () => this.confirm.open && this.closingId === id;
    api.deleteSession(id, { removeWorktree, force: removeWorktree && force }).then(
      () => {
        store.remove(id);
        if (asking()) this.confirm.close();
      },
      (err: unknown) => {
        if (err instanceof ApiError && err.status === 404) {
          store.remove(id); // already gone
          if (asking()) this.confirm.close();
          return;
        }
        store.setClosing(id, false);
        const message = (err as Error).message;
        if (!asking()) {
          this.deps.toast(`Could not close the session: ${message}`, 'error');
          return;
        }
        this.worktreeDirty = err instanceof ApiError && err.code === 'WORKTREE_DIRTY';
        this.showConfirmError(
          this.worktreeDirty
            ? `${message}\nThe session is still open. Remove the worktree anyway, or uncheck the box to close the session and keep the worktree.`
            : `Could not close the session: ${message}`,
        );
        this.setConfirmBusy(false);
      },
    );
  }

  private setConfirmBusy(busy: boolean): void {
    this.confirmYes.disabled = busy;
    this.confirmYes.textContent = busy ? 'Closing…' : 'Close session';
    this.forceBtn.disabled = busy;
    this.worktreeBox.disabled = busy;
    this.renderConfirmActions();
  }

  /**
   * After a refusal for uncommitted changes, with the box still checked,
   * the way on is forcing the removal (closing as before would be refused
   * again); unchecked, closing keeps the worktree.
   */
  private renderConfirmActions(): void {
    const offerForce = this.worktreeDirty && this.worktreeBox.checked;
    this.forceBtn.hidden = !offerForce;
    this.confirmYes.hidden = offerForce;
  }

  private showConfirmError(message: string | null): void {
    this.confirmError.textContent = message ?? '';
    this.confirmError.hidden = message === null;
  }
}

/** A worktree's directory as the user knows it: .worktrees/<dir> under the workspace. */
function worktreeDir(wt: Worktree): string {
  const i = wt.path.lastIndexOf('/.worktrees/');
  return i >= 0 ? wt.path.slice(i + 1) : wt.path;
}

/** The server keeps all the sessions it may: say what the way out is. */
function describeStoreFull(err: ApiError, ended: number): string {
  if (ended === 0) return `${err.message} Every session kept is running: close one first.`;
  return err.message;
}

function describeCreateError(err: unknown): string {
  if (!(err instanceof ApiError)) return String(err);
  switch (err.code) {
    case 'SESSION_LIMIT_REACHED':
      return `${err.message} Close or stop a running session first.`;
    case 'MEMORY_CRITICAL':
      return `${err.message} Close idle sessions to free memory.`;
    default:
      return err.message;
  }
}

function setTextIfChanged(el: HTMLElement, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}
