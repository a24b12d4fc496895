// Who this browser is to the others in a session (docs/protocol.md,
// client.hello): a name and a colour the user picks, kept in localStorage
// with a random key that keeps them the author of their queued prompts
// across reconnects. Every (re)connection says hello with all of it, and
// a change of the active tab says which session is viewed; the server's
// client.welcome is the identity in force (a name like guest-7f3a until
// the user picks one). The "you" button in the top bar opens the editor.

import { avatar } from '../shared/avatars';
import { byId, h } from '../shared/dom';
import { wirePopover } from '../shared/popover';
import type { ToastKind } from '../shared/toast';
import type { ClientMessage, ClientWelcomeMessage, ErrorMessage } from '../shared/types';
import { loadSetting, saveSetting } from '../shared/settings';

const STORAGE_KEY = 'agentmux.identity';
/** The server takes keys of 16 to 128 of these (protocol.md, client.hello). */
const KEY_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const KEY_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;
/** Names follow the rules of session names: at most this many UTF-8 bytes. */
const MAX_NAME_BYTES = 128;

/** The colours offered; any #rrggbb may be picked besides. */
export const COLORS = [
  '#e06c75', '#f0a35e', '#e5c07b', '#98c379', '#56b6c2',
  '#61afef', '#7c8cff', '#c678dd', '#ff7eb6', '#a3adba',
];

/** What the browser keeps: the key always, name and colour once chosen. */
interface Saved {
  key: string;
  name?: string;
  color?: string;
}

/** A hello on its way, answered by exactly one client.welcome or error, in order. */
interface Pending {
  name?: string;
  color?: string;
  /** Sent by the editor, which waits for the answer. */
  fromEditor: boolean;
}

/** 32 random characters from the URL-safe alphabet (64 of them: each byte's low 6 bits are uniform). */
export function newKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return Array.from(bytes, (b) => KEY_ALPHABET[b & 63]).join('');
}

function load(): Saved {
  let raw: unknown = null;
  try {
    raw = JSON.parse(loadSetting(STORAGE_KEY) ?? 'null');
  } catch {
    // unreadable: start afresh
  }
  const r = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const saved: Saved = { key: typeof r.key === 'string' && KEY_PATTERN.test(r.key) ? r.key : newKey() };
  if (typeof r.name === 'string' && r.name.trim()) saved.name = r.name;
  if (typeof r.color === 'string' && COLOR_PATTERN.test(r.color)) saved.color = r.color;
  return saved;
}

function store(saved: Saved): void {
  saveSetting(STORAGE_KEY, JSON.stringify(saved));
}

/**
 * The name and colour this browser's user chose, as agentmux's page keeps
 * them for this origin; the hub's page names who answers with it.
 */
export function savedIdentity(): { name?: string; color?: string } {
  const { name, color } = load();
  return { name, color };
}

/** What is wrong with a name longer than max UTF-8 bytes (the server's bound by default), or null. */
export function nameTooLong(name: string, max = MAX_NAME_BYTES): string | null {
  const bytes = new TextEncoder().encode(name).length;
  return bytes > max ? `That name is ${bytes} bytes long; a name holds at most ${max}.` : null;
}

/** Keeps name as this browser's user's (the key and colour stay), as the editor would once the server took it. */
export function saveName(name: string): void {
  const saved = load();
  saved.name = name;
  store(saved);
}

export interface IdentityDeps {
  send(msg: ClientMessage): boolean;
  /** The session on screen ('' for none): the hello's viewing. */
  viewing(): string;
  toast(message: string, kind?: ToastKind): void;
}

type Listener = () => void;

export class Identity {
  /** The identity in force, from the last client.welcome; null before the first. */
  me: ClientWelcomeMessage | null = null;
  private saved = load();
  private pending: Pending[] = [];
  /** The viewing last sent on this connection; null before the first hello. */
  private sentViewing: string | null = null;
  private readonly listeners: Listener[] = [];
  private readonly editor: IdentityEditor;

