// What both pages (agentmux's and the hub's) tell the user about sessions
// that wait for them, in one implementation: the count in document.title
// and on the favicon (WaitingCount), the bell that asks for permission to
// notify (NotificationBell), and the notifications themselves
// (NotificationShower), shown through the service worker (pwa.ts, sw.js)
// so that their Allow, Deny and Open work with no page focused, else as
// plain notifications. Several open pages make one notification per
// event: they share its tag, and a page does not show again what another
// page shows already. What to say, and when, is each page's (views/notify.ts,
// hub/notify.ts).

import { toast } from './toast';
import { FaviconBadge, notificationHelp, serviceWorker, type RichNotificationOptions } from './pwa';

/** The count of sessions waiting for the user, in the title ("(2) agentmux") and on the favicon. */
export class WaitingCount {
  private readonly favicon = new FaviconBadge();

  /** base is the page's title without a count. */
  constructor(private readonly base: string) {}

  set(n: number): void {
    const title = n > 0 ? `(${n}) ${this.base}` : this.base;
    if (document.title !== title) document.title = title;
    this.favicon.set(n);
  }
}

/** Reports whether this browser may show notifications now (it has them, and the user allowed them). */
export function notificationsAllowed(): boolean {
  return typeof Notification !== 'undefined' && Notification.permission === 'granted';
}

/** What the bell's tooltip says, by the permission's state. */
export interface BellWords {
  granted: string;
  prompt: string;
}

/**
 * The bell button: asks for permission to notify (only from its click, a
 * user gesture) and shows whether notifications are on. Where there can
 * be no service worker it says what to do instead, in its tooltip and in
 * a toast when clicked.
 */
export class NotificationBell {
  private readonly supported = typeof Notification !== 'undefined';

  constructor(private readonly el: HTMLButtonElement, private readonly words: BellWords) {
    el.addEventListener('click', () => {
      const help = notificationHelp();
      if (help) toast(help, 'warning');
      if (!this.supported) return;
      if (Notification.permission === 'default') {
        void Notification.requestPermission().then(() => this.render());
      } else {
        this.render();
      }
    });
    this.render();
    // Early, so that the first notification finds it ready.
    void serviceWorker();
  }

  private render(): void {
    const p = this.supported ? Notification.permission : 'unsupported';
    const help = notificationHelp();
    this.el.dataset.permission = p;
    this.el.title =
      (p === 'granted' ? this.words.granted
      : p === 'denied' ? 'Notifications are blocked in this browser’s site settings'
      : p === 'unsupported' ? 'This browser has no notifications'
      : this.words.prompt) + (help ? `\n${help}` : '');
    this.el.setAttribute('aria-pressed', String(p === 'granted'));
  }
}

/** A notification's options as the shower takes them: a tag and a body always. */
export type NoticeOptions = RichNotificationOptions & { tag: string; body: string };

/** What a page showed under a key (a session's waiting period): withdrawn once it is answered. */
interface Shown {
  title: string;
  /** What it was shown with, to show it again with more to say. */
  options: NoticeOptions;
}

/**
 * Shows and withdraws notifications, one step after another: a run that
 * ends withdraws its question and shows "finished" in the same moment,
 * and Chromium, given both at once, lost the one shown now and then.
 * Each notification is shown under a key of the page's choosing (a
 * session's id, say); one kept (remember) can be withdrawn or amended by
 * that key.
 */
export class NotificationShower {
  private readonly shown = new Map<string, Shown>();
  private ops: Promise<void> = Promise.resolve();

  /** onPlainClick: a click on a plain notification (no service worker), with its key. */
  constructor(private readonly onPlainClick: (key: string) => void) {}

  /** Shows a notification, unless another page of the app shows the same already. */
  show(key: string, title: string, options: NoticeOptions, remember: boolean): void {
    this.serial(() => this.display(key, title, options, remember));
  }

  /**
   * Adds a line to what is shown under key, while it is up ("planner
   * needs input" with "check failed (exit 1)" under it), shown again under
   * its tag so that it replaces it silently.
   */
  amend(key: string, line: string): void {
    // In turn: the notification may still be on its way.
    this.serial(async () => {
      const s = this.shown.get(key);
      if (s) await this.display(key, s.title, { ...s.options, body: `${s.options.body}\n${line}` }, true);
    });
  }

  /** What was shown under key goes (answered here, elsewhere, or ended). */
  withdraw(key: string): void {
    this.serial(() => this.remove(key));
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

  /** Runs op once the notification work before it is done, whatever became of it. */
  private serial(op: () => Promise<void>): void {
    this.ops = this.ops.then(op).catch(() => undefined);
  }

  private async display(key: string, title: string, options: NoticeOptions, remember: boolean): Promise<void> {
    const reg = await serviceWorker();
    if (reg) {
      try {
        const same = await reg.getNotifications({ tag: options.tag });
        // Another page of this app shows it already.
        if (!same.some((n) => n.title === title && n.body === options.body)) await reg.showNotification(title, options);
        if (remember) this.shown.set(key, { title, options });
        return;
      } catch {
        // not allowed from the worker here: a plain notification
      }
    }
    try {
      const n = new Notification(title, { body: options.body, tag: options.tag });
      n.onclick = () => {
        window.focus();
        this.onPlainClick(key);
        n.close();
      };
    } catch {
      // some platforms only allow notifications from a service worker
    }
  }

  private async remove(key: string): Promise<void> {
    const s = this.shown.get(key);
    if (!s) return;
    this.shown.delete(key);
    const reg = await serviceWorker();
    if (!reg) return;
    try {
      // Only what was shown for that period: the next one may be up already.
      for (const n of await reg.getNotifications({ tag: s.options.tag })) if (n.title === s.title && n.body === s.options.body) n.close();
    } catch {
      // nothing to withdraw
    }
  }
}
