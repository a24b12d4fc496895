// Who is in each session (session.participants): the connections attached
// to it, with whether it is their active tab and when they last typed
// there. Tabs show the others; the session header shows everyone, with
// who typed last. The server lists a session's participants to every
// connection whenever they change, but a page hears of a session only
// once it has attached to it (shown it) or someone changes there. Who is
// where is Participants' (models/participants.ts); this draws it. Someone
// watching through a read-only link is an eye, "viewer (read-only link)",
// after the people, and never a typist.

import { avatar, viewerAvatar, type AvatarSize } from '../shared/avatars';
import { showAgo } from '../shared/ages';
import { byId, h } from '../shared/dom';
import type { Participant } from '../shared/types';
import { VIEWER_LABEL, isViewer, type Participants } from '../models/participants';

/** Avatars shown on a tab before "+N". */
const TAB_MAX = 3;
/** Avatars shown in the session header before "+N". */
const HEADER_MAX = 6;

export interface PeopleOptions {
  /** This page's connection id, to leave out (tabs) or mark (header). */
  meId: string | null;
  includeMe: boolean;
  size: AvatarSize;
  max: number;
}

/**
 * Describes a participant for a tooltip. When it says when they typed,
 * ago is that moment and title the sentence that "8s ago" ends, which the
 * page's ticker keeps current (shared/ages.ts).
 */
function describe(p: Participant, opts: { me: boolean; last: boolean; typing: boolean; typedAt?: number }): { title: string; ago?: number } {
  if (isViewer(p)) return { title: `${VIEWER_LABEL} · watching, cannot type` };
  const parts = [`${p.name}${opts.me ? ' (you)' : ''}`];
  parts.push(p.viewing ? 'watching this session' : 'has it open, looking at another session');
  if (opts.typing) parts.push('typing now');
  else if (opts.typedAt !== undefined) {
    parts.push(opts.last ? 'typed last, ' : 'typed ');
    return { title: parts.join(' · '), ago: opts.typedAt };
  }
  return { title: parts.join(' · ') };
}

/**
 * Draws the participants of a session into a container: avatars in the
 * server's order (viewers first), at most opts.max, then "+N". Returns how
 * many were drawn.
 */
export function renderPeople(container: HTMLElement, people: Participants, sessionId: string, opts: PeopleOptions): number {
  const all = people.get(sessionId);
  const list = all.filter((p) => opts.includeMe || p.id !== opts.meId);
  // Those watching it before those with the session open in the
  // background; read-only viewers last.
  list.sort((a, b) => Number(isViewer(a)) - Number(isViewer(b)) || Number(b.viewing) - Number(a.viewing));
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
      said: describe(p, { me, last: isLast, typing, typedAt: people.typedAt(sessionId, p) }),
    };
  });
  // Redrawn only when something shows differently: a redraw restarts the typing ring's animation.
  const sig = JSON.stringify([opts.size, drawn.map((d) => [d.p.id, d.p.name, d.p.color, d.p.viewing, isViewer(d.p), d.me, d.typing, d.isLast, d.said.title, d.said.ago]), rest.map((p) => p.name)]);
  if (container.dataset.sig === sig) return drawn.length + (rest.length ? 1 : 0);
  container.dataset.sig = sig;
  const els: HTMLElement[] = drawn.map(({ p, me, typing, isLast, said }) => {
    const viewer = isViewer(p);
    const el = (viewer ? viewerAvatar : avatar)(viewer ? { name: VIEWER_LABEL, color: p.color } : p, {
      size: opts.size,
      title: said.title,
      attrs: {
        'data-testid': 'avatar',
        'data-participant-id': p.id,
        'data-name': p.name,
        'data-viewing': String(p.viewing),
        'data-viewer': viewer ? 'true' : undefined,
        'data-last-typed': isLast ? 'true' : undefined,
        'data-typing': typing ? 'true' : undefined,
        'data-me': me ? 'true' : undefined,
      },
    });
    el.classList.add(p.viewing ? 'viewing' : 'away');
    if (isLast) el.classList.add('last-typed');
    if (typing) el.classList.add('typing');
    if (me) el.classList.add('me');
    if (said.ago !== undefined) showAgo(el, said.ago, { attr: 'title', prefix: said.title });
    return el;
  });
  if (rest.length) {
    els.push(h('span', {
      class: `avatar avatar-${opts.size} avatar-more`,
      'data-testid': 'avatar-more',
      title: rest.map(nameOf).join('\n'),
    }, `+${rest.length}`));
  }
  container.replaceChildren(...els);
  container.hidden = els.length === 0;
  container.dataset.count = String(list.length);
  return els.length;
}

/** How a participant is named: a viewer by what they are. */
export function nameOf(p: Participant): string {
  return isViewer(p) ? VIEWER_LABEL : p.name;
}

/** The others in a session, on its tab. */
export function renderTabPeople(container: HTMLElement, people: Participants, sessionId: string, meId: string | null): void {
  renderPeople(container, people, sessionId, { meId, includeMe: false, size: 'sm', max: TAB_MAX });
  const others = people.get(sessionId).filter((p) => p.id !== meId);
  if (others.length) container.title = `Also here: ${others.map(nameOf).join(', ')}`;
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
  container.setAttribute('aria-label', `In this session: ${all.map((p) => (p.id === meId ? `${p.name} (you)` : nameOf(p))).join(', ')}`);
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
