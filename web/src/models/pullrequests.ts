// What this page knows of each session's pull request (issue 46; the
// contract in docs/protocol.md, "Pull requests"): the link the Session JSON
// carries once one is opened (pullRequest: number and url), the view the
// server last sent (GET /pull-request, then live from session.pullRequest:
// state, review decision, checks, unresolved threads), the forge each
// session would use (which host, which token source, or in words what is
// missing), and the one request in flight. It also tells, from one view to
// the next, the turns a person should hear of: checks that turn to failing,
// a review decision that turns to changes requested. The first view of a
// session is where it starts from: what holds at load is no news.
//
// It touches no DOM: the ship bar (changes/pullrequest.ts) renders from it,
// the notifier (views/notify.ts) tells the turns.

import type { PullRequestChecks, PullRequestMessage, PullRequestRef, PullRequestView } from '../shared/types';

// The protocol's types are the server's (shared/types.ts, held to the Go
// definitions by wire's tests); the HTTP bodies below are this page's.
export type { PullRequestChecks, PullRequestView };
/** The pull request's link, as the Session JSON has it once one is opened or linked. */
export type PullRequestLink = PullRequestRef;
export type SessionPullRequestMessage = PullRequestMessage;
export type PullRequestState = PullRequestView['state'];

/** The forge a session's repository is on, and whether the server can act there. */
export interface ForgeInfo {
  /** Absent when the remote names no forge. */
  host?: string;
  api?: string;
  /** Where the token comes from: file, GITHUB_TOKEN, GH_TOKEN, gh; absent without one. */
  source?: string;
  /** The file's path, or the gh command, when the source has one. */
  sourceDetail?: string;
  ready: boolean;
  /** Why it is not ready, in words. */
  missing?: string;
}

/** GET /api/sessions/:id/pull-request. */
export interface PullRequestResponse {
  forge: ForgeInfo;
  pullRequest: PullRequestView | null;
}

/** GET /api/sessions/:id/pull-request/draft: what a new pull request would say. */
export interface PullRequestDraft {
  title: string;
  body: string;
  head: string;
  base: string;
  draft: boolean;
}

/** POST /api/sessions/:id/pull-request. */
export interface CreatePullRequest {
  title?: string;
  body?: string;
  draft?: boolean;
}

/** POST /api/sessions/:id/pull-request's answer: created false when an open one was linked. */
export interface CreatedPullRequest {
  number: number;
  url: string;
  state: PullRequestState;
  created: boolean;
}

/** POST …/fix-checks: the prompt queued, and the checks it names. */
export interface FixChecksResponse {
  promptId: string;
  position: number;
  checks: string[];
}

/** A turn a person should hear of. */
export type PullRequestTurn =
  | { kind: 'checks-failing'; failing: string[] }
  | { kind: 'changes-requested' };

/** The requests the bar makes, one at a time. */
export type PullRequestAction = 'load' | 'create' | 'address-review' | 'fix-checks';

interface Entry {
  link?: PullRequestLink;
  view?: PullRequestView;
  forge?: ForgeInfo;
  /** Why GET /pull-request failed, while nothing newer came. */
  error?: string;
}

type Listener = (sessionId: string | null) => void;

/** Every session's pull request: see the file's comment. */
export class PullRequests {
  private readonly entries = new Map<string, Entry>();
  private inFlight: { sessionId: string; action: PullRequestAction } | null = null;
  private readonly listeners: Listener[] = [];

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(sessionId: string | null): void {
    for (const fn of this.listeners) fn(sessionId);
  }

  private entry(sessionId: string): Entry {
    let e = this.entries.get(sessionId);
    if (!e) {
      e = {};
      this.entries.set(sessionId, e);
    }
    return e;
  }

  /** The session's pull request as last shown, once a view came. */
  view(sessionId: string): PullRequestView | undefined {
    return this.entries.get(sessionId)?.view;
  }

