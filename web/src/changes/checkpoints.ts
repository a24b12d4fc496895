// A session's checkpoints (docs/protocol.md, "Review to merged"): the
// server keeps the tree as it was each time the agent ended a turn, on
// request, and before a restore. The panel beside the Changes view lists
// them as a timeline, newest first, each with its time and what it
// changed; choosing one shows its diff over the session's own (drawn as
// the Changes view draws, diffview.ts), from where it can be restored. A
// restore is undone by restoring the checkpoint it saved first, which the
// panel names. The list follows session.checkpoint.
//
// A checkpoint the workspace's check script ran on says how it went
// ("✗ check failed (exit 1)"), with the end of its output under it; the
// panel's head turns sending failed checks to the agent on and off
// (docs/protocol.md, "Checks"). session.check keeps both up to date.
//
// A checkpoint that left untracked files out as too big says so under
// its entry ("2 files skipped (too big)"), which opens to their names
// and sizes, and in its diff's note.
//
// Paths and patches are the agent's: text only, and the diff sanitized
// as the Changes view's is.

import { api, ApiError } from '../shared/api';
import { counts, loadRenderer, pathText, sentence, statusBadge, type ChangesObserver, type ChangesState } from './changes';
import { byId, formatBytes, h } from '../shared/dom';
import { shownName } from '../shared/paths';
import { showAgo } from '../shared/ages';
import { loadSetting, saveSetting } from '../shared/settings';
import type { SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { Checkpoint, CheckpointChange, ListedCheckpoint, DiffFileSummary, SessionCheckMessage, SessionCheckpointMessage, SkippedFile } from '../shared/types';
import { checkFailed, checkMark, checkSummary, checkWords } from '../shared/checks';
import { spentDetails, spentFigure } from '../models/usage';

const OPEN_KEY = 'agentmux.checkpointsOpen';
const IN_REPOSITORY: readonly ChangesState[] = ['loading', 'ready', 'clean', 'error'];

export interface CheckpointsDeps {
  store: SessionStore;
  canAct(): boolean;
  /** Fetches the Changes view's diff again: a restore rewrote the tree. */
  reloadChanges(): void;
  toast(message: string, kind?: ToastKind): void;
}

export class CheckpointsPanel implements ChangesObserver {
  private readonly pane = byId('changes');
  private readonly panel = byId('checkpoints');
  private readonly toggle = byId<HTMLButtonElement>('ship-checkpoints');
  private readonly toggleCount = byId('ship-checkpoints-count');
  private readonly count = byId('checkpoints-count');
  private readonly list = byId('checkpoint-list');
  private readonly empty = byId('checkpoints-empty');
  private readonly note = byId('checkpoints-note');
  private readonly nowBtn = byId<HTMLButtonElement>('checkpoint-now');
  private readonly sendFailures = byId<HTMLInputElement>('check-send-failures');
  private readonly sendFailuresLabel = byId('check-send-failures-label');

  private readonly view = byId('checkpoint-view');
  private readonly viewTitle = byId('checkpoint-view-title');
  private readonly viewSummary = byId('checkpoint-view-summary');
  private readonly viewNote = byId('checkpoint-view-note');
  private readonly viewScroll = byId('checkpoint-view-scroll');
  private readonly content = byId('checkpoint-content');
  private readonly restoreBtn = byId<HTMLButtonElement>('checkpoint-restore');
  private readonly restoreConfirm = byId('checkpoint-restore-confirm');
  private readonly restoreText = byId('checkpoint-restore-text');
  private readonly restoreNo = byId<HTMLButtonElement>('checkpoint-restore-no');
  private readonly restoreYes = byId<HTMLButtonElement>('checkpoint-restore-yes');

  private open = loadSetting(OPEN_KEY) === '1';
  private sessionId: string | null = null;
  private state: ChangesState = 'idle';
  /** Each session's checkpoints, oldest first, once fetched on this connection. */
  private readonly lists = new Map<string, ListedCheckpoint[]>();
  private readonly loading = new Set<string>();
  /** The sessions whose list is about to be fetched again (onUsage). */
  private readonly refreshing = new Set<string>();
  private readonly errors = new Map<string, string>();
  /** The checkpoint whose diff is shown, and the answer for it. */
  private selected: number | null = null;
  private change: CheckpointChange | null = null;
  private viewSeq = 0;
  private busy = false;
  /** The checkpoints whose skipped files are shown ("session:id"), kept open across renders. */
  private readonly skippedOpen = new Set<string>();
  /** Likewise, the checks whose output is shown. */
  private readonly checkOpen = new Set<string>();
  /** What the list was last drawn from (renderList). */
  private listDrawn = '';

  constructor(private readonly deps: CheckpointsDeps) {
    this.toggle.addEventListener('click', () => this.setOpen(!this.open));
    byId('checkpoints-close').addEventListener('click', () => {
      this.setOpen(false);
      this.toggle.focus();
    });
    this.nowBtn.addEventListener('click', () => void this.takeNow());
    this.sendFailures.addEventListener('change', () => void this.setSendFailures(this.sendFailures.checked));
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=checkpoint], [data-testid=checkpoint-current]');
      if (!btn) return;
      if (btn.dataset.testid === 'checkpoint-current') this.closeView();
      else void this.select(Number(btn.dataset.id));
    });
    // toggle does not bubble: caught on its way down.
    this.list.addEventListener('toggle', (ev) => {
      const d = ev.target as HTMLElement;
      if (!(d instanceof HTMLDetailsElement) || !d.dataset.key) return;
      const open = d.dataset.testid === 'checkpoint-check-output' ? this.checkOpen : this.skippedOpen;
      if (d.open) open.add(d.dataset.key);
      else open.delete(d.dataset.key);
    }, true);
    this.note.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-show]');
      if (btn) void this.select(Number(btn.dataset.show));
    });
    byId('checkpoint-view-close').addEventListener('click', () => this.closeView(true));
    this.view.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape') return;
      if (!this.restoreConfirm.hidden) this.askRestore(false);
      else this.closeView(true);
    });
    this.restoreBtn.addEventListener('click', () => this.askRestore(true));
    this.restoreNo.addEventListener('click', () => this.askRestore(false));
    this.restoreYes.addEventListener('click', () => void this.restore());
    // The Changes view's unified / side by side choice draws these too.
    new MutationObserver(() => this.redraw()).observe(this.pane, { attributes: true, attributeFilter: ['data-view'] });
    // An archive takes the tree, and the panel, away.
    deps.store.subscribe(() => {
      if (!this.visible() && !this.view.hidden) this.closeView();
      this.render();
    });
    this.render();
  }

  // ---- what the Changes view and the server tell ------------------------

  shown(sessionId: string | null, state: ChangesState): void {
    if (sessionId !== this.sessionId) {
      this.sessionId = sessionId;
      this.closeView();
      this.showNote(null);
    }
    this.state = state;
    // Listed even while the panel is closed: its button counts them.
    if (this.wanted() && sessionId) void this.load(sessionId);
    this.render();
  }

  onCheckpoint(m: SessionCheckpointMessage): void {
    const list = this.lists.get(m.sessionId);
    // Not fetched yet: the fetch brings it.
    if (!list) return;
    add(list, m.checkpoint);
    if (m.sessionId === this.sessionId) this.render();
  }

  /**
   * A usage.updated: what the session's turns spent is in its list, and
   * the last turn's cost comes after its checkpoint (Claude Code reports
   * it once the turn has ended), so a list fetched is fetched again, at
   * most once a second.
   */
  onUsage(sessionId: string): void {
    if (!this.lists.has(sessionId) || this.refreshing.has(sessionId)) return;
    this.refreshing.add(sessionId);
    window.setTimeout(() => {
      void api.checkpoints(sessionId).then((cps) => {
        const list = this.lists.get(sessionId);
        if (!list) return;
        for (const cp of cps) add(list, cp);
        if (sessionId === this.sessionId) this.render();
      }).catch(() => { /* the next report fetches it again */ }).finally(() => this.refreshing.delete(sessionId));
    }, 1000);
  }

  /** A session.check: the check of a checkpoint of the list started or ended. */
  onCheck(m: SessionCheckMessage): void {
    const list = this.lists.get(m.sessionId);
    const c = m.check;
    const cp = c && list?.find((x) => x.id === c.checkpoint);
    if (c && cp) {
      cp.check = { status: c.status, exitCode: c.exitCode, durationMs: c.durationMs, output: c.output, hash: c.hash };
    }
    if (m.sessionId === this.sessionId) this.render();
  }

  private async setSendFailures(on: boolean): Promise<void> {
    const id = this.sessionId;
    if (!id) return;
    try {
      const s = await api.setSendFailures(id, on);
      this.deps.store.setCheck(id, s.check, s.sendFailures);
    } catch (err) {
      this.deps.toast(`Not ${on ? 'turned on' : 'turned off'}: ${describe(err)}`, 'error');
      this.render();
    }
  }

  /** The connection dropped: checkpoints taken meanwhile are announced to no one, so the lists are fetched again. */
  stale(): void {
    this.lists.clear();
  }

  /** Connected again: the panel on screen fetches its list anew. */
  connected(): void {
    if (this.wanted() && this.sessionId) void this.load(this.sessionId);
  }

  forget(sessionId: string): void {
    this.lists.delete(sessionId);
    this.errors.delete(sessionId);
  }

  /** The view shows a session whose tree has checkpoints: in a repository, and not archived (its tree is gone). */
  private wanted(): boolean {
    const archived = !!(this.sessionId && this.deps.store.get(this.sessionId)?.session.worktree?.archived);
    return !!this.sessionId && !archived && IN_REPOSITORY.includes(this.state);
  }

  private visible(): boolean {
    return this.open && this.wanted();
  }

  private setOpen(open: boolean): void {
    this.open = open;
    saveSetting(OPEN_KEY, open ? '1' : '0');
    if (!open) this.closeView();
    if (this.wanted() && this.sessionId) void this.load(this.sessionId);
    this.render();
  }

  private async load(id: string): Promise<void> {
    if (this.lists.has(id) || this.loading.has(id)) return;
    this.loading.add(id);
    this.render();
    try {
      const cps = await api.checkpoints(id);
      // Announced while the list was on its way: kept too.
      const list: ListedCheckpoint[] = [];
      for (const cp of cps) add(list, cp);
      this.lists.set(id, list);
      this.errors.delete(id);
    } catch (err) {
      this.errors.set(id, describe(err));
    } finally {
      this.loading.delete(id);
      if (id === this.sessionId) this.render();
    }
  }

  // ---- the timeline ----------------------------------------------------------

  private render(): void {
    const visible = this.visible();
    this.panel.hidden = !visible;
    this.toggle.setAttribute('aria-expanded', String(visible));
    const id = this.sessionId;
    const list = id ? this.lists.get(id) : undefined;
    this.toggleCount.hidden = !list?.length;
    this.toggleCount.textContent = list?.length ? String(list.length) : '';
    this.nowBtn.disabled = !this.deps.canAct() || this.busy;
    // Sending failed checks matters only where a check runs.
    const session = id ? this.deps.store.get(id)?.session : undefined;
    this.sendFailuresLabel.hidden = !session?.check;
    this.sendFailures.checked = !!session?.sendFailures;
    this.sendFailures.disabled = !this.deps.canAct();
    this.restoreBtn.disabled = !this.deps.canAct() || this.busy || !this.change;
    this.restoreYes.disabled = this.restoreBtn.disabled;
    if (!visible || !id) return;
    this.count.textContent = list?.length ? String(list.length) : '';
    const error = this.errors.get(id);
    this.empty.hidden = !!list?.length;
    if (!list) this.empty.textContent = error ? `Cannot list the checkpoints. ${error}` : 'Loading the checkpoints…';
    else this.empty.textContent = 'None yet. One is taken each time the agent ends a turn, or with Checkpoint now.';
    this.empty.classList.toggle('error', !list && !!error);
    this.renderList(list ?? []);
  }

  private renderList(list: ListedCheckpoint[]): void {
    // The store changes for every session's every status: the list is
    // drawn again only when what it shows changed, so that neither focus
    // nor a pointer (nor a test's click) loses the element it is on.
    // A check's output is fixed once it ended, so its status and time
    // stand for it: the key stays small however long the outputs are.
    const last = this.sessionId ? this.deps.store.get(this.sessionId)?.session.check : undefined;
    const shown = list.map((cp) => [cp.id, cp.time, cp.files, cp.insertions, cp.deletions, cp.skipped?.length, cp.skippedMore, cp.check?.status, cp.check?.durationMs, cp.usage]);
    const drawn = JSON.stringify([this.sessionId, shown, this.selected, [...this.skippedOpen], [...this.checkOpen],
      last && [last.checkpoint, last.status, last.sent, last.held]]);
    if (drawn === this.listDrawn) return;
    this.listDrawn = drawn;
    const items: HTMLElement[] = [];
    if (list.length) {
      items.push(h('li', { class: 'checkpoint-item' },
        h('button', {
          type: 'button',
          class: 'checkpoint-btn checkpoint-current',
          'data-testid': 'checkpoint-current',
          'aria-current': this.selected === null ? 'true' : null,
          title: 'What the session changed, as its tree is now',
        },
        h('span', { class: 'checkpoint-dot', 'aria-hidden': 'true' }),
        h('span', { class: 'checkpoint-main' }, h('span', { class: 'checkpoint-name', text: 'Now' }), h('span', { class: 'checkpoint-age', text: 'current changes' })))));
    }
    for (const cp of [...list].reverse()) {
      const at = Date.parse(cp.time);
      const when = Number.isFinite(at) ? new Date(at) : null;
      items.push(h('li', { class: 'checkpoint-item' },
        h('button', {
          type: 'button',
          class: 'checkpoint-btn',
          'data-testid': 'checkpoint',
          'data-id': cp.id,
          'aria-current': this.selected === cp.id ? 'true' : null,
          title: `Checkpoint ${cp.id}${when ? `, ${when.toLocaleString()}` : ''}: ${plural(cp.files, 'file')} changed since the one before. Show what it changed.`,
        },
        h('span', { class: 'checkpoint-dot', 'aria-hidden': 'true' }),
        h('span', { class: 'checkpoint-main' },
          h('span', { class: 'checkpoint-name', text: `#${cp.id}` }),
          h('time', { class: 'checkpoint-time', 'data-testid': 'checkpoint-time', datetime: cp.time, text: when ? clock(when) : cp.time }),
          age(when)),
        h('span', { class: 'checkpoint-stats' },
          h('span', { class: 'checkpoint-files', 'data-testid': 'checkpoint-files', text: plural(cp.files, 'file') }),
          checkpointCounts(cp),
          cp.usage ? h('span', { class: 'checkpoint-usage', 'data-testid': 'checkpoint-usage', title: spentDetails(cp.usage), text: spentFigure(cp.usage) }) : null)),
        this.checkLine(cp),
        this.skippedList(cp)));
    }
    const focused = (document.activeElement as HTMLElement | null)?.closest?.('#checkpoint-list [data-testid]') as HTMLElement | null;
    const refocus = focused ? (focused.dataset.testid === 'checkpoint' ? `[data-id="${focused.dataset.id}"]` : '[data-testid=checkpoint-current]') : null;
    this.list.replaceChildren(...items);
    if (refocus) this.list.querySelector<HTMLElement>(refocus)?.focus();
  }

  /**
   * How the check of cp went, under its entry; a check that printed
   * something opens to the end of its output. null when none ran.
   */
  private checkLine(cp: Checkpoint): HTMLElement | null {
    const c = cp.check;
    if (!c) return null;
    const key = `${this.sessionId}:${cp.id}`;
    const words = checkWords(c);
    const summary = checkFailed(c.status) ? checkSummary(c.output) : '';
    // Whether the failure went to the agent is known of the last turn's.
    const last = this.sessionId ? this.deps.store.get(this.sessionId)?.session.check : undefined;
    const fate = last?.checkpoint !== cp.id ? '' : last.sent ? 'sent to the agent' : last.held ? 'not sent: three in a row were' : '';
    const head = [h('span', { class: 'checkpoint-check-mark', 'aria-hidden': 'true', text: checkMark(c.status) }), ` ${words}`,
      summary ? h('span', { class: 'checkpoint-check-summary', text: ` · ${summary}` }) : null,
      fate ? h('span', { class: 'checkpoint-check-fate', 'data-testid': 'checkpoint-check-fate', text: ` · ${fate}` }) : null];
    const attrs = { class: 'checkpoint-check', 'data-testid': 'checkpoint-check', 'data-status': c.status, 'data-key': key };
    if (!c.output) return h('div', attrs, ...head);
    return h('details', { ...attrs, 'data-testid': 'checkpoint-check-output', open: this.checkOpen.has(key) },
      h('summary', { 'data-testid': 'checkpoint-check', 'data-status': c.status, title: `The check of checkpoint #${cp.id}: show the end of its output` }, ...head),
      h('pre', { class: 'checkpoint-check-text', text: c.output }));
  }

  /** What cp left out as too big, under its entry: a line that opens to the files; null when it left out nothing. */
  private skippedList(cp: Checkpoint): HTMLElement | null {
    const n = skippedCount(cp);
    if (!n) return null;
    const key = `${this.sessionId}:${cp.id}`;
    const more = cp.skippedMore ?? 0;
    return h('details', { class: 'checkpoint-skipped', 'data-testid': 'checkpoint-skipped', 'data-key': key, open: this.skippedOpen.has(key) },
      h('summary', { title: `Untracked files checkpoint #${cp.id} did not keep, as too big: restoring it leaves them as they are` },
        `${plural(n, 'file')} skipped (too big)`),
      h('ul', { class: 'checkpoint-skipped-files' },
        ...(cp.skipped ?? []).map((f) => h('li', { 'data-testid': 'checkpoint-skipped-file', title: skippedWhy(f) },
          h('span', { class: 'checkpoint-skipped-path', text: shownName(f.path) }),
          h('span', { class: 'checkpoint-skipped-size', text: formatBytes(f.size) }))),
        more ? h('li', { class: 'checkpoint-skipped-more', text: `and ${plural(more, 'more file')}` }) : null));
  }

  private showNote(content: (Node | string)[] | null, error = false): void {
    this.note.hidden = content === null;
    this.note.classList.toggle('error', error);
    this.note.replaceChildren(...(content ?? []));
  }

  private async takeNow(): Promise<void> {
    const id = this.sessionId;
    if (!id || this.busy) return;
    this.busy = true;
    this.render();
    try {
      const r = await api.takeCheckpoint(id);
      const list = this.lists.get(id);
      if (list) add(list, r.checkpoint);
      if (id === this.sessionId) {
        const skipped = skippedCount(r.checkpoint);
        this.showNote([r.created
          ? `Checkpoint #${r.id} taken: the tree as it is now${skipped ? `, but for ${plural(skipped, 'untracked file')} too big to keep` : ''}.`
          : `Nothing changed since checkpoint #${r.id}: no new one was needed.`]);
      }
    } catch (err) {
      if (id === this.sessionId) this.showNote([`No checkpoint was taken. ${describe(err)}`], true);
    } finally {
      this.busy = false;
      this.render();
    }
  }

  // ---- one checkpoint's diff ---------------------------------------------------

  private async select(n: number): Promise<void> {
    const id = this.sessionId;
    if (!id || !Number.isInteger(n) || n < 1) return;
    const seq = ++this.viewSeq;
    this.selected = n;
    this.change = null;
    this.askRestore(false);
    this.view.hidden = false;
    // A narrow window has room for the timeline or the diff: the diff.
    this.pane.classList.add('checkpoint-shown');
    this.view.dataset.checkpoint = String(n);
    this.view.dataset.state = 'loading';
    this.viewTitle.textContent = `Checkpoint #${n}`;
    this.viewSummary.replaceChildren();
    this.showViewNote(null);
    this.content.replaceChildren(h('p', { class: 'diff-empty', text: 'Loading what it changed…' }));
    this.render();
    try {
      const [c, renderer] = await Promise.all([api.checkpointDiff(id, n), loadRenderer()]);
      if (seq !== this.viewSeq) return;
      this.change = c;
      this.view.dataset.state = 'ready';
      const at = Date.parse(c.time);
      this.viewTitle.textContent = `Checkpoint #${c.id}${Number.isFinite(at) ? ` · ${clock(new Date(at))}` : ''}`;
      this.viewTitle.title = Number.isFinite(at) ? new Date(at).toLocaleString() : c.time;
      this.viewSummary.replaceChildren(
        h('span', { class: 'changes-count', text: plural(c.files.length, 'file') }), ' ',
        h('span', { class: 'num-add', text: `+${c.insertions}` }), ' ',
        h('span', { class: 'num-del', text: `\u2212${c.deletions}` }));
      this.viewSummary.title = c.parent ? `what it changed since ${c.parent.slice(0, 10)}` : 'what it changed since an empty tree';
      const notes = [
        skippedCount(c) ? skippedNote(c) : '',
        c.truncated ? 'This checkpoint\'s diff is too large to show whole: the files past the cut are listed without their lines.' : '',
      ].filter(Boolean);
      this.showViewNote(notes.length ? notes.join(' ') : null);
      this.draw(renderer);
    } catch (err) {
      if (seq !== this.viewSeq) return;
      this.view.dataset.state = 'error';
      this.content.replaceChildren(h('p', { class: 'diff-empty form-error', text: `Cannot show checkpoint #${n}. ${describe(err)}` }));
    } finally {
      if (seq === this.viewSeq) this.render();
    }
  }

  /** The view's diff again, in the Changes view's current way. */
  private redraw(): void {
    if (!this.change || this.view.hidden) return;
    void loadRenderer().then((r) => this.draw(r));
  }

  private draw(renderer: Awaited<ReturnType<typeof loadRenderer>>): void {
    const c = this.change;
    if (!c) return;
    const view = this.pane.dataset.view === 'split' ? 'split' : 'unified';
    if (c.files.length === 0) {
      this.content.replaceChildren(h('p', { class: 'diff-empty', text: 'No file changed: the tree was as the checkpoint before had it.' }));
      return;
    }
    const patches = splitPatch(c.patch);
    this.content.replaceChildren(...c.files.map((f, i) => this.section(f, patches[i], renderer, view)));
    this.viewScroll.scrollTop = 0;
  }

  private section(f: DiffFileSummary, patch: string | undefined, renderer: Awaited<ReturnType<typeof loadRenderer>>, view: 'unified' | 'split'): HTMLElement {
    const body = h('div', { class: 'diff-file-body', 'data-testid': 'checkpoint-diff-body', 'data-view': view });
    if (f.binary) {
      body.append(h('div', { class: 'diff-empty', text: 'Binary file: not shown.' }));
    } else if (patch === undefined) {
      body.append(h('div', { class: 'diff-empty', text: 'Not shown: the diff was cut before this file.' }));
    } else {
      try {
        const r = renderer.renderPatch(patch, f.path, view);
        if (r.node) {
          body.append(r.node);
          // A past state takes no review comment: its line numbers are plain.
          for (const td of body.querySelectorAll<HTMLElement>('td[data-line], td[data-deleted]')) {
            delete td.dataset.line;
            delete td.dataset.deleted;
          }
        } else body.append(h('div', { class: 'diff-empty', text: f.status === 'renamed' ? `Renamed from ${f.oldPath ?? 'another path'}.` : 'No textual changes.' }));
      } catch (err) {
        body.append(h('div', { class: 'diff-empty', text: `Cannot draw this patch (${(err as Error).message}); here it is as text:` }),
          h('pre', { class: 'plain diff-raw', text: patch }));
      }
    }
    return h('section', { class: 'diff-file', 'data-testid': 'checkpoint-diff', 'data-path': f.path, 'data-status': f.status },
      h('div', { class: 'diff-file-header' },
        statusBadge(f.status),
        h('span', { class: 'diff-file-name', title: shownName(f.path) }, pathText(f)),
        counts(f)),
      h('div', { class: 'diff-file-main' }, body));
  }

  private showViewNote(text: string | null): void {
    this.viewNote.hidden = text === null;
    this.viewNote.textContent = text ?? '';
  }

  /** Back to the session's own changes; with focusBack, the focus goes to the checkpoint that was shown. */
  private closeView(focusBack = false): void {
    const was = this.selected;
    this.viewSeq++;
    this.selected = null;
    this.change = null;
    this.askRestore(false);
    this.view.hidden = true;
    this.pane.classList.remove('checkpoint-shown');
    delete this.view.dataset.checkpoint;
    this.content.replaceChildren();
    this.render();
    if (focusBack && was !== null) this.list.querySelector<HTMLElement>(`[data-id="${was}"]`)?.focus();
  }

  // ---- restore -------------------------------------------------------------------

  /** Restore asks in place first; Cancel has the focus. */
  private askRestore(ask: boolean): void {
    if (ask === !this.restoreConfirm.hidden) return;
    const hadFocus = this.restoreConfirm.contains(document.activeElement);
    this.restoreConfirm.hidden = !ask;
    this.restoreBtn.hidden = ask;
    if (!ask) {
      if (hadFocus && !this.view.hidden) this.restoreBtn.focus();
      return;
    }
    const c = this.change;
    const at = c ? Date.parse(c.time) : NaN;
    this.restoreText.textContent = `Put the tree back as it was at #${this.selected}${Number.isFinite(at) ? `, ${clock(new Date(at))}` : ''}? ` +
      'Files changed since are written back, files made since removed; the tree as it is now is kept as a checkpoint first.';
    this.restoreNo.focus();
  }

  private async restore(): Promise<void> {
    const id = this.sessionId;
    const n = this.selected;
    if (!id || n === null || this.busy) return;
    this.busy = true;
    this.render();
    try {
      const r = await api.restoreCheckpoint(id, n);
      this.deps.reloadChanges();
      if (id !== this.sessionId) return;
      this.closeView();
      this.showNote([
        `Restored checkpoint ${r.restored}; checkpoint ${r.saved} saved the state before \u2014 restore it to undo. `,
        h('button', { type: 'button', class: 'link-btn', 'data-show': r.saved, 'data-testid': 'checkpoints-undo', text: `Show #${r.saved}` }),
      ]);
      this.note.querySelector<HTMLElement>('[data-testid=checkpoints-undo]')?.focus();
    } catch (err) {
      const text = `Checkpoint #${n} was not restored. ${describe(err)}`;
      if (id === this.sessionId && !this.view.hidden) this.showViewNote(text);
      else this.deps.toast(text, 'error');
    } finally {
      this.busy = false;
      this.askRestore(false);
      this.render();
    }
  }
}

