// The key bar: on a touch screen, the keys a phone keyboard lacks (Esc,
// Tab, a sticky Ctrl, the arrows, Ctrl+C, Enter, / | ~ -), under the
// terminal and so, with the keyboard up, right above it.
//
// - A key goes in as typing does: term.input(bytes, true) fires xterm's
//   onData, so the bytes take the path a keystroke takes (termpane.ts:
//   waking a stopped session, taking the size, the typing announcement),
//   and xterm scrolls to the bottom as it does for a key.
// - The bytes are the ones xterm.js sends for the key itself: the arrows
//   follow the program's cursor key mode (DECCKM: ESC O A in application
//   mode, ESC [ A otherwise).
// - Ctrl latches: the next key, from the bar or the phone's keyboard, goes
//   as its control character (rewrite(), which termpane.ts applies to what
//   is typed), and the latch lets go. A second tap lets go too.
// - The buttons never take the focus: a tap would close the phone's
//   keyboard, which lives as long as xterm's textarea has the focus.
// - Typed and composed text is xterm.js's to send (its CompositionHelper
//   sends a composition once, when committed); nothing here sends text
//   from an input event. A bar key in the middle of a composition has
//   xterm send the word first, as a keyboard's key would.
// - An arrow held down repeats.
// - Attach opens the phone's picker (camera, photos, files); what is
//   picked is stored with the session and its path typed at the prompt,
//   as a paste or a drop of a file does (terminal/attach.ts).
// - With the keyboard up, the browser shrinks only the visual viewport
//   (Chrome on Android, Safari on iOS): the page, as laid out, runs on
//   under the keyboard. The app is then laid into the visual viewport, so
//   the bar sits on the keyboard and covers nothing, and the cursor's line
//   is scrolled into view above it.

import type { Terminal } from '@xterm/xterm';
import { h } from '../shared/dom';
import { ATTACH_ACCEPT } from '../models/attachments';

/** Less than this covered at the bottom is browser chrome coming and going, not a keyboard. */
const KEYBOARD_MIN_PX = 120;
/** After the app changed height: the terminal refits (terminal.ts waits 50 ms) before the cursor is looked for. */
const SETTLE_MS = 120;
/** An arrow held down repeats, as a keyboard's does: after this long, */
const REPEAT_DELAY_MS = 400;
/** this often. */
const REPEAT_EVERY_MS = 70;

export interface KeyBarDeps {
  /** The session on screen: its terminal and the element it is drawn in. */
  active(): { term: Terminal; host: HTMLElement } | undefined;
  /** Calls fn whenever the sessions or the one on screen change. */
  subscribe(fn: () => void): void;
  /** Hands files picked with Attach to the session on screen (terminal/attach.ts). */
  attach?(files: File[]): void;
}

interface Key {
  id: string;
  /** The accessible name: the key's name. */
  name: string;
  label: string;
  bytes(term: Terminal, ctrl: boolean): string;
  wide?: boolean;
  /** Held down, it repeats. */
  repeats?: boolean;
}

const ESC = '\x1b';

/** An arrow as xterm.js sends it: with Ctrl, CSI 1;5 X; else SS3 X in application cursor mode, CSI X otherwise. */
function arrow(final: string): Key['bytes'] {
  return (term, ctrl) => {
    if (ctrl) return `${ESC}[1;5${final}`;
    return term.modes.applicationCursorKeysMode ? `${ESC}O${final}` : `${ESC}[${final}`;
  };
}

/** A printable key: its character, or with Ctrl its control character (as xterm.js has them). */
function printable(ch: string): Key['bytes'] {
  return (_term, ctrl) => (ctrl ? controlOf(ch) ?? ch : ch);
}

