// The hub's inbox, touching no DOM: every session of every workspace the
// hub follows, in the order a person deals with them (those that wait for
// someone first, the longest wait first; then the rest, the latest active
// first), the page's filters (a workspace, a status), what each count says,
// what a waiting session asks in words, and which waits are new since the
// last look (the notifications). The view (list.ts) renders from it; the
// unit tests (unit/hub.test.ts) drive it alone.

import { agentLabel, askedQuestion, describePermission, permissionKeys } from '../models/answers';
import type { InboxSession, InboxSnapshot, InboxWorkspace } from './types';

/** The statuses one can filter by: 'waiting' is every session that waits for a person. */
export const STATUS_FILTERS = ['all', 'waiting', 'active', 'idle', 'limited', 'error', 'stopped'] as const;
export type StatusFilter = (typeof STATUS_FILTERS)[number];

/** What the page shows: one workspace ('' for all) and one status. */
export interface Filter {
  workspace: string;
  status: StatusFilter;
}

export const NO_FILTER: Filter = { workspace: '', status: 'all' };

/** A filter as remembered (JSON), or none where it is unreadable. */
export function parseFilter(raw: string | null): Filter {
  try {
    const f = JSON.parse(raw ?? 'null') as Partial<Filter> | null;
    return {
      workspace: typeof f?.workspace === 'string' ? f.workspace : '',
      status: STATUS_FILTERS.includes(f?.status as StatusFilter) ? (f!.status as StatusFilter) : 'all',
    };
  } catch {
    return { ...NO_FILTER };
  }
}

/** How a status filter reads on its button. */
export function statusLabel(s: StatusFilter): string {
  return s === 'all' ? 'All' : s === 'waiting' ? 'Needs you' : s.charAt(0).toUpperCase() + s.slice(1);
}

/** A session's identity across the hub: its workspace and its id (a URL holds no newline). */
export function sessionKey(s: Pick<InboxSession, 'workspace' | 'id'>): string {
  return `${s.workspace}\n${s.id}`;
}

/** Reports whether the session waits for a person: first in the list, counted in the title. */
export function needsPerson(s: InboxSession): boolean {
  return s.needsInput;
}

function time(iso: string | undefined): number {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isFinite(t) ? t : 0;
}

/** When its wait began: since its status says so, else (an older workspace) its last activity. */
export function waitStart(s: InboxSession): number {
  return time(s.waitingSince) || time(s.lastActivityAt);
}

/** The inbox's order: waiting first, the oldest wait first; then the latest active first; then by name. */
export function compareSessions(a: InboxSession, b: InboxSession): number {
  const wa = needsPerson(a);
  const wb = needsPerson(b);
  if (wa !== wb) return wa ? -1 : 1;
  const d = wa ? waitStart(a) - waitStart(b) : time(b.lastActivityAt) - time(a.lastActivityAt);
  if (d !== 0) return d;
  return byCodePoint(a.workspaceName, b.workspaceName) || byCodePoint(a.name, b.name) || byCodePoint(a.id, b.id);
}

