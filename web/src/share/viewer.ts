// The read-only viewer's state (share.html, docs/protocol.md, Read-only
// share links), touching no DOM: the session the link shows as the
// server last said (share.welcome, session.status, session.resized), the
// link's expiry, and what each way the socket can end means: reconnect,
// or say why the link shows nothing any more and stop. The page
// (share/main.ts) renders from it; the terminal is agentmux's own
// TerminalView, watching only.

import type { SessionStatus, ShareWelcomeMessage, ViewedSession } from '../shared/types';
import type { SocketClose } from '../shared/ws';

/** The close code the server ends a viewer's socket with when its link ends (revoked, expired, session deleted). */
export const CLOSE_LINK_ENDED = 4403;

/** Why the page shows no terminal any more, and says so. */
export type EndKind =
  /** The link has no secret after its #. */
  | 'no-secret'
  /** The server refused the socket: the secret opens nothing (expired, revoked, mistyped). */
  | 'refused'
  /** The server closed the socket with 4403 and its reason. */
  | 'ended'
  /** session.destroyed: the session is gone. */
  | 'destroyed';

export interface Ending {
  kind: EndKind;
  /** The headline, for people. */
  title: string;
  /** What happened and what to do. */
  detail: string;
}

const ASK = 'Ask whoever shared it for a new link.';

/** The page's message for each way the link can end; reason is the server's words (4403). */
export function ending(kind: EndKind, reason = ''): Ending {
  switch (kind) {
    case 'no-secret':
      return { kind, title: 'This link is incomplete', detail: `A read-only link ends with # and a secret, which this one lacks: it may have been cut when it was copied. ${ASK}` };
    case 'refused':
      return { kind, title: 'This link expired or was revoked', detail: `It no longer shows the session (or it was mistyped). ${ASK}` };
    case 'destroyed':
      return { kind, title: 'The session was deleted', detail: 'There is nothing more to watch through this link.' };
    case 'ended': {
      const why = reason.trim();
      const title = why ? capitalize(why) : 'This read-only link ended';
      return { kind, title, detail: /deleted/.test(why) ? 'There is nothing more to watch through this link.' : ASK };
    }
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** What to do once the socket closed: reconnect, ask whether the server is up (probe), or end. */
export type CloseVerdict = { action: 'reconnect' } | { action: 'probe' } | { action: 'end'; ending: Ending };

/**
 * The socket closed. 4403 after opening: the link ended, for the reason
 * given. Any other close after opening (a restart, a network drop):
 * reconnect with backoff. Refused before opening: the upgrade's status
 * is hidden from the page, and a refused secret (401) looks like a server
 * that is down; the page asks the server (probe) before it gives up.
 */
export function onSocketClose(c: SocketClose): CloseVerdict {
  if (c.code === CLOSE_LINK_ENDED) return { action: 'end', ending: ending('ended', c.reason) };
  if (c.opened) return { action: 'reconnect' };
  return { action: 'probe' };
}

/**
 * The probe's answer: whether the server answered an HTTP request at
 * all. It did: the socket was refused for its secret. It did not (or a
 * proxy said its upstream is down): a server that is away, to reconnect to.
 */
export function afterProbe(serverAnswered: boolean): CloseVerdict {
  return serverAnswered ? { action: 'end', ending: ending('refused') } : { action: 'reconnect' };
}

/** Reports whether an HTTP status comes from the server itself rather than a proxy whose upstream is down. */
export function isServerAnswer(status: number): boolean {
  return status !== 502 && status !== 503 && status !== 504;
}

/** A status as the viewer's header says it. */
export function statusLabel(status: SessionStatus, running: boolean): string {
  switch (status) {
    case 'active':
      return 'running';
    case 'waiting':
      return 'waiting for input';
    case 'limited':
      return 'at its usage limit';
    case 'idle':
      return running ? 'idle' : 'not running';
    case 'error':
      return 'failed';
    case 'stopped':
      return 'exited';
    default:
      return String(status);
  }
}

/** A message the viewer's page handles, as far as this model is concerned. */
export type ViewerMessage =
  | ShareWelcomeMessage
  | { type: 'session.status'; sessionId: string; status: SessionStatus; running?: boolean }
  | { type: 'session.resized'; sessionId: string; cols: number; rows: number }
  | { type: 'session.destroyed'; sessionId: string };

/** The viewer's state: see the file's comment. */
export class ViewerState {
  /** The session shown, once a share.welcome came. */
  session: ViewedSession | null = null;
  expiresAt: string | null = null;
  scrollback = true;
  /** Set once the link shows nothing any more: the page stops. */
  ended: Ending | null = null;
  private readonly listeners: (() => void)[] = [];

  subscribe(fn: () => void): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  /** Applies a server message; reports whether it was about the session shown. */
  apply(m: ViewerMessage): boolean {
    if (this.ended) return false;
    if (m.type === 'share.welcome') {
      this.session = { ...m.session };
      this.expiresAt = m.expiresAt;
      this.scrollback = m.scrollback;
      this.changed();
      return true;
    }
    const s = this.session;
    if (!s || m.sessionId !== s.id) return false;
    switch (m.type) {
      case 'session.status':
        s.status = m.status;
        // A trimmed status may leave running out: active and waiting mean it runs.
        s.running = m.running ?? (m.status === 'active' || m.status === 'waiting');
        break;
      case 'session.resized':
        s.cols = m.cols;
        s.rows = m.rows;
        break;
      case 'session.destroyed':
        this.ended = ending('destroyed');
        break;
    }
    this.changed();
    return true;
  }

  /** The link shows nothing any more, for this reason. */
  end(e: Ending): void {
    if (this.ended) return;
    this.ended = e;
    this.changed();
  }
}
