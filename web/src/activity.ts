// The activity feed: the last 100 file.changed events, newest first, with
// their age kept current. Paths show relative to the workspace (see
// paths.ts); a click opens the file in the artifact pane.

import { byId, h, timeAgo } from './dom';
import { splitPath, type WorkspaceRoot } from './paths';
import type { FileChangedMessage, FileEvent } from './types';

const MAX_ITEMS = 100;
const RENDER_DELAY_MS = 40;
const AGE_TICK_MS = 5_000;

export interface ActivityItem {
  abs: string;
  event: FileEvent;
  time: number;
}

const EVENT_LABEL: Record<FileEvent, string> = { add: 'added', change: 'changed', unlink: 'deleted' };

export class ActivityFeed {
  /** Newest first. */
  private items: ActivityItem[] = [];
  private renderTimer: number | undefined;
  private readonly list = byId('activity');
  private readonly count = byId('activity-count');

  constructor(
    private readonly root: WorkspaceRoot,
    private readonly open: (rel: string) => void,
  ) {
    this.list.addEventListener('click', (ev) => {
      const btn = (ev.target as Element).closest<HTMLElement>('[data-testid=activity-item]');
      const rel = btn?.dataset.rel;
      if (rel) this.open(rel);
    });
    window.setInterval(() => this.updateAges(), AGE_TICK_MS);
    root.onLearned(() => this.render());
    this.render();
  }

  /** Oldest first, for replaying into other views. */
  history(): ActivityItem[] {
    return [...this.items].reverse();
  }

  add(m: FileChangedMessage): void {
    const t = Date.parse(m.timestamp);
    this.items.unshift({ abs: m.path, event: m.event, time: Number.isFinite(t) ? t : Date.now() });
    if (this.items.length > MAX_ITEMS) this.items.length = MAX_ITEMS;
    // Bursts (a build, a checkout) render once.
    if (this.renderTimer === undefined) {
      this.renderTimer = window.setTimeout(() => this.render(), RENDER_DELAY_MS);
    }
  }

  private render(): void {
    window.clearTimeout(this.renderTimer);
    this.renderTimer = undefined;
    this.count.textContent = this.items.length ? String(this.items.length) : '';
    if (this.items.length === 0) {
      this.list.replaceChildren(h('li', { class: 'muted empty-line', text: 'File changes in the workspace appear here.' }));
      return;
    }
    const now = Date.now();
    this.list.replaceChildren(
      ...this.items.map((it) => {
        const rel = this.root.relative(it.abs);
        const shown = rel ?? it.abs;
        const { dir, name } = splitPath(shown);
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
          h('time', { class: 'ago', 'data-time': it.time, datetime: new Date(it.time).toISOString(), text: timeAgo(it.time, now) }),
          ),
        );
      }),
    );
  }

  private updateAges(): void {
    const now = Date.now();
    for (const el of this.list.querySelectorAll<HTMLElement>('time.ago')) {
      el.textContent = timeAgo(Number(el.dataset.time), now);
    }
  }
}
