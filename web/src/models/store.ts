// The sessions the server has, in creation order, with what the UI adds:
// the status reason, whether the session waits for the user, whether it
// was warned of a long silence, and which one is on screen. Views
// subscribe and re-render from it.

import type { Limit, Permission, Session, SessionCheck, SessionSetup, SessionStatus, Usage, WarningSeverity } from '../shared/types';
import { loadSetting, saveSetting } from '../shared/settings';

export interface SessionEntry {
  session: Session;
  /** The latest session.status reason, for display. */
  reason: string;
  /** The agent asked for input (session.needsInput or status waiting). */
  needsInput: boolean;
  /** What the waiting agent asks to be allowed, while it waits at a permission request. */
  permission: Permission | null;
  /**
   * The latest session.warning's severity and message, until the session
   * next reports a status (it produced output, or waits, or ended).
   */
  warning: { severity: WarningSeverity; message: string } | null;
  /** A DELETE is in flight. */
  closing: boolean;
}

type Listener = () => void;

const ACTIVE_KEY = 'agentmux.activeSession';

/**
 * Reports whether a session's agent process runs: the server's `running`
 * field, or, from a server without it, the status (active and waiting run;
 * idle then means restored after a restart, with nothing running).
 */
/**
 * Whether the session's program is a plain, interactive shell: the shell
 * profile, or a shell's name with options alone (bash --norc -i). A shell
 * given a script (sh -c '...', bash run.sh) is that script's wrapper. A
 * shell never waits for a prompt as an agent does, and text typed into it
 * runs line by line.
 */
export function runsShell(s: Pick<Session, 'agent' | 'command'>): boolean {
  if (s.agent === 'shell') return true;
  const [program, ...args] = s.command ?? [];
  if (s.agent !== 'custom' || !program) return false;
  const name = program.split('/').pop() ?? '';
  return /^(sh|bash|zsh|dash|ksh|mksh|fish|tcsh|csh)$/.test(name) && args.every((a) => a.startsWith('-') && a !== '-c');
}

/**
 * Whether a worktree session waits on its setup: the script did not pass
 * (it failed, was stopped or interrupted) and the agent has not started.
 * Nothing but Retry, or starting the agent on purpose, moves it on: a key
 * typed into it does not wake the agent.
 */
export function setupHolds(s: Pick<Session, 'setup' | 'status' | 'running'>): boolean {
  const u = s.setup;
  return !!u && !u.agentStarted && u.status !== 'passed' && u.status !== 'running' && !isRunning(s);
}

export function isRunning(s: Pick<Session, 'status' | 'running'>): boolean {
  return s.running ?? statusRuns(s.status);
}

function statusRuns(status: SessionStatus): boolean {
  return status === 'active' || status === 'waiting';
}

/**
 * The running flag after a status change: the one given, else what the
 * status says. Idle says nothing (silent but alive, or no process), so the
 * previous flag stays.
 */
function runningAfter(status: SessionStatus, given: boolean | undefined, previous: boolean | undefined): boolean | undefined {
  if (given !== undefined) return given;
  if (status === 'idle') return previous;
  return previous === undefined ? undefined : statusRuns(status);
}

/** The permission a session's view says its agent waits for, if any. */
function permissionOf(s: Session): Permission | null {
  return s.status === 'waiting' ? (s.permission ?? null) : null;
}

/**
 * The session whose agent started a session through agentmux's MCP tools
 * (its startedBy): name is null once that session was deleted, since the
 * server keeps only the id.
 */
export interface Starter {
  id: string;
  name: string | null;
}

/** "Started by planner's agent": a started session's tooltip, where its tab and the switcher mark it. */
export function startedByTitle(st: Starter): string {
  return st.name === null ? 'Started by an agent in a deleted session' : `Started by ${st.name}'s agent`;
}

function newEntry(s: Session): SessionEntry {
  return { session: s, reason: '', needsInput: s.status === 'waiting', permission: permissionOf(s), warning: null, closing: false };
}

export class SessionStore {
  private readonly entries = new Map<string, SessionEntry>();
  /**
   * The sessions a session.status came for since this page last asked to
   * attach to them: that status is at least as new as the one the attach
   * will report (every change after the attach was asked sends one), which
   * may arrive after it, as events overtake output.
   */
  private readonly statusSinceAttach = new Set<string>();
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

  /** Who started the session, or null when a person did. */
  starterOf(s: Pick<Session, 'startedBy'>): Starter | null {
    if (!s.startedBy) return null;
    return { id: s.startedBy, name: this.entries.get(s.startedBy)?.session.name ?? null };
  }