/** Strings as the hub orders them (Go's cmp.Compare): by code point, so the page and the hub agree. */
function byCodePoint(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Reports whether the filter lets the session show. */
export function matches(s: InboxSession, f: Filter): boolean {
  if (f.workspace && s.workspace !== f.workspace) return false;
  if (f.status === 'all') return true;
  if (f.status === 'waiting') return needsPerson(s) || s.status === 'waiting';
  return s.status === f.status;
}

/** What a waiting session asks, in words, and how it can be answered from the list. */
export interface Wait {
  kind: 'permission' | 'question' | 'input';
  /** "Claude wants to use Write on docs/plan.md", "Proceed?", "The agent is waiting for you." */
  text: string;
  /** Allow and Deny: a permission of an agent whose dialog agentmux knows. */
  canAllow: boolean;
}

/** What the session waits for, or null when it waits for nothing. */
export function waitOf(s: InboxSession): Wait | null {
  if (!needsPerson(s)) return null;
  if (s.permission) {
    return { kind: 'permission', text: describePermission(s.agent, s.permission), canAllow: permissionKeys(s.agent) !== null };
  }
  const reason = s.reason ?? '';
  const question = askedQuestion(reason);
  if (question) return { kind: 'question', text: question, canAllow: false };
  return { kind: 'input', text: reason ? capitalize(reason) : `${agentLabel(s.agent)} is waiting for you.`, canAllow: false };
}

/**
 * One waiting period of one session, asking one thing: a new identity is
 * a new notification (an answered permission followed at once by a
 * question, which a coalesced push may never show apart), and a row's
 * reply being written is kept while its identity holds.
 */
export function waitIdentity(s: InboxSession): string | null {
  if (!needsPerson(s)) return null;
  const p = s.permission ? `${s.permission.tool}\n${s.permission.summary ?? ''}` : '';
  return `${sessionKey(s)}\n${s.waitingSince ?? ''}\n${p}\n${s.reason ?? ''}`;
}

/** Why a workspace is out of reach, as the inbox shows it. */
export interface Problem {
  /** The hub's word for it: "refused", "token rejected", "timeout", else "unreachable". */
  kind: string;
  /** The rest of what the hub said ("nothing listens there (dial tcp …)"). */
  detail: string;
  /** What to do about it. */
  advice: string;
}

const KINDS = ['token rejected', 'refused', 'timeout'];

/** A workspace's error ("refused: nothing listens there (…)") as its kind, its detail and advice. */
export function problemOf(w: InboxWorkspace): Problem {
  const error = (w.error ?? '').trim();
  const kind = KINDS.find((k) => error.toLowerCase().startsWith(k)) ?? 'unreachable';
  const detail = kind === 'unreachable' ? error : error.slice(kind.length).replace(/^[:\s]+/, '');
  const advice =
    kind === 'refused' ? `Is agentmux running at ${w.url}, and does the hub reach it there?`
    : kind === 'token rejected' ? 'Check the token file the hub’s peers give for it (or --discover-token-file).'
    : kind === 'timeout' ? `${w.url} did not answer in time; the hub tries again.`
    : `The hub cannot reach ${w.url}; it tries again.`;
  return { kind, detail, advice };
}

/** The counts a filter control shows beside each choice. */
export interface Counts {
  /** Per workspace url (and '' for all): its sessions and how many wait. */
  workspaces: Map<string, { sessions: number; waiting: number }>;
  /** Per status filter, within the workspace chosen. */
  statuses: Map<StatusFilter, number>;
}

type Listener = () => void;

/** The inbox as the hub last said it. */
export class Inbox {
  private _workspaces: InboxWorkspace[] = [];
  private _sessions: InboxSession[] = [];
  private _loaded = false;
  /** When the last snapshot arrived (ms), 0 before the first. */
  updatedAt = 0;
  private readonly listeners: Listener[] = [];

  get loaded(): boolean {
    return this._loaded;
  }

  /** The workspaces, by name. */
  get workspaces(): readonly InboxWorkspace[] {
    return this._workspaces;
  }

  /** Every session, in the inbox's order. */
  get sessions(): readonly InboxSession[] {
    return this._sessions;
  }

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  /** Takes the hub's whole inbox, as GET api/inbox and every push say it. */
  apply(snap: InboxSnapshot, now = Date.now()): void {
    this._workspaces = [...(snap.workspaces ?? [])].sort((a, b) => a.name.localeCompare(b.name) || a.url.localeCompare(b.url));
    this._sessions = [...(snap.sessions ?? [])].sort(compareSessions);
    this._loaded = true;
    this.updatedAt = now;
    for (const fn of this.listeners) fn();
  }

  workspace(url: string): InboxWorkspace | undefined {
    return this._workspaces.find((w) => w.url === url);
  }

  get(key: string): InboxSession | undefined {
    return this._sessions.find((s) => sessionKey(s) === key);
  }

  /** How many sessions wait for a person, in every workspace. */
  waitingCount(): number {
    return this._sessions.filter(needsPerson).length;
  }

  /** The sessions the filter lets show, in order. */
  visible(f: Filter): InboxSession[] {
    return this._sessions.filter((s) => matches(s, f));
  }

  /** Reports whether the filter names a workspace the hub no longer follows (then it shows all). */
  isStale(f: Filter): boolean {
    return this._loaded && f.workspace !== '' && !this.workspace(f.workspace);
  }

  counts(f: Filter): Counts {
    const workspaces = new Map<string, { sessions: number; waiting: number }>();
    workspaces.set('', { sessions: this._sessions.length, waiting: this.waitingCount() });
    for (const w of this._workspaces) workspaces.set(w.url, { sessions: 0, waiting: 0 });
    for (const s of this._sessions) {
      const c = workspaces.get(s.workspace) ?? { sessions: 0, waiting: 0 };
      c.sessions++;
      if (needsPerson(s)) c.waiting++;
      workspaces.set(s.workspace, c);
    }
    const statuses = new Map<StatusFilter, number>();
    const here = this._sessions.filter((s) => matches(s, { workspace: f.workspace, status: 'all' }));
    for (const st of STATUS_FILTERS) statuses.set(st, here.filter((s) => matches(s, { workspace: '', status: st })).length);
    return { workspaces, statuses };
  }

  /** "2 need you · 5 sessions · 3 workspaces, 1 unreachable" */
  summary(): string {
    const waiting = this.waitingCount();
    const n = this._sessions.length;
    const w = this._workspaces.length;
    const down = this._workspaces.filter((x) => !x.reachable).length;
    const parts = [
      waiting ? `${waiting} need${waiting === 1 ? 's' : ''} you` : 'nothing waits',
      `${n} session${n === 1 ? '' : 's'}`,
      `${w} workspace${w === 1 ? '' : 's'}${down ? `, ${down} unreachable` : ''}`,
    ];
    return parts.join(' · ');
  }
}

/** What changed in the waits since the last look. */
export interface WaitChanges {
  /** Sessions that began waiting (or now wait for something else). */
  started: InboxSession[];
  /** Keys of sessions whose wait ended (or changed): what was said of it goes. */
  ended: string[];
}

/**
 * Follows which sessions wait, snapshot to snapshot, so that each waiting
 * period is told once. What waits in the first snapshot the page sees is
 * on screen already: it is not news (a reload would tell it all again).
 */
export class WaitTracker {
  private readonly waits = new Map<string, string>();
  private seeded = false;

  update(sessions: readonly InboxSession[]): WaitChanges {
    const now = new Map<string, string>();
    for (const s of sessions) {
      const id = waitIdentity(s);
      if (id !== null) now.set(sessionKey(s), id);
    }
    const ended: string[] = [];
    for (const [key, id] of this.waits) if (now.get(key) !== id) ended.push(key);
    const started = this.seeded ? sessions.filter((s) => {
      const id = now.get(sessionKey(s));
      return id !== undefined && this.waits.get(sessionKey(s)) !== id;
    }) : [];
    this.waits.clear();
    for (const [k, v] of now) this.waits.set(k, v);
    this.seeded = true;
    return { started, ended };
  }
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
