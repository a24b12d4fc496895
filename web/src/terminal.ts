// One xterm.js terminal per session: its addons, its place in the stream
// (seq) and the attach/detach dance of docs/protocol.md section 4, its size,
// and back-pressure when output comes faster than xterm can draw it.

import { Terminal, type ITheme } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { SearchAddon } from '@xterm/addon-search';
import { Unicode11Addon } from '@xterm/addon-unicode11';
import { WebLinksAddon } from '@xterm/addon-web-links';
import { WebglAddon } from '@xterm/addon-webgl';
import { h } from './dom';
import type { ClientMessage, SessionAttachedMessage, TerminalOutputMessage } from './types';

/**
 * Flood control: when more than this many characters are written to xterm
 * but not yet parsed (their write callback has not fired), the view detaches
 * from the session and lets xterm catch up; once everything is drained it
 * attaches again with since = the last seq it took. The server then either
 * continues from there (reset:false) or, if its ring has moved past that
 * point, replays the ring after reset:true. Either way the page stays
 * responsive and the screen ends up right; in between, the flood's middle is
 * skipped, as a slow ssh client would.
 */
export const FLOOD_LIMIT = 4 * 1024 * 1024;

/** Lines of scrollback each terminal keeps. */
const SCROLLBACK_LINES = 10_000;
const MIN_SIZE = 1;
const MAX_SIZE = 1000;
const RESIZE_DEBOUNCE_MS = 50;

export const terminalTheme: ITheme = {
  background: '#0e1116',
  foreground: '#d3d9e1',
  cursor: '#7cc4ff',
  cursorAccent: '#0e1116',
  selectionBackground: '#2b4a6b',
  selectionInactiveBackground: '#243447',
  scrollbarSliderBackground: 'rgba(139, 151, 168, 0.25)',
  scrollbarSliderHoverBackground: 'rgba(139, 151, 168, 0.4)',
  scrollbarSliderActiveBackground: 'rgba(139, 151, 168, 0.55)',
  black: '#1b2028',
  red: '#f2706a',
  green: '#57c98a',
  yellow: '#e2b64f',
  blue: '#6aa8f7',
  magenta: '#c49bf0',
  cyan: '#4fc7cf',
  white: '#c7ced8',
  brightBlack: '#5f6b7c',
  brightRed: '#ff8f88',
  brightGreen: '#79dea5',
  brightYellow: '#f3cf72',
  brightBlue: '#93c1ff',
  brightMagenta: '#dab8ff',
  brightCyan: '#7ee0e6',
  brightWhite: '#f1f4f8',
};

const searchDecorations = {
  matchBackground: '#3a4a2a',
  matchBorder: '#6b7d3a',
  matchOverviewRuler: '#b4c75a',
  activeMatchBackground: '#8a6d1e',
  activeMatchBorder: '#f3cf72',
  activeMatchColorOverviewRuler: '#f3cf72',
};

let webglSupport: boolean | undefined;
function webglAvailable(): boolean {
  if (webglSupport === undefined) {
    try {
      webglSupport = !!document.createElement('canvas').getContext('webgl2');
    } catch {
      webglSupport = false;
    }
  }
  return webglSupport;
}

function clampSize(n: number): number {
  return Math.min(MAX_SIZE, Math.max(MIN_SIZE, Math.floor(n)));
}

function openLink(uri: string): void {
  try {
    const u = new URL(uri);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return;
  } catch {
    return;
  }
  window.open(uri, '_blank', 'noopener,noreferrer');
}

export interface TerminalViewDeps {
  send(msg: ClientMessage): boolean;
  /** Keys typed or text pasted into the terminal. */
  onInput(sessionId: string, data: string): void;
  /** Return false to keep a key from the terminal (app shortcuts). */
  keyFilter(ev: KeyboardEvent): boolean;
  /** Flood control paused or resumed the stream. */
  onFlowChange(sessionId: string, paused: boolean): void;
}

type StreamState = 'detached' | 'attaching' | 'attached' | 'paused';

export class TerminalView {
  readonly term: Terminal;
  readonly host: HTMLDivElement;
  readonly search = new SearchAddon({ highlightLimit: 2000 });
  private readonly fit = new FitAddon();
  private readonly observer: ResizeObserver;
  private webgl: WebglAddon | null = null;
  /** The seq just after the last output taken into the terminal. */
  private seq: number | null = null;
  /** Output up to this seq is a replay: its terminal queries go unanswered. */
  private liveFrom = 0;
  /** True while xterm parses replayed output (set and cleared in order with the writes). */
  private replaying = false;
  private stream: StreamState = 'detached';
  /** Characters handed to term.write whose callback has not fired yet. */
  private pending = 0;
  /** The size last sent to the server on this connection. */
  private sentSize: { cols: number; rows: number } | null = null;
  private resizeTimer: number | undefined;
  private disposed = false;

