// A terminal's size, as tmux has it (protocol.md, terminal.resize): the
// session has one size, that of the page that typed last or took it on
// purpose. A page that only watches draws the session at that size, the
// font scaled down to fit its pane, down to a readable minimum, and past
// that scrolled sideways: a line written for 142 columns reads whole on a
// phone. Its own size is still told to the server, which applies it when
// the page types or the user asks to "Fit to this window".

import type { Terminal } from '@xterm/xterm';

/** The font size a terminal is drawn at when it has its own size. */
export const BASE_FONT_SIZE = 13;
/** The smallest font a watched session is scaled to; past it, the pane scrolls. */
export const MIN_FONT_SIZE = 8;
/** xterm.js keeps this much room for its scrollbar (as FitAddon does). */
const SCROLLBAR_WIDTH = 14;

export interface Size {
  cols: number;
  rows: number;
}

interface Cell {
  width: number;
  height: number;
}

/**
 * The size of a character cell as xterm.js draws it now; null before it
 * was measured. FitAddon reads the same private field.
 */
export function cellSize(term: Terminal): Cell | null {
  const core = (term as unknown as { _core?: { _renderService?: { dimensions?: { css: { cell: Cell } } } } })._core;
  const cell = core?._renderService?.dimensions?.css.cell;
  return cell && cell.width > 0 && cell.height > 0 ? { width: cell.width, height: cell.height } : null;
}

/** The room for cells in the terminal's element, in CSS pixels (FitAddon's sums). */
function room(term: Terminal, host: HTMLElement): { width: number; height: number; padX: number; padY: number } {
  const el = term.element;
  const style = el ? getComputedStyle(el) : null;
  const px = (p: string) => (style ? parseInt(style.getPropertyValue(p)) || 0 : 0);
  const padX = px('padding-left') + px('padding-right');
  const padY = px('padding-top') + px('padding-bottom');
  const bar = term.options.scrollback === 0 ? 0 : SCROLLBAR_WIDTH;
  return { width: Math.max(0, host.clientWidth - padX - bar), height: Math.max(0, host.clientHeight - padY), padX: padX + bar, padY };
}

/** The size that fits the host at cells of this size: what this page would have. */
export function fittingSize(term: Terminal, host: HTMLElement, cell: Cell): Size {
  const r = room(term, host);
  return { cols: Math.max(2, Math.floor(r.width / cell.width)), rows: Math.max(1, Math.floor(r.height / cell.height)) };
}

/**
 * Draws the terminal at size, which is not this page's: the font is
 * scaled down until the screen fits the host (never up), to
 * MIN_FONT_SIZE at least; what still does not fit scrolls, the element
 * being given the screen's size. base is the cell at BASE_FONT_SIZE.
 * Reports whether the host scrolls.
 */
export function showAt(term: Terminal, host: HTMLElement, size: Size, base: Cell): boolean {
  if (term.cols !== size.cols || term.rows !== size.rows) term.resize(size.cols, size.rows);
  const r = room(term, host);
  const ratio = Math.min(1, r.width / (size.cols * base.width), r.height / (size.rows * base.height));
  // Half pixels: xterm.js rounds cells to device pixels, so a size a bit
  // under the exact ratio is what fits.
  let font = Math.max(MIN_FONT_SIZE, Math.floor(BASE_FONT_SIZE * ratio * 2) / 2);
  if (term.options.fontSize !== font) term.options.fontSize = font;
  let cell = cellSize(term) ?? base;
  while (font > MIN_FONT_SIZE && (size.cols * cell.width > r.width || size.rows * cell.height > r.height)) {
    font -= 0.5;
    term.options.fontSize = font;
    cell = cellSize(term) ?? cell;
  }
  const width = Math.ceil(size.cols * cell.width);
  const height = Math.ceil(size.rows * cell.height);
  const scrolls = width > r.width || height > r.height;
  host.classList.toggle('term-overflow', scrolls);
  const el = term.element;
  if (el) {
    // The element takes the screen's size, so the host scrolls to all of it.
    el.style.width = scrolls ? `${Math.max(width, r.width) + r.padX}px` : '';
    el.style.height = scrolls ? `${Math.max(height, r.height) + r.padY}px` : '';
  }
  return scrolls;
}

/** Undoes showAt: the terminal is drawn at its own size again. */
export function showOwn(term: Terminal, host: HTMLElement): void {
  if (term.options.fontSize !== BASE_FONT_SIZE) term.options.fontSize = BASE_FONT_SIZE;
  host.classList.remove('term-overflow');
  if (term.element) {
    term.element.style.width = '';
    term.element.style.height = '';
  }
}