/** Adds a checkpoint to a list kept in id order, or replaces the one with its id. */
function add(list: ListedCheckpoint[], cp: ListedCheckpoint): void {
  const i = list.findIndex((c) => c.id >= cp.id);
  if (i < 0) list.push(cp);
  else if (list[i]!.id === cp.id) list[i] = cp;
  else list.splice(i, 0, cp);
}

/** A diff of several files, one patch per file ("diff --git" starts each), in order. */
export function splitPatch(patch: string): string[] {
  if (!patch) return [];
  const starts: number[] = [];
  const re = /^diff --git /gm;
  for (let m = re.exec(patch); m; m = re.exec(patch)) starts.push(m.index);
  return starts.map((s, i) => patch.slice(s, starts[i + 1] ?? patch.length));
}

type Skips = Pick<Checkpoint, 'skipped' | 'skippedMore'>;

function skippedCount(cp: Skips): number {
  return (cp.skipped?.length ?? 0) + (cp.skippedMore ?? 0);
}

function skippedWhy(f: SkippedFile): string {
  return f.reason === 'total'
    ? `${shownName(f.path)}: left out, as the checkpoint's smaller untracked files reached the most one checkpoint keeps`
    : `${shownName(f.path)}: left out, as bigger than the most one checkpoint keeps of a file`;
}

