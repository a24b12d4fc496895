// The banners under the tab bar: memory pressure, saving that fails,
// server shutdown, and the connection when it is not up (with the next
// attempt's countdown).

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
  private readonly connEl = byId('banner-connection');
  private readonly connText = byId('banner-connection-text');
  private readonly retryBtn = byId<HTMLButtonElement>('retry');
  private ticker: number | undefined;

  constructor(onRetry: () => void) {
    this.retryBtn.addEventListener('click', onRetry);
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
    window.clearInterval(this.ticker);
    this.ticker = undefined;
    this.connEl.dataset.state = state;
    this.connEl.hidden = state === 'connected';
    this.retryBtn.hidden = state !== 'failed';
    const update = () => {
      switch (state) {
        case 'connecting':
          this.connText.textContent = 'Connecting to agentmux…';
          break;
        case 'reconnecting': {
          const left = nextAttemptAt === null ? 0 : Math.ceil((nextAttemptAt - Date.now()) / 1000);
          this.connText.textContent =
            left > 0 ? `Connection lost. Reconnecting in ${left} s…` : 'Connection lost. Reconnecting now…';
          break;
        }
        case 'failed':
          this.connText.textContent = 'Cannot reach agentmux: gave up after 5 minutes of attempts.';
          break;
        default:
          this.connText.textContent = '';
      }
    };
    update();
    if (state === 'reconnecting' && nextAttemptAt !== null) {
      this.ticker = window.setInterval(update, 250);
    }
  }
}

/** A moment as a person reads it: its time today, else its date and time. */
export function sinceLabel(at: Date, now: Date): string {
  const time = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (at.toDateString() === now.toDateString()) return time;
  return `${at.toLocaleDateString([], { month: 'short', day: 'numeric' })}, ${time}`;
}
