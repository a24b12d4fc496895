// The activity feed: the last 100 file.changed events, ports a session's
// process opened and calls agents made to agentmux's tools, newest first
// (models/activity.ts), with their age kept current.
// Paths show relative to the workspace (see paths.ts); a click opens the
// file in the artifact pane, the port in the Preview view, or the session
// an agent's call was about.

import { agentIcon } from '../shared/avatars';
import { showAgo } from '../shared/ages';
import { byId, h } from '../shared/dom';
import { shownParts, type WorkspaceRoot } from '../shared/paths';
import type { AgentCallMessage, FileChangedMessage, FileEvent, RecentFile } from '../shared/types';
import { ANSWER_TOOL, ActivityLog, CONTINUE_TOOL, agentCallSession, isAgentCall, isPort, type ActivityItem, type AgentCallItem, type PortItem, type PortOpened } from '../models/activity';

export type { ActivityItem, PortOpened } from '../models/activity';

const RENDER_DELAY_MS = 40;

const EVENT_LABEL: Record<FileEvent, string> = { add: 'added', change: 'changed', unlink: 'deleted' };

export class ActivityFeed {
  private readonly log = new ActivityLog();
  private renderTimer: number | undefined;
  private readonly list = byId('activity');
  private readonly count = byId('activity-count');

  constructor(
    private readonly root: WorkspaceRoot,
    private readonly open: (rel: string) => void,
    private readonly openPort: (port: number) => void = () => {},
    /** Shows the session an agent's call was about; false when it is gone. */
    private readonly showSession: (id: string) => boolean = () => false,
  ) {
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=activity-item]');
      const rel = btn?.dataset.rel;
      if (rel) this.open(rel);
      else if (btn?.dataset.port) this.openPort(Number(btn.dataset.port));
      else if (btn?.dataset.showSession && !this.showSession(btn.dataset.showSession)) {
        // Deleted since: the line stays, as the call happened, but leads nowhere.
        btn.dataset.gone = 'true';
        btn.title = `${btn.title.split('\n')[0]}\nThat session was deleted since.`;
      }
    });
    root.onLearned(() => this.render());
    this.render();
  }

  /** Oldest first, for replaying into other views. */
  history(): ActivityItem[] {
    return this.log.history();
  }

  add(m: FileChangedMessage): void {
    this.log.add(m);
    this.renderSoon();
  }

  /** file.recent: the server's last file events, the lines a reload would otherwise lose. */
  restore(files: readonly RecentFile[]): void {
    if (this.log.merge(files)) this.renderSoon();
  }

  /** A port began listening. */
  addPort(p: PortOpened): void {
    this.log.addPort(p);
    this.renderSoon();
  }

  /** agent.call: an agent called one of agentmux's tools. */
  addAgentCall(m: AgentCallMessage): void {
    this.log.addAgentCall(m);
    this.renderSoon();
  }

  private renderSoon(): void {
    // Bursts (a build, a checkout) render once.
    if (this.renderTimer === undefined) {
      this.renderTimer = window.setTimeout(() => this.render(), RENDER_DELAY_MS);
    }
  }

  private render(): void {
    window.clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
    const items = this.log.items;
    this.count.textContent = items.length ? String(items.length) : '';
    if (items.length === 0) {
      this.list.replaceChildren(h('li', { class: 'muted empty-line', text: 'File changes in the workspace appear here.' }));
      return;
    }
    this.list.replaceChildren(
      ...items.map((it) => {
        if (isPort(it)) return portLine(it);
        if (isAgentCall(it)) return agentLine(it);
        const rel = this.root.relative(it.abs);
        const shown = rel ?? it.abs;
        const { dir, name } = shownParts(shown);
        return h('li', {},
          h('button', {
            type: 'button',
            class: 'activity-item',
            'data-testid': 'activity-item',
            'data-path': shown,
            'data-rel': rel,
            'data-event': it.event,
            title: `${shown} ${EVENT_LABEL[it.event]} at ${new Date(it.time).toLocaleTimeString()}`,
          },
          h('span', { class: `ev ev-${it.event}`, 'aria-label': EVENT_LABEL[it.event] }),
          h('span', { class: 'activity-path' }, h('span', { class: 'path-dir', text: dir ? `\u200e${dir}\u200e` : '' }), h('span', { class: 'path-name', text: name })),
          age(it.time),
          ),
        );
      }),
    );
  }
}

/** "port 5173 opened by node (session web)": a click shows it in the Preview view. */
function portLine(it: PortItem): HTMLElement {
  const text = `port ${it.port} opened${it.command ? ` by ${it.command}` : ''}${it.session ? ` (session ${it.session})` : ''}`;
  return h('li', {},
    h('button', {
      type: 'button',
      class: 'activity-item',
      'data-testid': 'activity-item',
      'data-event': 'port',
      'data-port': it.port,
      title: `${text} at ${new Date(it.time).toLocaleTimeString()}: show it in the Preview view`,
    },
    h('span', { class: 'ev ev-port', 'aria-label': 'port opened' }),
    h('span', { class: 'activity-path activity-port', text }),
    age(it.time),
    ),
  );
}

/**
 * "planner started 'tests' on feature/tests", and for a refused call why,
 * in red under it: a click shows the session the call was about (or the
 * caller's). The text and the error are the server's, with the sessions'
 * names in them: text only.
 */
function agentLine(it: AgentCallItem): HTMLElement {
  const text = it.text || `an agent called ${it.tool}`;
  const at = new Date(it.time).toLocaleTimeString();
  return h('li', {},
    h('button', {
      type: 'button',
      class: 'activity-item',
      'data-testid': 'activity-item',
      'data-event': 'agent',
      'data-tool': it.tool,
      'data-session-id': it.sessionId,
      'data-target-id': it.targetId,
      'data-refused': it.error ? 'true' : undefined,
      'data-show-session': agentCallSession(it),
      title: `${text}${it.error ? ` (refused: ${it.error})` : ''}\n${it.tool} at ${at}: click to show the session`,
    },
    h('span', { class: 'ev ev-agent', 'aria-label': it.tool === CONTINUE_TOOL ? 'agentmux went on after a usage limit' : it.tool === ANSWER_TOOL ? 'an answer given without the terminal' : it.error ? 'an agent’s call, refused' : 'an agent’s call' }, agentIcon()),
    h('span', { class: 'activity-agent' },
      h('span', { class: 'activity-agent-text', 'data-testid': 'activity-agent-text', text }),
      // The server's text says the call was refused; this says why.
      it.error ? h('span', { class: 'activity-agent-error', 'data-testid': 'activity-agent-error', text: it.error }) : null,
    ),
    age(it.time),
    ),
  );
}

/** An item's age, "8s", kept current by the page's one ticker (shared/ages.ts). */
function age(time: number): HTMLElement {
  const el = h('time', { class: 'ago' });
  showAgo(el, time, { style: 'short' });
  return el;
}
