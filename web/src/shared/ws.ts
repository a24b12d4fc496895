// The one WebSocket to the server's ws (next to the page): reconnects with
// exponential backoff and jitter, gives up after a while (until retry()),
// and measures the round trip with heartbeats. agentmux's page speaks the
// protocol's messages (types.ts); the hub's page (hub/main.ts) its own,
// without heartbeats.

import type { ClientMessage, ServerMessage } from './types';

/** closed: the page ended the connection for good (close()); nothing reconnects it. */
export type ConnectionState = 'connecting' | 'connected' | 'reconnecting' | 'failed' | 'closed';

/** How a socket ended: its close code and reason, and whether it had opened. */
export interface SocketClose {
  code: number;
  reason: string;
  /** False for a socket refused before it opened (an upgrade answered 401, a server down). */
  opened: boolean;
}

export interface WsClientOptions<In> {
  url: string;
  onMessage(msg: In): void;
  /** The socket is open; re-attach and re-sync here. */
  onOpen(): void;
  /** State, countdown or round trip changed. */
  onChange(): void;
  /**
   * Whether to send heartbeats and take a long silence for a dead link;
   * true when left out. A server that sends only when something changes
   * (the hub) pings at the WebSocket's level, which a page cannot see.
   */
  heartbeats?: boolean;
  /**
   * The socket closed: return false to stay closed (the state becomes
   * closed), anything else to reconnect with backoff as usual. Not called
   * for an attempt abandoned by its timeout or for a silent link.
   */
  onClose?(close: SocketClose): boolean | void;
}

const MIN_DELAY_MS = 1_000;
const MAX_DELAY_MS = 30_000;
const JITTER = 0.2;
const GIVE_UP_AFTER_MS = 5 * 60_000;
const HEARTBEAT_MS = 30_000;
const FIRST_HEARTBEAT_MS = 500;
/** An attempt that has not opened by then is abandoned. */
const CONNECT_TIMEOUT_MS = 10_000;
/** The server sends a heartbeat every 30 s: silence this long means a dead link. */
const SILENCE_LIMIT_MS = 75_000;

/** The delay before reconnect attempt n (1-based): 1 s doubling to 30 s, ±20 %. */
export function backoffDelay(attempt: number, random = Math.random): number {
  const base = Math.min(MAX_DELAY_MS, MIN_DELAY_MS * 2 ** Math.max(0, attempt - 1));
  return Math.round(base * (1 + JITTER * (2 * random() - 1)));
}

/**
 * The WebSocket's address: `ws` next to the page, like every URL the page
 * uses, so that behind a proxy that serves agentmux under a path
 * (http://host/proxy/8080/) it is ws://host/proxy/8080/ws.
 */
