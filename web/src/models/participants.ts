// Who is in each session (session.participants): the connections attached
// to it, with whether it is their active tab and when they last typed
// there, and who is typing now. Someone watching through a read-only
// link (viewer: true) is listed too, but never types: never a typist.
// The server lists a session's participants
// to every connection whenever they change, but a page hears of a session
// only once it has attached to it (shown it) or someone changes there.
//
// It touches no DOM: the tabs, the session header and the people sheet
// (views/participants.ts, phone/peoplesheet.ts) render from it.

import type { Participant, SessionParticipantsMessage } from '../shared/types';

/** Reports whether p watches through a read-only link: listed, but never typing. */
export function isViewer(p: Participant): boolean {
  return p.viewer === true;
}

/** What a viewer is called, wherever people are named. */
export const VIEWER_LABEL = 'viewer (read-only link)';

/** How long after a keystroke is seen someone counts as typing. */
const TYPING_MS = 4_000;

type Listener = (sessionId: string) => void;

/** Every session's participants, and who typed moments ago: see the file's comment. */
export class Participants {
  private readonly bySession = new Map<string, Participant[]>();
  /** By session and participant: the lastInputAt seen, and when (this page's clock) it moved. */
  private readonly typed = new Map<string, Map<string, { at: number; seen: number }>>();
  private readonly listeners: Listener[] = [];
  private typingTimer: ReturnType<typeof setTimeout> | undefined;

  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  private changed(sessionId: string): void {
    for (const fn of this.listeners) fn(sessionId);
  }

  get(sessionId: string): Participant[] {
    return this.bySession.get(sessionId) ?? [];
  }

  set(m: SessionParticipantsMessage): void {
    const list = Array.isArray(m.participants) ? m.participants : [];
    const now = Date.now();
    const prev = this.typed.get(m.sessionId);
    const typed = new Map<string, { at: number; seen: number }>();
    for (const p of list) {
      if (typeof p.lastInputAt !== 'number' || isViewer(p)) continue;
      const before = prev?.get(p.id);
      // A first sighting counts as typing only if it is recent by the
      // server's clock; a later one whenever the time moved.
      const fresh = before ? p.lastInputAt > before.at : now - p.lastInputAt < TYPING_MS;
      typed.set(p.id, { at: p.lastInputAt, seen: fresh ? now : (before?.seen ?? 0) });
    }
    this.typed.set(m.sessionId, typed);
    this.bySession.set(m.sessionId, list);
    this.changed(m.sessionId);
    this.scheduleTypingEnd();
  }

  /** The connection is gone: every list is stale until the re-attaches announce anew. */
  clear(): void {
    const ids = [...this.bySession.keys()];
    this.bySession.clear();
    this.typed.clear();
    for (const id of ids) this.changed(id);
  }

  forget(sessionId: string): void {
    this.typed.delete(sessionId);
    if (this.bySession.delete(sessionId)) this.changed(sessionId);
  }

  /** How many watch the session through read-only links. */
  viewerCount(sessionId: string): number {
    return this.get(sessionId).filter(isViewer).length;
  }

  /** The colour of someone by this name in any session, if one is there now (viewers are nobody's namesake). */
  colorOfName(name: string, preferSession?: string | null): string | undefined {
    const here = preferSession ? this.get(preferSession).find((p) => p.name === name && !isViewer(p)) : undefined;
    if (here) return here.color;
    for (const list of this.bySession.values()) {
      const p = list.find((x) => x.name === name && !isViewer(x));
      if (p) return p.color;
    }
    return undefined;
  }

  /** Who typed into the session last, of those in it now. */
  lastTypist(sessionId: string): Participant | undefined {
    let last: Participant | undefined;
    for (const p of this.get(sessionId)) {
      if (isViewer(p)) continue;
      if (typeof p.lastInputAt === 'number' && (!last || p.lastInputAt > (last.lastInputAt ?? 0))) last = p;
    }
    return last;
  }

  /** Reports whether this participant typed in the session moments ago. */
  isTyping(sessionId: string, participantId: string, now = Date.now()): boolean {
    const t = this.typed.get(sessionId)?.get(participantId);
    return !!t && now - t.seen < TYPING_MS;
  }

  /** When their last keystroke was, by this page's clock if it was seen arrive. */
  typedAt(sessionId: string, p: Participant): number | undefined {
    if (isViewer(p)) return undefined;
    const t = this.typed.get(sessionId)?.get(p.id);
    if (!t) return p.lastInputAt;
    return t.seen || t.at;
  }

  /** Re-renders the sessions whose typing hint runs out, when it does. */
  private scheduleTypingEnd(): void {
    clearTimeout(this.typingTimer);
    const now = Date.now();
    let next = Infinity;
    for (const m of this.typed.values()) {
      for (const t of m.values()) {
        if (t.seen + TYPING_MS > now) next = Math.min(next, t.seen + TYPING_MS);
      }
    }
    if (next === Infinity) return;
    this.typingTimer = setTimeout(() => {
      const t = Date.now();
      for (const [sid, m] of this.typed) {
        // The hints that ran out since the timer was set.
        if ([...m.values()].some((v) => v.seen + TYPING_MS > now && v.seen + TYPING_MS <= t)) this.changed(sid);
      }
      this.scheduleTypingEnd();
    }, next - now + 20);
  }
}
