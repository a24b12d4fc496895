// The banners under the tab bar: memory pressure, server shutdown, and the
// connection when it is not up (with the next attempt's countdown).

import { byId } from '../shared/dom';
import type { MemoryLevel } from '../shared/types';
import type { ConnectionState } from '../shared/ws';

export class Banners {
  private readonly resourceEl = byId('banner-resource');
  private readonly resourceText = byId('banner-resource-text');
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
