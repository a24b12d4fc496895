// The Preview view: the TCP ports listening in the container, each with
// its process and session (the session on screen's first), and the one
// picked shown in an iframe on its own origin (http://<port>.localhost:…,
// see preview/preview.go), so the app's scripts never share agentmux's.
// The list is kept from ports.changed alone: the whole (bounded) listing
// first on each connection, then what changed. The iframe's address comes
// from POST /api/ports/:port/preview: a sign-in link that works once,
// within a minute, and sets the preview origin's own cookie (every
// preview asks for it, token or not, so that no other site can reach
// one); Open asks for a link of its own. "Follow"
// shows a port the session on screen's agent just opened, as documents
// are followed; every port that opens is also told to the activity feed.

import { api, ApiError } from '../shared/api';
import { byId, h } from '../shared/dom';
import type { LayoutController } from './layout';
import { loadSetting, saveSetting } from '../shared/settings';
import type { SessionStore } from '../models/store';
import type { ListeningPort, PortsChangedMessage } from '../shared/types';

const FOLLOW_KEY = 'agentmux.followPorts';
/**
 * A port is told and followed once it has listened this long: a test
 * suite's servers come and go by the dozen, and none is worth a line or
 * the screen.
 */
const SETTLE_MS = 1_500;

export interface PreviewDeps {
  store: SessionStore;
  layout: LayoutController;
  /** A port began listening since the page first looked. */
  onOpened(p: ListeningPort): void;
}

/**
 * The list after a ports.changed: the message's ports alone when it is the
 * whole listing, else list less the removed ports, with the added ones put
 * in or in place of the same port's entry. Lowest port first.
 */
export function applyPortsChange(list: readonly ListeningPort[], m: PortsChangedMessage): ListeningPort[] {
  const byPort = new Map<number, ListeningPort>(m.reset ? [] : list.map((p) => [p.port, p]));
  for (const port of m.removed) byPort.delete(port);
  for (const p of m.added) byPort.set(p.port, p);
  return [...byPort.values()].sort((a, b) => a.port - b.port);
}

export class PreviewView {
  private ports: ListeningPort[] = [];
  /** How many more ports listen than the server lists. */
  private more = 0;
  /** Ports seen so far; null until the first listing, which opens none. */
  private known: Set<number> | null = null;
  private selected: number | null = null;
  /**
   * The port the iframe was last pointed at, its plain address, when its
   * link was made, and whether the port stopped listening since (then
   * showing it again loads it again).
   */
  private loaded: { port: number; url: string; at: number; gone?: boolean } | null = null;
  private shown = false;
  /** Bumped per iframe request, so a slow answer for an older one is dropped. */
  private frameId = 0;
  private followTimer: number | undefined;
  /** New ports waiting to have listened SETTLE_MS. */
  private readonly settling = new Map<number, number>();
  private readonly pane = byId('preview');
  private readonly list = byId('preview-ports');
  private readonly address = byId('preview-address');
  private readonly follow = byId<HTMLInputElement>('preview-follow');
  private readonly reload = byId<HTMLButtonElement>('preview-reload');
  private readonly open = byId<HTMLAnchorElement>('preview-open');
  private readonly note = byId('preview-note');
  private readonly frame = byId<HTMLIFrameElement>('preview-frame');
  private readonly message = byId('preview-message');

