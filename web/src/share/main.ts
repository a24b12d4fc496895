// The read-only viewer's page (share.html#<secret>; docs/protocol.md,
// Read-only share links): one session's terminal, live, for someone
// holding a link and no token. It opens ws?share=<secret> next to the
// page, waits for share.welcome, then attaches as agentmux's page does,
// through the same TerminalView and stream (terminal/terminal.ts), in
// watch-only mode: xterm takes no keys, the view never sends its size,
// and the session is drawn at its own size, the font scaled down to fit
// and the rest scrolled. It sends nothing else (no acks, no input, no
// hello): the server would refuse it (READ_ONLY).
//
// A socket refused before it opens means the secret opens nothing, or
// the server is away: the page asks the server which (viewer.ts). A close
// with 4403 ends the link (revoked, expired, session deleted): the page
// says so and never reconnects. Other closes reconnect with backoff.

import type { Terminal } from '@xterm/xterm';
import { ConnectionBanner } from '../shared/connection';
import { byId } from '../shared/dom';
import { expiresIn, secretFromHash, shareSocketURL } from '../models/shares';
import { attachTouch } from '../terminal/touch';
import { TerminalView } from '../terminal/terminal';
import { toast } from '../shared/toast';
import type { ClientMessage, ErrorMessage, ServerMessage, ShareWelcomeMessage } from '../shared/types';
import { WsClient } from '../shared/ws';
import {
  ViewerState, afterProbe, ending, isServerAnswer, onSocketClose, statusLabel, type CloseVerdict, type Ending, type ViewerMessage,
} from './viewer';

declare global {
  interface Window {
    /** The tests' hook (web/README.md, "The read-only viewer's page"). */
    __agentmuxShare: {
      /** The terminal shown, once share.welcome came. */
      terminal(): Terminal | null;
      sessionId(): string | null;
      connectionState(): string;
      /** Why the page stopped, once it did. */
      ended(): string | null;
    };
  }
}

/** How often the expiry's words are brought up to date. */
const EXPIRY_TICK_MS = 30_000;

const state = new ViewerState();
const app = byId('app');
const nameEl = byId('share-name');
const agentEl = byId('share-agent');
const statusEl = byId('share-status');
const expiresEl = byId('share-expires');
const sizeEl = byId('share-size');
const terms = byId('terms');
const message = byId('share-message');
const connState = byId('conn-state');
const shutdown = byId('banner-shutdown');
let view: TerminalView | null = null;
let expiryTimer: number | undefined;

const banner = new ConnectionBanner(
  { banner: byId('banner-connection'), text: byId('banner-connection-text'), retry: byId<HTMLButtonElement>('retry') },
  'agentmux',
  () => ws?.retry(),
);

const secret = secretFromHash(location.hash);
let ws: WsClient<ServerMessage, ClientMessage> | null = null;

window.__agentmuxShare = {
  terminal: () => view?.term ?? null,
  sessionId: () => state.session?.id ?? null,
  connectionState: () => ws?.state ?? 'closed',
  ended: () => state.ended?.kind ?? null,
};

state.subscribe(render);
// Another link pasted into this tab changes only the fragment, which
// loads nothing: start over with its secret.
window.addEventListener('hashchange', () => location.reload());

if (!secret) {
  state.end(ending('no-secret'));
} else {
  ws = new WsClient<ServerMessage, ClientMessage>({
    url: shareSocketURL(document.baseURI, secret),
    onMessage,
    onOpen() {
      // The server speaks first (share.welcome); the attach follows it.
      shutdown.hidden = true;
    },
    onChange: onConnectionChange,
    onClose: (c) => decide(onSocketClose(c)),
  });
  ws.start();
}

/** Acts on a close's verdict; false stops the client from reconnecting. */
function decide(v: CloseVerdict): boolean {
  if (v.action === 'end') {
    end(v.ending);
    return false;
  }
  if (v.action === 'probe') void probe();
  return true; // reconnect, unless the probe ends it first
}

/**
 * Asks the server whether it is there, after a socket it refused before
 * opening: a page cannot read the upgrade's 401, and a refused secret
 * looks like a server that is down. Meanwhile the client's backoff runs.
 */
async function probe(): Promise<void> {
  let answered = false;
  try {
    // The page's own address without its fragment: nothing secret goes
    // out. A GET: the server refuses HEAD for its pages (405).
    const res = await fetch(location.pathname + location.search, { cache: 'no-store', credentials: 'omit' });
    answered = isServerAnswer(res.status);
  } catch {
    answered = false;
  }
  const v = afterProbe(answered);
  if (v.action === 'end' && !state.ended && ws?.state !== 'connected') end(v.ending);
}

