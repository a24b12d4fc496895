// Sessions that wait for the user: the count in document.title, and a
// browser notification when the page is hidden or another tab is shown.
// Permission is asked only from the bell button (a user gesture).

import { byId } from './dom';
import type { SessionStore } from './store';
import type { Permission } from './types';

const BASE_TITLE = 'agentmux';

export function updateTitle(store: SessionStore): void {
  const n = store.needsInputCount();
  const title = n > 0 ? `(${n}) ${BASE_TITLE}` : BASE_TITLE;
  if (document.title !== title) document.title = title;
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

  constructor(
    private readonly store: SessionStore,
    private readonly select: (id: string) => void,
  ) {
    store.subscribe(() => {
      for (const id of this.notified) if (!store.get(id)?.needsInput) this.notified.delete(id);
    });
    this.bell.addEventListener('click', () => {
      if (!this.supported) return;
      if (Notification.permission === 'default') {
        void Notification.requestPermission().then(() => this.renderBell());
      } else {
        this.renderBell();
      }
    });
    this.renderBell();
  }

  private renderBell(): void {
    const p = this.supported ? Notification.permission : 'unsupported';
    this.bell.dataset.permission = p;
    this.bell.title =
      p === 'granted' ? 'Notifications on: you are told when a session needs input'
      : p === 'denied' ? 'Notifications are blocked in this browser’s site settings'
      : p === 'unsupported' ? 'This browser has no notifications'
      : 'Notify me when a session needs input';
    this.bell.setAttribute('aria-pressed', String(p === 'granted'));
  }

  /**
   * A session started waiting for the user (at most one notification until
   * it stops). A permission request names the tool in the title and what
   * it acts on in the body.
   */
  needsInput(id: string, message?: string, permission?: Permission): void {
    const entry = this.store.get(id);
    if (!entry || this.notified.has(id)) return;
    this.notified.add(id);
    if (!this.supported || Notification.permission !== 'granted') return;
    if (!document.hidden && this.store.activeId === id) return;
    try {
      const title = permission ? `${entry.session.name} asks to use ${permission.tool}` : `${entry.session.name} needs input`;
      const n = new Notification(title, {
        body: permission?.summary || message || 'The agent is waiting for you.',
        tag: `agentmux-${id}`,
      });
      n.onclick = () => {
        window.focus();
        this.select(id);
        n.close();
      };
    } catch {
      // some platforms only allow notifications from a service worker
    }
  }
}