  constructor(private readonly deps: IdentityDeps) {
    store(this.saved); // the key is made once and kept
    this.editor = new IdentityEditor(this);
  }

  /** The name and colour the user chose, if any. */
  get chosen(): { name?: string; color?: string } {
    return { name: this.saved.name, color: this.saved.color };
  }

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  /** A new connection: say who we are before anything else. */
  onConnected(): void {
    this.pending = [];
    this.sentViewing = null;
    this.hello({ name: this.saved.name, color: this.saved.color }, false);
  }

  onDisconnected(): void {
    this.pending = [];
    this.sentViewing = null;
    this.editor.connectionLost();
  }

  /** The active tab may have changed: tell the server which session is viewed. */
  viewingChanged(): void {
    if (this.sentViewing === null || this.sentViewing === this.deps.viewing()) return;
    this.hello({}, false);
  }

  /**
   * Sends a hello with the key, what is viewed, and name and colour when
   * given; reports whether it went.
   */
  hello(fields: { name?: string; color?: string }, fromEditor: boolean): boolean {
    const viewing = this.deps.viewing();
    const msg: ClientMessage = { type: 'client.hello', key: this.saved.key, viewing };
    if (fields.name !== undefined) msg.name = fields.name;
    if (fields.color !== undefined) msg.color = fields.color;
    if (!this.deps.send(msg)) return false;
    this.sentViewing = viewing;
    this.pending.push({ ...fields, fromEditor });
    return true;
  }

  /** Saves a choice made while offline: the next connection's hello carries it. */
  saveOffline(name: string, color: string | undefined): void {
    this.saved.name = name;
    if (color) this.saved.color = color;
    store(this.saved);
    this.changed();
  }

  onWelcome(m: ClientWelcomeMessage): void {
    const p = this.pending.shift();
    this.me = m;
    if (p?.fromEditor) {
      // What the server took is what the browser keeps.
      if (p.name !== undefined) this.saved.name = m.name;
      if (p.color !== undefined) this.saved.color = m.color;
      store(this.saved);
      this.editor.accepted();
    }
    this.changed();
  }

  /**
   * An error that answers a hello (the only sessionless INVALID_MESSAGE
   * this page provokes); reports whether it was one.
   */
  onError(m: ErrorMessage): boolean {
    if (m.sessionId || m.code !== 'INVALID_MESSAGE' || this.pending.length === 0) return false;
    const p = this.pending.shift()!;
    if (p.fromEditor) {
      this.editor.refused(m.message);
      return true;
    }
    if (p.name !== undefined || p.color !== undefined) {
      // The saved name (or colour) is refused now: forget it, and say
      // hello without it so that the key and viewing still count.
      delete this.saved.name;
      delete this.saved.color;
      store(this.saved);
      this.deps.toast(`Your saved name was refused (${m.message}); you show as a guest until you choose another.`, 'error');
      this.hello({}, false);
      this.changed();
      return true;
    }
    this.deps.toast(m.message, 'error');
    return true;
  }
}

/** The "you" button and its popover: a name, a colour, Save. */
class IdentityEditor {
  private readonly button = byId<HTMLButtonElement>('you');
  private readonly buttonAvatar = byId('you-avatar');
  private readonly form = byId<HTMLFormElement>('you-form');
  private readonly nameInput = byId<HTMLInputElement>('you-name');
  private readonly swatches = byId('you-colors');
  private readonly custom = byId<HTMLInputElement>('you-color-custom');
  private readonly preview = byId('you-preview');
  private readonly error = byId('you-error');
  private readonly saveBtn = byId<HTMLButtonElement>('you-save');
  /** The colour picked in the open editor. */
  private color = COLORS[0]!;
  private waiting = false;
  /** The name last sent from the editor, shown again if it is refused. */
  private tried = '';

