// The status bar: connection, heartbeat round trip, memory gauge (polled
// from GET /api/resources every 10 s) and the server's version.

import { api } from '../shared/api';
import { byId, formatBytes, whenIdle } from '../shared/dom';
import type { MemoryLevel, ResourcesResponse } from '../shared/types';
import type { ConnectionState } from '../shared/ws';

const POLL_MS = 10_000;
/**
 * The first reading waits for a page that just loaded to settle: on a
 * reload it competed with the first screen for both ends' CPU (the server
 * reads every process for it). A memory warning comes over the socket.
 */
const FIRST_POLL_MS = 500;

const STATE_LABEL: Record<ConnectionState, string> = {
  connecting: 'connecting',
  connected: 'connected',
  reconnecting: 'reconnecting',
  failed: 'offline',
  closed: 'closed',
};

export class StatusBar {
  private readonly conn = byId('conn-state');
  private readonly rtt = byId('rtt');
  private readonly gauge = byId('memory-gauge');
  private readonly gaugeFill = byId('memory-fill');
  private readonly gaugeValue = byId('memory-value');
  private readonly version = byId('version');
  private readonly sessions = byId('session-count');

  constructor(private readonly onResources: (r: ResourcesResponse) => void) {}

  startPolling(): void {
    const poll = async () => {
      try {
        const r = await api.resources();
        this.memory(r.percent, r.level, r);
        this.onResources(r);
      } catch {
        // offline or shutting down: the connection banner says so
      }
    };
    void whenIdle(FIRST_POLL_MS).then(poll);
    window.setInterval(() => void poll(), POLL_MS);
  }

  connection(state: ConnectionState): void {
    this.conn.dataset.state = state;
    this.conn.textContent = STATE_LABEL[state];
  }

  roundTrip(ms: number | null): void {
    if (ms === null) {
      this.rtt.textContent = '–';
      this.rtt.removeAttribute('data-ms');
      return;
    }
    this.rtt.textContent = `${ms} ms`;
    this.rtt.dataset.ms = String(ms);
  }

  memory(percent: number, level: MemoryLevel, r?: ResourcesResponse): void {
    const pct = Math.max(0, Math.min(100, percent));
    this.gauge.dataset.percent = String(Math.round(pct * 10) / 10);
    this.gauge.dataset.level = level;
    this.gauge.setAttribute('aria-valuenow', String(Math.round(pct)));
    this.gaugeFill.style.width = `${pct}%`;
    this.gaugeValue.textContent = `${Math.round(pct)}%`;
    if (r) {
      const agents = r.sessions.reduce((sum, s) => sum + s.rssBytes, 0);
      this.gauge.title =
        `Memory ${formatBytes(r.usedBytes)} of ${formatBytes(r.limitBytes)} (${pct.toFixed(1)}%, ${r.source})` +
        `\nAgents: ${formatBytes(agents)} in ${r.sessions.length} running session${r.sessions.length === 1 ? '' : 's'}`;
    }
  }

  setVersion(v: string | undefined): void {
    this.version.textContent = v ? `agentmux ${v}` : 'agentmux';
  }

  sessionCount(running: number, limit: number): void {
    this.sessions.textContent = `${running}/${limit} running`;
    this.sessions.title = `${running} of at most ${limit} sessions running`;
  }
}