  constructor(
    readonly sessionId: string,
    parent: HTMLElement,
    size: { cols: number; rows: number },
    private readonly deps: TerminalViewDeps,
  ) {
    this.host = h('div', { class: 'term-host', 'data-session-id': sessionId });
    parent.append(this.host);
    this.term = new Terminal({
      cols: clampSize(size.cols || 80),
      rows: clampSize(size.rows || 24),
      allowProposedApi: true, // unicode versions and search decorations
      cursorBlink: true,
      cursorInactiveStyle: 'outline',
      fontFamily: '"JetBrains Mono", "Fira Code", "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace',
      fontSize: 13,
      lineHeight: 1.15,
      scrollback: SCROLLBACK_LINES,
      theme: terminalTheme,
      linkHandler: { activate: (_ev, text) => openLink(text), allowNonHttpProtocols: false },
    });
    this.term.loadAddon(this.fit);
    this.term.loadAddon(this.search);
    this.term.loadAddon(new Unicode11Addon());
    this.term.unicode.activeVersion = '11';
    this.term.loadAddon(new WebLinksAddon((_ev, uri) => openLink(uri)));
    this.term.attachCustomKeyEventHandler((ev) => this.deps.keyFilter(ev));
    this.guardReplays();
    this.term.onData((data) => this.deps.onInput(this.sessionId, data));
    this.term.open(this.host);
    this.loadWebgl();
    this.observer = new ResizeObserver(() => this.scheduleFit());
    this.observer.observe(this.host);
  }

  /**
   * xterm.js answers terminal queries (device attributes, cursor position,
   * mode and setting reports, colour queries) by "typing" the answer. In
   * replayed output the program that asked is long past the question (or
   * gone), so the answer would land on its command line or run as keys:
   * while replayed bytes are parsed, these handlers take the queries and
   * answer nothing. Live output is answered as before.
   */
  private guardReplays(): void {
    const p = this.term.parser;
    const swallow = (): boolean => this.replaying;
    for (const id of [
      { final: 'c' }, // DA1
      { prefix: '>', final: 'c' }, // DA2
      { prefix: '=', final: 'c' }, // DA3
      { final: 'n' }, // DSR, cursor position
      { prefix: '?', final: 'n' }, // DEC DSR
      { intermediates: '$', final: 'p' }, // DECRQM (ANSI)
      { prefix: '?', intermediates: '$', final: 'p' }, // DECRQM (DEC)
      { final: 't' }, // window reports
      { prefix: '>', final: 'q' }, // XTVERSION
      { prefix: '?', final: 'u' }, // kitty keyboard flags
    ]) {
      p.registerCsiHandler(id, swallow);
    }
    p.registerDcsHandler({ intermediates: '$', final: 'q' }, swallow); // DECRQSS
    p.registerDcsHandler({ intermediates: '+', final: 'q' }, swallow); // XTGETTCAP
    for (const osc of [4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]) {
      p.registerOscHandler(osc, (data) => this.replaying && data.includes('?'));
    }
  }

  /** Which renderer draws the terminal. */
  get renderer(): 'webgl' | 'dom' {
    return this.webgl ? 'webgl' : 'dom';
  }

  get isPaused(): boolean {
    return this.stream === 'paused';
  }

  /** WebGL when the browser has it; xterm's DOM renderer otherwise, and after a lost context. */
  private loadWebgl(): void {
    if (!webglAvailable()) return;
    try {
      const addon = new WebglAddon();
      addon.onContextLoss(() => {
        addon.dispose();
        if (this.webgl === addon) this.webgl = null;
      });
      this.term.loadAddon(addon);
      this.webgl = addon;
    } catch {
      this.webgl = null;
    }
  }

