// One xterm.js terminal per session: its addons, its size, its renderer,
// its search, and terminal queries in replays left unanswered (and nothing
// else sent while a replay is parsed). Where it stands in the session's
// stream (attach, replay, acks, flood control, the scrollback filled
// behind a screen shown first: docs/protocol.md, section 4) is
// TerminalStream's (stream.ts), which says what to write and send.

import { Terminal, type ITheme } from '@xterm/xterm';
import { FitAddon } from '@xterm/addon-fit';
import { SearchAddon } from '@xterm/addon-search';
import { Unicode11Addon } from '@xterm/addon-unicode11';
import { WebLinksAddon } from '@xterm/addon-web-links';
import type { WebglAddon } from '@xterm/addon-webgl';
import { h, whenIdle } from '../shared/dom';
import { loadTabSetting, saveTabSetting } from '../shared/settings';
import { BASE_FONT_SIZE, cellSize, fittingSize, showAt, showOwn, type Size } from './termsize';
import { SCROLLBACK_LINES, TerminalStream, type Screen } from './stream';
import type { ClientMessage, SessionAttachedMessage, SessionResizedMessage, TerminalOutputMessage } from '../shared/types';

/**
 * The most characters handed to xterm.js in one write (see Feed.write):
 * a few milliseconds of parsing.
 */
const WRITE_PIECE = 16 * 1024;
const MIN_SIZE = 1;
const MAX_SIZE = 1000;
const RESIZE_DEBOUNCE_MS = 50;
/** Where this tab keeps the size it held a session at (sessionStorage), by session. */
const HELD_KEY = 'agentmux.heldSize.';

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
/**
 * Reports whether WebGL2 runs on a GPU. A software rasterizer (SwiftShader,
 * llvmpipe: headless browsers, VMs, remote desktops) draws a terminal more
 * slowly than xterm's DOM renderer does.
 */
function webglAvailable(): boolean {
  if (webglSupport === undefined) {
    try {
      const gl = document.createElement('canvas').getContext('webgl2');
      const info = gl?.getExtension('WEBGL_debug_renderer_info');
      const renderer = gl ? String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER)) : '';
      webglSupport = !!gl && !/swiftshader|llvmpipe|softpipe|software/i.test(renderer);
    } catch {
      webglSupport = false;
    }
  }
  return webglSupport;
}

/**
 * How long a new terminal draws with the DOM renderer before it looks for
 * WebGL. A reload's page first goes idle just after the first screen is
 * parsed, before it is drawn: probing WebGL then (a context, some 15 ms
 * with a software rasterizer) and loading the chunk held that frame back.
 */
const WEBGL_DELAY_MS = 500;
/** How often a terminal asks for the WebGL chunk, and how long it waits after a failure. */
const WEBGL_TRIES = 4;
const WEBGL_RETRY_MS = 5_000;

/**
 * Calls fn once the browser has drawn its next frame, or soon in a hidden
 * page, which draws none; returns a function that cancels the call.
 */
function afterPaint(fn: () => void): () => void {
  let frame: number | undefined;
  let timer: number | undefined;
  if (document.visibilityState === 'visible') {
    // Frame callbacks run just before the frame is drawn; a task queued
    // from one runs after it.
    frame = requestAnimationFrame(() => {
      frame = undefined;
      timer = window.setTimeout(fn, 0);
    });
  } else {
    timer = window.setTimeout(fn, 0);
  }
  return () => {
    if (frame !== undefined) cancelAnimationFrame(frame);
    window.clearTimeout(timer);
  };
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
  /** The view's xterm.js Terminal was created or replaced. */
  onTerminal(sessionId: string, term: Terminal): void;
  /** Scrollback search results changed. */
  onSearchResults(sessionId: string, index: number, count: number): void;
  /** Whether this page holds the session's size, or the sizes, changed (see sizing). */
  onSizing(sessionId: string): void;
  /**
   * A page that may only watch (a read-only link, share/main.ts): xterm.js
   * takes no keys (disableStdin), and the view never sends its size nor
   * takes the session's; it draws the session at the session's size, as a
   * page that has not typed does.
   */
  watchOnly?: boolean;
}

