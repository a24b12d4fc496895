// What this page knows of each session's branch on its way from review to
// merged (docs/protocol.md, "Review to merged"): where the branch stands
// against its base (GET /branch, then live from session.branch, whoever
// acted), why it could not be told, where it was last pushed and its pull
// request's page, and the one request in flight (commit, merge, update,
// archive or push) that the ship bar's buttons wait for.
//
// It touches no DOM: ShipBar (changes/ship.ts) asks the server, tells the
// model what came back, and renders from it when it changes.

import type { BranchResponse, SessionBranchMessage, Worktree } from '../shared/types';

/** Where a worktree session's branch stands. */
export interface BranchState {
  branch: string;
  base: string;
  ahead: number;
  behind: number;
  merged?: string;
  archived?: boolean;
}

/** The last push of a session: where it went and its pull request's page ('' when none is known). */
export interface PushState {
  remote: string;
  url: string;
}

/** The requests the ship bar makes, one at a time. */
export type ShipAction = 'commit' | 'merge' | 'update' | 'archive' | 'push';

/** What a session's branch shows as: merged or archived, by the worktree the store has or the branch. */
export interface Standing {
  merged: boolean;
  archived: boolean;
}

/** Called with the session whose state changed, or null for the request in flight (every session's buttons). */
type Listener = (sessionId: string | null) => void;

/** Every session's branch state: see the file's comment. */
export class ShipState {
  private readonly branches = new Map<string, BranchState>();
  /** Bumped by each session.branch: a GET /branch sent before one is older than it. */
  private readonly versions = new Map<string, number>();
  private readonly errors = new Map<string, string>();
  private readonly loading = new Set<string>();
  private readonly pushes = new Map<string, PushState>();
  private inFlight: ShipAction | null = null;
  private readonly listeners: Listener[] = [];

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(sessionId: string | null): void {
    for (const fn of this.listeners) fn(sessionId);
  }

  /** Where the session's branch stands, once known. */
  branch(sessionId: string): BranchState | undefined {
    return this.branches.get(sessionId);
  }

  /** Why the branch could not be told, while it is not known. */
  error(sessionId: string): string | undefined {
    return this.errors.get(sessionId);
  }

  /** The session's last push, by anyone. */
  push(sessionId: string): PushState | undefined {
    return this.pushes.get(sessionId);
  }

  /**
   * Whether the session's branch is merged, or archived, by what the
   * store's worktree or the branch says. Merged holds only while nothing
   * new is on the branch: the server counts ahead from the merged tip, so
   * commits made after the merge make it a branch to merge again.
   */
  standing(sessionId: string, wt: Worktree | undefined): Standing {
    const b = this.branches.get(sessionId);
    const archived = !!(wt?.archived || b?.archived);
    return { merged: archived || (!!(wt?.merged || b?.merged) && !(b && b.ahead > 0)), archived };
  }

  /** The base the session's branch goes into: the branch's, the worktree's, or fallback. */
  base(sessionId: string, wt: Worktree | undefined, fallback: string): string {
    return this.branches.get(sessionId)?.base || wt?.base || fallback;
  }

  /** The request in flight, if any. */
  get busy(): ShipAction | null {
    return this.inFlight;
  }

  /** A request went out (what) or came back (null). */
  setBusy(what: ShipAction | null): void {
    this.inFlight = what;
    this.changed(null);
  }

  /**
   * session.branch: what was done to a session's branch, by anyone, and
   * where it stands; a worktree session's (with a base) replaces what a
   * GET /branch on its way would say.
   */
  apply(m: SessionBranchMessage): void {
    const id = m.sessionId;
    this.versions.set(id, (this.versions.get(id) ?? 0) + 1);
    if (m.base !== undefined && m.base !== '') {
      this.branches.set(id, { branch: m.branch, base: m.base, ahead: m.ahead, behind: m.behind, merged: m.merged, archived: m.archived });
      this.errors.delete(id);
    }
    if (m.action === 'push' && m.remote) this.pushes.set(id, { remote: m.remote, url: safeURL(m.pullRequestUrl) });
    this.changed(id);
  }

  /**
   * A GET /branch is about to go: returns the version to hand to loaded,
   * or null when one is on its way already.
   */
  startLoad(sessionId: string): number | null {
    if (this.loading.has(sessionId)) return null;
    this.loading.add(sessionId);
    return this.versions.get(sessionId) ?? 0;
  }

  /** The GET /branch begun at version answered b: taken unless a session.branch came meanwhile. */
  loaded(sessionId: string, version: number, b: BranchResponse, archived: boolean | undefined): void {
    this.loading.delete(sessionId);
    if ((this.versions.get(sessionId) ?? 0) === version) {
      this.branches.set(sessionId, { ...b, archived });
      this.errors.delete(sessionId);
    }
    this.changed(sessionId);
  }

  /** The GET /branch failed, saying why. */
  loadFailed(sessionId: string, message: string): void {
    this.loading.delete(sessionId);
    this.errors.set(sessionId, message);
    this.changed(sessionId);
  }

  /** This page pushed the session's branch to remote; url is the pull request's page the server named. */
  pushed(sessionId: string, remote: string, url: string | undefined): PushState {
    const p = { remote, url: safeURL(url) };
    this.pushes.set(sessionId, p);
    this.changed(sessionId);
    return p;
  }

  /** The session is gone. */
  forget(sessionId: string): void {
    for (const m of [this.branches, this.versions, this.errors, this.pushes]) m.delete(sessionId);
  }
}

/** A pull request page to link to: https (or http) only, never a script's URL. */
export function safeURL(url: string | undefined): string {
  if (!url) return '';
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : '';
  } catch {
    return '';
  }
}
