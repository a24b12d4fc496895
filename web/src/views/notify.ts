// Sessions that wait for the user: the count in document.title and on the
// favicon, and a browser notification when the page is hidden or another
// tab is shown, told apart as "waiting for you" (needs input, asks to use
// a tool) and "finished" (the agent's run ended), each with a tag of its
// own per session. Notifications go through the service worker (pwa.ts,
// sw.js), so that a permission request's Allow and Deny and every Open
// work with no page focused; where there is none, plain notifications.
// Several open pages make one notification per event: they share the tag,
// and a page does not show again what another page shows already.
// Permission is asked only from the bell button (a user gesture).

import { describePermission, permissionKeys } from '../models/answers';
import { byId } from '../shared/dom';
import { FaviconBadge, notificationHelp, openSessionsFromNotifications, serviceWorker, type RichNotificationOptions } from './pwa';
import { isRunning, type SessionEntry, type SessionStore } from '../models/store';
import { toast } from '../shared/toast';
import type { Permission, SessionCheck } from '../shared/types';
import { checkFailed, checkSummary, checkWords } from '../shared/checks';

const BASE_TITLE = 'agentmux';
const favicon = new FaviconBadge();

/** The count of sessions waiting for the user, in the title ("(2) agentmux") and on the favicon. */
export function updateTitle(store: SessionStore): void {
  const n = store.needsInputCount();
  const title = n > 0 ? `(${n}) ${BASE_TITLE}` : BASE_TITLE;
  if (document.title !== title) document.title = title;
  favicon.set(n);
}

/** What a page showed about a session's waiting period: withdrawn once it is answered. */
interface Shown {
  tag: string;
  title: string;
  body: string;
  /** What it was shown with, to show it again with more to say. */
  options: RichNotificationOptions & { tag: string; body: string };
}

export class Notifier {
  private readonly bell = byId<HTMLButtonElement>('bell');
  private readonly supported = typeof Notification !== 'undefined';
  /**
   * Sessions already notified about in their current waiting period: the
   * server says session.status waiting and session.needsInput for one
   * period, and the user hears of it once.
   */
  private readonly notified = new Set<string>();
  private readonly shown = new Map<string, Shown>();
  /** Whether each session's agent ran when last seen: its end is "finished". */
  private readonly running = new Map<string, boolean>();
  /**
   * The notification work in flight, one step after another: a run that
   * ends withdraws its question and shows "finished" in the same moment,
   * and Chromium, given both at once, lost the one shown now and then.
   */
  private ops: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: SessionStore,
    private readonly select: (id: string) => void,
  ) {
    store.subscribe(() => {
      for (const id of this.notified) {
        if (!store.get(id)?.needsInput) {
          this.notified.delete(id);
          this.serial(() => this.withdraw(id));
        }
      }
      this.noteEnded();
    });
    this.bell.addEventListener('click', () => {
      const help = notificationHelp();
      if (help) toast(help, 'warning');
      if (!this.supported) return;
      if (Notification.permission === 'default') {
        void Notification.requestPermission().then(() => this.renderBell());
      } else {
        this.renderBell();
      }
    });
    this.renderBell();
    // Early, so that the first notification finds it ready.
    void serviceWorker();
    openSessionsFromNotifications((id) => store.has(id), select, (fn) => store.subscribe(fn));
  }

  private renderBell(): void {
    const p = this.supported ? Notification.permission : 'unsupported';
    const help = notificationHelp();
    this.bell.dataset.permission = p;
    this.bell.title =
      (p === 'granted' ? 'Notifications on: you are told when a session needs input or finishes'
      : p === 'denied' ? 'Notifications are blocked in this browser’s site settings'
      : p === 'unsupported' ? 'This browser has no notifications'
      : 'Notify me when a session needs input or finishes') + (help ? `\n${help}` : '');
    this.bell.setAttribute('aria-pressed', String(p === 'granted'));
  }

  /** Reports whether the user should hear of this session now: not while this page shows it. */
  private wanted(id: string): boolean {
    if (!this.supported || Notification.permission !== 'granted') return false;
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
    this.serial(() => this.show(id, title, {
      body,
      tag: `agentmux-${id}-waiting`,
      renotify: false,
      actions,
      data: { sessionId: id, name, permission, keys },
    }, true));
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
    this.serial(() => this.show(id, e.session.status === 'error' ? `${name} failed` : `${name} finished`, {
      body: e.reason ? `The agent's run ended: ${e.reason}.` : 'The agent’s run ended.',
      tag: `agentmux-${id}-finished`,
      renotify: false,
      actions: [{ action: 'open', title: 'Open' }],
      data: { sessionId: id, name },
    }, false));
  }

  /**
   * Resolves once every show and withdrawal asked for so far is done. The
   * tests read the notifications only then: Chromium's getNotifications()
   * deletes from its database a notification written but not yet on
   * display when the read began, so a read during a show loses it for good.
   */
  async settled(): Promise<void> {
    let ops: Promise<void>;
    do {
      ops = this.ops;
      await ops;
    } while (ops !== this.ops);
  }

  /**
   * The check of a session's turn ended. A failure is added to the
   * notification of the wait that turn ended in, while it is up ("planner
   * needs input" with "check failed (exit 1): # fail 1" under it), shown
   * again under its tag so that it replaces it silently.
   */
  checked(id: string, c: SessionCheck): void {
    if (!checkFailed(c.status)) return;
    const line = [checkWords(c), checkSummary(c.output)].filter(Boolean).join(': ');
    // In turn: the wait's own notification may still be on its way.
    this.serial(async () => {
      const s = this.shown.get(id);
      if (s) await this.show(id, s.title, { ...s.options, body: `${s.options.body}\n${line}` }, true);
    });
  }

  /** Runs op once the notification work before it is done, whatever became of it. */
  private serial(op: () => Promise<void>): void {
    this.ops = this.ops.then(op).catch(() => undefined);
  }

  private async show(id: string, title: string, options: RichNotificationOptions & { tag: string; body: string }, waiting: boolean): Promise<void> {
    const reg = await serviceWorker();
    if (reg) {
      try {
        const same = await reg.getNotifications({ tag: options.tag });
        // Another page of this agentmux shows it already.
        if (!same.some((n) => n.title === title && n.body === options.body)) await reg.showNotification(title, options);
        if (waiting) this.shown.set(id, { tag: options.tag, title, body: options.body, options });
        return;
      } catch {
        // not allowed from the worker here: a plain notification
      }
    }
    try {
      const n = new Notification(title, { body: options.body, tag: options.tag });
      n.onclick = () => {
        window.focus();
        this.select(id);
        n.close();
      };
    } catch {
      // some platforms only allow notifications from a service worker
    }
  }

  /** The session no longer waits (answered here, elsewhere, or ended): its notification goes. */
  private async withdraw(id: string): Promise<void> {
    const s = this.shown.get(id);
    if (!s) return;
    this.shown.delete(id);
    const reg = await serviceWorker();
    if (!reg) return;
    try {
      // Only what was shown for that period: the next one may be up already.
      for (const n of await reg.getNotifications({ tag: s.tag })) if (n.title === s.title && n.body === s.body) n.close();
    } catch {
      // nothing to withdraw
    }
  }
}