  /** The session's pull request's number and page: the view's, else the Session JSON's. */
  link(sessionId: string): PullRequestLink | undefined {
    const e = this.entries.get(sessionId);
    if (e?.view) return { number: e.view.number, url: e.view.url };
    return e?.link;
  }

  /** The forge the session would use, once GET /pull-request answered. */
  forge(sessionId: string): ForgeInfo | undefined {
    return this.entries.get(sessionId)?.forge;
  }

  /** Why the last GET /pull-request failed, while nothing newer came. */
  error(sessionId: string): string | undefined {
    return this.entries.get(sessionId)?.error;
  }

  /** The request in flight, and whose. */
  get busy(): { sessionId: string; action: PullRequestAction } | null {
    return this.inFlight;
  }

  setBusy(sessionId: string, action: PullRequestAction | null): void {
    this.inFlight = action ? { sessionId, action } : null;
    this.changed(null);
  }

  /**
   * The Session JSON's pullRequest (on load, on session.created): the
   * link, until a view says more. Returns whether it is news: a link
   * with no view yet, which the page asks GET /pull-request about.
   */
  setLink(sessionId: string, link: PullRequestLink | undefined | null): boolean {
    if (!link || typeof link.number !== 'number') return false;
    const e = this.entry(sessionId);
    const same = e.link?.number === link.number && e.link.url === link.url;
    e.link = { number: link.number, url: link.url };
    if (!same) this.changed(sessionId);
    return !e.view;
  }

  /**
   * A view of the session's pull request (session.pullRequest, or GET
   * /pull-request's): returns the turns since the view before, none for
   * the first.
   */
  apply(sessionId: string, view: PullRequestView): PullRequestTurn[] {
    const e = this.entry(sessionId);
    const next = normalize(view);
    const turns = e.view ? turnsBetween(e.view, next) : [];
    e.view = next;
    e.link = { number: next.number, url: next.url };
    delete e.error;
    this.changed(sessionId);
    return turns;
  }

  /** GET /pull-request answered: the forge, and the view when one is linked. */
  loaded(sessionId: string, r: PullRequestResponse): PullRequestTurn[] {
    const e = this.entry(sessionId);
    e.forge = r.forge;
    delete e.error;
    if (r.pullRequest) return this.apply(sessionId, r.pullRequest);
    this.changed(sessionId);
    return [];
  }

  /** GET /pull-request failed, saying why. */
  loadFailed(sessionId: string, message: string): void {
    this.entry(sessionId).error = message;
    this.changed(sessionId);
  }

  /**
   * This page opened (or linked) the session's pull request. What the
   * POST answered stands for a view until the server sends its own:
   * checks and reviews unknown, so none are news yet.
   */
  created(sessionId: string, c: CreatedPullRequest, title: string): void {
    const e = this.entry(sessionId);
    e.link = { number: c.number, url: c.url };
    if (!e.view || e.view.number !== c.number) {
      e.view = {
        number: c.number, url: c.url, state: c.state, title, reviewDecision: '', reviews: [],
        checks: { state: 'none', failing: [], pending: [], passed: 0 }, unresolved: 0, checkedAt: '',
      };
    }
    this.changed(sessionId);
  }

  /** The session is gone. */
  forget(sessionId: string): void {
    this.entries.delete(sessionId);
    if (this.inFlight?.sessionId === sessionId) this.inFlight = null;
  }
}

/** A view with every list present, whatever an older or newer server left out. */
function normalize(v: PullRequestView): PullRequestView {
  const c: Partial<PullRequestChecks> = v.checks ?? {};
  return {
    ...v,
    reviewDecision: v.reviewDecision ?? '',
    reviews: Array.isArray(v.reviews) ? v.reviews : [],
    unresolved: v.unresolved ?? 0,
    checks: {
      state: c.state ?? 'none',
      failing: Array.isArray(c.failing) ? c.failing : [],
      pending: Array.isArray(c.pending) ? c.pending : [],
      passed: c.passed ?? 0,
    },
  };
}

/**
 * What turned between two views of one pull request: its checks to
 * failing (from anything else: a push that fails anew after passing is
 * news, a refresh that still fails is not), its review decision to
 * changes requested. A view of another number starts afresh.
 */