export function wsURL(base: string = document.baseURI): string {
  const u = new URL('ws', base);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

export class WsClient<In extends { type: string } = ServerMessage, Out = ClientMessage> {
  private socket: WebSocket | null = null;
  private _state: ConnectionState = 'connecting';
  private attempt = 0;
  /** When the first of the current run of failures happened. */
  private failingSince: number | null = null;
  private retryTimer: number | undefined;
  private connectTimer: number | undefined;
  private heartbeatTimer: number | undefined;
  private firstBeatTimer: number | undefined;
  private lastHeard = 0;
  /** When the next attempt starts, while one is scheduled. */
  nextAttemptAt: number | null = null;
  /** The last heartbeat round trip, in ms. */
  rttMs: number | null = null;

  constructor(private readonly opts: WsClientOptions<In>) {
    window.addEventListener('online', () => {
      if (this._state === 'reconnecting' && this.nextAttemptAt !== null) this.connectNow();
    });
  }

  get state(): ConnectionState {
    return this._state;
  }

  get isOpen(): boolean {
    return this.socket?.readyState === WebSocket.OPEN && this._state === 'connected';
  }

  /** Connects; every callback comes later, from a task of its own. */
  start(): void {
    this.connectNow();
  }

  /** Starts over after giving up: a fresh run of attempts, the first now. */
  retry(): void {
    this.attempt = 0;
    this.failingSince = null;
    this.setState('connecting');
    this.connectNow();
  }

  /** Ends the connection for good: no socket, no attempt, no timer; state closed. */
  close(): void {
    window.clearTimeout(this.retryTimer);
    this.nextAttemptAt = null;
    this.dropSocket();
    this.rttMs = null;
    if (this._state !== 'closed') this.setState('closed');
  }

  /** Sends a message if the socket is open; reports whether it was sent. */
  send(msg: Out): boolean {
    if (!this.isOpen || !this.socket) return false;
    this.socket.send(JSON.stringify(msg));
    return true;
  }

  /** Sends a pre-encoded message (for sizes checked by the caller). */
  sendRaw(frame: string): boolean {
    if (!this.isOpen || !this.socket) return false;
    this.socket.send(frame);
    return true;
  }

  private setState(s: ConnectionState): void {
    this._state = s;
    this.opts.onChange();
  }

  private connectNow(): void {
    window.clearTimeout(this.retryTimer);
    this.nextAttemptAt = null;
    this.dropSocket();
    let socket: WebSocket;
    try {
      socket = new WebSocket(this.opts.url);
    } catch {
      // Later, as a socket's own failure is reported: start() may come
      // before the caller is ready for onChange.
      this.retryTimer = window.setTimeout(() => this.onLost(), 0);
      return;
    }
    this.socket = socket;
    this.connectTimer = window.setTimeout(() => {
      if (this.socket === socket && socket.readyState !== WebSocket.OPEN) this.onLost();
    }, CONNECT_TIMEOUT_MS);
    let opened = false;
    socket.onopen = () => {
      if (this.socket !== socket) return;
      opened = true;
      window.clearTimeout(this.connectTimer);
      this.attempt = 0;
      this.failingSince = null;
      this.lastHeard = Date.now();
      this.setState('connected');
      if (this.opts.heartbeats !== false) this.startHeartbeat();
      this.opts.onOpen();
    };
    socket.onmessage = (ev: MessageEvent) => {
      if (this.socket !== socket) return;
      this.lastHeard = Date.now();
      if (typeof ev.data !== 'string') return;
      let msg: In;
      try {
        msg = JSON.parse(ev.data) as In;
      } catch {
        return;
      }
      const beat = msg as { type: string; echo?: unknown };
      if (beat.type === 'heartbeat' && typeof beat.echo === 'number') {
        this.rttMs = Math.max(0, Date.now() - beat.echo);
        this.opts.onChange();
      }
      this.opts.onMessage(msg);
    };
    socket.onclose = (ev: CloseEvent) => {
      if (this.socket !== socket) return;
      if (this.opts.onClose?.({ code: ev.code, reason: ev.reason, opened }) === false) this.close();
      else this.onLost();
    };
    // onerror is always followed by onclose.
  }

  /** Forgets the current socket without reacting to its events. */
  private dropSocket(): void {
    window.clearTimeout(this.connectTimer);
    window.clearInterval(this.heartbeatTimer);
    window.clearTimeout(this.firstBeatTimer);
    const s = this.socket;
    this.socket = null;
    if (s) {
      s.onopen = s.onmessage = s.onclose = null;
      if (s.readyState === WebSocket.CONNECTING || s.readyState === WebSocket.OPEN) s.close();
    }
  }

  private onLost(): void {
    this.dropSocket();
    this.rttMs = null;
    const now = Date.now();
    this.failingSince ??= now;
    if (now - this.failingSince >= GIVE_UP_AFTER_MS) {
      this.nextAttemptAt = null;
      this.setState('failed');
      return;
    }
    this.attempt++;
    const delay = backoffDelay(this.attempt);
    this.nextAttemptAt = now + delay;
    this.retryTimer = window.setTimeout(() => this.connectNow(), delay);
    this.setState('reconnecting');
  }

  private startHeartbeat(): void {
    const beat = () => {
      if (Date.now() - this.lastHeard > SILENCE_LIMIT_MS) {
        this.onLost(); // a half-open link: nothing will ever close it for us
        return;
      }
      this.sendRaw(JSON.stringify({ type: 'heartbeat', timestamp: Date.now() }));
    };
    window.clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = window.setInterval(beat, HEARTBEAT_MS);
    // The first one once the page is idle after opening (re-attaching and
    // replays keep it busy), so the round trip shown is the network's.
    window.clearTimeout(this.firstBeatTimer);
    this.firstBeatTimer = window.setTimeout(() => {
      if ('requestIdleCallback' in window) window.requestIdleCallback(beat, { timeout: 3_000 });
      else beat();
    }, FIRST_HEARTBEAT_MS);
  }
}
