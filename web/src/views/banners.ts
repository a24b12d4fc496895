// The banners under the tab bar: memory pressure, saving that fails,
// server shutdown, and the connection when it is not up (with the next
// attempt's countdown).

import { ConnectionBanner } from '../shared/connection';
import { byId } from '../shared/dom';
import type { MemoryLevel, SaveStatusMessage } from '../shared/types';
import type { ConnectionState } from '../shared/ws';

export class Banners {
  private readonly resourceEl = byId('banner-resource');
  private readonly resourceText = byId('banner-resource-text');
  private readonly saveEl = byId('banner-save');
  private readonly saveText = byId('banner-save-text');
  private readonly saveSince = byId('banner-save-since');
  private readonly saveWhere = byId('banner-save-where');
  private readonly saveAdvice = byId('banner-save-advice');
  private readonly shutdownEl = byId('banner-shutdown');
  private readonly shutdownText = byId('banner-shutdown-text');
  private readonly conn: ConnectionBanner;

  constructor(onRetry: () => void) {
    this.conn = new ConnectionBanner(
      { banner: byId('banner-connection'), text: byId('banner-connection-text'), retry: byId<HTMLButtonElement>('retry') },
      'agentmux',
      onRetry,
    );
  }

  resource(level: MemoryLevel, percent: number, message?: string): void {
    if (level === 'ok') {
      this.resourceEl.hidden = true;
      this.resourceEl.dataset.level = 'ok';
      return;
    }
    const pct = `${percent.toFixed(1)}%`;
    this.resourceEl.dataset.level = level;
    this.resourceText.textContent =
      message && message.includes('%')
        ? message
        : level === 'critical'
          ? `Memory critical: ${pct}. New sessions are blocked until memory is freed.`
          : `High memory usage: ${pct}. Consider closing idle sessions.`;
    this.resourceEl.hidden = false;
  }

  /**
   * save.status: while saving fails, what failed, since when, where and
   * what to do; hidden once it works again (or with null, on a new
   * connection, to which the server says it again if it still fails).
   */
  save(m: SaveStatusMessage | null): void {
    if (!m || !m.failing) {
      this.saveEl.hidden = true;
      return;
    }
    this.saveText.textContent = m.message;
    const since = new Date(m.since);
    this.saveSince.textContent = `Since ${sinceLabel(since, new Date())}.`;
    this.saveSince.title = since.toISOString();
    // The error names the database again at each layer it went through;
    // its last part is the system's reason. The whole is in the tooltip.
    const reason = m.error ? m.error.slice(m.error.lastIndexOf(': ') + 1).trim() : '';
    this.saveWhere.textContent = `Database ${m.database}${reason ? `: ${reason}` : ''}`;
    this.saveWhere.title = m.error ?? '';
    this.saveAdvice.textContent = m.advice ?? '';
    this.saveEl.hidden = false;
  }

  shutdown(message: string | null): void {
    this.shutdownEl.hidden = message === null;
    if (message !== null) {
      this.shutdownText.textContent = `${message} Actions are disabled until the server is back.`;
    }
  }

  connection(state: ConnectionState, nextAttemptAt: number | null): void {
    this.conn.show(state, nextAttemptAt);
  }
}

/** A moment as a person reads it: its time today, else its date and time. */
export function sinceLabel(at: Date, now: Date): string {
  const time = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (at.toDateString() === now.toDateString()) return time;
  return `${at.toLocaleDateString([], { month: 'short', day: 'numeric' })}, ${time}`;
}
