// The sessions the server has, in creation order, with what the UI adds:
// the status reason, whether the session waits for the user, and which one
// is on screen. Views subscribe and re-render from it.

import type { Session, SessionStatus } from './types';

export interface SessionEntry {
  session: Session;
  /** The latest session.status reason, for display. */
  reason: string;
  /** The agent asked for input (session.needsInput or status waiting). */
  needsInput: boolean;
  /** A DELETE is in flight. */
  closing: boolean;
}

type Listener = () => void;

const ACTIVE_KEY = 'agentmux.activeSession';

export function isRunning(status: SessionStatus): boolean {
  return status === 'active' || status === 'waiting';
}

export class SessionStore {
  private readonly entries = new Map<string, SessionEntry>();
  private listeners: Listener[] = [];
  private _activeId: string | null = null;

  get activeId(): string | null {
    return this._activeId;
  }

  get active(): SessionEntry | undefined {
    return this._activeId ? this.entries.get(this._activeId) : undefined;
  }

  get(id: string): SessionEntry | undefined {
    return this.entries.get(id);
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  all(): SessionEntry[] {
    return [...this.entries.values()];
  }

  runningCount(): number {
    return this.all().filter((e) => isRunning(e.session.status)).length;
  }

  needsInputCount(): number {
    return this.all().filter((e) => e.needsInput).length;
  }

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(): void {
    for (const fn of this.listeners) fn();
  }

  /** Adds or updates a session from a Session object. */
  upsert(s: Session): void {
    const e = this.entries.get(s.id);
    if (e) {
      e.session = s;
      e.needsInput ||= s.status === 'waiting';
    } else {
      this.entries.set(s.id, { session: s, reason: '', needsInput: s.status === 'waiting', closing: false });
    }
    if (this._activeId === null) this.pickActive();
    this.changed();
  }

  /** Replaces the whole list (after GET /api/sessions); returns the ids that went away. */
  replaceAll(list: Session[]): string[] {
    const seen = new Set(list.map((s) => s.id));
    const gone = [...this.entries.keys()].filter((id) => !seen.has(id));
    for (const id of gone) this.entries.delete(id);
    for (const s of list) {
      const e = this.entries.get(s.id);
      if (e) {
        e.session = s;
        if (s.status === 'waiting') e.needsInput = true;
        else if (!isRunning(s.status)) e.needsInput = false;
      } else {
        this.entries.set(s.id, { session: s, reason: '', needsInput: s.status === 'waiting', closing: false });
      }
    }
    if (this._activeId === null || !this.entries.has(this._activeId)) this.pickActive();
    this.changed();
    return gone;
  }

  setStatus(id: string, status: SessionStatus, reason = ''): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.session = { ...e.session, status };
    e.reason = reason;
    // Waiting means the agent asks; any other status means it no longer does.
    e.needsInput = status === 'waiting';
    this.changed();
  }

  setExitCode(id: string, code: number): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.session = { ...e.session, exitCode: code };
    this.changed();
  }

  setNeedsInput(id: string, value: boolean): void {
    const e = this.entries.get(id);
    if (!e || e.needsInput === value) return;
    e.needsInput = value;
    this.changed();
  }

  setClosing(id: string, value: boolean): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.closing = value;
    this.changed();
  }

  remove(id: string): void {
    if (!this.entries.has(id)) return;
    const ids = [...this.entries.keys()];
    const i = ids.indexOf(id);
    this.entries.delete(id);
    if (this._activeId === id) {
      // The neighbour to the right, else to the left, takes its place.
      const next = ids[i + 1] ?? ids[i - 1] ?? null;
      this._activeId = next;
      this.remember();
    }
    this.changed();
  }

  select(id: string | null): void {
    if (id !== null && !this.entries.has(id)) return;
    if (this._activeId === id) return;
    this._activeId = id;
    this.remember();
    this.changed();
  }

  /** Picks the session shown last time, else the oldest. */
  private pickActive(): void {
    let saved: string | null = null;
    try {
      saved = localStorage.getItem(ACTIVE_KEY);
    } catch {
      // storage disabled
    }
    if (saved && this.entries.has(saved)) this._activeId = saved;
    else this._activeId = this.entries.keys().next().value ?? null;
  }

  private remember(): void {
    try {
      if (this._activeId) localStorage.setItem(ACTIVE_KEY, this._activeId);
    } catch {
      // storage disabled
    }
  }
}
