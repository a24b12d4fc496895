// Every session's prompt queue (docs/protocol.md, prompt.queue), from
// prompt.list and the events that change it (prompt.queued, .delivered,
// .dequeued), which may arrive in either order after an attach: events
// before the list are logged and applied again on top of it.
//
// It touches no DOM: the queue panel (views/queue.ts) renders from it.

import type { PromptGoneMessage, PromptListMessage, PromptQueuedMessage, QueuedPrompt } from '../shared/types';

/**
 * The session whose agent queued a prompt through agentmux's MCP tools
 * (its authorId is "agent:<session id>", its author "agent <name>"), or
 * null for a person's prompt.
 */
export function agentAuthorSession(authorId: string): string | null {
  return authorId.startsWith('agent:') ? authorId.slice('agent:'.length) || null : null;
}

/** Events kept for a session whose whole queue has not come yet. */
const MAX_LOGGED_EVENTS = 200;

type QueueEvent = PromptQueuedMessage | PromptGoneMessage;
export type QueueMessage = PromptListMessage | QueueEvent;

interface SessionQueue {
  prompts: QueuedPrompt[];
  rev: number;
  /**
   * Whether a prompt.list on this connection is the base: until one
   * comes (after an attach), events are logged, to be applied again on
   * top of it (the list and an event may arrive in either order).
   */
  known: boolean;
  log: QueueEvent[];
}

/** What changed in a session's queue; gone names a prompt that left it. */
export interface QueueChange {
  sessionId: string;
  gone?: { prompt: QueuedPrompt; delivered: boolean };
  added?: QueuedPrompt;
}

type Listener = (c: QueueChange) => void;

/** Every session's prompt queue: see the file's comment. */
export class PromptQueues {
  private readonly bySession = new Map<string, SessionQueue>();
  private readonly listeners: Listener[] = [];

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(c: QueueChange): void {
    for (const fn of this.listeners) fn(c);
  }

  get(sessionId: string): QueuedPrompt[] {
    return this.bySession.get(sessionId)?.prompts ?? [];
  }

  apply(m: QueueMessage): void {
    let q = this.bySession.get(m.sessionId);
    if (!q) {
      q = { prompts: [], rev: 0, known: false, log: [] };
      this.bySession.set(m.sessionId, q);
    }
    if (m.type === 'prompt.list') {
      // Known and newer already: this list is old news.
      if (q.known && m.rev <= q.rev) return;
      q.prompts = Array.isArray(m.prompts) ? [...m.prompts] : [];
      q.rev = m.rev;
      const later = q.log.filter((e) => e.rev > m.rev).sort((a, b) => a.rev - b.rev);
      q.known = true;
      q.log = [];
      for (const e of later) this.applyEvent(q, e);
      this.changed({ sessionId: m.sessionId });
      return;
    }
    if (q.known && m.rev <= q.rev) return;
    if (!q.known) {
      q.log.push(m);
      if (q.log.length > MAX_LOGGED_EVENTS) q.log.shift();
    }
    const c = this.applyEvent(q, m);
    if (c) this.changed(c);
  }

  private applyEvent(q: SessionQueue, e: QueueEvent): QueueChange | null {
    q.rev = Math.max(q.rev, e.rev);
    if (e.type === 'prompt.queued') {
      if (q.prompts.some((p) => p.id === e.prompt.id)) return null;
      q.prompts.push(e.prompt);
      return { sessionId: e.sessionId, added: e.prompt };
    }
    const i = q.prompts.findIndex((p) => p.id === e.promptId);
    if (i < 0) return null;
    const [prompt] = q.prompts.splice(i, 1);
    return { sessionId: e.sessionId, gone: { prompt: prompt!, delivered: e.type === 'prompt.delivered' } };
  }

  /** The connection dropped: events may be missed until each session's next prompt.list. */
  stale(): void {
    for (const q of this.bySession.values()) {
      q.known = false;
      q.log = [];
    }
  }

  forget(sessionId: string): void {
    this.bySession.delete(sessionId);
  }
}