const KEYS: Key[] = [
  { id: 'esc', name: 'Esc', label: 'Esc', bytes: () => ESC, wide: true },
  { id: 'tab', name: 'Tab', label: 'Tab', bytes: () => '\t', wide: true },
  { id: 'ctrl', name: 'Ctrl', label: 'Ctrl', bytes: () => '', wide: true },
  { id: 'ctrl-c', name: 'Ctrl+C', label: '^C', bytes: () => '\x03', wide: true },
  { id: 'left', name: 'Left', label: '←', bytes: arrow('D'), repeats: true },
  { id: 'down', name: 'Down', label: '↓', bytes: arrow('B'), repeats: true },
  { id: 'up', name: 'Up', label: '↑', bytes: arrow('A'), repeats: true },
  { id: 'right', name: 'Right', label: '→', bytes: arrow('C'), repeats: true },
  { id: 'slash', name: 'Slash', label: '/', bytes: printable('/') },
  { id: 'pipe', name: 'Pipe', label: '|', bytes: printable('|') },
  { id: 'tilde', name: 'Tilde', label: '~', bytes: printable('~') },
  { id: 'dash', name: 'Dash', label: '-', bytes: printable('-') },
  { id: 'enter', name: 'Enter', label: '⏎', bytes: () => '\r', wide: true },
];

/**
 * The control character Ctrl and this key make, as xterm.js sends it:
 * Ctrl+letter is the letter's code & 0x1f; @ and space NUL; [ \ ] ^ _ and
 * their neighbours on a US keyboard; ? DEL. Null for keys Ctrl leaves be.
 */
export function controlOf(ch: string): string | null {
  const c = ch.charCodeAt(0);
  if (ch.length !== 1) return null;
  if ((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a)) return String.fromCharCode(c & 0x1f);
  switch (ch) {
    case '@': case ' ': case '2': return '\x00';
    case '[': case '3': return '\x1b';
    case '\\': case '|': case '4': return '\x1c';
    case ']': case '5': return '\x1d';
    case '^': case '~': case '6': return '\x1e';
    case '_': case '-': case '/': case '7': return '\x1f';
    case '?': case '8': return '\x7f';
  }
  return null;
}

/** A paperclip, drawn: a phone's emoji font is not every browser's. */
function paperclip(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', 'M10.5 4.5 5.6 9.4a1.4 1.4 0 0 0 2 2l5.2-5.2a2.8 2.8 0 0 0-4-4L3.6 7.4a4.2 4.2 0 0 0 6 6l4.4-4.4');
  p.setAttribute('fill', 'none');
  p.setAttribute('stroke', 'currentColor');
  p.setAttribute('stroke-width', '1.4');
  p.setAttribute('stroke-linecap', 'round');
  svg.append(p);
  return svg;
}

export class KeyBar {
  readonly el: HTMLElement;
  private readonly ctrlBtn: HTMLButtonElement;
  private ctrl = false;
  /** The bar is offered: a touch screen's. */
  private readonly enabled: boolean;
  private keyboardUp = false;
  private settleTimer: number | undefined;
  /** The held key's repeat: its delay, then its interval. */
  private holdTimer: number | undefined;
  private repeatTimer: number | undefined;
  /** The key held down repeated: the click its release makes is not a press. */
  private repeated = false;
  /** A composition is under way in the terminal's textarea (see commitComposition). */
  private composing = false;

