// Read-only links to a session (docs/protocol.md, Read-only share links):
// what the API answers, the link a person copies, the expiries offered,
// and how a link is described in the share dialog. It touches no DOM: the
// dialog (views/share.ts) renders from it and the viewer's page
// (share/main.ts) reads its secret with it.

/** A live link as GET /api/sessions/:id/shares lists it (no secret: the server keeps its hash only). */
export interface Share {
  id: string;
  sessionId: string;
  expiresAt: string; // RFC 3339
  createdAt: string; // RFC 3339
  scrollback: boolean;
  /** The name of whoever made it, as their page gave it. */
  createdBy: string;
  /** How many are watching through it now. */
  viewers: number;
}

/** POST /api/sessions/:id/shares's answer: the only time the secret (in url's fragment) is seen. */
export interface CreatedShare extends Share {
  url: string;
}

export interface CreateShareRequest {
  /** Seconds, 60 to 2592000; the server's default (a day) when left out. */
  expiresIn?: number;
  /** Whether the viewer sees the scrollback, or only the last screen. */
  scrollback?: boolean;
  /** Who makes it, for the list (at most 100 bytes); the server says "api" without it. */
  by?: string;
}

/** The expiries the dialog offers, the default marked. */
export const EXPIRIES: readonly { seconds: number; label: string; default?: true }[] = [
  { seconds: 3600, label: '1 hour' },
  { seconds: 86400, label: '24 hours', default: true },
  { seconds: 7 * 86400, label: '7 days' },
];

/** The page that shows a link, next to agentmux's own page. */
export const SHARE_PAGE = 'share.html';

/**
 * The link to hand out, built from the server's answer: its secret (the
 * fragment) on share.html next to this page. The server builds url from
 * the request's Host, which behind a proxy that serves agentmux under a
 * path (http://host/proxy/8080/) lacks the path; document.baseURI has it.
 */
export function shareLink(replyURL: string, baseURI: string): string {
  let hash = '';
  try {
    hash = new URL(replyURL).hash;
  } catch {
    hash = replyURL.includes('#') ? replyURL.slice(replyURL.indexOf('#')) : '';
  }
  return new URL(SHARE_PAGE + hash, baseURI).href;
}

/**
 * The secret in a link's fragment ("#abc" → "abc"), or null when there
 * is none. It is in the fragment so that it never reaches a server's log
 * or a Referer.
 */
export function secretFromHash(hash: string): string | null {
  let s = hash.startsWith('#') ? hash.slice(1) : hash;
  try {
    s = decodeURIComponent(s);
  } catch {
    // kept as it is: the server refuses what it does not know
  }
  s = s.trim();
  return s === '' ? null : s;
}

/**
 * The viewer's WebSocket: ws next to the page, with the secret as share=,
 * so that under a proxy's path it stays under it.
 */
export function shareSocketURL(base: string, secret: string): string {
  const u = new URL('ws', base);
  u.protocol = u.protocol === 'https:' ? 'wss:' : 'ws:';
  u.hash = '';
  u.search = `?share=${encodeURIComponent(secret)}`;
  return u.href;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** "in 45 min", "in 23 h", "in 6 days", or "expired": how long a link has left. */
export function expiresIn(expiresAt: string, now = Date.now()): string {
  const left = Date.parse(expiresAt) - now;
  if (!Number.isFinite(left)) return 'at an unknown time';
  if (left <= 0) return 'expired';
  if (left < MINUTE) return 'in less than a minute';
  if (left < HOUR) return `in ${Math.floor(left / MINUTE)} min`;
  if (left < 2 * DAY) {
    const h = Math.floor(left / HOUR);
    const m = Math.floor((left % HOUR) / MINUTE);
    return m && h < 10 ? `in ${h} h ${m} min` : `in ${h} h`;
  }
  return `in ${Math.floor(left / DAY)} days`;
}

/** Whether the link is still live at now. */
export function isLive(s: Pick<Share, 'expiresAt'>, now = Date.now()): boolean {
  const at = Date.parse(s.expiresAt);
  return Number.isFinite(at) && at > now;
}

/** The live links, newest first. */
export function liveShares(list: readonly Share[], now = Date.now()): Share[] {
  return list.filter((s) => isLive(s, now)).sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt));
}

/** "1 viewer", "3 viewers", "no viewers". */
export function viewersText(n: number): string {
  if (!n) return 'no viewers';
  return n === 1 ? '1 viewer' : `${n} viewers`;
}

/** A link's line in the dialog: "by alice · expires in 23 h · 1 viewer · screen only". */
export function describeShare(s: Share, now = Date.now()): string {
  const parts = [`by ${s.createdBy || 'someone'}`, `expires ${expiresIn(s.expiresAt, now)}`, viewersText(s.viewers)];
  if (!s.scrollback) parts.push('screen only');
  return parts.join(' · ');
}
