// The Changes view (layout "changes", Alt+4): what the active session
// changed in its working tree, from GET /api/sessions/:id/diff. A list of
// the files with their line counts, then each file's diff (unified or side
// by side), which collapses; each file's patch, or all of them, copies to
// the clipboard; a file's name opens it in the document pane. Its line
// numbers take review comments for the agent (review.ts).
//
// It follows the active session and, while shown, refetches (debounced)
// when that session's session.diff changes. Files whose patch did not
// change keep their drawing. Diffs are drawn by the lazy chunk diffview.ts
// (diff2html, highlight.js, DOMPurify), loaded with the first view; only
// the files near the screen are drawn.
//
// Everything here is built with textContent: paths and patches are the
// agent's, so untrusted.

import { api, ApiError } from '../shared/api';
import type { DiffSummaries } from '../models/diffs';
import { byId, h } from '../shared/dom';
import { shownName, shownParts, type WorkspaceRoot } from '../shared/paths';
import type { SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { DiffFile, DiffFileStatus, DiffResponse } from '../shared/types';
import { loadSetting, saveSetting } from '../shared/settings';

type Renderer = typeof import('./diffview');
type DiffView = 'unified' | 'split';

/** data-state of [data-testid=changes]. */
export type ChangesState =
  'idle' | 'loading' | 'ready' | 'clean' | 'not-a-repository' | 'untrusted-repository' | 'error' | 'no-session';

const VIEW_KEY = 'agentmux.diffView';
/** A session.diff for the shown session refetches after this much quiet. */
const REFRESH_DEBOUNCE_MS = 250;
const COPIED_MS = 1_500;
/** Undrawn files hold about their height, so the scrollbar does not jump as they draw. */
const LINE_PX = 20;
const MAX_PLACEHOLDER_PX = 4_000;

const STATUS_LETTER: Record<DiffFileStatus, string> = { added: 'A', modified: 'M', deleted: 'D', renamed: 'R' };

interface FileSection {
  file: DiffFile;
  el: HTMLElement;
  main: HTMLElement;
  body: HTMLElement;
  /** The view it was drawn in, or null while undrawn. */
  drawn: DiffView | null;
}

let rendererPromise: Promise<Renderer> | null = null;

/** The diff renderer and its stylesheet, loaded once (again after a failure). */
export function loadRenderer(): Promise<Renderer> {
  if (!rendererPromise) {
    rendererPromise = import('./diffview').then(async (m) => {
      await m.ready;
      return m;
    });
    rendererPromise.catch(() => {
      rendererPromise = null;
    });
  }
  return rendererPromise;
}

/** What the review draft (review.ts), the ship bar (ship.ts) and the checkpoints (checkpoints.ts) hear of the view. */
export interface ChangesObserver {
  /** The view shows this session's changes (or none), in this state. */
  shown(sessionId: string | null, state: ChangesState): void;
  /** A file's diff was drawn (again) into body. */
  drawn?(path: string, body: HTMLElement): void;
}

export interface ChangesDeps {
  store: SessionStore;
  diffs: DiffSummaries;
  root: WorkspaceRoot;
  /** Opens a workspace-relative path in the document pane. */
  openFile(path: string): void;
  toast(message: string, kind?: ToastKind): void;
  observers: ChangesObserver[];
}

export class ChangesView {
  private shown = false;
  /** The session whose changes are on screen, or being fetched. */
  private sessionId: string | null = null;
  private data: DiffResponse | null = null;
  private loadId = 0;
  private refreshTimer: number | undefined;
  private view: DiffView;
  private renderer: Renderer | null = null;
  private sections = new Map<string, FileSection>();
  /** Collapsed files, per session. */
  private readonly collapsed = new Map<string, Set<string>>();
  private readonly observer: IntersectionObserver;
  private readonly pane = byId('changes');
  private readonly sessionLabel = byId('changes-session');
  private readonly summary = byId('changes-summary');
  private readonly note = byId('changes-note');
  private readonly nav = byId('changes-files').parentElement!;
  private readonly list = byId('changes-files');
  private readonly scroller = byId('changes-scroll');
  private readonly content = byId('changes-content');
  private readonly message = byId('changes-message');
  private readonly unifiedBtn = byId<HTMLButtonElement>('changes-view-unified');
  private readonly splitBtn = byId<HTMLButtonElement>('changes-view-split');
  private readonly copyAllBtn = byId<HTMLButtonElement>('changes-copy-all');
  private readonly collapseAllBtn = byId<HTMLButtonElement>('changes-collapse-all');

  constructor(private readonly deps: ChangesDeps) {
    this.view = loadSetting(VIEW_KEY) === 'split' ? 'split' : 'unified';
    this.observer = new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        const sec = this.sectionOf(e.target);
        if (sec) this.draw(sec);
      }
    }, { root: this.scroller, rootMargin: '800px 0px' });

    this.unifiedBtn.addEventListener('click', () => this.setView('unified'));
    this.splitBtn.addEventListener('click', () => this.setView('split'));
    this.copyAllBtn.addEventListener('click', () => void this.copyAll());
    this.collapseAllBtn.addEventListener('click', () => this.toggleAll());
    byId('changes-reload').addEventListener('click', () => void this.load());
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=changes-file]');
      const sec = btn ? this.sections.get(btn.dataset.path ?? '') : undefined;
      if (btn && sec) this.reveal(sec, btn);
    });
    this.content.addEventListener('click', (ev) => this.onContentClick(ev));
    deps.store.subscribe(() => this.onSessions());
    deps.diffs.subscribe((id) => this.onSummary(id));
    this.renderViewToggle();
    this.setState('idle');
  }

  /** The layout shows the view (or stopped showing it). */
  setShown(shown: boolean): void {
    if (shown === this.shown) return;
    this.shown = shown;
    // Every time it comes into view: a change that kept the line counts
    // sends no session.diff.
    if (shown) void this.load();
  }

  private onSessions(): void {
    const { store } = this.deps;
    for (const id of this.collapsed.keys()) if (!store.has(id)) this.collapsed.delete(id);
    this.renderSessionLabel();
    if (this.shown && store.activeId !== this.sessionId) void this.load();
  }

  private onSummary(id: string): void {
    if (!this.shown || id !== this.sessionId) return;
    window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => void this.load(), REFRESH_DEBOUNCE_MS);
  }

  /** Fetches the active session's changes and shows them. */
  async load(): Promise<void> {
    window.clearTimeout(this.refreshTimer);
    const id = ++this.loadId;
    const sid = this.deps.store.activeId;
    const switched = sid !== this.sessionId;
    if (switched) {
      this.sessionId = sid;
      this.clear();
    }
    if (sid) this.pane.dataset.sessionId = sid;
    else delete this.pane.dataset.sessionId;
    this.renderSessionLabel();
    if (!sid) {
      this.showMessage('no-session', 'No session', 'Start a session: what it changes in its working tree shows here.');
      return;
    }
    // Whatever is shown for this session stays until the answer replaces it.
    const state = this.pane.dataset.state;
    if (switched || state === 'idle' || state === 'no-session') this.showMessage('loading', 'Loading changes…', '');
    this.pane.setAttribute('aria-busy', 'true');
    try {
      const [res, renderer] = await Promise.all([api.diff(sid), loadRenderer()]);
      if (id !== this.loadId) return;
      this.renderer = renderer;
      this.show(res);
    } catch (err) {
      if (id !== this.loadId) return;
      this.showError(err);
    } finally {
      if (id === this.loadId) this.pane.removeAttribute('aria-busy');
    }
  }

  private showError(err: unknown): void {
    const e = err instanceof ApiError ? err : new ApiError(0, 'CHUNK', `the diff viewer did not load (${String(err)})`);
    if (e.code === 'NOT_A_REPOSITORY') {
      this.clear();
      this.showMessage('not-a-repository', 'Not a git repository', sentence(e.message),
        'Changes are shown for sessions that work in a git repository: run git init in the workspace, or start agentmux in a repository.');
      return;
    }
    if (e.code === 'UNTRUSTED_REPOSITORY') {
      // Git will not look at the repository at all: nothing shown stays
      // true, and the server's message says whose it is and what to do.
      this.clear();
      this.showMessage('untrusted-repository', 'Git refuses this repository', sentence(e.message));
      return;
    }
    if (this.data) {
      // Keep what is shown; say it may be out of date.
      this.showNote(`Could not refresh the changes: ${e.message}`);
      return;
    }
    this.showMessage('error', 'Cannot show the changes', sentence(e.message));
  }

  private show(res: DiffResponse): void {
    this.data = res;
    if (res.files.length === 0) {
      this.clear();
      this.data = res;
      this.showMessage('clean', 'No changes',
        `The working tree matches its base commit${res.base ? ` ${res.base.slice(0, 10)}` : ''}: nothing to review yet.`);
      return;
    }
    this.showNote(res.truncated
      ? 'This diff is too large to show whole: some patches are cut or left out (each says so). Copy patch copies what is shown.'
      : null);
    this.message.hidden = true;
    this.nav.hidden = false;
    this.scroller.hidden = false;
    this.renderSummary(res.files);
    this.renderList(res.files);
    this.renderSections(res.files);
    this.copyAllBtn.hidden = false;
    this.collapseAllBtn.hidden = false;
    this.renderCollapseAll();
    this.setState('ready');
  }

  /** Empties the view (another session, or nothing to show). */
  private clear(): void {
    this.data = null;
    for (const s of this.sections.values()) this.observer.unobserve(s.el);
    this.sections.clear();
    this.content.replaceChildren();
    this.list.replaceChildren();
    this.summary.replaceChildren();
    this.summary.removeAttribute('title');
    this.showNote(null);
    this.copyAllBtn.hidden = true;
    this.collapseAllBtn.hidden = true;
    this.scroller.scrollTop = 0;
  }

  private setState(state: ChangesState): void {
    this.pane.dataset.state = state;
    for (const o of this.deps.observers) o.shown(this.sessionId, state);
  }

  private showMessage(kind: Exclude<ChangesState, 'idle' | 'ready'>, title: string, text: string, hint = ''): void {
    this.nav.hidden = true;
    this.scroller.hidden = true;
    this.message.hidden = false;
    this.message.dataset.kind = kind;
    this.message.classList.toggle('error', kind === 'error');
    this.message.replaceChildren(h('p', { class: 'empty-title', text: title }));
    if (text) this.message.append(h('p', { text }));
    if (hint) this.message.append(h('p', { class: 'muted small', text: hint }));
    this.setState(kind);
  }

  private showNote(text: string | null): void {
    this.note.hidden = text === null;
    this.note.textContent = text ?? '';
  }

  private renderSessionLabel(): void {
    const e = this.sessionId ? this.deps.store.get(this.sessionId) : undefined;
    const s = e?.session;
    const label = s ? (s.worktree ? `${s.name} · ⎇ ${s.worktree.branch}` : s.name) : '';
    if (this.sessionLabel.textContent !== label) this.sessionLabel.textContent = label;
    this.sessionLabel.title = s ? (s.worktree ? `worktree ${s.worktree.path}` : s.cwd) : '';
  }

  private renderSummary(files: DiffFile[]): void {
    let add = 0;
    let del = 0;
    for (const f of files) {
      add += f.additions;
      del += f.deletions;
    }
    this.summary.replaceChildren(
      h('span', { class: 'changes-count', text: `${files.length} file${files.length === 1 ? '' : 's'}` }), ' ',
      h('span', { class: 'num-add', text: `+${add}` }), ' ',
      h('span', { class: 'num-del', text: `\u2212${del}` }),
    );
    this.summary.title = this.data?.base ? `against ${this.data.base}` : '';
  }

  private renderList(files: DiffFile[]): void {
    const current = this.list.querySelector<HTMLElement>('[aria-current]')?.dataset.path;
    this.list.replaceChildren(
      ...files.map((f) => {
        const { dir, name } = shownParts(f.path);
        return h('li', {},
          h('button', {
            type: 'button',
            class: 'changes-file',
            'data-testid': 'changes-file',
            'data-path': f.path,
            'data-status': f.status,
            title: `${f.oldPath ? `${shownName(f.oldPath)} → ` : ''}${shownName(f.path)} (${f.status}): show its diff`,
            'aria-current': f.path === current ? 'true' : null,
          },
          statusBadge(f.status),
          h('span', { class: 'activity-path' },
            h('span', { class: 'path-dir', text: dir ? `\u200e${dir}\u200e` : '' }),
            h('span', { class: 'path-name', text: name })),
          counts(f),
          ),
        );
      }),
    );
  }

  private renderSections(files: DiffFile[]): void {
    const scroll = this.scroller.scrollTop;
    const next = new Map<string, FileSection>();
    for (const f of files) {
      let sec = this.sections.get(f.path);
      if (!sec || !sameFile(sec.file, f)) sec = this.makeSection(f);
      next.set(f.path, sec);
    }
    for (const [path, s] of this.sections) if (next.get(path) !== s) this.observer.unobserve(s.el);
    this.sections = next;
    const els = [...next.values()].map((s) => s.el);
    const cur = [...this.content.children] as HTMLElement[];
    if (cur.length === els.length && cur.every((c, i) => c.dataset.path === els[i]!.dataset.path)) {
      // The same files: swap only the changed ones, the others stay put
      // (and keep their sideways scroll).
      cur.forEach((c, i) => {
        if (c !== els[i]) c.replaceWith(els[i]!);
      });
    } else {
      this.content.replaceChildren(...els);
    }
    this.scroller.scrollTop = scroll;
    // Observing again is a no-op; the new sections get their first report.
    for (const s of next.values()) this.observer.observe(s.el);
  }

  private makeSection(f: DiffFile): FileSection {
    const collapsed = this.collapsedSet().has(f.path);
    const toggle = h('button', { type: 'button', class: 'icon-btn diff-toggle', 'data-testid': 'changes-diff-toggle' }, icon('M6 4l4 4-4 4'));
    const name = f.status === 'deleted'
      ? h('span', { class: 'diff-file-name', 'data-testid': 'changes-diff-name', title: `${shownName(f.path)} was deleted` }, pathText(f))
      : h('button', {
        type: 'button',
        class: 'diff-file-name',
        'data-testid': 'changes-diff-name',
        title: `Open ${shownName(this.workspacePath(f.path))} in the document pane`,
      }, pathText(f));
    const copy = h('button', {
      type: 'button',
      class: 'btn btn-small btn-ghost diff-copy',
      'data-testid': 'changes-diff-copy',
      title: `Copy the patch of ${f.path}`,
    }, copyIcon(), h('span', { class: 'btn-label', text: 'Copy patch' }));
    const header = h('div', { class: 'diff-file-header' }, toggle, statusBadge(f.status), name, counts(f), h('span', { class: 'grow' }), copy);

    const notes: { text: string; warn: boolean }[] = [];
    if (f.oldMode && f.newMode && f.oldMode !== f.newMode) notes.push({ text: `File mode ${f.oldMode} → ${f.newMode}`, warn: false });
    if (f.note) notes.push({ text: f.note, warn: true });
    const body = h('div', { class: 'diff-file-body', 'data-testid': 'changes-diff-body' });
    const lines = f.binary ? 1 : countLines(f.patch);
    body.style.minHeight = `${Math.min(MAX_PLACEHOLDER_PX, lines * LINE_PX)}px`;
    const main = h('div', { class: 'diff-file-main' },
      ...notes.map((n) => h('div', { class: `diff-file-note${n.warn ? ' warn' : ''}`, 'data-testid': 'changes-diff-note', text: n.text })),
      body);
    const el = h('section', {
      class: 'diff-file',
      'data-testid': 'changes-diff',
      'data-path': f.path,
      'data-status': f.status,
    }, header, main);
    const sec: FileSection = { file: f, el, main, body, drawn: null };
    this.applyCollapsed(sec, collapsed);
    return sec;
  }

  /** Draws a file's diff, if it is expanded and not drawn in the current view yet. */
  private draw(sec: FileSection): void {
    if (!this.renderer || sec.drawn === this.view || sec.el.dataset.collapsed === 'true') return;
    const { file, body } = sec;
    delete body.dataset.language;
    body.dataset.view = this.view;
    sec.drawn = this.view;
    if (file.binary) {
      body.replaceChildren(h('div', { class: 'diff-empty', text: 'Binary file: not shown.' }));
    } else {
      try {
        const r = this.renderer.renderPatch(file.patch, file.path, this.view);
        if (r.node) body.replaceChildren(r.node);
        else body.replaceChildren(h('div', { class: 'diff-empty', text: describeEmpty(file) }));
        if (r.language) body.dataset.language = r.language;
      } catch (err) {
        // A patch diff2html cannot read: show it as text.
        body.replaceChildren(
          h('div', { class: 'diff-empty', text: `Cannot draw this patch (${(err as Error).message}); here it is as text:` }),
          h('pre', { class: 'plain diff-raw', text: file.patch }),
        );
      }
    }
    body.style.minHeight = '';
    for (const o of this.deps.observers) o.drawn?.(file.path, body);
  }

  private onContentClick(ev: MouseEvent): void {
    const target = ev.target as Element;
    const sec = this.sectionOf(target.closest('[data-testid=changes-diff]'));
    if (!sec) return;
    if (target.closest('[data-testid=changes-diff-toggle]')) {
      this.setCollapsed(sec, sec.el.dataset.collapsed !== 'true');
    } else if (target.closest('button[data-testid=changes-diff-name]')) {
      this.deps.openFile(this.workspacePath(sec.file.path));
    } else {
      const copy = target.closest<HTMLButtonElement>('[data-testid=changes-diff-copy]');
      if (copy) void this.copy(sec.file.patch, copy, [sec.file]);
    }
  }

  /**
   * Brings a line of a file's diff into view, expanded and drawn: its
   * number's cell (the new side's), or null when the diff has no such line.
   */
  showLine(path: string, line: number): HTMLElement | null {
    const sec = this.sections.get(path);
    if (!sec) return null;
    if (sec.el.dataset.collapsed === 'true') this.setCollapsed(sec, false);
    this.draw(sec);
    const cells = sec.body.querySelectorAll<HTMLElement>(`td[data-line="${line}"]`);
    const cell = cells[cells.length - 1];
    if (!cell) return null;
    const top = cell.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
    this.scroller.scrollTop += top - this.scroller.clientHeight / 3;
    return cell;
  }

  private sectionOf(el: Element | null): FileSection | undefined {
    const path = (el as HTMLElement | null)?.dataset.path;
    return path === undefined ? undefined : this.sections.get(path);
  }

  /** A click in the file list: that file's diff, expanded, at the top. */
  private reveal(sec: FileSection, item: HTMLElement): void {
    if (sec.el.dataset.collapsed === 'true') this.setCollapsed(sec, false);
    for (const b of this.list.querySelectorAll('[aria-current]')) b.removeAttribute('aria-current');
    item.setAttribute('aria-current', 'true');
    this.draw(sec);
    this.scroller.scrollTop += sec.el.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top;
  }

  private collapsedSet(): Set<string> {
    const id = this.sessionId ?? '';
    let set = this.collapsed.get(id);
    if (!set) {
      set = new Set();
      this.collapsed.set(id, set);
    }
    return set;
  }

  private setCollapsed(sec: FileSection, collapsed: boolean): void {
    const set = this.collapsedSet();
    if (collapsed) set.add(sec.file.path);
    else set.delete(sec.file.path);
    this.applyCollapsed(sec, collapsed);
    if (!collapsed) {
      // Drawn when in view: observing again reports where it is now.
      this.observer.unobserve(sec.el);
      this.observer.observe(sec.el);
    }
    this.renderCollapseAll();
  }

  private applyCollapsed(sec: FileSection, collapsed: boolean): void {
    sec.el.dataset.collapsed = String(collapsed);
    sec.main.hidden = collapsed;
    const toggle = sec.el.querySelector<HTMLElement>('[data-testid=changes-diff-toggle]')!;
    toggle.setAttribute('aria-expanded', String(!collapsed));
    const what = collapsed ? 'Expand' : 'Collapse';
    toggle.title = `${what} ${sec.file.path}`;
    toggle.setAttribute('aria-label', `${what} ${sec.file.path}`);
  }

  private toggleAll(): void {
    const collapse = [...this.sections.values()].some((s) => s.el.dataset.collapsed !== 'true');
    for (const s of this.sections.values()) {
      if ((s.el.dataset.collapsed === 'true') !== collapse) this.setCollapsed(s, collapse);
    }
    this.renderCollapseAll();
  }

  private renderCollapseAll(): void {
    const anyOpen = [...this.sections.values()].some((s) => s.el.dataset.collapsed !== 'true');
    this.collapseAllBtn.textContent = anyOpen ? 'Collapse all' : 'Expand all';
    this.collapseAllBtn.title = anyOpen ? 'Collapse every file' : 'Expand every file';
  }

  private setView(view: DiffView): void {
    if (view === this.view) return;
    this.view = view;
    saveSetting(VIEW_KEY, view);
    this.renderViewToggle();
    for (const s of this.sections.values()) {
      if (s.drawn === null) continue;
      this.observer.unobserve(s.el);
      this.observer.observe(s.el);
    }
  }

  private renderViewToggle(): void {
    this.pane.dataset.view = this.view;
    this.unifiedBtn.setAttribute('aria-pressed', String(this.view === 'unified'));
    this.splitBtn.setAttribute('aria-pressed', String(this.view === 'split'));
  }

  private async copyAll(): Promise<void> {
    const files = this.data?.files ?? [];
    if (files.length === 0) return;
    const patch = files.map((f) => (f.patch && !f.patch.endsWith('\n') ? `${f.patch}\n` : f.patch)).join('');
    await this.copy(patch, this.copyAllBtn, files);
  }

  private async copy(text: string, btn: HTMLButtonElement, files: DiffFile[]): Promise<void> {
    if (!(await copyText(text))) {
      this.deps.toast('Could not copy the patch: the browser did not allow access to the clipboard.', 'error');
      return;
    }
    const label = btn.querySelector('.btn-label');
    btn.dataset.copied = 'true';
    if (label) label.textContent = 'Copied';
    window.setTimeout(() => {
      delete btn.dataset.copied;
      if (label) label.textContent = 'Copy patch';
    }, COPIED_MS);
    if (files.some((f) => f.note)) {
      this.deps.toast('Copied, but the patch is incomplete: the diff was too large and some of it was cut.', 'warning');
    }
  }

  /**
   * A path of the session's tree as the document pane knows it: relative
   * to the workspace. A worktree session's tree is its worktree,
   * .worktrees/<dir>/ in the workspace; any other session's is taken to
   * be the workspace's repository, whose top the workspace is.
   */
  private workspacePath(path: string): string {
    const wt = this.sessionId ? this.deps.store.get(this.sessionId)?.session.worktree : undefined;
    if (!wt) return path;
    let dir = this.deps.root.relative(wt.path);
    if (dir === null) {
      const i = wt.path.lastIndexOf('/.worktrees/');
      dir = i >= 0 ? wt.path.slice(i + 1) : null;
    }
    return dir ? `${dir.replace(/\/+$/, '')}/${path}` : path;
  }
}

