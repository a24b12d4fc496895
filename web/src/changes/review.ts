// Review comments to the agent (docs/protocol.md, review.comment to
// review.send): in the Changes view a person clicks a line number of a
// file's diff (Shift+click another for a range) and writes a comment; the
// comments collect in the session's review draft, which the server keeps
// and shows everyone in the session, until one of them sends it to the
// agent (one queued prompt) or discards it. ReviewDrafts (models/drafts.ts)
// keeps each session's latest draft; ReviewView draws it under the diffs, marks the
// commented lines and holds the comment box.
//
// A comment names lines of the file as it is now: an added or unchanged
// line's number (diffview.ts marks them data-line); a deleted line has
// none, and says so. Comments and names are other people's text: text only.

import { avatar } from '../shared/avatars';
import { sentence, type ChangesObserver, type ChangesState } from './changes';
import { byId, h } from '../shared/dom';
import { shownName } from '../shared/paths';
import { showAgo } from '../shared/ages';
import { svgX } from '../views/queue';
import type { ToastKind } from '../shared/toast';
import type { ClientMessage, ErrorMessage, PromptQueuedAckMessage, ReviewComment } from '../shared/types';
import type { ReviewDrafts } from '../models/drafts';

/** The server's limits (review/review.go). */
const MAX_COMMENT_BYTES = 4 << 10;
const MAX_RANGE_LINES = 200;
const FLASH_MS = 1_200;

const DELETED_HINT = 'A deleted line: comments are on the file as it is now, so pick an added or unchanged line.';

export interface ReviewDeps {
  drafts: ReviewDrafts;
  send(msg: ClientMessage): boolean;
  canAct(): boolean;
  /** This browser's author id (client.welcome), whose comments it may remove. */
  myAuthorId(): string | null;
  colorOf(authorId: string, name: string): string;
  /** Brings a line of a file's diff into view: its number's cell, or null when the diff does not show it. */
  showLine(path: string, line: number): HTMLElement | null;
  /** Whether the session's program is a plain shell (models/store.ts, runsShell). */
  runsShell(sessionId: string): boolean;
  toast(message: string, kind?: ToastKind): void;
}

/** The lines the comment box is about; anchor is where a Shift+click extends from. */
interface Selection {
  path: string;
  anchor: number;
  start: number;
  end: number;
}

export class ReviewView implements ChangesObserver {
  private readonly panel = byId('review');
  private readonly count = byId('review-count');
  private readonly hint = byId('review-hint');
  private readonly list = byId('review-list');
  private readonly actions = byId('review-actions');
  private readonly sendBtn = byId<HTMLButtonElement>('review-send');
  private readonly discardBtn = byId<HTMLButtonElement>('review-discard');
  private readonly confirm = byId('review-discard-confirm');
  private readonly confirmText = byId('review-discard-text');
  private readonly confirmNo = byId<HTMLButtonElement>('review-discard-no');
  private readonly confirmYes = byId<HTMLButtonElement>('review-discard-yes');
  private readonly shellConfirm = byId('review-shell-confirm');
  private readonly shellPaste = byId<HTMLButtonElement>('review-shell-paste');
  private readonly content = byId('changes-content');

  private readonly form = h('form', { class: 'review-form', 'data-testid': 'review-form' });
  private readonly formTitle = h('span', { class: 'review-form-where', 'data-testid': 'review-form-where' });
  private readonly input = h('textarea', {
    class: 'review-input',
    'data-testid': 'review-input',
    rows: 3,
    placeholder: 'What should the agent change here?',
    spellcheck: 'true',
  });
  private readonly addBtn = h('button', { type: 'submit', class: 'btn btn-primary btn-small', 'data-testid': 'review-add' }, 'Add comment');
  /** The table rows the box sits in (and, side by side, its twin in the other table). */
  private formRow: HTMLTableRowElement | null = null;
  private spacerRow: HTMLTableRowElement | null = null;
  private readonly spacerSizer = new ResizeObserver(() => this.sizeSpacer());
  /** Whether the box has the focus: a redraw that moves it gives the focus back. */
  private typing = false;

