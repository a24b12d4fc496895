// A terminal under a finger. A vertical swipe moves through the scrollback
// (xterm.js scrolls by wheel, not by touch: a swipe did nothing, or moved
// the page); a sideways swipe is left to the browser, which scrolls a
// session drawn wider than the phone (termsize.ts). A long press selects
// the word under the finger, a drag then extends the selection, and a
// Copy button puts it on the clipboard.

import type { Terminal } from '@xterm/xterm';
import { h } from '../shared/dom';
import { cellSize } from './termsize';

/** How long a finger rests before it selects. */
const LONG_PRESS_MS = 450;
/** A finger that moves this far (CSS px) is swiping, not pressing. */
const SLOP_PX = 8;

type Mode = 'undecided' | 'scroll' | 'pan' | 'select';

/** What a word is made of, for the long press: what a double click takes in most terminals. */
const WORD = /[\w./~:@%+=,#?&-]/;

export interface TouchDeps {
  /** The copy went (or failed): tell the user. */
  toast(message: string, kind?: 'info' | 'error'): void;
}

/** Adds touch scrolling and long-press selection to a terminal view's host; term gives the terminal shown now. */
export function attachTouch(host: HTMLElement, term: () => Terminal, deps: TouchDeps): void {
  let mode: Mode = 'undecided';
  let startX = 0;
  let startY = 0;
  let lastY = 0;
  /** Pixels swiped but not yet scrolled: less than a row. */
  let carry = 0;
  let timer: number | undefined;
  let anchor: { col: number; row: number } | null = null;
  const copyBtn = h('button', { type: 'button', class: 'btn btn-primary touch-copy', 'data-testid': 'copy-selection', hidden: true }, 'Copy');
  host.append(copyBtn);

  /** The buffer cell under a point, or null outside the screen. */
  const cellAt = (x: number, y: number): { col: number; row: number } | null => {
    const t = term();
    const screen = t.element?.querySelector('.xterm-screen');
    const cell = cellSize(t);
    if (!screen || !cell) return null;
    const r = screen.getBoundingClientRect();
    const col = Math.min(t.cols - 1, Math.max(0, Math.floor((x - r.left) / cell.width)));
    const row = Math.min(t.rows - 1, Math.max(0, Math.floor((y - r.top) / cell.height)));
    return { col, row: row + t.buffer.active.viewportY };
  };

  const selectWord = (at: { col: number; row: number }) => {
    const t = term();
    const text = t.buffer.active.getLine(at.row)?.translateToString(false) ?? '';
    let start = at.col;
    let end = at.col;
    if (WORD.test(text[at.col] ?? '')) {
      while (start > 0 && WORD.test(text[start - 1]!)) start--;
      while (end < text.length - 1 && WORD.test(text[end + 1]!)) end++;
    }
    t.select(start, at.row, end - start + 1);
    anchor = { col: start, row: at.row };
  };

  const extendTo = (at: { col: number; row: number }) => {
    if (!anchor) return;
    const t = term();
    const a = anchor.row * t.cols + anchor.col;
    const b = at.row * t.cols + at.col;
    const from = Math.min(a, b);
    t.select(from % t.cols, Math.floor(from / t.cols), Math.abs(b - a) + 1);
  };

  const showCopy = (x: number, y: number) => {
    if (!term().hasSelection()) return;
    const r = host.getBoundingClientRect();
    copyBtn.hidden = false;
    // Above the finger, or below it near the top, where it hides neither
    // the finger nor what was selected; inside the pane.
    const left = Math.min(Math.max(8, x - r.left - 30), r.width - 80) + host.scrollLeft;
    const above = y - r.top - 72;
    const top = (above >= 8 ? above : y - r.top + 36) + host.scrollTop;
    copyBtn.style.left = `${left}px`;
    copyBtn.style.top = `${top}px`;
  };

  const cancelPress = () => {
    window.clearTimeout(timer);
    timer = undefined;
  };

  // xterm.js has a touch gesture of its own, which flung a 200 px swipe
  // through hundreds of rows: the capture phase keeps the touches here.
  const own = { capture: true, passive: false } as const;
  host.addEventListener('touchstart', (ev) => {
    if (ev.target === copyBtn) return;
    ev.stopPropagation();
    cancelPress();
    if (ev.touches.length !== 1) {
      mode = 'pan'; // two fingers: the browser's (pinch zoom)
      return;
    }
    const t = ev.touches[0]!;
    startX = t.clientX;
    startY = lastY = t.clientY;
    carry = 0;
    mode = 'undecided';
    copyBtn.hidden = true;
    term().clearSelection();
    timer = window.setTimeout(() => {
      timer = undefined;
      const at = cellAt(startX, startY);
      if (mode !== 'undecided' || !at) return;
      mode = 'select';
      selectWord(at);
    }, LONG_PRESS_MS);
  }, own);

  host.addEventListener('touchmove', (ev) => {
    if (ev.target === copyBtn) return;
    ev.stopPropagation();
    const t = ev.touches[0];
    if (!t || ev.touches.length !== 1 || mode === 'pan') return;
    const dx = t.clientX - startX;
    const dy = t.clientY - startY;
    if (mode === 'undecided') {
      if (Math.abs(dx) < SLOP_PX && Math.abs(dy) < SLOP_PX) return;
      cancelPress();
      mode = Math.abs(dy) > Math.abs(dx) ? 'scroll' : 'pan';
      if (mode === 'pan') return;
    }
    if (ev.cancelable) ev.preventDefault();
    if (mode === 'select') {
      const at = cellAt(t.clientX, t.clientY);
      if (at) extendTo(at);
      return;
    }
    scrollBy(lastY - t.clientY);
    lastY = t.clientY;
  }, own);

  /**
   * Scrolls by px (positive: towards the latest output): the scrollback a
   * row at a time; the pane itself when it is taller than the phone shows
   * (a session with more rows than fit at the smallest font).
   */
  const scrollBy = (px: number) => {
    const t = term();
    const cell = cellSize(t);
    if (!cell) return;
    const buf = t.buffer.active;
    const atBottom = buf.viewportY >= buf.baseY;
    const paneCanGoDown = host.scrollTop + host.clientHeight < host.scrollHeight - 1;
    if (px > 0 ? atBottom && paneCanGoDown : host.scrollTop > 0) {
      host.scrollTop += px;
      return;
    }
    carry += px;
    const rows = Math.trunc(carry / cell.height);
    if (rows !== 0) {
      scrollRows(t, rows);
      carry -= rows * cell.height;
    }
  };

  const end = (ev: TouchEvent) => {
    if (ev.target === copyBtn) return;
    ev.stopPropagation();
    cancelPress();
    if (mode === 'select') {
      const t = ev.changedTouches[0];
      if (t) showCopy(t.clientX, t.clientY);
      if (ev.cancelable) ev.preventDefault(); // no click, no keyboard: the user is selecting
    }
    mode = 'undecided';
  };
  host.addEventListener('touchend', end, own);
  host.addEventListener('touchcancel', (ev) => {
    ev.stopPropagation();
    cancelPress();
    mode = 'undecided';
  }, own);
  // The browser's own long-press menu would cover the selection.
  host.addEventListener('contextmenu', (ev) => {
    if (mode === 'select' || term().hasSelection()) ev.preventDefault();
  });

  copyBtn.addEventListener('click', () => {
    const text = term().getSelection();
    copyBtn.hidden = true;
    if (!text) return;
    void copyText(text).then(
      () => deps.toast(`Copied ${text.length} character${text.length === 1 ? '' : 's'}.`),
      () => deps.toast('The browser refused to copy: select and copy again.', 'error'),
    );
  });
}

/**
 * Scrolls the buffer by rows. Terminal.scrollLines goes through xterm.js's
 * scrollable element, whose dimensions are not brought up to date when the
 * font changes (a watched session scaled to the phone, termsize.ts): there
 * a swipe of one row flung the view to the top. The buffer's own scroll
 * is exact, and the element follows it (it listens to the buffer).
 */
function scrollRows(t: Terminal, rows: number): void {
  const buffer = (t as unknown as { _core?: { _bufferService?: { scrollLines(n: number): void } } })._core?._bufferService;
  if (buffer) buffer.scrollLines(rows);
  else t.scrollLines(rows);
}

/** The clipboard API where the page may use it (https, localhost); else the old copy command. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const scratch = h('textarea', { class: 'clipboard-scratch', readonly: true });
  scratch.value = text;
  document.body.append(scratch);
  scratch.select();
  const ok = document.execCommand('copy');
  scratch.remove();
  if (!ok) throw new Error('copy refused');
}
