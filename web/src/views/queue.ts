// The prompt queue (docs/protocol.md, prompt.queue): prompts anyone in a
// session queues for its agent, typed in by the server one at a time, each
// when the agent next waits for input. PromptQueues (models/queues.ts)
// keeps every session's queue from prompt.list and the events that change
// it; QueuePanel shows
// the active session's queue beside its terminal, with a box to queue a
// prompt and a remove button on each: one's own goes at once; someone
// else's only after a question that names whose it is, since its author
// may be gone for good (another browser, storage cleared) and nobody else
// could ever remove it. Prompts and names are other people's text: they
// go into the page as text only.

import { agentAvatar, avatar } from '../shared/avatars';
import { showAgo, stopAgo } from '../shared/ages';
import { byId, h } from '../shared/dom';
import type { ToastKind } from '../shared/toast';
import type {
  ClientMessage,
  ErrorMessage,
  PromptQueuedAckMessage,
  QueuedPrompt,
} from '../shared/types';
import { loadSetting, saveSetting } from '../shared/settings';
import { agentAuthorSession, type PromptQueues, type QueueChange } from '../models/queues';

/** The server's limit on one prompt (sessions.MaxPromptBytes). */
export const MAX_PROMPT_BYTES = 64 * 1024;
const OPEN_KEY = 'agentmux.queueOpen';
/** A prompt longer than this (or with more lines) is clipped, with "more". */
const CLIP_CHARS = 240;
const CLIP_LINES = 4;
/** How long the delivered flash lasts before the prompt leaves the list. */
const DELIVERED_MS = 1_400;
const ACK_SHOW_MS = 8_000;

export interface QueuePanelDeps {
  queues: PromptQueues;
  send(msg: ClientMessage): boolean;
  canAct(): boolean;
  /** The session on screen. */
  activeId(): string | null;
  /** This browser's author id (client.welcome), for the remove buttons. */
  myAuthorId(): string | null;
  /** The colour to show for an author (prompts carry only the name). */
  colorOf(authorId: string, name: string): string;
  toast(message: string, kind?: ToastKind): void;
}

/** A request on its way, answered in order by an ack, an event or an error. */
interface PendingQueue {
  sessionId: string;
  text: string;
}

export class QueuePanel {
  private readonly pane = byId('terminal-pane');
  private readonly panel = byId('queue');
  private readonly toggle = byId<HTMLButtonElement>('queue-toggle');
  private readonly toggleCount = byId('queue-toggle-count');
  private readonly count = byId('queue-count');
  private readonly list = byId('queue-list');
  private readonly empty = byId('queue-empty');
  private readonly form = byId<HTMLFormElement>('queue-form');
  private readonly input = byId<HTMLTextAreaElement>('queue-input');
  private readonly submit = byId<HTMLButtonElement>('queue-submit');
  private readonly ack = byId('queue-ack');
  private readonly items = new Map<string, HTMLLIElement>();
  private shownId: string | null = null;
  private open = false;
  private readonly pendingQueue: PendingQueue[] = [];
  /** Dequeues on their way, by prompt id. */
  private readonly removing = new Map<string, string>();
  /** Someone else's prompt whose removal waits for the user's yes. */
  private confirming: string | null = null;
  private ackTimer: number | undefined;
  /** The prompt the ack note is about: the note goes when the prompt leaves the queue. */
  private ackPromptId: string | null = null;
  /** The texts typed in each session's box, kept while another session is shown. */
  private readonly drafts = new Map<string, string>();