/** A new Terminal, not opened: it parses output as well without a page. watchOnly: it takes no keys. */
function newTerminal(size: { cols: number; rows: number }, watchOnly = false): Terminal {
  const term = new Terminal({
    disableStdin: watchOnly,
    cols: clampSize(size.cols || 80),
    rows: clampSize(size.rows || 24),
    allowProposedApi: true, // unicode versions and search decorations
    cursorBlink: true,
    cursorInactiveStyle: 'outline',
    fontFamily: '"JetBrains Mono", "Fira Code", "SF Mono", Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace',
    fontSize: BASE_FONT_SIZE,
    lineHeight: 1.15,
    scrollback: SCROLLBACK_LINES,
    theme: terminalTheme,
    linkHandler: { activate: (_ev, text) => openLink(text), allowNonHttpProtocols: false },
  });
  // Widths must be right from the first byte parsed.
  term.loadAddon(new Unicode11Addon());
  term.unicode.activeVersion = '11';
  return term;
}

/**
 * A Terminal and the output being written to it. xterm.js answers terminal
 * queries (device attributes, cursor position, mode and setting reports,
 * colour queries) by "typing" the answer. In replayed output the program
 * that asked is long past the question, or gone, so the answer would land
 * on its command line or run as keys: while replayed bytes are parsed, the
 * queries are taken and answer nothing. Live output is answered as before.
 *
 * Turning focus reporting on (DECSET 1004) makes xterm.js report the focus
 * at once, from inside the parser: replayed, a mode the program turned off
 * long ago typed ESC [ O into whatever runs now. So what xterm sends while
 * it parses a replayed mode change is dropped (see onInput); the modes
 * themselves are set as the history sets them, so after the replay they
 * are the program's.
 */
class Feed {
  /** True while xterm parses replayed output (set and cleared in order with the writes). */
  private replaying = false;
  /**
   * True from a replayed DECSET until the parser's task ends (or the
   * replay does): data xterm sends meanwhile comes from the parser, not
   * from the user, whose keys and clicks are tasks of their own.
   */
  private muted = false;

  constructor(readonly term: Terminal) {
    const p = term.parser;
    const swallow = (): boolean => this.replaying;
    for (const final of ['h', 'l']) {
      p.registerCsiHandler({ prefix: '?', final }, () => {
        if (this.replaying && !this.muted) {
          this.muted = true;
          queueMicrotask(() => (this.muted = false));
        }
        return false; // xterm sets the mode
      });
    }
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

  /** Writes data; parsed calls back once xterm has parsed it. */
  write(data: string, replayed: boolean, parsed: () => void): void {
    const n = data.length;
    // Empty writes run their callbacks in order with the data around
    // them: the flag is set exactly while xterm parses this frame.
    if (replayed) this.term.write('', () => (this.replaying = true));
    // In pieces: xterm.js parses each write whole, and yields to the page
    // only between writes (once its time slice is used up). A flood's
    // frames of up to 256 KiB were long tasks of a few hundred
    // milliseconds each on a slow machine, which held back the first
    // screen after a reload, and every key and scroll. A piece may end
    // inside an escape sequence or a surrogate pair: xterm carries both
    // over to the next write.
    let at = 0;
    for (; n - at > WRITE_PIECE; at += WRITE_PIECE) this.term.write(data.slice(at, at + WRITE_PIECE));
    this.term.write(at === 0 ? data : data.slice(at), parsed);
    if (replayed) {
      this.term.write('', () => {
        this.replaying = false;
        this.muted = false; // live output may follow in the same task
      });
    }
  }

  /**
   * Calls fn with what the terminal sends the program: keys, pastes, mouse
   * and focus reports, answers to live queries, and nothing a replay made
   * it send.
   */
  onInput(fn: (data: string) => void): void {
    this.term.onData((data) => {
      if (!this.muted) fn(data);
    });
  }

  /** term.reset(), in order with the writes still queued in xterm (queued: there are some). */
  reset(queued: boolean): void {
    if (!queued) this.term.reset();
    else this.term.write('', () => this.term.reset());
  }
}

export class TerminalView {
  readonly host: HTMLDivElement;
  private feed: Feed;
  /** The terminal a fill writes to (see TerminalStream), hidden until it replaces feed's. */
  private fillFeed: Feed | null = null;
  /** Where this view stands in the session's output stream. */
  private readonly stream: TerminalStream;
  /** Null until the terminal is opened in the page. */
  private fit: FitAddon | null = null;
  private searchAddon!: SearchAddon;
  private readonly observer: ResizeObserver;
  private webgl: WebglAddon | null = null;
  /** The size last sent to the server on this connection. */
  private sentSize: { cols: number; rows: number } | null = null;
  /**
   * Whether this page holds the session's size (termsize.ts): it typed
   * into the session, or took the size, on this connection. Until then it
   * draws the session at sessionSize.
   */
  private holding = false;
  /**
   * Whether this page holds the size again on a new connection, as it
   * did before a reload or a reconnection, and has yet to tell the
   * server: its next resize takes the size (see onAttached).
   */
  private reclaiming = false;
  /** The session's size, as the server last said. */
  private sessionSize: Size;
  /** What fits this pane at the normal font: this page's own size. */
  private ownSize: Size | null = null;
  /** The cell at the normal font, measured while drawn at it. */
  private baseCell: { width: number; height: number } | null = null;
  private resizeTimer: number | undefined;
  private disposed = false;

