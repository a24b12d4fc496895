// How long ago something happened, said on screen ("just now", "8s ago")
// and kept true. A label drawn once goes stale: "8s ago" still said so
// minutes later. Each such label, or tooltip, is marked (showAgo) with
// its moment, and one ticker for the whole page redraws every marked
// label in the document: no view keeps a timer or a list of its labels,
// and a label removed from the page is simply no longer found. The
// ticker has no timer while the page is hidden, and catches up as it is
// shown again.

import { timeAgo } from './dom';

/** How a label says it: 'long' "just now", "8s ago"; 'short' "now", "8s" (the activity feed's narrow column). */
export type AgoStyle = 'long' | 'short';

/** How often the labels are redrawn: the finest they say is seconds, under a minute. */
export const AGE_TICK_MS = 5_000;

/** The text of a label for moment `at` (ms since the epoch), at `now`. */
export function agoText(at: number, now: number, style: AgoStyle = 'long'): string {
  const s = timeAgo(at, now);
  if (style === 'short') return s;
  return s === 'now' ? 'just now' : `${s} ago`;
}

export interface AgoOptions {
  style?: AgoStyle;
  /** The sentence the label ends: "typed last, " makes "typed last, 8s ago", the whole the text (or the title). */
  prefix?: string;
  /** 'title' says it in the tooltip instead of the text (an avatar's description). */
  attr?: 'title';
  /** The tooltip of a text label; by default the moment itself, to the second. */
  title?: string;
}

/**
 * Marks el as saying how long ago `at` was (ms since the epoch), draws it,
 * and keeps it true for as long as it is in the document. A text label's
 * tooltip keeps the moment itself; a <time> gets its datetime.
 */
export function showAgo(el: HTMLElement, at: number, opts: AgoOptions = {}): void {
  el.dataset.ago = String(at);
  setOrDelete(el, 'agoStyle', opts.style === 'short' ? 'short' : undefined);
  setOrDelete(el, 'agoPrefix', opts.prefix);
  setOrDelete(el, 'agoAttr', opts.attr);
  if (opts.attr !== 'title') el.title = opts.title ?? new Date(at).toLocaleString();
  if (el instanceof HTMLTimeElement) el.dateTime = new Date(at).toISOString();
  draw(el, Date.now());
  startTicker();
}

/** Makes el say something else: the ticker no longer redraws it. */
export function stopAgo(el: HTMLElement): void {
  for (const key of ['ago', 'agoStyle', 'agoPrefix', 'agoAttr']) delete el.dataset[key];
}

let timer: number | undefined;
let started = false;

function setOrDelete(el: HTMLElement, key: string, value: string | undefined): void {
  if (value === undefined) delete el.dataset[key];
  else el.dataset[key] = value;
}

function draw(el: HTMLElement, now: number): void {
  const at = Number(el.dataset.ago);
  if (!Number.isFinite(at)) return;
  const ago = agoText(at, now, el.dataset.agoStyle === 'short' ? 'short' : 'long');
  const text = (el.dataset.agoPrefix ?? '') + ago;
  if (el.dataset.agoAttr === 'title') {
    if (el.title !== text) el.title = text;
  } else if (el.textContent !== text) {
    el.textContent = text; // written only when it changes: no work for the page otherwise
  }
}

/** Redraws every marked label in the document. */
function tick(): void {
  const now = Date.now();
  for (const el of document.querySelectorAll<HTMLElement>('[data-ago]')) draw(el, now);
}

function startTicker(): void {
  if (started) return;
  started = true;
  const sync = () => {
    window.clearInterval(timer);
    timer = undefined;
    if (document.hidden) return; // nobody sees them: no timer at all
    tick(); // shown again: what was said while hidden is caught up at once
    timer = window.setInterval(tick, AGE_TICK_MS);
  };
  document.addEventListener('visibilitychange', sync);
  sync();
}