  private sessionId: string | null = null;
  private state: ChangesState = 'idle';
  /** Each file's drawn diff, by path, to mark again when the draft changes. */
  private readonly bodies = new Map<string, HTMLElement>();
  private selection: Selection | null = null;
  private readonly items = new Map<string, HTMLLIElement>();
  /** A comment on its way, from the box on sel: done when a draft brings a comment it had not. */
  private pendingComment: { sessionId: string; before: Set<string>; sel: Selection } | null = null;
  private pendingSend: string | null = null;
  /** The send on its way pastes comments: it is done when the draft empties (there is no ack). */
  private pendingPaste = false;
  /** Removals on their way: comment id to session id. */
  private readonly removing = new Map<string, string>();

  constructor(private readonly deps: ReviewDeps) {
    const cancel = h('button', { type: 'button', class: 'btn btn-ghost btn-small', 'data-testid': 'review-cancel' }, 'Cancel');
    const inputId = 'review-input';
    this.input.id = inputId;
    this.input.setAttribute('aria-describedby', 'review-form-keys');
    this.form.append(
      h('label', { class: 'review-form-head', for: inputId }, 'Comment on ', this.formTitle),
      this.input,
      h('div', { class: 'review-form-row' },
        h('span', { class: 'queue-hint', id: 'review-form-keys' },
          h('kbd', { text: 'Enter' }), ' adds · ', h('kbd', { text: 'Shift+Enter' }), ' new line · ',
          h('kbd', { text: 'Esc' }), ' cancels · Shift+click a line number for a range'),
        cancel,
        this.addBtn),
    );
    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.addComment();
    });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.ctrlKey && !ev.altKey && !ev.metaKey && !ev.isComposing) {
        ev.preventDefault();
        this.addComment();
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        this.cancel();
      }
    });
    this.input.addEventListener('input', () => this.renderForm());
    this.form.addEventListener('focusin', () => {
      this.typing = true;
    });
    this.form.addEventListener('focusout', () => {
      // A redraw of the diff takes the box out of the page (the browser
      // says focusout as it goes): whoever was typing still is.
      window.setTimeout(() => {
        if (this.form.isConnected && !this.form.contains(document.activeElement)) this.typing = false;
      });
    });
    cancel.addEventListener('click', () => this.cancel());

    this.content.addEventListener('click', (ev) => this.onContentClick(ev));
    this.content.addEventListener('keydown', (ev) => this.onContentKey(ev));
    this.list.addEventListener('click', (ev) => this.onListClick(ev));
    this.sendBtn.addEventListener('click', () => this.sendDraft());
    byId('review-shell-cancel').addEventListener('click', () => this.askShell(false));
    byId('review-shell-prompt').addEventListener('click', () => this.sendDraft('prompt'));
    this.shellPaste.addEventListener('click', () => this.sendDraft('comment'));
    this.discardBtn.addEventListener('click', () => this.askDiscard(true));
    this.confirmNo.addEventListener('click', () => this.askDiscard(false));
    this.confirmYes.addEventListener('click', () => this.discard());
    this.confirm.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') this.askDiscard(false);
    });
    deps.drafts.subscribe((id) => this.onDraft(id));
    this.render();
  }

  // ---- what the Changes view tells ------------------------------------

  shown(sessionId: string | null, state: ChangesState): void {
    if (sessionId !== this.sessionId) {
      this.sessionId = sessionId;
      this.bodies.clear();
      this.close();
      this.askDiscard(false);
      this.items.clear();
      this.list.replaceChildren();
    }
    this.state = state;
    this.render();
  }

  drawn(path: string, body: HTMLElement): void {
    this.bodies.set(path, body);
    const first = body.querySelector<HTMLElement>('td[data-line]');
    for (const td of body.querySelectorAll<HTMLElement>('td[data-line]')) {
      td.setAttribute('role', 'button');
      td.tabIndex = td === first ? 0 : -1;
    }
    for (const td of body.querySelectorAll<HTMLElement>('td[data-deleted]')) td.title = DELETED_HINT;
    this.mark(path, body);
    if (this.selection?.path === path) this.placeForm();
  }

  // ---- the comment box --------------------------------------------------

  /** A line number was chosen: a new selection, or (extend) the range from the anchor to it. */
  private select(path: string, line: number, extend: boolean, focusBox: boolean): void {
    const cur = this.selection;
    let next: Selection = { path, anchor: line, start: line, end: line };
    if (extend && cur?.path === path) {
      next = { path, anchor: cur.anchor, start: Math.min(cur.anchor, line), end: Math.max(cur.anchor, line) };
      if (next.end - next.start + 1 > MAX_RANGE_LINES) {
        this.deps.toast(`A comment spans at most ${MAX_RANGE_LINES} lines; this range has ${next.end - next.start + 1}.`, 'error');
        return;
      }
    }
    const old = cur?.path;
    this.selection = next;
    if (old && old !== path) this.remark(old);
    this.remark(path);
    this.formTitle.textContent = where(path, next.start, next.end);
    this.placeForm();
    this.renderForm();
    if (focusBox) this.input.focus();
  }

  /** Puts the box under the last selected line, in its table; side by side, a spacer keeps the other table's rows level. */
  private placeForm(): void {
    const refocus = this.typing;
    const { selectionStart, selectionEnd } = this.input;
    this.formRow?.remove();
    this.spacerRow?.remove();
    this.spacerSizer.disconnect();
    this.formRow = this.spacerRow = null;
    const sel = this.selection;
    if (!sel) {
      this.form.remove();
      return;
    }
    const body = this.bodies.get(sel.path);
    const cells = body ? body.querySelectorAll<HTMLElement>(`td[data-line="${sel.end}"]`) : [];
    // Side by side, the last is the new side's.
    const cell = cells[cells.length - 1];
    const tr = cell?.closest('tr');
    if (!body || !tr) {
      // The line left the diff (the file changed since): the box stays
      // with the file, its title says which lines it is about.
      if (body) body.append(this.form);
      else this.form.remove();
    } else {
      this.formRow = h('tr', { class: 'review-row', 'data-testid': 'review-row' }, h('td', { colspan: 2 }, this.form));
      tr.after(this.formRow);
      const sides = [...body.querySelectorAll('.d2h-file-side-diff')];
      const other = sides.find((s) => !s.contains(tr));
      if (sides.length === 2 && other) {
        const twin = other.querySelectorAll('tr')[[...tr.parentElement!.children].indexOf(tr)];
        if (twin) {
          this.spacerRow = h('tr', { class: 'review-spacer', 'aria-hidden': 'true' }, h('td', { colspan: 2 }));
          twin.after(this.spacerRow);
          this.spacerSizer.observe(this.formRow);
        }
      }
    }
    // Unless the focus went somewhere else meanwhile.
    const free = !document.activeElement || document.activeElement === document.body;
    if (refocus && free && this.form.isConnected) {
      this.input.focus({ preventScroll: true });
      this.input.setSelectionRange(selectionStart, selectionEnd);
    }
  }

  private sizeSpacer(): void {
    if (this.formRow && this.spacerRow) this.spacerRow.style.height = `${this.formRow.getBoundingClientRect().height}px`;
  }

  private renderForm(): void {
    const pending = !!this.pendingComment;
    // What is on its way is what the box shows until the server answers.
    this.input.readOnly = pending;
    this.addBtn.disabled = pending || !this.deps.canAct() || !this.input.value.trim();
    this.addBtn.textContent = pending ? 'Adding…' : 'Add comment';
  }

  /** Closes the box, forgetting its text; the focus goes back to the line it was about. */
  private cancel(): void {
    const sel = this.selection;
    const hadFocus = this.form.contains(document.activeElement);
    this.close();
    if (sel && hadFocus) this.cellOf(sel.path, sel.end)?.focus();
  }

  private close(): void {
    const path = this.selection?.path;
    this.selection = null;
    this.input.value = '';
    this.typing = false;
    this.placeForm();
    this.renderForm();
    if (path) this.remark(path);
  }

  private addComment(): void {
    const sel = this.selection;
    const sessionId = this.sessionId;
    const text = this.input.value;
    if (!sel || !sessionId || !text.trim() || this.pendingComment) return;
    const bytes = new TextEncoder().encode(text.replace(/\r\n/g, '\n')).length;
    if (bytes > MAX_COMMENT_BYTES) {
      this.deps.toast(`This comment is ${bytes} bytes; a comment holds at most ${MAX_COMMENT_BYTES}.`, 'error');
      return;
    }
    const msg: ClientMessage = { type: 'review.comment', sessionId, path: sel.path, line: sel.start, text };
    if (sel.end !== sel.start) msg.endLine = sel.end;
    if (!this.deps.canAct() || !this.deps.send(msg)) {
      this.deps.toast('Not connected to the server: the comment was not added.', 'error');
      return;
    }
    this.pendingComment = { sessionId, before: new Set(this.deps.drafts.get(sessionId).map((c) => c.id)), sel };
    this.renderForm();
  }

  // ---- the diff's line numbers ------------------------------------------

  private onContentClick(ev: MouseEvent): void {
    const td = (ev.target as Element).closest<HTMLElement>('td[data-line], td[data-deleted]');
    const path = td ? pathOf(td) : null;
    if (!td || path === null) return;
    if (td.dataset.line === undefined) {
      this.deps.toast(DELETED_HINT, 'info');
      return;
    }
    this.rove(td);
    this.select(path, Number(td.dataset.line), ev.shiftKey, true);
  }

  /** Arrows move along a file's line numbers (Shift extends the selection); Enter or Space comments. */
  private onContentKey(ev: KeyboardEvent): void {
    const td = (ev.target as Element).closest<HTMLElement>('td[data-line]');
    const path = td ? pathOf(td) : null;
    if (!td || path === null || ev.target !== td || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const line = Number(td.dataset.line);
    if (ev.key === 'Enter' || ev.key === ' ') {
      ev.preventDefault();
      const sel = this.selection;
      // Within the selection Shift+arrows made: comment on all of it.
      if (!ev.shiftKey && sel?.path === path && line >= sel.start && line <= sel.end) this.input.focus();
      else this.select(path, line, ev.shiftKey, true);
    } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
      ev.preventDefault();
      const cells = [...td.closest('table')!.querySelectorAll<HTMLElement>('td[data-line]')];
      const next = cells[cells.indexOf(td) + (ev.key === 'ArrowDown' ? 1 : -1)];
      if (!next) return;
      if (ev.shiftKey) {
        if (this.selection?.path !== path) this.select(path, line, false, false);
        this.select(path, Number(next.dataset.line), true, false);
      }
      this.rove(next);
      next.focus();
    } else if (ev.key === 'Escape' && this.selection) {
      this.close();
    }
  }

  /** One line number per file is in the tab order: the last one used. */
  private rove(td: HTMLElement): void {
    const body = td.closest('[data-testid=changes-diff-body]');
    for (const c of body?.querySelectorAll<HTMLElement>('td[data-line][tabindex="0"]') ?? []) c.tabIndex = -1;
    td.tabIndex = 0;
  }

  private cellOf(path: string, line: number): HTMLElement | null {
    const body = this.bodies.get(path);
    const cells = body?.querySelectorAll<HTMLElement>(`td[data-line="${line}"]`);
    return cells?.[cells.length - 1] ?? null;
  }

  private remark(path: string): void {
    const body = this.bodies.get(path);
    if (body) this.mark(path, body);
  }

  /** Marks a file's commented lines, and the ones the box is about. */
  private mark(path: string, body: HTMLElement): void {
    const comments = this.sessionId ? this.deps.drafts.get(this.sessionId).filter((c) => c.path === path) : [];
    const sel = this.selection?.path === path ? this.selection : null;
    for (const td of body.querySelectorAll<HTMLElement>('td[data-line]')) {
      const line = Number(td.dataset.line);
      const on = comments.filter((c) => line >= c.line && line <= c.endLine);
      td.classList.toggle('review-marked', on.length > 0);
      td.classList.toggle('review-selected', !!sel && line >= sel.start && line <= sel.end);
      const by = [...new Set(on.map((c) => c.author.name))].join(', ');
      const label = on.length ? `Line ${line}, ${on.length === 1 ? 'a comment' : `${on.length} comments`} by ${by}` : `Line ${line}`;
      td.title = `${label}: click to comment on it, Shift+click to comment on the lines from the one chosen to this one`;
      td.setAttribute('aria-label', `${label}: comment`);
    }
  }

  // ---- the draft ---------------------------------------------------------

  private onDraft(sessionId: string): void {
    const comments = this.deps.drafts.get(sessionId);
    for (const [cid, sid] of this.removing) {
      if (sid === sessionId && !comments.some((c) => c.id === cid)) this.removing.delete(cid);
    }
    const p = this.pendingComment;
    if (p?.sessionId === sessionId) {
      const me = this.deps.myAuthorId();
      if (comments.some((c) => !p.before.has(c.id) && (!me || c.author.id === me))) {
        this.pendingComment = null;
        // A box moved on to other lines while the comment was on its way
        // stays open for the next comment, empty (it held this one's text).
        if (this.selection === p.sel) {
          const hadFocus = this.form.contains(document.activeElement);
          this.close();
          if (hadFocus) this.cellOf(p.sel.path, p.sel.end)?.focus();
        } else {
          this.input.value = '';
        }
        this.renderForm();
      }
    }
    if (this.pendingPaste && this.pendingSend === sessionId && comments.length === 0) {
      this.pendingSend = null;
      this.pendingPaste = false;
      this.deps.toast('Review pasted at the shell’s prompt as comments: nothing ran. Press Enter to keep it in the history, or Ctrl+C to clear it.', 'info');
    }
    if (sessionId !== this.sessionId) return;
    for (const [path, body] of this.bodies) this.mark(path, body);
    this.render();
  }

  /** The session, its draft, the connection or this browser's identity changed. */
  render(): void {
    const comments = this.sessionId ? this.deps.drafts.get(this.sessionId) : [];
    const n = comments.length;
    // A draft outlives the changes it is about (the agent may undo them):
    // it stays in view to be sent or discarded.
    this.panel.hidden = !this.sessionId || (n === 0 && this.state !== 'ready');
    this.panel.dataset.sessionId = this.sessionId ?? '';
    this.panel.dataset.count = String(n);
    this.count.textContent = n ? `${n} comment${n === 1 ? '' : 's'}` : '';
    this.hint.hidden = n > 0;
    this.actions.hidden = n === 0;
    if (n === 0) {
      this.askDiscard(false);
      this.askShell(false);
    }
    const can = this.deps.canAct();
    this.sendBtn.disabled = !can || this.pendingSend !== null;
    this.sendBtn.textContent = this.pendingSend !== null ? 'Sending…' : 'Send to agent';
    this.discardBtn.disabled = !can;
    this.confirmYes.disabled = !can;
    this.renderList(comments);
    this.renderForm();
  }

  private renderList(comments: ReviewComment[]): void {
    const mine = this.deps.myAuthorId();
    const want = new Set(comments.map((c) => c.id));
    for (const [id, li] of this.items) {
      if (!want.has(id)) {
        li.remove();
        this.items.delete(id);
      }
    }
    let prev: Element | null = null;
    for (const c of comments) {
      let li = this.items.get(c.id);
      if (!li) {
        li = this.item(c);
        this.items.set(c.id, li);
      }
      const own = !!mine && c.author.id === mine;
      li.dataset.mine = String(own);
      li.classList.toggle('mine', own);
      li.classList.toggle('removing', this.removing.has(c.id));
      li.querySelector<HTMLElement>('.queue-you')!.hidden = !own;
      let remove = li.querySelector<HTMLButtonElement>('[data-testid=review-remove]');
      if (own && !remove) {
        remove = h('button', { type: 'button', class: 'icon-btn queue-remove', 'data-testid': 'review-remove', title: 'Remove your comment', 'aria-label': `Remove your comment on ${where(c.path, c.line, c.endLine)}` });
        remove.append(svgX());
        li.querySelector('.review-item-head')!.append(remove);
      } else if (!own && remove) {
        remove.remove();
        remove = null;
      }
      if (remove) remove.disabled = !this.deps.canAct() || this.removing.has(c.id);
      const at: Element | null = prev ? prev.nextElementSibling : this.list.firstElementChild;
      if (at !== li) this.list.insertBefore(li, at);
      prev = li;
    }
    this.list.hidden = comments.length === 0;
  }

  private item(c: ReviewComment): HTMLLIElement {
    const color = this.deps.colorOf(c.author.id, c.author.name);
    const at = Date.parse(c.at);
    const time = h('time', { class: 'queue-time', 'data-testid': 'review-time' });
    if (Number.isFinite(at)) showAgo(time, at, { title: `Commented ${new Date(at).toLocaleString()}` });
    const loc = where(c.path, c.line, c.endLine);
    return h('li', { class: 'review-item', 'data-testid': 'review-comment', 'data-comment-id': c.id, 'data-author-id': c.author.id, 'data-path': c.path, 'data-line': c.line, 'data-end-line': c.endLine },
      h('div', { class: 'review-item-head' },
        h('span', { class: 'queue-who' }, avatar({ name: c.author.name, color }, { size: 'sm', title: c.author.name })),
        h('span', { class: 'queue-author', 'data-testid': 'review-author', text: c.author.name, title: c.author.name }),
        h('span', { class: 'queue-you', text: 'you', hidden: true }),
        h('button', { type: 'button', class: 'link-btn review-where', 'data-testid': 'review-where', title: `Show ${loc} in the diff`, text: loc }),
        time),
      h('p', { class: 'review-text', 'data-testid': 'review-text', text: c.text }));
  }

  private onListClick(ev: MouseEvent): void {
    const target = ev.target as Element;
    const li = target.closest<HTMLLIElement>('[data-testid=review-comment]');
    const id = li?.dataset.commentId;
    if (!li || !id || !this.sessionId) return;
    if (target.closest('[data-testid=review-remove]')) {
      if (!this.deps.canAct() || this.removing.has(id)) return;
      if (!this.deps.send({ type: 'review.uncomment', sessionId: this.sessionId, commentId: id })) return;
      this.removing.set(id, this.sessionId);
      this.render();
    } else if (target.closest('[data-testid=review-where]')) {
      const path = li.dataset.path ?? '';
      const cell = this.deps.showLine(path, Number(li.dataset.line));
      if (!cell) {
        this.deps.toast(`${path} does not show line ${li.dataset.line} now: the file changed since the comment.`, 'warning');
        return;
      }
      cell.focus({ preventScroll: true });
      this.rove(cell);
      flash(this.bodies.get(path), Number(li.dataset.line), Number(li.dataset.endLine));
    }
  }

  /**
   * Sends the draft. A shell is asked about first (as undefined): it
   * never waits for a prompt as an agent does, and typed, each line of
   * the review would run as a command; pasted as comments, none runs.
   */
  private sendDraft(as?: 'prompt' | 'comment'): void {
    const sessionId = this.sessionId;
    if (!sessionId || this.pendingSend !== null || this.deps.drafts.get(sessionId).length === 0) return;
    if (as === undefined && this.deps.runsShell(sessionId)) {
      this.askShell(true);
      return;
    }
    const msg: ClientMessage = as === 'comment' ? { type: 'review.send', sessionId, as } : { type: 'review.send', sessionId };
    if (!this.deps.canAct() || !this.deps.send(msg)) {
      this.deps.toast('Not connected to the server: the review was not sent.', 'error');
      return;
    }
    this.askShell(false);
    this.pendingSend = sessionId;
    this.pendingPaste = as === 'comment';
    this.render();
  }

  /** The question before a review goes to a shell, in place of the buttons; Paste has the focus. */
  private askShell(ask: boolean): void {
    if (ask === !this.shellConfirm.hidden) return;
    const hadFocus = this.shellConfirm.contains(document.activeElement);
    this.shellConfirm.hidden = !ask;
    this.actions.classList.toggle('confirming', ask);
    if (ask) this.shellPaste.focus();
    else if (hadFocus) this.sendBtn.focus();
  }

  /** Discard asks in place first, naming whose comments go; Cancel has the focus. */
  private askDiscard(ask: boolean): void {
    if (ask === !this.confirm.hidden) return;
    const hadFocus = this.confirm.contains(document.activeElement);
    this.confirm.hidden = !ask;
    this.actions.classList.toggle('confirming', ask);
    if (!ask) {
      if (hadFocus) this.discardBtn.focus();
      return;
    }
    const comments = this.sessionId ? this.deps.drafts.get(this.sessionId) : [];
    const me = this.deps.myAuthorId();
    const others = [...new Set(comments.filter((c) => c.author.id !== me).map((c) => c.author.name))];
    const n = comments.length;
    this.confirmText.textContent = `Discard ${n === 1 ? 'the comment' : `all ${n} comments`}${others.length ? `, ${others.join(' and ')}'s too` : ''}?`;
    this.confirmNo.focus();
  }

  private discard(): void {
    if (!this.sessionId) return;
    if (!this.deps.canAct() || !this.deps.send({ type: 'review.discard', sessionId: this.sessionId })) {
      this.deps.toast('Not connected to the server: the draft was not discarded.', 'error');
      return;
    }
    this.askDiscard(false);
  }

  // ---- answers ------------------------------------------------------------

  /** The ack of a review.send; reports whether it was one. */
  onAck(m: PromptQueuedAckMessage): boolean {
    if (this.pendingSend !== m.sessionId) return false;
    this.pendingSend = null;
    this.deps.toast(m.position === 1
      ? 'Review sent: it goes to the agent next, when it waits for input.'
      : `Review sent: queued #${m.position}, ${m.position - 1} ahead of it.`, 'info');
    this.render();
    return true;
  }

  /** An error that answers a review message; reports whether it was one, shown as a toast. */
  onError(m: ErrorMessage): boolean {
    const sid = m.sessionId;
    if (!sid) return false;
    const message = sentence(m.message);
    switch (m.code) {
      case 'REVIEW_FULL':
        if (this.pendingComment?.sessionId === sid) this.pendingComment = null;
        this.deps.toast(`The comment was not added. ${message}`, 'error');
        break;
      case 'NOT_COMMENT_AUTHOR':
      case 'COMMENT_NOT_FOUND': {
        for (const [cid, s] of this.removing) if (s === sid) this.removing.delete(cid);
        this.deps.toast(m.code === 'COMMENT_NOT_FOUND' ? 'That comment is no longer in the draft (sent or discarded).' : message, 'error');
        break;
      }
      case 'QUEUE_FULL':
      case 'INVALID_MESSAGE':
        if (this.pendingSend === sid) {
          this.pendingSend = null;
          this.pendingPaste = false;
          this.deps.toast(`The review was not sent; the draft is as it was. ${message}`, 'error');
        } else if (this.pendingComment?.sessionId === sid) {
          // The text stays in the box, to fix.
          this.pendingComment = null;
          this.deps.toast(`The comment was not added. ${message}`, 'error');
        } else {
          return false;
        }
        break;
      default:
        return false;
    }
    this.render();
    return true;
  }

  /** The connection dropped: requests on their way get no answer. */
  connectionLost(): void {
    if (this.pendingComment) this.deps.toast('The connection dropped before the server took the comment; it is still in the box.', 'error');
    if (this.pendingSend !== null) this.deps.toast('The connection dropped while the review was being sent: look at the queue and the draft once it is back.', 'error');
    this.pendingComment = null;
    this.pendingSend = null;
    this.pendingPaste = false;
    this.removing.clear();
    this.render();
  }
}

/** "a.go:3", or "a.go:3-5" for a range: how the prompt names the lines too. */
function where(path: string, line: number, endLine: number): string {
  const name = shownName(path);
  return endLine > line ? `${name}:${line}-${endLine}` : `${name}:${line}`;
}

function pathOf(el: Element): string | null {
  return el.closest<HTMLElement>('[data-testid=changes-diff]')?.dataset.path ?? null;
}

/** Lights up a comment's lines for a moment, once shown. */
function flash(body: HTMLElement | undefined, line: number, endLine: number): void {
  for (const td of body?.querySelectorAll<HTMLElement>('td[data-line]') ?? []) {
    const n = Number(td.dataset.line);
    if (n < line || n > endLine) continue;
    td.classList.add('review-flash');
    window.setTimeout(() => td.classList.remove('review-flash'), FLASH_MS);
  }
}