  /**
   * With attachNow (the connection is open), the attach goes before the
   * terminal is built in the page: the server's replay is on its way while
   * xterm.js measures and lays out, which takes a while on a reload.
   */
  constructor(
    readonly sessionId: string,
    parent: HTMLElement,
    size: { cols: number; rows: number },
    private readonly deps: TerminalViewDeps,
    attachNow: boolean,
  ) {
    this.host = h('div', { class: 'term-host', 'data-session-id': sessionId });
    this.sessionSize = { cols: clampSize(size.cols || 80), rows: clampSize(size.rows || 24) };
    parent.append(this.host);
    this.feed = new Feed(newTerminal(size, deps.watchOnly));
    this.stream = new TerminalStream(sessionId, {
      send: (msg) => this.deps.send(msg),
      write: (screen, data, replayed, parsed) => this.feedOf(screen)?.write(data, replayed, parsed),
      reset: (screen, queued) => this.feedOf(screen)?.reset(queued),
      rows: () => this.feed.term.rows,
      openFill: () => (this.fillFeed = new Feed(newTerminal(this.feed.term, this.deps.watchOnly))),
      closeFill: () => {
        this.fillFeed?.term.dispose();
        this.fillFeed = null;
      },
      showFill: () => this.showFill(),
      attaching: () => (this.sentSize = null),
      attachSent: () => this.fitAndReport(),
      flowChanged: (paused) => this.deps.onFlowChange(this.sessionId, paused),
      afterPaint,
      after: (ms, fn) => {
        const timer = window.setTimeout(fn, ms);
        return () => window.clearTimeout(timer);
      },
    });
    if (attachNow) this.attach();
    this.open();
    this.observer = new ResizeObserver(() => this.scheduleFit());
    this.observer.observe(this.host);
  }

  /** The terminal shown. */
  get term(): Terminal {
    return this.feed.term;
  }

  private feedOf(screen: Screen): Feed | null {
    return screen === 'shown' ? this.feed : this.fillFeed;
  }

  /** Opens the current terminal in the host, with what a shown terminal needs. */
  private open(): void {
    const term = this.feed.term;
    this.fit = new FitAddon();
    this.searchAddon = new SearchAddon({ highlightLimit: 2000 });
    term.loadAddon(this.fit);
    term.loadAddon(this.searchAddon);
    term.loadAddon(new WebLinksAddon((_ev, uri) => openLink(uri)));
    term.attachCustomKeyEventHandler((ev) => this.deps.keyFilter(ev));
    this.feed.onInput((data) => this.deps.onInput(this.sessionId, data));
    this.searchAddon.onDidChangeResults(({ resultIndex, resultCount }) =>
      this.deps.onSearchResults(this.sessionId, resultIndex, resultCount),
    );
    term.open(this.host);
    this.webgl = null;
    this.loadWebgl();
    this.deps.onTerminal(this.sessionId, term);
  }

  /** Which renderer draws the terminal. */
  get renderer(): 'webgl' | 'dom' {
    return this.webgl ? 'webgl' : 'dom';
  }

  get isPaused(): boolean {
    return this.stream.isPaused;
  }

  /** Whether the terminal has caught up with the program (see TerminalStream.caughtUp). */
  get caughtUp(): boolean {
    return this.stream.caughtUp;
  }