  constructor(private readonly deps: QueuePanelDeps) {
    this.open = loadSetting(OPEN_KEY) === '1';
    this.toggle.addEventListener('click', () => this.setOpen(!this.open, true));
    byId('queue-close').addEventListener('click', () => this.setOpen(false, false));
    this.form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.queue();
    });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey) && !ev.altKey && !ev.shiftKey) {
        ev.preventDefault();
        this.queue();
      } else if (ev.key === 'Escape' && !this.input.value) {
        this.setOpen(false, false);
      }
    });
    this.input.addEventListener('input', () => this.renderForm());
    if (/Mac|iPhone|iPad/.test(navigator.platform)) {
      const key = this.form.querySelector('.queue-hint kbd');
      if (key) key.textContent = '⌘';
    }
    this.list.addEventListener('click', (ev) => this.onListClick(ev));
    this.list.addEventListener('keydown', (ev) => this.onListKey(ev));
    deps.queues.subscribe((c) => this.onChange(c));
    this.render();
  }

  /** The user opened or closed the panel (remembered); focus follows when asked. */
  setOpen(open: boolean, focus: boolean): void {
    this.open = open;
    saveSetting(OPEN_KEY, open ? '1' : '0');
    this.render();
    if (open && focus) this.input.focus();
    else if (!open && this.panel.contains(document.activeElement)) this.toggle.focus();
  }

  /** The active session, the connection or this browser's identity changed. */
  render(): void {
    const id = this.deps.activeId();
    if (id !== this.shownId) {
      if (this.shownId) this.drafts.set(this.shownId, this.input.value);
      this.shownId = id;
      this.input.value = id ? (this.drafts.get(id) ?? '') : '';
      this.items.clear();
      this.list.replaceChildren();
      this.confirming = null;
      this.showAck(null);
    }
    this.toggle.hidden = !id;
    const visible = !!id && this.open;
    this.panel.hidden = !visible;
    this.pane.classList.toggle('queue-open', visible);
    this.toggle.setAttribute('aria-expanded', String(visible));
    this.panel.dataset.sessionId = id ?? '';
    this.renderList();
    this.renderForm();
  }

  private renderForm(): void {
    const pending = this.pendingQueue.some((p) => p.sessionId === this.shownId);
    this.submit.disabled = !this.deps.canAct() || pending || !this.input.value.trim();
    this.submit.textContent = pending ? 'Queuing…' : 'Queue prompt';
  }

  private renderList(): void {
    const id = this.shownId;
    const prompts = id ? this.deps.queues.get(id) : [];
    const mine = this.deps.myAuthorId();
    const want = new Set(prompts.map((p) => p.id));
    for (const [pid, li] of this.items) {
      if (!want.has(pid) && li.dataset.state !== 'delivered') {
        li.remove();
        this.items.delete(pid);
      }
    }
    let prev: Element | null = null;
    prompts.forEach((p, i) => {
      let li = this.items.get(p.id);
      if (!li) {
        li = this.item(p);
        this.items.set(p.id, li);
      }
      this.updateItem(li, p, i + 1, mine);
      const at: Element | null = prev ? prev.nextElementSibling : this.list.firstElementChild;
      if (at !== li) this.list.insertBefore(li, at);
      prev = li;
    });
    const n = prompts.length;
    this.count.textContent = n ? String(n) : '';
    this.toggleCount.textContent = String(n);
    this.toggleCount.hidden = n === 0;
    this.toggle.dataset.count = String(n);
    this.toggle.title = n
      ? `Prompt queue: ${n} prompt${n === 1 ? '' : 's'} for when the agent next waits`
      : 'Prompt queue: prompts for when the agent next waits for input';
    // A prompt flashing out still counts as something to show.
    this.list.hidden = this.list.childElementCount === 0;
    this.empty.hidden = !this.list.hidden;
  }

  /** A prompt's row; filled by updateItem. */
  private item(p: QueuedPrompt): HTMLLIElement {
    const text = h('p', { class: 'queue-text', 'data-testid': 'queue-text' });
    text.textContent = p.text;
    const long = p.text.length > CLIP_CHARS || p.text.split('\n').length > CLIP_LINES;
    const li = h('li', { class: 'queue-item', 'data-testid': 'queue-item', 'data-prompt-id': p.id, 'data-author-id': p.authorId, 'data-state': 'queued' },
      h('div', { class: 'queue-item-head' },
        h('span', { class: 'queue-pos', 'data-testid': 'queue-pos' }),
        h('span', { class: 'queue-who' }),
        h('span', { class: 'queue-author', 'data-testid': 'queue-author' }),
        h('span', { class: 'queue-you', text: 'you', hidden: true }),
        h('time', { class: 'queue-time', 'data-testid': 'queue-time' }),
      ),
      text,
      long ? h('button', { type: 'button', class: 'link-btn queue-expand', 'data-testid': 'queue-expand', 'aria-expanded': 'false', text: 'Show all' }) : null,
    );
    li.classList.toggle('clipped', long);
    return li;
  }

  private updateItem(li: HTMLLIElement, p: QueuedPrompt, position: number, mine: string | null): void {
    const own = !!mine && p.authorId === mine;
    li.dataset.mine = String(own);
    li.dataset.position = String(position);
    li.classList.toggle('mine', own);
    li.classList.toggle('removing', this.removing.has(p.id));
    li.querySelector('.queue-pos')!.textContent = `#${position}`;
    const author = li.querySelector<HTMLElement>('.queue-author')!;
    if (author.textContent !== p.author) author.textContent = p.author;
    // An agent's prompt (send_prompt, start_session's first prompt) has a
    // robot where a person's initials would be: "AP" read as someone's.
    const byAgent = agentAuthorSession(p.authorId) !== null;
    li.dataset.byAgent = String(byAgent);
    const title = own ? `${p.author} (you)` : byAgent ? `${p.author}: queued by an agent, through agentmux's tools` : p.author;
    author.title = title;
    li.querySelector<HTMLElement>('.queue-you')!.hidden = !own;
    const color = this.deps.colorOf(p.authorId, p.author);
    const who = li.querySelector<HTMLElement>('.queue-who')!;
    const key = `${p.author}\u0000${color}`;
    if (who.dataset.key !== key) {
      who.dataset.key = key;
      who.replaceChildren((byAgent ? agentAvatar : avatar)({ name: p.author, color }, { size: 'sm', title }));
    }
    const time = li.querySelector<HTMLTimeElement>('.queue-time')!;
    const at = Date.parse(p.queuedAt);
    if (Number.isFinite(at)) showAgo(time, at, { title: `Queued ${new Date(at).toLocaleString()}` });
    let remove = li.querySelector<HTMLButtonElement>('[data-testid=queue-remove]');
    if (!remove && li.dataset.state !== 'delivered') {
      remove = h('button', { type: 'button', class: 'icon-btn queue-remove', 'data-testid': 'queue-remove' });
      remove.append(svgX());
      li.querySelector('.queue-item-head')!.append(remove);
    }
    if (remove) {
      const label = own ? 'Remove your prompt from the queue' : `Remove ${p.author}’s prompt from the queue…`;
      remove.title = label;
      remove.setAttribute('aria-label', label);
      remove.disabled = !this.deps.canAct() || this.removing.has(p.id);
    }
    this.renderConfirm(li, p, own);
  }

  /** The question before someone else's prompt goes, in its row: whose it is, Remove and Keep. */
  private renderConfirm(li: HTMLLIElement, p: QueuedPrompt, own: boolean): void {
    const want = this.confirming === p.id && !own && !this.removing.has(p.id);
    let box = li.querySelector<HTMLElement>('[data-testid=queue-confirm]');
    if (!want) {
      box?.remove();
      return;
    }
    if (box) return;
    const keep = h('button', { type: 'button', class: 'btn btn-small btn-ghost', 'data-testid': 'queue-confirm-keep', text: 'Keep' });
    box = h('div', { class: 'queue-confirm', 'data-testid': 'queue-confirm', role: 'group' },
      h('p', { class: 'queue-confirm-text', 'data-testid': 'queue-confirm-text', text: `Remove ${p.author}’s prompt? It is theirs, not yours: it will not be typed into the agent.` }),
      h('div', { class: 'queue-confirm-actions' },
        h('button', { type: 'button', class: 'btn btn-small btn-danger', 'data-testid': 'queue-confirm-remove', text: `Remove ${p.author}’s prompt` }),
        keep,
      ),
    );
    li.append(box);
    keep.focus(); // as in the close confirmation: Enter does not destroy
  }

  private onListClick(ev: MouseEvent): void {
    const target = ev.target as Element;
    const li = target.closest<HTMLLIElement>('[data-testid=queue-item]');
    const pid = li?.dataset.promptId;
    if (!li || !pid) return;
    if (target.closest('[data-testid=queue-expand]')) {
      const btn = target.closest<HTMLButtonElement>('[data-testid=queue-expand]')!;
      const expanded = li.classList.toggle('expanded');
      btn.setAttribute('aria-expanded', String(expanded));
      btn.textContent = expanded ? 'Show less' : 'Show all';
      return;
    }
    if (!this.shownId) return;
    if (target.closest('[data-testid=queue-confirm-keep]')) {
      this.confirming = null;
      this.renderList();
      li.querySelector<HTMLButtonElement>('[data-testid=queue-remove]')?.focus();
    } else if (target.closest('[data-testid=queue-confirm-remove]')) {
      this.confirming = null;
      this.dequeue(this.shownId, pid, true);
    } else if (target.closest('[data-testid=queue-remove]')) {
      if (li.dataset.mine === 'true') {
        this.dequeue(this.shownId, pid, false);
      } else {
        this.confirming = this.confirming === pid ? null : pid;
        this.renderList();
      }
    }
  }

  /** Escape in a row's question keeps the prompt. */
  private onListKey(ev: KeyboardEvent): void {
    if (ev.key !== 'Escape' || !this.confirming) return;
    const li = (ev.target as Element).closest<HTMLLIElement>('[data-testid=queue-item]');
    if (li?.dataset.promptId !== this.confirming) return;
    ev.preventDefault();
    ev.stopPropagation();
    this.confirming = null;
    this.renderList();
    li.querySelector<HTMLButtonElement>('[data-testid=queue-remove]')?.focus();
  }

  /** Sends a removal; force removes someone else's, after the user said yes. */
  private dequeue(sessionId: string, promptId: string, force: boolean): void {
    if (!this.deps.canAct() || this.removing.has(promptId)) return;
    if (!this.deps.send(force ? { type: 'prompt.dequeue', sessionId, promptId, force } : { type: 'prompt.dequeue', sessionId, promptId })) return;
    this.removing.set(promptId, sessionId);
    this.renderList();
  }

  /** Sends the box's text to the queue; the box empties when the server takes it. */
  private queue(): void {
    const sessionId = this.shownId;
    const text = this.input.value;
    if (!sessionId || !text.trim() || this.pendingQueue.some((p) => p.sessionId === sessionId)) return;
    const bytes = new TextEncoder().encode(text.replace(/\r\n/g, '\n')).length;
    if (bytes > MAX_PROMPT_BYTES) {
      this.deps.toast(`This prompt is ${kib(bytes)}; a queued prompt holds at most 64 KiB.`, 'error');
      return;
    }
    if (!this.deps.canAct() || !this.deps.send({ type: 'prompt.queue', sessionId, text })) {
      this.deps.toast('Not connected to the server: the prompt was not queued.', 'error');
      return;
    }
    this.pendingQueue.push({ sessionId, text });
    this.renderForm();
  }

  /** The ack of a prompt.queue from this panel; reports whether it was one. */
  onAck(m: PromptQueuedAckMessage): boolean {
    const i = this.pendingQueue.findIndex((p) => p.sessionId === m.sessionId);
    if (i < 0) return false;
    const [p] = this.pendingQueue.splice(i, 1);
    if (m.sessionId === this.shownId) {
      if (this.input.value === p!.text) this.input.value = '';
      this.showAck(m.position === 1
        ? 'Queued: it goes in next, when the agent waits for input.'
        : `Queued #${m.position}: ${m.position - 1} ahead of it.`, m.promptId);
      this.items.get(m.promptId)?.classList.add('just-queued');
    } else if (this.drafts.get(m.sessionId) === p!.text) {
      this.drafts.delete(m.sessionId);
    }
    this.renderForm();
    return true;
  }

  /**
   * An error that answers this panel's request (a queue refused: full,
   * too long, blank; a dequeue refused: not the author, already gone);
   * reports whether it was one, shown as a toast.
   */
  onError(m: ErrorMessage): boolean {
    if (!m.sessionId) return false;
    const sid = m.sessionId;
    if (m.code === 'NOT_QUEUE_OWNER' || m.code === 'PROMPT_NOT_FOUND') {
      const pid = [...this.removing].find(([, s]) => s === sid)?.[0];
      if (pid === undefined) return false;
      this.removing.delete(pid);
      this.deps.toast(m.code === 'PROMPT_NOT_FOUND' ? 'That prompt has already left the queue (delivered or removed).' : m.message, 'error');
      this.renderList();
      return true;
    }
    if (m.code === 'QUEUE_FULL' || m.code === 'INVALID_MESSAGE') {
      const i = this.pendingQueue.findIndex((p) => p.sessionId === sid);
      if (i < 0) return false;
      this.pendingQueue.splice(i, 1);
      // The text stays in the box, to shorten or send later.
      this.deps.toast(m.code === 'QUEUE_FULL' ? `${m.message}: wait for the agent to take some, or remove one of yours.` : `The prompt was not queued: ${m.message}`, 'error');
      this.renderForm();
      return true;
    }
    return false;
  }

  /** The connection dropped: requests on their way get no answer. */
  connectionLost(): void {
    if (this.pendingQueue.length) {
      this.deps.toast('The connection dropped before the server took the prompt; it is still in the box.', 'error');
    }
    this.pendingQueue.length = 0;
    this.removing.clear();
    this.render();
  }

  private onChange(c: QueueChange): void {
    if (c.gone) this.removing.delete(c.gone.prompt.id);
    if (c.gone?.prompt.id === this.confirming) this.confirming = null;
    if (c.sessionId !== this.shownId) return;
    if (c.gone?.delivered) this.flashDelivered(c.gone.prompt.id);
    if (c.gone && c.gone.prompt.id === this.ackPromptId) {
      this.showAck(c.gone.delivered ? 'Delivered: the agent has your prompt.' : null);
    }
    if (c.added && this.panel.hidden && c.added.authorId !== this.deps.myAuthorId()) this.pulseToggle();
    this.renderList();
  }

  /** A delivered prompt flashes, then leaves the list. */
  private flashDelivered(promptId: string): void {
    const li = this.items.get(promptId);
    if (!li) return;
    li.dataset.state = 'delivered';
    li.classList.add('delivered');
    li.querySelector('.queue-pos')!.textContent = '✓';
    li.querySelector('[data-testid=queue-remove]')?.remove();
    li.querySelector('[data-testid=queue-confirm]')?.remove();
    const time = li.querySelector<HTMLElement>('.queue-time')!;
    stopAgo(time);
    time.textContent = 'delivered';
    window.setTimeout(() => {
      li.remove();
      if (this.items.get(promptId) === li) this.items.delete(promptId);
      this.renderList();
    }, DELIVERED_MS);
    if (this.panel.hidden) this.pulseToggle();
  }

  private pulseToggle(): void {
    this.toggle.classList.remove('pulse');
    void this.toggle.offsetWidth; // restart the animation
    this.toggle.classList.add('pulse');
  }

  private showAck(message: string | null, promptId: string | null = null): void {
    window.clearTimeout(this.ackTimer);
    this.ackPromptId = message === null ? null : promptId;
    this.ack.textContent = message ?? '';
    this.ack.hidden = message === null;
    if (message !== null) this.ackTimer = window.setTimeout(() => this.showAck(null), ACK_SHOW_MS);
  }
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`;
}

export function svgX(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const path = document.createElementNS(ns, 'path');
  path.setAttribute('d', 'M4.5 4.5l7 7M11.5 4.5l-7 7');
  svg.append(path);
  return svg;
}
