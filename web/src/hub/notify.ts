// The hub's notifications: a session of any workspace that starts waiting
// for someone, while this page is not in front of the user, is told once,
// with agentmux's own notifications (shared/notifications.ts): through the
// service worker, Allow, Deny and Open on a permission whose dialog
// agentmux knows, Open on the rest. The worker (public/sw.js) sees
// data.hub and answers through the hub (POST api/inbox/answer), and Open
// opens the session in its workspace's own page. A wait that ends takes
// its notification with it.

import { byId } from '../shared/dom';
import { NotificationBell, NotificationShower, notificationsAllowed } from '../shared/notifications';
import { WaitTracker, sessionKey, waitOf } from './inbox';
import type { InboxSession } from './types';

/** What the service worker finds in a hub notification's data. */
export interface HubNotificationData {
  hub: true;
  workspace: string;
  workspaceName: string;
  sessionId: string;
  name: string;
  permission?: InboxSession['permission'];
  /** The session in its workspace's own page. */
  openUrl: string;
  /** Who answers, as the page knew it when it showed the notification. */
  by?: string;
}

export class HubNotifier {
  private readonly tracker = new WaitTracker();
  private readonly shower = new NotificationShower(() => window.focus());

  /** by: the name the user chose, which answers from a notification carry. */
  constructor(private readonly by: () => string | undefined) {
    new NotificationBell(byId<HTMLButtonElement>('bell'), {
      granted: 'Notifications on: you are told when a session of any workspace needs input',
      prompt: 'Notify me when a session of any workspace needs input',
    });
  }

  /** The inbox changed: tell the waits that began, withdraw those that ended. */
  update(sessions: readonly InboxSession[]): void {
    const { started, ended } = this.tracker.update(sessions);
    for (const key of ended) this.shower.withdraw(key);
    if (!this.wanted()) return;
    for (const s of started) this.show(s);
  }

  /** Resolves once every show and withdrawal asked for so far is done (for the tests). */
  settled(): Promise<void> {
    return this.shower.settled();
  }

  /** Reports whether the user should hear of a wait now: not while this page is in front of them, where the list shows it. */
  private wanted(): boolean {
    return notificationsAllowed() && (document.hidden || !document.hasFocus());
  }

  private show(s: InboxSession): void {
    const wait = waitOf(s);
    if (!wait) return;
    const who = `${s.name} (${s.workspaceName})`;
    const p = s.permission;
    const title = p ? `${who} asks to use ${p.tool}` : `${who} needs input`;
    const body = p ? (p.summary || wait.text) : wait.text;
    const actions = wait.canAllow
      ? [{ action: 'allow', title: 'Allow' }, { action: 'deny', title: 'Deny' }, { action: 'open', title: 'Open' }]
      : [{ action: 'open', title: 'Open' }];
    const data: HubNotificationData = {
      hub: true,
      workspace: s.workspace,
      workspaceName: s.workspaceName,
      sessionId: s.id,
      name: s.name,
      openUrl: s.openUrl,
    };
    if (wait.canAllow && p) data.permission = p;
    const by = this.by();
    if (by) data.by = by;
    this.shower.show(sessionKey(s), title, {
      body,
      // The workspace's URL in it: two workspaces may have sessions of the same id.
      tag: `agentmux-hub-${s.workspace}-${s.id}-waiting`,
      renotify: false,
      actions,
      data,
    }, true);
  }
}