  /**
   * WebGL when the browser has it on a GPU; xterm's DOM renderer otherwise,
   * until it loads, and after a lost context. The addon is a chunk of its
   * own: the first screen does not wait for it.
   */
  private loadWebgl(delay = WEBGL_DELAY_MS, tries = WEBGL_TRIES): void {
    const term = this.feed.term;
    void whenIdle(delay)
      .then(() => import('@xterm/addon-webgl'))
      .then(
        ({ WebglAddon }) => {
          if (this.disposed || term !== this.feed.term || !webglAvailable()) return;
          try {
            const addon = new WebglAddon();
            addon.onContextLoss(() => {
              addon.dispose();
              if (this.webgl === addon) this.webgl = null;
            });
            term.loadAddon(addon);
            this.webgl = addon;
          } catch {
            this.webgl = null;
          }
        },
        () => {
          // The chunk did not load (the server is restarting, say): the
          // DOM renderer draws on, and the terminal asks again later.
          if (!this.disposed && term === this.feed.term && tries > 1) this.loadWebgl(WEBGL_RETRY_MS, tries - 1);
        },
      );
  }

  /**
   * Starts or restarts streaming on the current connection (see
   * TerminalStream.attach), then reports the size, which the server
   * remembers per connection.
   */
  attach(): void {
    if (this.disposed) return;
    this.stream.attach();
  }

  /**
   * Attaches on a new connection unless already attaching (a view created
   * after the socket opened attached itself) or waiting for xterm to drain.
   */
  attachIfDetached(): void {
    this.stream.attachIfDetached();
  }

  /**
   * Starts or stops pacing the program: a terminal shown in a visible page
   * paces it; a hidden one never holds it up (TerminalStream.setPacing).
   */
  setPacing(on: boolean): void {
    this.stream.setPacing(on);
  }

  /** The connection is gone, and the server's attachment with it. */
  connectionLost(): void {
    this.sentSize = null;
    // A new connection holds nothing until it types, or takes the size
    // back (onAttached); what this page held is still remembered.
    this.holding = false;
    this.reclaiming = false;
    this.stream.connectionLost();
  }

  onAttached(m: SessionAttachedMessage): void {
    // A resync that crossed our detach: the next attach starts over anyway.
    if (!this.stream.isStreaming) return;
    // This page held the size before it was reloaded (or lost its
    // connection), and nobody changed it since: it holds it again, as the
    // user would by typing. Else the queue opening or the window
    // narrowing would scale the session's text down rather than fit the
    // terminal to its pane. The take waits until the terminal is shown
    // (fitAndReport): a hidden one has no size of its own.
    if (!this.holding && !this.deps.watchOnly && sameSize(this.heldBefore(), m)) {
      this.holding = true;
      this.reclaiming = true;
    }
    // Before the replay is parsed: drawn at the width it was written for.
    this.setSessionSize(m);
    this.stream.attached(m);
    if (this.reclaiming) this.fitAndReport();
  }

  /** The size this tab held the session at, before a reload or on an earlier connection. */
  private heldBefore(): Size | null {
    const m = /^(\d+)x(\d+)$/.exec(loadTabSetting(HELD_KEY + this.sessionId) ?? '');
    return m ? { cols: Number(m[1]), rows: Number(m[2]) } : null;
  }

  /** Remembers, for this tab's next page, the size it holds the session at; null: it holds none. */
  private rememberHeld(size: Size | null): void {
    saveTabSetting(HELD_KEY + this.sessionId, size && `${size.cols}x${size.rows}`);
  }

  onOutput(m: TerminalOutputMessage): void {
    this.stream.output(m);
  }

  /** The fill caught up: its terminal, with the scrollback, replaces the one shown. */
  private showFill(): void {
    const fill = this.fillFeed;
    if (!fill) return;
    this.fillFeed = null;
    const old = this.feed.term;
    const focused = !!old.element?.contains(document.activeElement);
    this.feed = fill;
    old.dispose();
    this.open();
    this.fitAndReport();
    if (focused) this.feed.term.focus();
  }