  constructor(private readonly id: Identity) {
    this.swatches.replaceChildren(
      ...COLORS.map((c) => {
        const b = h('button', { type: 'button', class: 'swatch', role: 'radio', 'data-testid': 'identity-color', 'data-color': c, title: c, 'aria-label': `Colour ${c}` });
        b.style.setProperty('--swatch', c);
        return b;
      }),
    );
    this.swatches.addEventListener('click', (ev) => {
      const b = (ev.target as Element).closest<HTMLElement>('[data-color]');
      if (b?.dataset.color) this.pick(b.dataset.color);
    });
    this.custom.addEventListener('input', () => this.pick(this.custom.value));
    this.nameInput.addEventListener('input', () => {
      this.showError(null);
      this.renderPreview();
    });
    wirePopover({ button: this.button, form: this.form, cancelId: 'you-cancel', open: () => this.open(), close: () => this.close(), save: () => this.save() });
    id.subscribe(() => this.renderButton());
    this.renderButton();
  }

  private current(): { name: string; color: string } {
    const me = this.id.me;
    const chosen = this.id.chosen;
    return { name: me?.name ?? chosen.name ?? '', color: me?.color ?? chosen.color ?? COLORS[5]! };
  }

  private renderButton(): void {
    const { name, color } = this.current();
    this.buttonAvatar.replaceChildren(avatar({ name: name || '?', color }, { size: 'md' }));
    const label = name ? `You are ${name} to the others in a session. Click to change your name or colour.` : 'Your name and colour';
    this.button.title = label;
    this.button.setAttribute('aria-label', label);
    this.button.dataset.name = name;
  }

  private open(): void {
    const { name, color } = this.current();
    this.nameInput.value = name;
    this.nameInput.placeholder = this.id.me?.name ?? 'Your name';
    this.pick(color);
    this.showError(null);
    this.setWaiting(false);
    this.form.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    this.nameInput.focus();
    this.nameInput.select();
  }

  close(): void {
    this.form.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
    this.setWaiting(false);
  }

  private pick(color: string): void {
    if (!COLOR_PATTERN.test(color)) return;
    this.color = color.toLowerCase();
    for (const b of this.swatches.querySelectorAll<HTMLElement>('[data-color]')) {
      b.setAttribute('aria-checked', String(b.dataset.color === this.color));
    }
    this.custom.value = this.color;
    this.custom.parentElement?.classList.toggle('picked', !COLORS.includes(this.color));
    this.renderPreview();
  }

  private renderPreview(): void {
    const name = this.nameInput.value.trim() || this.nameInput.placeholder;
    this.preview.replaceChildren(avatar({ name, color: this.color }, { size: 'lg' }), h('span', { class: 'you-preview-name', text: name }));
  }

  private save(): void {
    if (this.waiting) return;
    const name = this.nameInput.value.trim();
    if (!name) {
      this.showError('Enter a name: it is what the others see next to your prompts and on the tabs.');
      return;
    }
    const long = nameTooLong(name);
    if (long) {
      this.showError(long);
      return;
    }
    // Everything else (control and invisible characters) is the server's
    // to judge: its answer shows here.
    if (this.id.hello({ name, color: this.color }, true)) {
      this.tried = name;
      this.setWaiting(true);
      return;
    }
    this.id.saveOffline(name, this.color);
    this.close();
  }

  /** The server took the editor's hello. */
  accepted(): void {
    if (this.waiting) this.close();
  }

  /** The server refused the editor's hello: say why, and keep the editor open. */
  refused(message: string): void {
    this.setWaiting(false);
    if (this.form.hidden) {
      this.open();
      this.nameInput.value = this.tried;
      this.renderPreview();
    }
    this.showError(`The server refused this name: ${message}`);
    this.nameInput.focus();
  }

  connectionLost(): void {
    if (!this.waiting) return;
    this.setWaiting(false);
    this.showError('The connection dropped before the server answered; try again once it is back.');
  }

  private setWaiting(on: boolean): void {
    this.waiting = on;
    this.saveBtn.disabled = on;
    this.saveBtn.textContent = on ? 'Saving…' : 'Save';
  }

  private showError(message: string | null): void {
    this.error.textContent = message ?? '';
    this.error.hidden = message === null;
    this.nameInput.toggleAttribute('aria-invalid', message !== null);
  }
}