/** A server message as a sentence: capitalized, with a full stop. */
export function sentence(s: string): string {
  const t = s.trim();
  if (!t) return t;
  return `${t[0]!.toUpperCase()}${t.slice(1)}${/[.!?]$/.test(t) ? '' : '.'}`;
}

function sameFile(a: DiffFile, b: DiffFile): boolean {
  return a.patch === b.patch && a.status === b.status && a.oldPath === b.oldPath && a.additions === b.additions &&
    a.deletions === b.deletions && a.binary === b.binary && a.note === b.note && a.oldMode === b.oldMode && a.newMode === b.newMode;
}

function countLines(s: string): number {
  let n = 1;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

export function statusBadge(status: DiffFileStatus): HTMLElement {
  return h('span', { class: `ev diff-status diff-status-${status}`, title: status, 'aria-label': status, text: STATUS_LETTER[status] ?? '?' });
}

export function counts(f: DiffFile | { additions: number; deletions: number; binary?: boolean }): HTMLElement {
  if (f.binary) return h('span', { class: 'diff-counts', 'data-testid': 'changes-counts' }, h('span', { class: 'muted', text: 'binary' }));
  return h('span', { class: 'diff-counts', 'data-testid': 'changes-counts' },
    h('span', { class: 'num-add', text: `+${f.additions}` }), ' ',
    h('span', { class: 'num-del', text: `\u2212${f.deletions}` }));
}

export function pathText(f: Pick<DiffFile, 'path' | 'oldPath'>): DocumentFragment {
  const frag = document.createDocumentFragment();
  if (f.oldPath && f.oldPath !== f.path) {
    frag.append(h('span', { class: 'diff-old-path', text: shownName(f.oldPath) }), h('span', { class: 'muted', text: ' → ' }));
  }
  frag.append(h('span', { text: shownName(f.path) }));
  return frag;
}

/** What a patch without hunks is about. */
function describeEmpty(f: DiffFile): string {
  if (!f.patch) return f.note ? 'Not shown: the diff is too large.' : 'No textual changes.';
  if (f.oldMode && f.newMode && f.oldMode !== f.newMode && f.additions === 0 && f.deletions === 0) return 'Only the file mode changed.';
  if (f.status === 'renamed') return `Renamed from ${f.oldPath ?? 'another path'}, content unchanged.`;
  if (f.status === 'added') return 'Empty file added.';
  if (f.status === 'deleted') return 'Empty file deleted.';
  return 'No textual changes.';
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function icon(...paths: string[]): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  for (const d of paths) {
    const p = document.createElementNS(SVG_NS, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

function copyIcon(): SVGSVGElement {
  const svg = icon('M10.5 5.5v-2a1.5 1.5 0 0 0-1.5-1.5H4A1.5 1.5 0 0 0 2.5 3.5v7A1.5 1.5 0 0 0 4 12h1.5');
  const r = document.createElementNS(SVG_NS, 'rect');
  for (const [k, v] of Object.entries({ x: '5.5', y: '5.5', width: '8', height: '9', rx: '1.5' })) r.setAttribute(k, v);
  svg.prepend(r);
  return svg;
}

/**
 * Puts text on the clipboard: the Clipboard API where the page may use it
 * (a secure context: https, or localhost), else the older copy command.
 */
async function copyText(text: string): Promise<boolean> {
  if (navigator.clipboard?.writeText) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // not allowed here: try the old way
    }
  }
  const focused = document.activeElement as HTMLElement | null;
  const area = h('textarea', { class: 'clipboard-scratch', readonly: true, 'aria-hidden': 'true' });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  focused?.focus?.();
  return ok;
}