  /**
   * Sizes the terminal, and tells the server this page's own size: while
   * this page holds the session's size, the terminal fits the pane and the
   * server applies it; until then the server only remembers it, and the
   * terminal shows the session at the session's size. take asks the server
   * to apply it now ("Fit to this window").
   */
  fitAndReport(take = false): void {
    if (this.disposed || !this.fit) return;
    const term = this.feed.term;
    const shown = this.host.clientWidth > 0 && this.host.clientHeight > 0;
    if (shown) {
      if (this.holding) {
        showOwn(term, this.host);
        try {
          this.fit.fit();
        } catch {
          // not rendered yet
        }
      }
      if (term.options.fontSize === BASE_FONT_SIZE) this.baseCell = cellSize(term) ?? this.baseCell;
      if (this.baseCell) {
        this.ownSize = this.holding ? { cols: term.cols, rows: term.rows } : fittingSize(term, this.host, this.baseCell);
        if (!this.holding) showAt(term, this.host, this.sessionSize, this.baseCell);
      }
      this.deps.onSizing(this.sessionId);
    }
    const fill = this.fillFeed?.term;
    if (fill && (fill.cols !== term.cols || fill.rows !== term.rows)) fill.resize(term.cols, term.rows);
    if (!this.stream.isStreaming || this.deps.watchOnly) return;
    if (!shown || !this.ownSize) return; // hidden: keep the session's size
    const cols = clampSize(this.ownSize.cols);
    const rows = clampSize(this.ownSize.rows);
    take ||= this.reclaiming;
    if (!take && this.sentSize?.cols === cols && this.sentSize.rows === rows) return;
    const msg: ClientMessage = { type: 'terminal.resize', sessionId: this.sessionId, cols, rows };
    if (take) msg.take = true;
    if (this.deps.send(msg)) {
      this.sentSize = { cols, rows };
      this.reclaiming = false;
    }
  }

  /** The session's size changed (session.attached or session.resized). */
  private setSessionSize(size: Size): void {
    const { cols, rows } = (this.sessionSize = { cols: clampSize(size.cols), rows: clampSize(size.rows) });
    if (this.holding) return;
    // At once, shown or not: a hidden tab parses its replay too.
    if (this.feed.term.cols !== cols || this.feed.term.rows !== rows) this.feed.term.resize(cols, rows);
    this.fitAndReport();
  }

  /** What the sizing shows: whether this page has the size, the session's, and its own. */
  get sizing(): { holding: boolean; session: Size; own: Size | null } {
    return { holding: this.holding, session: this.sessionSize, own: this.ownSize };
  }

  /**
   * The user typed here: the server gives the session this page's size
   * before the keys, and this page holds it from now on (the keys follow
   * this call).
   */
  typed(): void {
    if (this.holding || this.deps.watchOnly) return;
    this.holding = true;
    this.fitAndReport();
  }

  /** "Fit to this window": this page takes the session's size on purpose. */
  take(): void {
    if (this.deps.watchOnly) return;
    this.holding = true;
    this.fitAndReport(true);
  }

  /** A session.resized; mine: this connection set it. */
  onResized(m: SessionResizedMessage, mine: boolean): void {
    if (mine) {
      // The server made this page the session's sizer (it typed, or took
      // the size), or applied its new size: remembered for a reload.
      this.rememberHeld(m);
    } else {
      // Someone else typed, or took the size.
      this.holding = false;
      this.reclaiming = false;
      this.rememberHeld(null);
    }
    this.setSessionSize(m);
    if (mine) this.deps.onSizing(this.sessionId);
  }

  private scheduleFit(): void {
    window.clearTimeout(this.resizeTimer);
    this.resizeTimer = window.setTimeout(() => this.fitAndReport(), RESIZE_DEBOUNCE_MS);
  }

  findNext(text: string, incremental = false): boolean {
    return this.searchAddon.findNext(text, { incremental, decorations: searchDecorations });
  }

  findPrevious(text: string): boolean {
    return this.searchAddon.findPrevious(text, { decorations: searchDecorations });
  }

  clearSearch(): void {
    this.searchAddon.clearDecorations();
  }

  focus(): void {
    this.feed.term.focus();
  }

  /** The session is gone: its view, and what this tab remembered of it. */
  dispose(): void {
    this.disposed = true;
    this.rememberHeld(null);
    window.clearTimeout(this.resizeTimer);
    this.stream.close();
    this.observer.disconnect();
    this.feed.term.dispose();
    this.host.remove();
  }
}

function sameSize(a: Size | null, b: Size): boolean {
  return !!a && a.cols === b.cols && a.rows === b.rows;
}
