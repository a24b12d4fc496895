// The activity feed's lines, newest first: the file events (file.changed,
// and the last of them again in file.recent when the page connects), the
// ports a session's process opened, and the calls agents made to
// agentmux's MCP tools (agent.call). The server keeps the recent file
// events, so a page reloaded shows what it showed; one that reconnects
// gets them again and adds only those it missed. Agent calls are not
// kept: a page shows those made while it was connected. Touches no DOM:
// the view (views/activity.ts) renders it.

import type { AgentCallMessage, AnsweredMessage, FileEvent, RecentFile } from '../shared/types';

/** As many lines as the feed shows: the server keeps as many file events. */
export const MAX_ACTIVITY_ITEMS = 100;

export interface ActivityItem {
  abs: string;
  event: FileEvent;
  /** Milliseconds since the epoch. */
  time: number;
  /** The server's timestamp, exact: with abs and event, what tells two events apart. */
  stamp: string;
}

/** A port that began listening (preview.ts): a line of its own. */
export interface PortOpened {
  port: number;
  command?: string;
  /** The name of the session whose agent opened it. */
  session?: string;
}

export type PortItem = PortOpened & { kind: 'port'; time: number };

/** A call an agent made to agentmux's tools, done or refused. */
export interface AgentCallItem {
  kind: 'agent';
  /** The calling agent's session. */
  sessionId: string;
  tool: string;
  /** What was done, in the server's words. */
  text: string;
  /** The session the call was about, if any. */
  targetId?: string;
  /** Why it was refused or failed, when it was. */
  error?: string;
  time: number;
}

export type FeedItem = ActivityItem | PortItem | AgentCallItem;

export function isPort(it: FeedItem): it is PortItem {
  return 'kind' in it && it.kind === 'port';
}

export function isAgentCall(it: FeedItem): it is AgentCallItem {
  return 'kind' in it && it.kind === 'agent';
}

function isFile(it: FeedItem): it is ActivityItem {
  return !('kind' in it);
}

/** The tool of the line agentmux's own session.continued makes, as an agent call's line. */
export const CONTINUE_TOOL = 'continue after limit';

/** The tool of the line a session.answered makes: someone answered without the terminal. */
export const ANSWER_TOOL = 'answer';

/** A session.answered in words: "alice (hub) allowed Write on docs/plan.md in 'build'". */
export function answeredText(m: AnsweredMessage, sessionName: string): string {
  const what =
    m.answer === 'reply' ? `replied "${m.text ?? ''}" to` : `${m.answer === 'allow' ? 'allowed' : 'denied'} ${m.permission?.tool ?? 'the request'}${m.permission?.summary ? ` on ${m.permission.summary}` : ''} in`;
  return `${m.by} ${what} '${sessionName}'`;
}

/** The session a click on an agent call's line shows: the one it was about, else the caller's. */
export function agentCallSession(it: AgentCallItem): string {
  return it.targetId || it.sessionId;
}

const key = (f: { abs: string; event: string; stamp: string }) => `${f.event}\u0000${f.stamp}\u0000${f.abs}`;

export class ActivityLog {
  /** Newest first. */
  private list: FeedItem[] = [];

  /** The lines, newest first. */
  get items(): readonly FeedItem[] {
    return this.list;
  }

  /** The file events, oldest first, for replaying into other views. */
  history(): ActivityItem[] {
    return this.list.filter(isFile).reverse();
  }

  /** A file.changed. */
  add(f: RecentFile, now = Date.now()): void {
    this.list.unshift(item(f, now));
    this.trim();
  }

  /** A port began listening. */
  addPort(p: PortOpened, now = Date.now()): void {
    this.list.unshift({ ...p, kind: 'port', time: now });
    this.trim();
  }

  /** An agent.call. */
  addAgentCall(m: Omit<AgentCallMessage, 'type'>, now = Date.now()): void {
    const t = Date.parse(m.timestamp);
    const it: AgentCallItem = { kind: 'agent', sessionId: m.sessionId, tool: m.tool, text: m.text, time: Number.isFinite(t) ? t : now };
    if (m.targetId) it.targetId = m.targetId;
    if (m.error) it.error = m.error;
    this.list.unshift(it);
    this.trim();
  }

  /**
   * file.recent, oldest first: the events not listed yet join the lines
   * in the order of their times. Reports whether any was new.
   */
  merge(files: readonly RecentFile[], now = Date.now()): boolean {
    const have = new Set(this.list.filter(isFile).map(key));
    const fresh = files.map((f) => item(f, now)).filter((it) => !have.has(key(it)));
    if (fresh.length === 0) return false;
    // Newest first; a stable sort keeps lines of the same time in the order they came.
    this.list = [...fresh.reverse(), ...this.list].sort((a, b) => b.time - a.time);
    this.trim();
    return true;
  }

  private trim(): void {
    if (this.list.length > MAX_ACTIVITY_ITEMS) this.list.length = MAX_ACTIVITY_ITEMS;
  }
}

function item(f: RecentFile, now: number): ActivityItem {
  const t = Date.parse(f.timestamp);
  return { abs: f.path, event: f.event, time: Number.isFinite(t) ? t : now, stamp: f.timestamp };
}
