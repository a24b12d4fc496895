// The installed-app side of both pages (agentmux's and the hub's): the
// service worker (public/sw.js), through which notifications are shown so
// that their Allow, Deny and Open buttons work with no page focused; the
// count of waiting sessions drawn on the favicon; and opening the session
// a notification named.
// Service workers exist only on https and on localhost: elsewhere the page
// says what to do (notificationHelp) and falls back to plain
// notifications, which carry no buttons.

/** Notification options with the fields TypeScript's DOM types leave out. */
export interface RichNotificationOptions extends NotificationOptions {
  actions?: { action: string; title: string }[];
  renotify?: boolean;
}

/** Reports whether this page can have a service worker: a secure context (https, localhost) that supports them. */
export function serviceWorkerAvailable(): boolean {
  return window.isSecureContext && 'serviceWorker' in navigator;
}

/** What the user can do when this page cannot have notifications with buttons. */
export function notificationHelp(): string | null {
  if (serviceWorkerAvailable()) return null;
  if (!window.isSecureContext) {
    return `Notifications with Allow and Deny need https or localhost, and this page is at ${location.origin}: ` +
      'open agentmux at http://localhost (through an SSH tunnel, ssh -L 8080:localhost:8080) or behind https.';
  }
  return 'This browser has no service workers: notifications come without Allow and Deny.';
}

let registration: Promise<ServiceWorkerRegistration | null> | undefined;

/** The service worker's registration, registering it the first time; null where there is none. */
export function serviceWorker(): Promise<ServiceWorkerRegistration | null> {
  registration ??= (async () => {
    if (!serviceWorkerAvailable()) return null;
    try {
      // Relative, as every URL of the page: under a proxy's path the
      // worker's scope is that path.
      await navigator.serviceWorker.register('./sw.js', { scope: './' });
      return await navigator.serviceWorker.ready;
    } catch {
      // Blocked by the browser's settings, or the server was away for a
      // moment: plain notifications now, and the next one tries again.
      registration = undefined;
      return null;
    }
  })();
  return registration;
}

/**
 * Opens a session when asked: by the service worker (a notification's
 * Open, with this page open) or by the URL it opened (?session=<id>, with
 * none open) once the session is known.
 */
export function openSessionsFromNotifications(has: (id: string) => boolean, select: (id: string, view?: string) => void, onChange: (fn: () => void) => void): void {
  if (serviceWorkerAvailable()) {
    navigator.serviceWorker.addEventListener('message', (ev: MessageEvent) => {
      const m = ev.data as { type?: string; sessionId?: string; view?: string } | null;
      if (m?.type === 'agentmux.open' && m.sessionId && has(m.sessionId)) select(m.sessionId, m.view);
    });
  }
  const url = new URL(location.href);
  let wanted = url.searchParams.get('session');
  if (!wanted) return;
  // A view to show it in (changes, for a review draft), when the worker said one.
  const view = url.searchParams.get('view') ?? undefined;
  url.searchParams.delete('session');
  url.searchParams.delete('view');
  history.replaceState(history.state, '', url.href);
  onChange(() => {
    if (wanted && has(wanted)) {
      const id = wanted;
      wanted = null;
      select(id, view);
    }
  });
}

/** Badge geometry on a 64-pixel icon: a disc over the top right corner. */
const ICON = 64;
const BADGE_R = 19;

/**
 * The favicon with the number of waiting sessions on it. The link keeps
 * the count in data-count (0 when none) for the tests; the badge is a
 * PNG data URL, which the page's CSP allows for images.
 */
export class FaviconBadge {
  private readonly link = document.querySelector<HTMLLinkElement>('link[rel="icon"]');
  private readonly original = this.link?.href ?? '';
  private image: Promise<HTMLImageElement | null> | undefined;
  private count = 0;

  /** Shows n on the favicon (nothing for 0). */
  set(n: number): void {
    if (!this.link || n === this.count) return;
    this.count = n;
    this.link.dataset.count = String(n);
    if (n === 0) {
      this.link.type = 'image/svg+xml';
      this.link.href = this.original;
      return;
    }
    void this.draw(n);
  }

  private async draw(n: number): Promise<void> {
    this.image ??= new Promise((resolve) => {
      const img = new Image();
      img.onload = () => resolve(img);
      img.onerror = () => resolve(null);
      img.src = this.original;
    });
    const img = await this.image;
    if (n !== this.count || !this.link) return; // changed meanwhile
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = ICON;
    const ctx = canvas.getContext('2d');
    if (!ctx) return;
    if (img) ctx.drawImage(img, 0, 0, ICON, ICON);
    const cx = ICON - BADGE_R;
    const cy = BADGE_R;
    ctx.beginPath();
    ctx.arc(cx, cy, BADGE_R, 0, Math.PI * 2);
    ctx.fillStyle = '#f2706a';
    ctx.fill();
    ctx.lineWidth = 3;
    ctx.strokeStyle = '#0b0e13';
    ctx.stroke();
    ctx.fillStyle = '#ffffff';
    ctx.font = `bold ${n > 9 ? 22 : 28}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(n > 9 ? '9+' : String(n), cx, cy + 1);
    this.link.type = 'image/png';
    this.link.href = canvas.toDataURL('image/png');
  }
}
