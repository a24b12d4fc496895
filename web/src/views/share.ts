// "Share read-only…": the session menu in the terminal's header, and the
// dialog that makes a read-only link to the session on screen
// (docs/protocol.md, Read-only share links). A link is shown once, as
// the server answers it (it keeps only the secret's hash), built next to
// this page so that it works under a proxy's path; the session's live
// links are listed with who made them, when they expire and how many
// watch, each with Revoke, which closes its viewers at once. What a link
// is and how it reads are models/shares.ts's.

import { api } from '../shared/api';
import { byId, h } from '../shared/dom';
import type { ToastKind } from '../shared/toast';
import type { SessionStore } from '../models/store';
import { EXPIRIES, describeShare, liveShares, shareLink, type CreateShareRequest, type Share } from '../models/shares';

/** While the dialog is open, its list is read again this often: the viewers come and go. */
const REFRESH_MS = 5_000;

export interface ShareDeps {
  store: SessionStore;
  canAct(): boolean;
  toast(message: string, kind?: ToastKind): void;
  /** This page's user's name, which the list of links shows as who made one. */
  myName(): string | null;
}

/** The longest name the server takes as a link's maker, in UTF-8 bytes. */
const MAX_BY_BYTES = 100;

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** The session menu: a button in the terminal's header and its list of actions. */
export class SessionMenu {
  private readonly wrap = byId('session-menu-wrap');
  private readonly button = byId<HTMLButtonElement>('session-menu');
  private readonly list = byId('session-menu-list');

  constructor(store: SessionStore, onShare: (sessionId: string) => void) {
    this.button.addEventListener('click', () => (this.list.hidden ? this.open() : this.close()));
    byId('session-share').addEventListener('click', () => {
      const id = store.activeId;
      this.close();
      if (id) onShare(id);
    });
    this.list.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        this.close();
        this.button.focus();
      } else if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp' || ev.key === 'Home' || ev.key === 'End') {
        ev.preventDefault();
        this.move(ev.key);
      }
    });
    document.addEventListener('pointerdown', (ev) => {
      if (!this.list.hidden && !this.wrap.contains(ev.target as Node)) this.close();
    });
    store.subscribe(() => {
      this.wrap.hidden = !store.active;
      if (!store.active) this.close();
    });
  }

  private items(): HTMLButtonElement[] {
    return [...this.list.querySelectorAll<HTMLButtonElement>('[role=menuitem]')];
  }

  private open(): void {
    this.list.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.items()[0]?.focus();
  }

  close(): void {
    this.list.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }

  private move(key: string): void {
    const items = this.items();
    if (items.length === 0) return;
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    const next = key === 'Home' ? 0 : key === 'End' ? items.length - 1 : (at + (key === 'ArrowDown' ? 1 : -1) + items.length) % items.length;
    items[next]!.focus();
  }
}

/** The share dialog: see the file's comment. */
export class ShareDialog {
  private readonly dialog = byId<HTMLDialogElement>('share-dialog');
  private readonly title = byId('share-title');
  private readonly what = byId('share-what');
  private readonly expiry = byId<HTMLSelectElement>('share-expiry');
  private readonly scrollback = byId<HTMLInputElement>('share-scrollback');
  private readonly created = byId('share-created');
  private readonly link = byId<HTMLInputElement>('share-link');
  private readonly copy = byId<HTMLButtonElement>('share-copy');
  private readonly create = byId<HTMLButtonElement>('share-create');
  private readonly list = byId('share-list');
  private readonly empty = byId('share-empty');
  private readonly count = byId('share-count');
  /** The session the dialog is about, while it is open. */
  private sessionId: string | null = null;
  private shares: Share[] = [];
  private refreshTimer: number | undefined;
  /** Answers of a GET older than the last change are dropped. */
  private generation = 0;

