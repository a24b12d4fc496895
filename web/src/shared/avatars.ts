// Avatars: a person's initials on their colour. Names come from other
// people and are only ever text here (textContent and attributes, never
// markup); colours are used only when they are #rrggbb.

import { h } from './dom';

export type AvatarSize = 'sm' | 'md' | 'lg';

const COLOR_PATTERN = /^#[0-9a-fA-F]{6}$/;
const FALLBACK_COLOR = '#8796ab';

let segmenter: Intl.Segmenter | null | undefined;

/** The first character as the eye sees it (an emoji with its modifiers is one). */
function firstGrapheme(s: string): string {
  // A printable ASCII character followed by ASCII (or by nothing) is a
  // grapheme of its own. Most names are ASCII, and the segmenter's first
  // use loads its data: some 20 ms, on a reload's way to its first screen.
  const c = s.charCodeAt(0);
  if (c >= 0x20 && c < 0x7f && !(s.charCodeAt(1) >= 0x80)) return s.slice(0, 1);
  segmenter ??= typeof Intl !== 'undefined' && 'Segmenter' in Intl ? new Intl.Segmenter(undefined, { granularity: 'grapheme' }) : null;
  if (segmenter) {
    for (const { segment } of segmenter.segment(s)) return segment;
    return '';
  }
  return Array.from(s)[0] ?? '';
}

/** "alice" → "A", "guest-7f3a" → "G7", "Ada Lovelace" → "AL". */
export function initials(name: string): string {
  const words = name.trim().split(/[\s._@-]+/u).filter(Boolean);
  const letters = words.slice(0, 2).map(firstGrapheme).join('');
  return letters.toLocaleUpperCase() || '?';
}

/** The server's colours for people who chose none (ws/participants.go). */
const PALETTE = ['#e06c75', '#98c379', '#e5c07b', '#61afef', '#c678dd', '#56b6c2', '#d19a66', '#be5046'];

/** A colour for someone known only by an id: the same id, the same colour. */
export function colorFor(id: string): string {
  let n = 0;
  for (let i = 0; i < id.length; i++) n = (n * 31 + id.charCodeAt(i)) >>> 0;
  return PALETTE[n % PALETTE.length]!;
}

export function safeColor(color: string | undefined): string {
  return color && COLOR_PATTERN.test(color) ? color : FALLBACK_COLOR;
}

/** Dark text on a light colour, white on a dark one (WCAG relative luminance). */
export function inkFor(color: string): string {
  const c = safeColor(color);
  const lin = (i: number) => {
    const v = parseInt(c.slice(i, i + 2), 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  const lum = 0.2126 * lin(1) + 0.7152 * lin(3) + 0.0722 * lin(5);
  return lum > 0.28 ? '#0b0e13' : '#ffffff';
}

export interface AvatarOptions {
  size?: AvatarSize;
  /** The tooltip; the name when not given. */
  title?: string;
  attrs?: Record<string, string | boolean | undefined>;
}

/** A circle with the person's initials, coloured theirs. */
export function avatar(p: { name: string; color: string }, opts: AvatarOptions = {}): HTMLSpanElement {
  const el = h('span', {
    class: `avatar avatar-${opts.size ?? 'sm'}`,
    role: 'img',
    'aria-label': p.name,
    title: opts.title ?? p.name,
    ...opts.attrs,
  }, initials(p.name));
  const color = safeColor(p.color);
  el.style.setProperty('--avatar', color);
  el.style.setProperty('--avatar-ink', inkFor(color));
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * A robot's head, drawn in the text's colour: what marks an agent's doing
 * where a person's would show (a session an agent started, a prompt it
 * queued, a call to agentmux's tools in the activity feed).
 */
export function agentIcon(): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'agent-icon');
  const parts: [string, Record<string, string>][] = [
    ['path', { d: 'M8 1.5v2.5M3.5 9.5H2M14 9.5h-1.5' }],
    ['rect', { x: '3.5', y: '4', width: '9', height: '9', rx: '2' }],
    ['path', { d: 'M6.2 10.9h3.6' }],
    ['circle', { cx: '6.2', cy: '7.8', r: '0.9', class: 'agent-icon-eye' }],
    ['circle', { cx: '9.8', cy: '7.8', r: '0.9', class: 'agent-icon-eye' }],
  ];
  for (const [tag, attrs] of parts) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
    svg.append(el);
  }
  return svg;
}

/** An agent's avatar: the robot's head on its colour, where a person's shows initials. */
export function agentAvatar(p: { name: string; color: string }, opts: AvatarOptions = {}): HTMLSpanElement {
  const el = avatar(p, opts);
  el.classList.add('avatar-agent');
  el.replaceChildren(agentIcon());
  return el;
}

/** An open eye, drawn in the text's colour: someone who watches through a read-only link. */
export function eyeIcon(): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', 'eye-icon');
  const outline = document.createElementNS(SVG_NS, 'path');
  outline.setAttribute('d', 'M1.5 8s2.4-4.5 6.5-4.5S14.5 8 14.5 8 12.1 12.5 8 12.5 1.5 8 1.5 8z');
  const pupil = document.createElementNS(SVG_NS, 'circle');
  pupil.setAttribute('cx', '8');
  pupil.setAttribute('cy', '8');
  pupil.setAttribute('r', '2');
  svg.append(outline, pupil);
  return svg;
}

/** A viewer's avatar (a read-only link): an eye on grey, where a person's shows initials. */
export function viewerAvatar(p: { name: string; color: string }, opts: AvatarOptions = {}): HTMLSpanElement {
  const el = avatar(p, opts);
  el.classList.add('avatar-viewer');
  el.replaceChildren(eyeIcon());
  return el;
}
