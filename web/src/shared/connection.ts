// The banner that says the connection is not up (with the next attempt's
// countdown and, once the client gave up, Retry): agentmux's page and the
// hub's show the same one (banners.ts, hub/main.ts).

import type { ConnectionState } from './ws';

export interface ConnectionBannerElements {
  banner: HTMLElement;
  text: HTMLElement;
  retry: HTMLButtonElement;
}

export class ConnectionBanner {
  private ticker: number | undefined;

  /** server names what the page connects to, as the text says it: "agentmux", "the hub". */
  constructor(private readonly els: ConnectionBannerElements, private readonly server: string, onRetry: () => void) {
    els.retry.addEventListener('click', onRetry);
  }

  show(state: ConnectionState, nextAttemptAt: number | null): void {
    const { banner, text, retry } = this.els;
    window.clearInterval(this.ticker);
    this.ticker = undefined;
    banner.dataset.state = state;
    banner.hidden = state === 'connected' || state === 'closed';
    retry.hidden = state !== 'failed';
    const update = () => {
      switch (state) {
        case 'connecting':
          text.textContent = `Connecting to ${this.server}…`;
          break;
        case 'reconnecting': {
          const left = nextAttemptAt === null ? 0 : Math.ceil((nextAttemptAt - Date.now()) / 1000);
          text.textContent =
            left > 0 ? `Connection lost. Reconnecting in ${left} s…` : 'Connection lost. Reconnecting now…';
          break;
        }
        case 'failed':
          text.textContent = `Cannot reach ${this.server}: gave up after 5 minutes of attempts.`;
          break;
        default:
          text.textContent = '';
      }
    };
    update();
    if (state === 'reconnecting' && nextAttemptAt !== null) {
      this.ticker = window.setInterval(update, 250);
    }
  }
}