  constructor(private readonly deps: ShareDeps) {
    for (const e of EXPIRIES) {
      this.expiry.append(h('option', { value: String(e.seconds), selected: !!e.default }, e.label));
    }
    byId('share-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.submit();
    });
    byId('share-close').addEventListener('click', () => this.dialog.close());
    this.copy.addEventListener('click', () => void this.copyLink());
    this.link.addEventListener('focus', () => this.link.select());
    this.dialog.addEventListener('close', () => {
      window.clearTimeout(this.refreshTimer);
      this.sessionId = null;
      // The link was shown once; it is not kept.
      this.link.value = '';
      this.created.hidden = true;
    });
    deps.store.subscribe(() => {
      // The session went: so do its links.
      if (this.sessionId && !deps.store.has(this.sessionId)) this.dialog.close();
    });
  }

  /** Opens the dialog for a session: its form reset, its live links read. */
  open(sessionId: string): void {
    const entry = this.deps.store.get(sessionId);
    if (!entry) return;
    this.sessionId = sessionId;
    this.shares = [];
    this.title.textContent = `Share “${entry.session.name}” read-only`;
    this.what.textContent =
      'Whoever opens the link watches this terminal live, without signing in: they cannot type into it, resize it, or see anything else of agentmux.';
    this.expiry.value = String(EXPIRIES.find((e) => e.default)!.seconds);
    this.scrollback.checked = true;
    this.created.hidden = true;
    this.link.value = '';
    this.create.textContent = 'Create link';
    this.create.disabled = !this.deps.canAct();
    this.renderList();
    if (!this.dialog.open) this.dialog.showModal();
    this.create.focus();
    void this.refresh();
  }

  private async submit(): Promise<void> {
    const id = this.sessionId;
    if (!id || !this.deps.canAct()) return;
    this.create.disabled = true;
    try {
      const req: CreateShareRequest = { expiresIn: Number(this.expiry.value), scrollback: this.scrollback.checked };
      const by = this.deps.myName()?.trim();
      if (by && new TextEncoder().encode(by).length <= MAX_BY_BYTES) req.by = by;
      const made = await api.createShare(id, req);
      if (this.sessionId !== id) return; // closed meanwhile: the link is listed next time, Revoke still works
      this.link.value = shareLink(made.url, document.baseURI);
      this.created.hidden = false;
      this.create.textContent = 'Create another link';
      this.link.focus();
      this.link.select();
      const { url: _secret, ...listed } = made;
      this.shares = [listed, ...this.shares.filter((s) => s.id !== made.id)];
      this.renderList();
      void this.refresh();
    } catch (err) {
      this.deps.toast(`No link was made: ${errorText(err)}`, 'error');
    } finally {
      this.create.disabled = !this.deps.canAct();
    }
  }

  private async copyLink(): Promise<void> {
    const text = this.link.value;
    if (!text) return;
    try {
      await navigator.clipboard.writeText(text);
      this.deps.toast('Link copied. Anyone who has it can watch this session until it expires or is revoked.');
    } catch {
      // No clipboard (not a secure context, or refused): selected, for Ctrl+C.
      this.link.focus();
      this.link.select();
      this.deps.toast('Could not copy: the link is selected, copy it with Ctrl+C.', 'warning');
    }
  }

  /** Reads the session's live links again, then again in a while, as long as the dialog is open. */
  private async refresh(): Promise<void> {
    window.clearTimeout(this.refreshTimer);
    const id = this.sessionId;
    if (!id) return;
    const gen = ++this.generation;
    try {
      const list = await api.shares(id);
      if (gen !== this.generation || this.sessionId !== id) return;
      this.shares = list;
      this.renderList();
    } catch (err) {
      if (gen === this.generation && this.sessionId === id) this.deps.toast(`Cannot list the session's links: ${errorText(err)}`, 'error');
    }
    if (this.sessionId === id) this.refreshTimer = window.setTimeout(() => void this.refresh(), REFRESH_MS);
  }

  private async revoke(share: Share, button: HTMLButtonElement): Promise<void> {
    const id = this.sessionId;
    if (!id) return;
    button.disabled = true;
    this.generation++; // a GET in flight may still list it
    try {
      await api.revokeShare(id, share.id);
      this.shares = this.shares.filter((s) => s.id !== share.id);
      this.renderList();
      this.deps.toast(share.viewers ? 'Link revoked: its viewers were disconnected.' : 'Link revoked.');
    } catch (err) {
      button.disabled = false;
      this.deps.toast(`Not revoked: ${errorText(err)}`, 'error');
    }
    void this.refresh();
  }

  private renderList(): void {
    const now = Date.now();
    const live = liveShares(this.shares, now);
    this.count.textContent = live.length ? String(live.length) : '';
    this.empty.hidden = live.length > 0;
    this.list.replaceChildren(...live.map((s) => {
      const revoke = h('button', { type: 'button', class: 'btn btn-ghost btn-small share-revoke', 'data-testid': 'share-revoke', 'aria-label': `Revoke the link made ${describeShare(s, now)}` }, 'Revoke');
      revoke.addEventListener('click', () => void this.revoke(s, revoke));
      return h(
        'li',
        { class: 'share-item', 'data-testid': 'share-item', 'data-share-id': s.id, 'data-viewers': s.viewers },
        h('span', { class: 'share-item-text', 'data-testid': 'share-item-text', title: `Made ${new Date(s.createdAt).toLocaleString()}, expires ${new Date(s.expiresAt).toLocaleString()}`, text: describeShare(s, now) }),
        revoke,
      );
    }));
  }
}
