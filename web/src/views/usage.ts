// The account's usage windows in the status bar: "5h 81% · resets in
// 1h29m   7d 4%", from the newest report across the sessions (see
// models/usage.ts), amber from 75 % used and red from 90 %, the reset
// times in the tooltip. Hidden while no session's agent has reported a
// window. A countdown is redrawn when its minute changes, by a timer that
// runs only while one is shown.

import { byId, h } from '../shared/dom';
import type { SessionStore } from '../models/store';
import { nextChange, newestWindows, windowDetails, windowShown, type AccountWindow } from '../models/usage';

export class AccountWindows {
  private readonly el = byId('usage-windows');
  /** The element of each window shown, by its name. */
  private readonly shown = new Map<string, HTMLElement>();
  private timer: number | undefined;

  constructor(private readonly store: SessionStore) {
    store.subscribe(() => this.render());
    this.render();
  }

  private render(): void {
    window.clearTimeout(this.timer);
    this.timer = undefined;
    const windows = newestWindows(this.store.all().map((e) => e.session));
    this.el.hidden = windows.length === 0;
    for (const [name, el] of this.shown) {
      if (!windows.some((w) => w.name === name)) {
        el.remove();
        this.shown.delete(name);
      }
    }
    if (windows.length === 0) {
      this.el.removeAttribute('title');
      return;
    }
    const now = Date.now();
    let prev: Element | null = null;
    for (const w of windows) {
      const el = this.windowEl(w.name);
      const s = windowShown(w, now);
      el.dataset.level = s.level;
      el.dataset.used = String(w.usedPercent);
      el.toggleAttribute('data-reset', s.reset);
      setText(el.firstElementChild!, s.figure);
      const resets = el.lastElementChild as HTMLElement;
      setText(resets, s.resets ? ` · ${s.resets}` : '');
      resets.hidden = !s.resets;
      // In the order models/usage.ts gives: the 5-hour window first.
      const want: Element | null = prev ? prev.nextElementSibling : this.el.firstElementChild;
      if (want !== el) this.el.insertBefore(el, want);
      prev = el;
    }
    this.el.title = this.describe(windows, now);
    const wait = nextChange(windows, now);
    if (wait !== null) this.timer = window.setTimeout(() => this.render(), wait);
  }

  private windowEl(name: string): HTMLElement {
    let el = this.shown.get(name);
    if (!el) {
      el = h('span', { class: 'usage-window', 'data-testid': 'usage-window', 'data-name': name },
        h('span', { class: 'usage-window-figure' }),
        h('span', { class: 'usage-window-resets' }));
      this.shown.set(name, el);
    }
    return el;
  }

  /** The tooltip: each window with its reset time, and whose agent said so when. */
  private describe(windows: AccountWindow[], now: number): string {
    const lines = windows.map((w) => windowDetails(w, now));
    const from = new Map<string, string>();
    for (const w of windows) {
      const name = this.store.get(w.sessionId)?.session.name ?? w.sessionId;
      from.set(w.sessionId, `${name}'s agent at ${new Date(w.updatedAt).toLocaleTimeString()}`);
    }
    lines.push(`The account's usage as reported by ${[...from.values()].join(' and ')}.`);
    return lines.join('\n');
  }
}

function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text; // no work for the page when nothing changed
}