function end(e: Ending): void {
  state.end(e);
  ws?.close();
}

function onConnectionChange(): void {
  if (!ws) return;
  if (!state.ended) banner.show(ws.state, ws.nextAttemptAt);
  connState.dataset.state = ws.state;
  connState.textContent = ws.state === 'failed' ? 'offline' : ws.state;
  if (ws.state !== 'connected') view?.connectionLost();
}

function onMessage(m: ServerMessage): void {
  switch (m.type) {
    case 'share.welcome':
      state.apply(m);
      showTerminal(m);
      break;
    case 'session.attached':
      if (m.sessionId === state.session?.id) view?.onAttached(m);
      break;
    case 'terminal.output':
      if (m.sessionId === state.session?.id) view?.onOutput(m);
      break;
    case 'session.resized':
      // Never this page's: it sends no size.
      if (state.apply(m)) view?.onResized(m, false);
      break;
    case 'session.status':
    case 'session.destroyed':
      state.apply(m as ViewerMessage);
      if (state.ended) ws?.close();
      break;
    case 'server.shutdown':
      shutdown.hidden = false;
      byId('banner-shutdown-text').textContent = m.message || 'agentmux is restarting; the page reconnects once it is back.';
      break;
    case 'error':
      onError(m);
      break;
    default:
      break; // heartbeats (the round trip is ws.ts's), and what a viewer is not told
  }
}

/** A refusal: the page sends nothing a link does not grant, so one is a bug worth showing. */
function onError(m: ErrorMessage): void {
  toast(m.message, 'error');
}

/** The terminal, built on the first welcome; on a reconnection, attached again from its last seq. */
function showTerminal(m: ShareWelcomeMessage): void {
  const s = m.session;
  if (view && view.sessionId !== s.id) {
    view.dispose();
    view = null;
  }
  if (view) {
    view.onResized({ type: 'session.resized', sessionId: s.id, cols: s.cols, rows: s.rows, by: '' }, false);
    view.attachIfDetached();
    return;
  }
  view = new TerminalView(s.id, terms, { cols: s.cols, rows: s.rows }, {
    send: (msg) => ws?.send(msg) ?? false,
    onInput: () => {}, // xterm takes no keys (watchOnly)
    keyFilter: () => true,
    onFlowChange: () => {},
    onTerminal: () => {},
    onSearchResults: () => {},
    onSizing: () => renderSize(),
    watchOnly: true,
  }, true);
  const shown = view;
  attachTouch(view.host, () => shown.term, { toast });
}

function renderSize(): void {
  const s = state.session;
  sizeEl.textContent = s ? `${s.cols}×${s.rows}` : '';
}

function render(): void {
  const s = state.session;
  const ended = state.ended;
  app.dataset.state = ended ? 'ended' : s ? 'watching' : 'connecting';
  if (s) {
    nameEl.textContent = s.name;
    nameEl.title = s.name;
    agentEl.textContent = s.agent;
    statusEl.hidden = false;
    statusEl.className = `badge badge-${s.status}`;
    statusEl.dataset.status = s.status;
    statusEl.textContent = statusLabel(s.status, s.running);
    document.title = `${s.name} · read-only · agentmux`;
  }
  renderSize();
  renderExpiry();
  if (ended) showEnded(ended);
}

function renderExpiry(): void {
  window.clearTimeout(expiryTimer);
  const at = state.expiresAt;
  if (!at || state.ended) {
    expiresEl.hidden = true;
    return;
  }
  expiresEl.hidden = false;
  const words = expiresIn(at);
  expiresEl.textContent = words === 'expired' ? 'Link expired' : `Link expires ${words}`;
  expiresEl.title = `This link stops working at ${new Date(at).toLocaleString()}`;
  expiryTimer = window.setTimeout(renderExpiry, EXPIRY_TICK_MS);
}

/** The link shows nothing any more: the terminal goes, and the page says why. */
function showEnded(e: Ending): void {
  if (view) {
    view.dispose();
    view = null;
  }
  terms.hidden = true;
  banner.show('closed', null);
  shutdown.hidden = true;
  message.hidden = false;
  message.dataset.kind = e.kind;
  byId('share-message-title').textContent = e.title;
  byId('share-message-detail').textContent = e.detail;
  connState.dataset.state = 'closed';
  connState.textContent = 'closed';
}