  constructor(parent: HTMLElement, private readonly deps: KeyBarDeps) {
    // A phone or tablet: its pointer is a finger. A laptop with a touch
    // screen keeps its mouse as the primary pointer, and its keyboard.
    this.enabled = window.matchMedia('(pointer: coarse)').matches;
    this.el = h('div', { class: 'keybar', role: 'toolbar', 'aria-label': 'Terminal keys', 'data-testid': 'keybar', hidden: true });
    for (const k of KEYS) {
      const b = h(
        'button',
        {
          type: 'button',
          class: k.wide ? 'keybar-key keybar-wide' : 'keybar-key',
          'aria-label': k.name,
          title: k.name,
          'data-key': k.id,
          tabindex: -1,
        },
        k.label,
      );
      if (k.id === 'ctrl') b.setAttribute('aria-pressed', 'false');
      b.addEventListener('click', () => {
        // A hold that repeated has pressed the key already: its release is no tap.
        if (this.repeated) this.repeated = false;
        else this.press(k);
      });
      if (k.repeats) b.addEventListener('pointerdown', (ev) => this.hold(k, ev));
      this.el.append(b);
    }
    // Attach: the phone's own picker, which offers the camera, the photo
    // library and files. The input is the bar's, never shown.
    const picker = h('input', { type: 'file', accept: ATTACH_ACCEPT, multiple: true, hidden: true, 'data-testid': 'attach-input' }) as HTMLInputElement;
    picker.addEventListener('change', () => {
      const files = Array.from(picker.files ?? []);
      picker.value = ''; // the same photo picked again is a change too
      if (files.length) this.deps.attach?.(files);
    });
    const attachBtn = h(
      'button',
      { type: 'button', class: 'keybar-key keybar-wide keybar-attach', 'aria-label': 'Attach a photo or a file', title: 'Attach a photo or a file', 'data-key': 'attach', tabindex: -1 },
      paperclip(),
    );
    attachBtn.addEventListener('click', () => picker.click());
    if (deps.attach) this.el.append(attachBtn, picker);
    for (const type of ['pointerup', 'pointercancel', 'pointerleave'] as const) {
      this.el.addEventListener(type, () => this.release());
    }
    // A long press is a held key here, not a call for the context menu.
    this.el.addEventListener('contextmenu', (ev) => ev.preventDefault());
    this.ctrlBtn = this.el.querySelector<HTMLButtonElement>('[data-key="ctrl"]')!;
    // Pressing a button would move the focus to it, out of xterm's
    // textarea, and the phone would put its keyboard away.
    for (const type of ['pointerdown', 'mousedown'] as const) {
      this.el.addEventListener(type, (ev) => ev.preventDefault());
    }
    parent.append(this.el);
    // Compositions in a terminal's textarea, not in the search box or the queue's.
    const inTerminal = (ev: Event) => ev.target instanceof HTMLTextAreaElement && ev.target.classList.contains('xterm-helper-textarea');
    parent.addEventListener('compositionstart', (ev) => inTerminal(ev) && (this.composing = true), true);
    parent.addEventListener('compositionend', (ev) => inTerminal(ev) && (this.composing = false), true);
    // With Ctrl latched, the first letter composed is the key: a phone
    // keyboard would hold it in its word until a space. Once xterm.js has
    // noted the composition's end (a zero-delay timer from its update,
    // set before this input event), the letter goes, as Ctrl and it.
    parent.addEventListener('input', (ev) => {
      if (!this.ctrl || !inTerminal(ev) || (ev as InputEvent).inputType !== 'insertCompositionText') return;
      window.setTimeout(() => {
        const active = this.deps.active();
        if (this.ctrl && active) this.commitComposition(active.term);
      }, 0);
    }, true);
    if (!this.enabled) return;
    deps.subscribe(() => this.render());
    const vv = window.visualViewport;
    if (vv) {
      vv.addEventListener('resize', () => this.followViewport());
      vv.addEventListener('scroll', () => this.followViewport());
    }
    this.render();
    this.followViewport();
  }

  private render(): void {
    this.el.hidden = !this.enabled || !this.deps.active();
  }

  private setCtrl(on: boolean): void {
    this.ctrl = on;
    this.ctrlBtn.setAttribute('aria-pressed', String(on));
  }

  /** Presses k; with the latched Ctrl, unless ctrl says (a held key repeats as it first went). */
  private press(k: Key, ctrl = this.ctrl): void {
    const active = this.deps.active();
    if (k.id === 'ctrl') {
      this.setCtrl(!this.ctrl);
      return;
    }
    // Let go first: what the bar sends is already the control key, and
    // must not be made one again on its way through rewrite().
    this.setCtrl(false);
    if (!active) return;
    this.commitComposition(active.term);
    active.term.input(k.bytes(active.term, ctrl), true);
    this.revealCursor();
  }

  /**
   * A word being composed (a phone keyboard composes every word until its
   * space; an IME its syllables) goes before the bar's key, as it does
   * before a keyboard's key: xterm.js sends the composition when a key
   * goes down in the middle of it (CompositionHelper.keydown), so a key
   * with no meaning goes down and up in its textarea. The textarea is then
   * emptied, as xterm.js empties it for Enter and Ctrl+C, which ends the
   * keyboard's composition: what it composed is sent, and never again.
   */
  private commitComposition(term: Terminal): void {
    const ta = term.textarea;
    if (!this.composing || !ta) return;
    this.composing = false;
    for (const type of ['keydown', 'keyup']) {
      ta.dispatchEvent(new KeyboardEvent(type, { key: 'Unidentified', bubbles: true, cancelable: true }));
    }
    ta.value = '';
  }

