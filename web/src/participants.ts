// Who is in each session (session.participants): the connections attached
// to it, with whether it is their active tab and when they last typed
// there. Tabs show the others; the session header shows everyone, with
// who typed last. The server lists a session's participants to every
// connection whenever they change, but a page hears of a session only
// once it has attached to it (shown it) or someone changes there.

import { avatar, type AvatarSize } from './avatars';
import { byId, h, timeAgo } from './dom';
import type { Participant, SessionParticipantsMessage } from './types';

/** How long after a keystroke is seen someone counts as typing. */
const TYPING_MS = 4_000;
/** Avatars shown on a tab before "+N". */
const TAB_MAX = 3;
/** Avatars shown in the session header before "+N". */
const HEADER_MAX = 6;

type Listener = (sessionId: string) => void;

export class Participants {
  private readonly bySession = new Map<string, Participant[]>();
  /** By session and participant: the lastInputAt seen, and when (this page's clock) it moved. */
  private readonly typed = new Map<string, Map<string, { at: number; seen: number }>>();
  private readonly listeners: Listener[] = [];
  private typingTimer: number | undefined;

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
      if (typeof p.lastInputAt !== 'number') continue;
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

  /** The colour of someone by this name in any session, if one is there now. */
  colorOfName(name: string, preferSession?: string | null): string | undefined {
    const here = preferSession ? this.get(preferSession).find((p) => p.name === name) : undefined;
    if (here) return here.color;
    for (const list of this.bySession.values()) {
      const p = list.find((x) => x.name === name);
      if (p) return p.color;
    }
    return undefined;
  }