  constructor(private readonly deps: PreviewDeps) {
    this.follow.checked = loadSetting(FOLLOW_KEY) !== '0';
    this.follow.addEventListener('change', () => {
      saveSetting(FOLLOW_KEY, this.follow.checked ? '1' : '0');
      if (!this.follow.checked) window.clearTimeout(this.followTimer);
    });
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=preview-port]');
      if (btn?.dataset.port) this.select(Number(btn.dataset.port));
    });
    this.reload.addEventListener('click', () => {
      if (this.selected !== null) void this.load(this.selected);
    });
    this.open.addEventListener('click', (ev) => this.onOpenClick(ev));
    deps.store.subscribe(() => this.render());
    this.render();
  }

  /** The view came into view or left it: the iframe loads once it is first seen. */
  setShown(shown: boolean): void {
    this.shown = shown;
    this.pane.dataset.shown = String(shown);
    if (!shown) return;
    if (this.selected === null) {
      const mine = this.ordered().find((p) => this.isActive(p));
      if (mine) this.selected = mine.port;
    }
    this.render();
    if (this.selected !== null && !this.showing(this.selected)) void this.load(this.selected);
  }

  /** Shows port p (the list's click, the activity feed's). */
  select(port: number): void {
    this.selected = port;
    this.render();
    // The port on screen already stays as it is: a new sign-in link would
    // load the app again and lose its state (Reload is for that).
    if (this.shown && !this.showing(port)) void this.load(port);
  }

  /** Whether the iframe shows port, loaded while it listened. */
  private showing(port: number): boolean {
    return this.loaded?.port === port && !this.loaded.gone;
  }

  /** ports.changed: the server's listing, whole on each connection's first, then what changed. */
  onPorts(m: PortsChangedMessage): void {
    this.more = m.more;
    this.apply(applyPortsChange(this.ports, m));
  }

  private apply(list: ListeningPort[]): void {
    const before = this.known;
    this.ports = list;
    this.known = new Set(list.map((p) => p.port));
    if (this.loaded && !this.known.has(this.loaded.port)) this.loaded.gone = true;
    if (before) {
      for (const p of list) {
        if (before.has(p.port) || this.settling.has(p.port)) continue;
        this.settling.set(p.port, window.setTimeout(() => this.settled(p.port), SETTLE_MS));
      }
    }
    for (const [port, timer] of this.settling) {
      if (this.known.has(port)) continue;
      window.clearTimeout(timer);
      this.settling.delete(port);
    }
    this.render();
  }

  /** A new port still listens: it opened. */
  private settled(port: number): void {
    this.settling.delete(port);
    const p = this.ports.find((x) => x.port === port);
    if (!p) return;
    this.deps.onOpened(p);
    if (p.sessionId && p.sessionId === this.deps.store.activeId) this.followSoon(p);
  }

  /** A port the session on screen's agent opened: shown once the user has stopped typing. */
  private followSoon(p: ListeningPort): void {
    if (!this.follow.checked) return;
    window.clearTimeout(this.followTimer);
    const wait = this.deps.layout.msUntilQuiet();
    const go = () => {
      if (!this.follow.checked || !this.known?.has(p.port) || p.sessionId !== this.deps.store.activeId) return;
      const left = this.deps.layout.msUntilQuiet();
      if (left > 0) {
        this.followTimer = window.setTimeout(go, left + 10);
        return;
      }
      this.select(p.port);
      if (this.deps.layout.mode !== 'preview') this.deps.layout.set('preview');
    };
    if (wait > 0) this.followTimer = window.setTimeout(go, wait + 10);
    else go();
  }

  private isActive(p: ListeningPort): boolean {
    return !!p.sessionId && p.sessionId === this.deps.store.activeId;
  }

  /** The session on screen's ports first, then other sessions', then the rest; by port within. */
  private ordered(): ListeningPort[] {
    const rank = (p: ListeningPort) => (this.isActive(p) ? 0 : p.sessionId ? 1 : 2);
    return [...this.ports].sort((a, b) => rank(a) - rank(b) || a.port - b.port);
  }

  private render(): void {
    const current = this.ports.find((p) => p.port === this.selected) ?? null;
    this.pane.dataset.state = this.ports.length === 0 ? 'empty' : this.selected === null ? 'pick' : 'shown';
    this.renderList();
    const url = this.selected !== null && this.loaded?.port === this.selected ? this.loaded.url : '';
    this.address.textContent = url ? url.replace(/\/$/, '') : '';
    this.address.title = url;
    this.reload.hidden = this.selected === null;
    this.open.hidden = this.selected === null;
    if (url && this.openLink === null) this.open.href = url;
    if (this.noteText !== null) this.showNote(this.noteText);
    else if (this.selected !== null && !current && this.known) {
      this.showNote(`Nothing listens on port ${this.selected} now. The preview shows it again once something does.`);
    } else this.showNote(null);
    this.frame.hidden = this.selected === null;
    if (this.ports.length === 0 && this.selected === null) {
      this.message.hidden = false;
      this.message.replaceChildren(
        h('p', { class: 'empty-title', text: 'No dev server is listening yet' }),
        h('p', { text: 'Start one in a session (npm run dev, say): its port is listed here, and with Follow on it opens here as the agent starts it.' }),
      );
      this.message.dataset.kind = 'empty';
    } else if (this.selected === null) {
      this.message.hidden = false;
      this.message.replaceChildren(
        h('p', { class: 'empty-title', text: 'Pick a port' }),
        h('p', { text: 'Each port is shown on an origin of its own, as a browser would open it in the container.' }),
      );
      this.message.dataset.kind = 'pick';
    } else {
      this.message.hidden = true;
      this.message.replaceChildren();
      delete this.message.dataset.kind;
    }
  }

  /** What the list last showed: the store changes often, and a list redrawn for nothing loses the focus. */
  private listKey = '';

  private renderList(): void {
    const ports = this.ordered();
    const rows = ports.map((p) => {
      const session = p.sessionId ? this.deps.store.get(p.sessionId)?.session : undefined;
      return { p, mine: this.isActive(p), who: session ? session.name : p.sessionId ? 'another session' : 'not from a session' };
    });
    const key = JSON.stringify([this.selected, rows, this.more]);
    if (key === this.listKey) return;
    this.listKey = key;
    this.list.hidden = ports.length === 0;
    const more = this.more > 0
      ? [h('li', { class: 'preview-more', 'data-testid': 'preview-more', text: `${this.more} more listening, not listed` })]
      : [];
    this.list.replaceChildren(
      ...rows.map(({ p, mine, who }) => {
        return h('li', {},
          h('button', {
            type: 'button',
            class: 'preview-port',
            'data-testid': 'preview-port',
            'data-port': p.port,
            'data-session-id': p.sessionId,
            'data-mine': mine ? 'true' : null,
            'aria-current': p.port === this.selected ? 'true' : null,
            title: `Port ${p.port}${p.command ? `, ${p.command}` : ''}${p.pid ? ` (pid ${p.pid})` : ''}: ${mine ? 'this session' : who}`,
          },
          h('span', { class: 'preview-port-number', 'data-testid': 'preview-port-number', text: `:${p.port}` }),
          h('span', { class: 'preview-port-command', 'data-testid': 'preview-port-command', text: p.command || 'unknown process' }),
          h('span', { class: `preview-port-session${mine ? ' mine' : ''}`, 'data-testid': 'preview-port-session', text: mine ? `${who} · this session` : who }),
          ),
        );
      }),
      ...more,
    );
  }

  private noteText: string | null = null;
  /** The sign-in link Open's click asked for, while its tab opens; null otherwise. */
  private openLink: string | null = null;

  /** Points the iframe at port: a fresh sign-in link each time, as each works once. */
  private async load(port: number): Promise<void> {
    const id = ++this.frameId;
    this.noteText = null;
    let url: string;
    try {
      url = await api.previewURL(port);
    } catch (err) {
      if (id !== this.frameId) return;
      this.noteText = `Cannot preview port ${port}: ${(err as ApiError).message}`;
      this.render();
      return;
    }
    if (id !== this.frameId || this.selected !== port) return;
    // The preview's own address, without a sign-in link's path and ticket.
    const plain = `${new URL(url).origin}/`;
    this.loaded = { port, url: plain, at: Date.now() };
    this.frame.title = `Preview of port ${port}`;
    this.frame.src = url;
    this.render();
  }

  /**
   * Opens the preview in a tab of its own through a sign-in link of its
   * own (the iframe's is used up): the click asks for one and clicks
   * again with it, which the browser still counts as the user's.
   */
  private onOpenClick(ev: MouseEvent): void {
    const port = this.selected;
    if (port === null) return;
    if (this.openLink !== null) {
      // The second click, with the link: the browser follows it once
      // this handler returns; the plain address comes back after.
      this.openLink = null;
      window.setTimeout(() => this.render(), 0);
      return;
    }
    ev.preventDefault();
    void api.previewURL(port).then((url) => {
      if (this.selected !== port) return;
      this.openLink = url;
      this.open.href = url;
      this.open.click(); // still the user's click: within its activation
    }, (err: ApiError) => {
      this.noteText = `Cannot preview port ${port}: ${err.message}`;
      this.render();
    });
  }

  private showNote(text: string | null): void {
    this.note.hidden = text === null;
    this.note.textContent = text ?? '';
  }
}