  /** The agents running: what --max-sessions counts (a run script is no agent). */
  runningCount(): number {
    return this.all().filter((e) => isRunning(e.session) && !e.session.runOf).length;
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
      e.permission = permissionOf(s);
    } else {
      this.entries.set(s.id, newEntry(s));
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
        e.permission = permissionOf(s);
        if (s.status === 'waiting') e.needsInput = true;
        else if (!isRunning(s)) e.needsInput = false;
        // Output or a question since the warning: it no longer holds.
        if (s.status === 'active' || s.status === 'waiting' || !isRunning(s)) e.warning = null;
      } else {
        this.entries.set(s.id, newEntry(s));
      }
    }
    if (this._activeId === null || !this.entries.has(this._activeId)) this.pickActive();
    this.changed();
    return gone;
  }

  /**
   * A session.status: the status, its reason and whether the process runs
   * (running undefined: from the status, see runningAfter). It ends a
   * warning: the server reports a status when output resumes, the agent
   * asks, or the run ends. A permission comes with waiting only; a limit,
   * while the account's usage limit stops the agent.
   */
  setStatus(id: string, status: SessionStatus, reason = '', running?: boolean, permission?: Permission, limit?: Limit): void {
    const e = this.entries.get(id);
    if (!e) return;
    this.statusSinceAttach.add(id);
    e.session = { ...e.session, status, running: runningAfter(status, running, e.session.running), limit };
    e.reason = reason;
    e.permission = status === 'waiting' ? (permission ?? null) : null;
    // Waiting means the agent asks; any other status means it no longer does.
    e.needsInput = status === 'waiting';
    e.warning = null;
    this.changed();
  }

  /** A session.setup: its worktree's setup script started or ended. */
  setSetup(id: string, setup: SessionSetup | undefined): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.session = { ...e.session, setup };
    this.changed();
  }

  /** A usage.updated: what the session's agent reported it spends, anew. */
  setUsage(id: string, usage: Usage): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.session = { ...e.session, usage };
    this.changed();
  }

  /**
   * A session.check (or a PATCH's answer): whether failures go to the
   * agent, and a check that started or ended, which is the session's last
   * unless a later turn's is known already (an earlier check, superseded,
   * can end after the next one started).
   */
  setCheck(id: string, check: SessionCheck | undefined, sendFailures: boolean): void {
    const e = this.entries.get(id);
    if (!e) return;
    const last = check && (!e.session.check || check.checkpoint >= e.session.check.checkpoint) ? check : e.session.check;
    e.session = { ...e.session, check: last, sendFailures };
    this.changed();
  }

  /**
   * The status from session.attached, which is no status change: the
   * reason and any warning stay, and idle keeps the running flag.
   */
  syncStatus(id: string, status: SessionStatus): void {
    const e = this.entries.get(id);
    if (!e || e.session.status === status || this.statusSinceAttach.has(id)) return;
    // The attach read its status before it was sent, and events overtake
    // output: a run that ended meanwhile has already said so. Only
    // session.status (a resume) brings a session back to running.
    if (e.session.running === false && (status === 'active' || status === 'waiting')) return;
    e.session = { ...e.session, status, running: runningAfter(status, undefined, e.session.running) };
    e.needsInput = status === 'waiting';
    if (status !== 'waiting') e.permission = null;
    if (status === 'active' || status === 'waiting') e.warning = null;
    this.changed();
  }

  /** A session.warning: the session has been silent for long. */
  setWarning(id: string, severity: WarningSeverity, message: string): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.warning = { severity, message };
    this.changed();
  }

  setExitCode(id: string, code: number): void {
    const e = this.entries.get(id);
    if (!e) return;
    e.session = { ...e.session, exitCode: code };
    this.changed();
  }

  /** A session.branch said the worktree was merged or archived: no other event carries it. */
  setWorktreeState(id: string, state: { merged?: string; archived?: boolean }): void {
    const e = this.entries.get(id);
    const wt = e?.session.worktree;
    if (!e || !wt) return;
    const merged = state.merged || wt.merged;
    const archived = state.archived || wt.archived;
    if (merged === wt.merged && archived === wt.archived) return;
    e.session = { ...e.session, worktree: { ...wt, merged, archived } };
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

  /** This page asks to attach to the session: its answer's status counts again. */
  attachSent(id: string): void {
    this.statusSinceAttach.delete(id);
  }

  remove(id: string): void {
    if (!this.entries.has(id)) return;
    this.statusSinceAttach.delete(id);
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
    const saved = loadSetting(ACTIVE_KEY);
    if (saved && this.entries.has(saved)) this._activeId = saved;
    else this._activeId = this.entries.keys().next().value ?? null;
  }

  private remember(): void {
    if (this._activeId) saveSetting(ACTIVE_KEY, this._activeId);
  }
}
