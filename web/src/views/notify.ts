// Sessions that wait for the user: the count in document.title and on the
// favicon, and a browser notification when the page is hidden or another
// tab is shown, told apart as "waiting for you" (needs input, asks to use
// a tool) and "finished" (the agent's run ended), each with a tag of its
// own per session. How they are shown, and the bell that asks for them,
// are the shared notifications' (shared/notifications.ts, which the hub's
// page uses too); this says what to tell and when.

import { describePermission, permissionKeys } from '../models/answers';
import { byId } from '../shared/dom';
import { openSessionsFromNotifications } from '../shared/pwa';
import { NotificationBell, NotificationShower, WaitingCount, notificationsAllowed } from '../shared/notifications';
import { isRunning, type SessionEntry, type SessionStore } from '../models/store';
import type { Permission, SessionCheck } from '../shared/types';
import type { PullRequestTurn, PullRequestView } from '../models/pullrequests';
import { checkFailed, checkSummary, checkWords } from '../shared/checks';

const count = new WaitingCount('agentmux');

/** The count of sessions waiting for the user, in the title ("(2) agentmux") and on the favicon. */
export function updateTitle(store: SessionStore): void {
  count.set(store.needsInputCount());
}

/** What the notifier needs besides the store and the way to show a session. */
export interface NotifierOptions {
  /** The name this page goes by: who asks, when a notification's Fix checks asks the agent. */
  by?(): string | null;
  /** Shows a session's Changes view, where its review draft is (a notification's Address review, in the worker, then Open). */
  showChanges?(id: string): void;
}

export class Notifier {
  /**
   * Sessions already notified about in their current waiting period: the
   * server says session.status waiting and session.needsInput for one
   * period, and the user hears of it once.
   */
  private readonly notified = new Set<string>();
  /** Whether each session's agent ran when last seen: its end is "finished". */
  private readonly running = new Map<string, boolean>();
  /** The notifications, keyed by session id. */
  private readonly shower: NotificationShower;

  constructor(
    private readonly store: SessionStore,
    select: (id: string) => void,
    private readonly opts: NotifierOptions = {},
  ) {
    this.shower = new NotificationShower(select);
    store.subscribe(() => {
      for (const id of this.notified) {
        if (!store.get(id)?.needsInput) {
          this.notified.delete(id);
          this.shower.withdraw(id);
        }
      }
      this.noteEnded();
    });
    new NotificationBell(byId<HTMLButtonElement>('bell'), {
      granted: 'Notifications on: you are told when a session needs input or finishes',
      prompt: 'Notify me when a session needs input or finishes',
    });
    openSessionsFromNotifications((id) => store.has(id), (id, view) => {
      if (view === 'changes' && opts.showChanges) opts.showChanges(id);
      else select(id);
    }, (fn) => store.subscribe(fn));
  }

  /** Reports whether the user should hear of this session now: not while this page shows it. */
  private wanted(id: string): boolean {
    if (!notificationsAllowed()) return false;
    return document.hidden || this.store.activeId !== id;
  }

  /**
   * A session started waiting for the user (at most one notification until
   * it stops). A permission request names the tool in the title and what
   * it acts on in the body, with Allow and Deny when the agent's dialog is
   * known (answers.ts).
   */
  needsInput(id: string, message?: string, permission?: Permission): void {
    const entry = this.store.get(id);
    if (!entry || this.notified.has(id)) return;
    this.notified.add(id);
    if (!this.wanted(id)) return;
    const { name, agent } = entry.session;
    const keys = permission ? permissionKeys(agent) : null;
    const title = permission ? `${name} asks to use ${permission.tool}` : `${name} needs input`;
    const body = permission ? (permission.summary || describePermission(agent, permission)) : (message || 'The agent is waiting for you.');
    const actions = keys
      ? [{ action: 'allow', title: 'Allow' }, { action: 'deny', title: 'Deny' }, { action: 'open', title: 'Open' }]
      : [{ action: 'open', title: 'Open' }];
    this.shower.show(id, title, {
      body,
      tag: `agentmux-${id}-waiting`,
      renotify: false,
      actions,
      data: { sessionId: id, name, permission, keys },
    }, true);
  }

  /** Sessions whose agent stopped running since last seen: "finished", unless someone stopped it on purpose. */
  private noteEnded(): void {
    for (const e of this.store.all()) {
      const id = e.session.id;
      const now = isRunning(e.session);
      const before = this.running.get(id);
      this.running.set(id, now);
      if (before && !now && e.reason !== 'stopped') this.finished(e);
    }
    for (const id of this.running.keys()) if (!this.store.has(id)) this.running.delete(id);
  }

  private finished(e: SessionEntry): void {
    const id = e.session.id;
    if (!this.wanted(id)) return;
    const name = e.session.name;
    this.shower.show(id, e.session.status === 'error' ? `${name} failed` : `${name} finished`, {
      body: e.reason ? `The agent's run ended: ${e.reason}.` : 'The agent’s run ended.',
      tag: `agentmux-${id}-finished`,
      renotify: false,
      actions: [{ action: 'open', title: 'Open' }],
      data: { sessionId: id, name },
    }, false);
  }

  /**
   * A session's pull request turned for the worse (models/pullrequests.ts,
   * turnsBetween): its checks to failing, naming them, with Fix checks; its
   * review to changes requested, with Address review. The service worker
   * (sw.js) makes those buttons the POSTs the ship bar's are.
   */
  pullRequest(id: string, view: PullRequestView, turn: PullRequestTurn): void {
    const entry = this.store.get(id);
    if (!entry || !this.wanted(id)) return;
    const name = entry.session.name;
    const data = { sessionId: id, name, pullRequest: view.number, by: this.opts.by?.() ?? '' };
    if (turn.kind === 'checks-failing') {
      const failing = turn.failing.length ? turn.failing.join(', ') : 'some checks';
      this.shower.show(`${id}:pr-checks`, `${name}: checks failing on #${view.number}`, {
        body: `${failing} failed${view.title ? ` on “${view.title}”` : ''}.`,
        tag: `agentmux-${id}-pr-checks`,
        renotify: false,
        actions: [{ action: 'fix-checks', title: 'Fix checks' }, { action: 'open', title: 'Open' }],
        data,
      }, false);
    } else {
      const threads = view.unresolved ? `${view.unresolved} unresolved comment${view.unresolved === 1 ? '' : 's'}` : 'A reviewer asks for changes';
      this.shower.show(`${id}:pr-review`, `${name}: changes requested on #${view.number}`, {
        body: `${threads}${view.title ? ` on “${view.title}”` : ''}.`,
        tag: `agentmux-${id}-pr-review`,
        renotify: false,
        actions: [{ action: 'address-review', title: 'Address review' }, { action: 'open', title: 'Open' }],
        data,
      }, false);
    }
  }

  /** Resolves once every show and withdrawal asked for so far is done (shared/notifications.ts says why the tests need it). */
  settled(): Promise<void> {
    return this.shower.settled();
  }

  /**
   * The check of a session's turn ended. A failure is added to the
   * notification of the wait that turn ended in, while it is up ("planner
   * needs input" with "check failed (exit 1): # fail 1" under it).
   */
  checked(id: string, c: SessionCheck): void {
    if (!checkFailed(c.status)) return;
    this.shower.amend(id, [checkWords(c), checkSummary(c.output)].filter(Boolean).join(': '));
  }
}