  /** Who typed into the session last, of those in it now. */
  lastTypist(sessionId: string): Participant | undefined {
    let last: Participant | undefined;
    for (const p of this.get(sessionId)) {
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
    const t = this.typed.get(sessionId)?.get(p.id);
    if (!t) return p.lastInputAt;
    return t.seen || t.at;
  }

  /** Re-renders the sessions whose typing hint runs out, when it does. */
  private scheduleTypingEnd(): void {
    window.clearTimeout(this.typingTimer);
    const now = Date.now();
    let next = Infinity;
    for (const m of this.typed.values()) {
      for (const t of m.values()) {
        if (t.seen + TYPING_MS > now) next = Math.min(next, t.seen + TYPING_MS);
      }
    }
    if (next === Infinity) return;
    this.typingTimer = window.setTimeout(() => {
      const t = Date.now();
      for (const [sid, m] of this.typed) {
        // The hints that ran out since the timer was set.
        if ([...m.values()].some((v) => v.seen + TYPING_MS > now && v.seen + TYPING_MS <= t)) this.changed(sid);
      }
      this.scheduleTypingEnd();
    }, next - now + 20);
  }
}

export interface PeopleOptions {
  /** This page's connection id, to leave out (tabs) or mark (header). */
  meId: string | null;
  includeMe: boolean;
  size: AvatarSize;
  max: number;
}

/** Describes a participant for a tooltip. */
function describe(p: Participant, opts: { me: boolean; last: boolean; typing: boolean; typedAt?: number }): string {
  const parts = [`${p.name}${opts.me ? ' (you)' : ''}`];
  parts.push(p.viewing ? 'watching this session' : 'has it open, looking at another session');
  if (opts.typing) parts.push('typing now');
  else if (opts.typedAt !== undefined) {
    const ago = timeAgo(opts.typedAt);
    parts.push(`${opts.last ? 'typed last, ' : 'typed '}${ago === 'now' ? 'just now' : `${ago} ago`}`);
  }
  return parts.join(' · ');
}

/**
 * Draws the participants of a session into a container: avatars in the
 * server's order (viewers first), at most opts.max, then "+N". Returns how
 * many were drawn.
 */
export function renderPeople(container: HTMLElement, people: Participants, sessionId: string, opts: PeopleOptions): number {
  const all = people.get(sessionId);
  const list = all.filter((p) => opts.includeMe || p.id !== opts.meId);
  // Viewers before those with the session open in the background.
  list.sort((a, b) => Number(b.viewing) - Number(a.viewing));
  const last = people.lastTypist(sessionId);
  const now = Date.now();
  const shown = list.length > opts.max ? list.slice(0, opts.max - 1) : list;
  const rest = list.slice(shown.length);
  const drawn = shown.map((p) => {
    const me = p.id === opts.meId;
    const typing = people.isTyping(sessionId, p.id, now);
    const isLast = !!last && last.id === p.id;
    return {
      p,
      me,
      typing,
      isLast,
      title: describe(p, { me, last: isLast, typing, typedAt: people.typedAt(sessionId, p) }),
    };
  });
  // Redrawn only when something shows differently: a redraw restarts the typing ring's animation.
  const sig = JSON.stringify([opts.size, drawn.map((d) => [d.p.id, d.p.name, d.p.color, d.p.viewing, d.me, d.typing, d.isLast, d.title]), rest.map((p) => p.name)]);
  if (container.dataset.sig === sig) return drawn.length + (rest.length ? 1 : 0);
  container.dataset.sig = sig;
  const els: HTMLElement[] = drawn.map(({ p, me, typing, isLast, title }) => {
    const el = avatar(p, {
      size: opts.size,
      title,
      attrs: {
        'data-testid': 'avatar',
        'data-participant-id': p.id,
        'data-name': p.name,
        'data-viewing': String(p.viewing),
        'data-last-typed': isLast ? 'true' : undefined,
        'data-typing': typing ? 'true' : undefined,
        'data-me': me ? 'true' : undefined,
      },
    });
    el.classList.add(p.viewing ? 'viewing' : 'away');
    if (isLast) el.classList.add('last-typed');
    if (typing) el.classList.add('typing');
    if (me) el.classList.add('me');
    return el;
  });
  if (rest.length) {
    els.push(h('span', {
      class: `avatar avatar-${opts.size} avatar-more`,
      'data-testid': 'avatar-more',
      title: rest.map((p) => p.name).join('\n'),
    }, `+${rest.length}`));
  }
  container.replaceChildren(...els);
  container.hidden = els.length === 0;
  container.dataset.count = String(list.length);
  return els.length;
}

/** The others in a session, on its tab. */
export function renderTabPeople(container: HTMLElement, people: Participants, sessionId: string, meId: string | null): void {
  renderPeople(container, people, sessionId, { meId, includeMe: false, size: 'sm', max: TAB_MAX });
  const others = people.get(sessionId).filter((p) => p.id !== meId);
  if (others.length) container.title = `Also here: ${others.map((p) => p.name).join(', ')}`;
  else container.removeAttribute('title');
}

/**
 * Everyone in the session on screen, in its header, once someone besides
 * this page is there; and a hint saying who is typing, or who typed last.
 */
export function renderHeaderPeople(
  container: HTMLElement,
  hint: HTMLElement,
  people: Participants,
  sessionId: string | null,
  meId: string | null,
): void {
  const all = sessionId ? people.get(sessionId) : [];
  const others = all.filter((p) => p.id !== meId);
  if (!sessionId || others.length === 0) {
    container.replaceChildren();
    delete container.dataset.sig;
    container.hidden = true;
    hint.hidden = true;
    hint.textContent = '';
    return;
  }
  renderPeople(container, people, sessionId, { meId, includeMe: true, size: 'md', max: HEADER_MAX });
  container.setAttribute('aria-label', `In this session: ${all.map((p) => (p.id === meId ? `${p.name} (you)` : p.name)).join(', ')}`);
  const now = Date.now();
  const typing = all.filter((p) => people.isTyping(sessionId, p.id, now));
  const last = people.lastTypist(sessionId);
  // The name cut with an ellipsis, the words around it kept (the gap spaces them).
  const name = (p: Participant) => (p.id === meId ? 'you' : p.name);
  const who = (p: Participant) => h('span', { class: 'typing-name', text: name(p) });
  if (typing.length === 1) {
    hint.replaceChildren(who(typing[0]!), 'typing…');
    hint.title = `${name(typing[0]!)} typing…`;
    hint.dataset.state = 'typing';
  } else if (typing.length > 1) {
    hint.replaceChildren(`${typing.length} typing…`);
    hint.title = `typing: ${typing.map(name).join(', ')}`;
    hint.dataset.state = 'typing';
  } else if (last) {
    hint.replaceChildren('last typed:', who(last));
    hint.title = `last typed: ${name(last)}`;
    hint.dataset.state = 'last';
  } else {
    hint.replaceChildren();
  }
  hint.hidden = !hint.textContent;
}

/** The people in the session on screen, in the terminal pane's header. */
export class HeaderPeople {
  private readonly box = byId('term-people');
  private readonly hint = byId('term-typing');

  constructor(
    private readonly people: Participants,
    private readonly activeId: () => string | null,
    private readonly meId: () => string | null,
  ) {
    people.subscribe((id) => {
      if (id === activeId()) this.render();
    });
  }

  render(): void {
    renderHeaderPeople(this.box, this.hint, this.people, this.activeId(), this.meId());
  }
}