  /** A repeating key went down: held long enough, it presses, and goes on pressing until let go. */
  private hold(k: Key, ev: PointerEvent): void {
    if (!ev.isPrimary || ev.button !== 0) return;
    this.release();
    // A click that never came (a long press the browser made a gesture of)
    // must not swallow the next tap.
    this.repeated = false;
    this.holdTimer = window.setTimeout(() => {
      this.repeated = true;
      const ctrl = this.ctrl;
      this.press(k, ctrl);
      this.repeatTimer = window.setInterval(() => this.press(k, ctrl), REPEAT_EVERY_MS);
    }, REPEAT_DELAY_MS);
  }

  private release(): void {
    window.clearTimeout(this.holdTimer);
    window.clearInterval(this.repeatTimer);
    this.holdTimer = this.repeatTimer = undefined;
  }

  /**
   * What the user typed, with the latched Ctrl applied to its first
   * character: a phone keyboard's "c" after Ctrl goes as ^C. A key Ctrl
   * does not change goes as it is. Either way the latch lets go, as a
   * modifier key does once another key is pressed. Never called with
   * xterm's own reports (focus, mouse), which are no key.
   */
  rewrite(data: string): string {
    if (!this.ctrl || data.length === 0) return data;
    this.setCtrl(false);
    const first = String.fromCodePoint(data.codePointAt(0)!);
    const c = controlOf(first);
    return c === null ? data : c + data.slice(first.length);
  }

  /**
   * The keyboard came up or went, or the visual viewport moved: the app
   * takes the part of the screen that shows, the bar its bottom.
   */
  private followViewport(): void {
    const vv = window.visualViewport;
    if (!vv) return;
    const app = document.getElementById('app');
    if (!app) return;
    // Pinch-zoomed, the visual viewport is small because it is magnified:
    // the layout stays as it is.
    const covered = window.innerHeight - (vv.offsetTop + vv.height);
    const up = vv.scale < 1.01 && covered >= KEYBOARD_MIN_PX;
    const root = document.documentElement;
    if (up) {
      root.style.setProperty('--keybar-vv-top', `${Math.max(0, vv.offsetTop)}px`);
      root.style.setProperty('--keybar-vv-height', `${vv.height}px`);
    }
    app.classList.toggle('keyboard-up', up);
    app.dataset.keyboard = up ? 'up' : 'down';
    const opened = up && !this.keyboardUp;
    this.keyboardUp = up;
    window.clearTimeout(this.settleTimer);
    this.settleTimer = window.setTimeout(() => this.revealCursor(opened), SETTLE_MS);
  }

  /**
   * Scrolls the cursor's line into view: the keyboard took rows from the
   * terminal, or the session is drawn taller than the pane (watched at
   * another page's size, termsize.ts) and its host scrolls. toBottom: the
   * keyboard just came up, to type; xterm's own scrollback goes to the
   * bottom, as a key would take it.
   */
  revealCursor(toBottom = false, tries = 5): void {
    const active = this.deps.active();
    if (!active) return;
    const { term, host } = active;
    const buf = term.buffer.active;
    if (toBottom && buf.viewportY !== buf.baseY) {
      term.scrollToBottom();
      // Just after a resize xterm's scroll area still has its old height
      // (it catches up in a frame), and the scroll stops short.
      if (buf.viewportY !== buf.baseY && tries > 1) {
        requestAnimationFrame(() => this.revealCursor(true, tries - 1));
        return;
      }
    }
    if (host.scrollHeight <= host.clientHeight + 1) return;
    const screen = host.querySelector('.xterm-screen');
    if (!screen || term.rows === 0) return;
    const s = screen.getBoundingClientRect();
    const cell = s.height / term.rows;
    const row = buf.baseY + buf.cursorY - buf.viewportY;
    if (row < 0 || row >= term.rows) return; // xterm's own scrollback is elsewhere
    const top = s.top - host.getBoundingClientRect().top + host.scrollTop + row * cell;
    const bottom = top + cell;
    const margin = cell / 2;
    if (bottom + margin > host.scrollTop + host.clientHeight) host.scrollTop = bottom + margin - host.clientHeight;
    else if (top - margin < host.scrollTop) host.scrollTop = Math.max(0, top - margin);
  }
}