export function turnsBetween(prev: PullRequestView, next: PullRequestView): PullRequestTurn[] {
  if (prev.number !== next.number) return [];
  const turns: PullRequestTurn[] = [];
  if (next.checks.state === 'failing' && prev.checks.state !== 'failing') turns.push({ kind: 'checks-failing', failing: next.checks.failing });
  if (next.reviewDecision === 'changes_requested' && prev.reviewDecision !== 'changes_requested') turns.push({ kind: 'changes-requested' });
  return turns;
}

/** A part of the checks' summary: "✗ lint failing", "… 1 pending", "✓ 3 passing". */
export interface ChecksPart {
  kind: 'failing' | 'pending' | 'passing' | 'none';
  text: string;
}

/**
 * The checks in a few words, worst first: the failing ones by name (two
 * at most, then how many more), the pending and passing ones counted.
 */
export function checksParts(c: PullRequestChecks): ChecksPart[] {
  const parts: ChecksPart[] = [];
  if (c.failing.length) parts.push({ kind: 'failing', text: `\u2717 ${names(c.failing, 2)} failing` });
  if (c.pending.length) parts.push({ kind: 'pending', text: `\u2026 ${c.pending.length} pending` });
  if (c.passed) parts.push({ kind: 'passing', text: `\u2713 ${c.passed} passing` });
  // The state says pending (or failing) before the lists do: say it anyway.
  if (!parts.length) parts.push(c.state === 'pending' ? { kind: 'pending', text: '\u2026 pending' } : { kind: 'none', text: 'no checks' });
  return parts;
}

/** Every check, in sentences, for a tooltip. */
export function checksTitle(c: PullRequestChecks): string {
  const lines: string[] = [];
  if (c.failing.length) lines.push(`Failing: ${c.failing.join(', ')}`);
  if (c.pending.length) lines.push(`Pending: ${c.pending.join(', ')}`);
  if (c.passed) lines.push(`${c.passed} passing`);
  return lines.length ? lines.join('\n') : c.state === 'none' ? 'No checks reported on the head commit' : `Checks ${c.state}`;
}

/** The review decision in words ('' for none). */
export function reviewWords(v: Pick<PullRequestView, 'reviewDecision' | 'unresolved'>): string {
  if (v.reviewDecision === 'changes_requested') return 'changes requested';
  if (v.reviewDecision === 'approved') return v.unresolved ? `approved · ${v.unresolved} unresolved` : 'approved';
  return v.unresolved ? `${v.unresolved} unresolved` : '';
}

/** Who reviewed and how, a line each, for the review's tooltip. */
export function reviewersTitle(v: Pick<PullRequestView, 'reviews'>): string {
  const words: Record<string, string> = { approved: 'approved', changes_requested: 'asked for changes', commented: 'commented', dismissed: 'was dismissed' };
  return v.reviews.map((r) => `${r.author} ${words[r.state] ?? r.state}`).join('\n');
}

/** Whether "Address review" has something to do: unresolved threads, or changes requested. */
export function hasReviewToAddress(v: PullRequestView): boolean {
  return v.unresolved > 0 || v.reviewDecision === 'changes_requested';
}

/** "Using GITHUB_TOKEN for github.com", or why nothing can be used. */
export function forgeWords(f: ForgeInfo): string {
  if (!f.ready) return f.missing || `Pull requests cannot be opened on ${f.host || 'this remote'}.`;
  const source = f.source === 'file' ? `the token in ${f.sourceDetail || 'the token file'}`
    : f.source === 'gh' ? `gh's token (${f.sourceDetail || 'gh auth token'})`
    : f.source || 'a token';
  return `Using ${source} for ${f.host || 'the forge'}.`;
}

/** "lint, test", or "lint, test +3" past max. */
function names(list: string[], max: number): string {
  if (list.length <= max) return list.join(', ');
  return `${list.slice(0, max).join(', ')} +${list.length - max}`;
}