  /**
   * Starts or restarts streaming on the current connection: attach with
   * since = the last seq taken (none the first time, for a full replay),
   * then report the size, which the server remembers per connection.
   */
  attach(): void {
    if (this.disposed) return;
    this.sentSize = null;
    if (this.pending > FLOOD_LIMIT) {
      this.stream = 'paused'; // the drain callback attaches
      return;
    }
    // A replay need not carry more lines than the terminal keeps: parsing
    // lines only to drop them from the scrollback made a reload slow.
    const lines = SCROLLBACK_LINES + this.term.rows;
    const msg: ClientMessage =
      this.seq === null
        ? { type: 'session.attach', sessionId: this.sessionId, lines }
        : { type: 'session.attach', sessionId: this.sessionId, since: this.seq, lines };
    if (!this.deps.send(msg)) {
      this.stream = 'detached';
      return;
    }
    const wasPaused = this.stream === 'paused';
    this.stream = 'attaching';
    if (wasPaused) this.deps.onFlowChange(this.sessionId, false);
    this.fitAndReport();
  }

  /**
   * Attaches on a new connection unless already attaching (a view created
   * after the socket opened attached itself) or waiting for xterm to drain.
   */
  attachIfDetached(): void {
    if (this.stream === 'detached' || (this.stream === 'paused' && this.pending === 0)) this.attach();
  }

  /** The connection is gone, and the server's attachment with it. */
  connectionLost(): void {
    this.sentSize = null;
    if (this.stream !== 'paused') this.stream = 'detached';
  }

  onAttached(m: SessionAttachedMessage): void {
    // A resync that crossed our detach: the next attach starts over anyway.
    if (this.stream === 'paused' || this.stream === 'detached') return;
    if (m.reset) this.resetScreen();
    this.seq = m.seq;
    this.liveFrom = m.live ?? 0;
    this.stream = 'attached';
  }

  onOutput(m: TerminalOutputMessage): void {
    // Output from before (re)attaching is skipped: the attach's since
    // covers it, so nothing is lost and nothing shown twice.
    if (this.stream !== 'attached') return;
    this.seq = m.seq;
    // The server ends a frame at the live boundary, so a frame is wholly
    // replayed or wholly live.
    this.write(m.data, m.seq <= this.liveFrom);
  }

  private write(data: string, replayed: boolean): void {
    const n = data.length;
    this.pending += n;
    // Empty writes run their callbacks in order with the data around
    // them: the flag is set exactly while xterm parses this frame.
    if (replayed) this.term.write('', () => (this.replaying = true));
    this.term.write(data, () => {
      this.pending -= n;
      if (this.pending === 0 && this.stream === 'paused' && !this.disposed) this.attach();
    });
    if (replayed) this.term.write('', () => (this.replaying = false));
    if (this.pending > FLOOD_LIMIT && this.stream === 'attached') {
      this.deps.send({ type: 'session.detach', sessionId: this.sessionId });
      this.stream = 'paused';
      this.deps.onFlowChange(this.sessionId, true);
    }
  }

  /** term.reset(), in order with the writes still queued in xterm. */
  private resetScreen(): void {
    if (this.pending === 0) {
      this.term.reset();
      return;
    }
    this.term.write('', () => this.term.reset());
  }

  /** Fits the terminal to its pane and tells the server a new size. */
  fitAndReport(): void {
    if (this.disposed) return;
    if (this.host.clientWidth > 0 && this.host.clientHeight > 0) {
      try {
        this.fit.fit();
      } catch {
        // not rendered yet
      }
    }
    if (this.stream === 'detached' || this.stream === 'paused') return;
    if (this.host.clientWidth === 0) return; // hidden: keep the session's size
    const cols = clampSize(this.term.cols);
    const rows = clampSize(this.term.rows);
    if (this.sentSize?.cols === cols && this.sentSize.rows === rows) return;
    if (this.deps.send({ type: 'terminal.resize', sessionId: this.sessionId, cols, rows })) {
      this.sentSize = { cols, rows };
    }
  }

  private scheduleFit(): void {
    window.clearTimeout(this.resizeTimer);
    this.resizeTimer = window.setTimeout(() => this.fitAndReport(), RESIZE_DEBOUNCE_MS);
  }

  findNext(text: string, incremental = false): boolean {
    return this.search.findNext(text, { incremental, decorations: searchDecorations });
  }

  findPrevious(text: string): boolean {
    return this.search.findPrevious(text, { decorations: searchDecorations });
  }

  clearSearch(): void {
    this.search.clearDecorations();
  }

  focus(): void {
    this.term.focus();
  }

  dispose(): void {
    this.disposed = true;
    window.clearTimeout(this.resizeTimer);
    this.observer.disconnect();
    this.term.dispose();
    this.host.remove();
  }
}