/** The diff view's sentence on what the checkpoint left out, naming the first few. */
function skippedNote(cp: Skips): string {
  const named = (cp.skipped ?? []).slice(0, 3).map((f) => `${shownName(f.path)} (${formatBytes(f.size)})`);
  const rest = skippedCount(cp) - named.length;
  return `${plural(skippedCount(cp), 'untracked file')} too big to keep ${skippedCount(cp) === 1 ? 'is' : 'are'} not in this checkpoint: ` +
    `${named.join(', ')}${rest ? `, and ${rest} more` : ''}. A restore leaves ${skippedCount(cp) === 1 ? 'it' : 'them'} as ${skippedCount(cp) === 1 ? 'it is' : 'they are'}.`;
}

function checkpointCounts(cp: Checkpoint): HTMLElement {
  return counts({ additions: cp.insertions, deletions: cp.deletions });
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** 14:05:09 today; Nov 26 14:05 another day. */
function clock(d: Date): string {
  const today = new Date();
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (d.toDateString() === today.toDateString()) return time;
  return `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}

function describe(err: unknown): string {
  if (err instanceof ApiError && err.code === 'CHECKPOINT_NOT_FOUND') return 'It is gone: a session keeps its last 100.';
  return sentence(err instanceof Error ? err.message : String(err));
}

/** A checkpoint's age, "8s ago", kept current by the page's one ticker (shared/ages.ts). */
function age(when: Date | null): HTMLElement {
  const el = h('span', { class: 'checkpoint-age' });
  if (when) showAgo(el, when.getTime());
  return el;
}
