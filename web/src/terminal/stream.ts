// One session's output stream as this page takes it (docs/protocol.md,
// section 4), the client's half of the server's ws/stream.go: attach, with
// since = the last seq taken once there is one; the replay or continuation
// session.attached announces, reset or not, and where live output begins;
// acknowledgements of what was parsed while the terminal paces the
// program; a pause when output comes faster than it is parsed; and the
// scrollback fetched into a second terminal behind a screen shown first.
//
// It touches no DOM and no xterm.js: what it writes, resets and sends goes
// through StreamDeps, and it learns that a write was parsed from the
// callback it gave with it. TerminalView (terminal.ts) owns the xterm.js
// terminals it writes to, their size, renderer and search.

import type { ClientMessage, SessionAttachedMessage, TerminalOutputMessage } from '../shared/types';

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
export const SCROLLBACK_LINES = 10_000;
/**
 * A fresh view first asks for this many screens of lines: enough to draw
 * the screen at once. Parsing the whole scrollback first (10,000 lines of
 * a build log take xterm.js a few hundred milliseconds) held a reload's
 * screen back; the scrollback follows, into a fill (see startFill).
 */
export const FIRST_SCREENS = 2;
/**
 * A pacing terminal acknowledges what it parsed at least every ACK_BYTES,
 * and what is left within ACK_TRAIL_MS, so the server never counts it as
 * stalled (2 s behind without progress) while it keeps up.
 */
export const ACK_BYTES = 128 * 1024;
export const ACK_TRAIL_MS = 200;

/** The terminal output goes to: the one shown, or the fill being built behind it. */
export type Screen = 'shown' | 'fill';

/**
 * Where the stream stands on this connection: no attachment; an attach
 * sent and its session.attached awaited; output flowing; detached by flood
 * control until what was written is parsed.
 */
export type StreamState = 'detached' | 'attaching' | 'attached' | 'paused';

/** What the stream does to the terminals and the connection. */
export interface StreamDeps {
  /** Sends on the connection; false when it is gone. */
  send(msg: ClientMessage): boolean;
  /**
   * Hands data to screen's terminal; replayed says its terminal queries go
   * unanswered. parsed must be called once the terminal has parsed it.
   */
  write(screen: Screen, data: string, replayed: boolean, parsed: () => void): void;
  /** Clears screen's terminal; queued says writes are still being parsed, which it must come after. */
  reset(screen: Screen, queued: boolean): void;
  /** The shown terminal's rows: how many lines an attach asks for depends on them. */
  rows(): number;
  /** Builds the hidden terminal a fill writes to. */
  openFill(): void;
  /** Throws the fill's terminal away. */
  closeFill(): void;
  /** The fill caught up: its terminal takes the shown one's place. */
  showFill(): void;
  /** An attach is about to go out: the size is to be reported anew on it. */
  attaching(): void;
  /** An attach went out: report the size. */
  attachSent(): void;
  /** Flood control paused or resumed the stream. */
  flowChanged(paused: boolean): void;
  /** Calls fn after the next frame is drawn; returns what cancels it. */
  afterPaint(fn: () => void): () => void;
  /** Calls fn after ms; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** Characters handed to a terminal whose parse has not been reported yet. */
interface Tally {
  pending: number;
}

/**
 * The scrollback being filled behind a screen shown first: a terminal that
 * takes a whole replay while the shown one stays frozen, and replaces it
 * once it has caught up.
 */
interface Fill extends Tally {
  /** Its seq, once its session.attached came. */
  seq: number | null;
  liveFrom: number;
  /** The shown terminal's seq when the fill began: caught up once past it. */
  target: number;
}

/** One session's stream on this connection: see the file's comment. */
export class TerminalStream {
  private state: StreamState = 'detached';
  /** The seq just after the last output taken into the shown terminal. */
  private seq: number | null = null;
  /** Output up to this seq is a replay: its terminal queries go unanswered. */
  private liveFrom = 0;
  private shown: Tally = { pending: 0 };
  /** Whether the next attach asks for a screen first (see FIRST_SCREENS). */
  private screenFirst = true;
  /** Whether a replay left lines out: once what came is parsed, fill. */
  private fillPending = false;
  private fill: Fill | null = null;
  /** Cancels the fill's start, due once the screen is drawn. */
  private cancelFillStart: (() => void) | null = null;
  /**
   * Whether this terminal paces its program (it is shown and its page is
   * visible): it then acknowledges what it parsed, and the server holds
   * the program rather than skip output it has not taken.
   */
  private pacing = false;
  /** The seq parsed last, and the last one acknowledged on this attachment. */
  private parsedSeq: number | null = null;
  private ackedSeq: number | null = null;
  private cancelAck: (() => void) | null = null;
  private closed = false;

  constructor(
    readonly sessionId: string,
    private readonly deps: StreamDeps,
  ) {}

  /** Where the stream stands. */
  get status(): StreamState {
    return this.state;
  }

  /**
   * Reports whether the shown terminal has parsed everything up to the
   * live output: the replay has set its modes as the program left them
   * (focus reporting among them), so what it sends now is the program's.
   */
  get caughtUp(): boolean {
    return this.state === 'attached' && this.shown.pending === 0 && this.seq !== null && this.seq >= this.liveFrom;
  }

  /** Reports whether flood control holds the stream until the terminal drains. */
  get isPaused(): boolean {
    return this.state === 'paused';
  }

  /** Reports whether an attachment is asked for or running: sizes are worth reporting. */
  get isStreaming(): boolean {
    return this.state === 'attaching' || this.state === 'attached';
  }

  /** Reports whether a fill's terminal is being built behind the shown one. */
  get isFilling(): boolean {
    return this.fill !== null;
  }

  /** Characters written to the shown terminal and not parsed yet. */
  get pending(): number {
    return this.shown.pending;
  }

  /**
   * Starts or restarts streaming on the current connection: attach with
   * since = the last seq taken (none the first time, for a replay).
   */
  attach(): void {
    if (this.closed) return;
    this.deps.attaching();
    this.dropFill();
    if (this.shown.pending > FLOOD_LIMIT) {
      this.state = 'paused'; // the drain attaches
      return;
    }
    // A replay need not carry more lines than the terminal keeps: parsing
    // lines only to drop them from the scrollback made a reload slow. The
    // first one carries a screen or two, and the rest follows.
    const rows = this.deps.rows();
    const lines = this.seq === null && this.screenFirst ? FIRST_SCREENS * rows : SCROLLBACK_LINES + rows;
    this.screenFirst = false;
    this.sendAttach(
      this.seq === null
        ? { type: 'session.attach', sessionId: this.sessionId, lines }
        : { type: 'session.attach', sessionId: this.sessionId, since: this.seq, lines },
    );
  }

  /** Sends an attach; false when the connection is gone. */
  private sendAttach(msg: ClientMessage): boolean {
    this.ackedSeq = null; // a new attachment paces nothing until it acknowledges
    if (!this.deps.send(msg)) {
      this.state = 'detached';
      return false;
    }
    const wasPaused = this.state === 'paused';
    this.state = 'attaching';
    if (wasPaused) this.deps.flowChanged(false);
    this.deps.attachSent();
    return true;
  }

  /**
   * Attaches on a new connection unless already attaching (a view created
   * after the socket opened attached itself) or waiting for the terminal
   * to drain.
   */
  attachIfDetached(): void {
    if (this.state === 'detached' || (this.state === 'paused' && this.shown.pending === 0)) this.attach();
  }

  /** The connection is gone, and the server's attachment with it. */
  connectionLost(): void {
    this.dropFill();
    if (this.state !== 'paused') this.state = 'detached';
  }

  /**
   * Starts or stops pacing the program: a terminal shown in a visible page
   * paces it; a hidden one (another tab, a background page, a sleeping
   * laptop) must never hold it up, and resumes from its seq when shown.
   */
  setPacing(on: boolean): void {
    if (on === this.pacing) return;
    this.pacing = on;
    if (this.state === 'attached' && this.parsedSeq !== null) this.ack(this.parsedSeq, on);
  }

  /**
   * session.attached: a replay (reset) or a continuation follows, and, on
   * a resync, replaces what came before. Returns false when it is ignored.
   */
  attached(m: SessionAttachedMessage): boolean {
    // A resync that crossed our detach: the next attach starts over anyway.
    if (this.state === 'paused' || this.state === 'detached') return false;
    const fill = this.fill;
    if (fill) {
      // The whole replay, for the terminal that will replace the shown one.
      if (m.reset) this.deps.reset('fill', fill.pending > 0);
      fill.seq = m.seq;
      fill.liveFrom = m.live ?? 0;
      this.state = 'attached';
      this.consumed(m.seq);
      return true;
    }
    if (m.reset) this.deps.reset('shown', this.shown.pending > 0);
    this.seq = m.seq;
    this.liveFrom = m.live ?? 0;
    this.state = 'attached';
    this.fillPending = !!m.partial;
    this.consumed(m.seq);
    return true;
  }

  /** terminal.output: written to the terminal it belongs to, unless it came before the attach. */
  output(m: TerminalOutputMessage): void {
    // Output from before (re)attaching is skipped: the attach's since
    // covers it, so nothing is lost and nothing shown twice.
    if (this.state !== 'attached') return;
    // The server ends a frame at the live boundary, so a frame is wholly
    // replayed or wholly live.
    const fill = this.fill;
    if (fill) {
      fill.seq = m.seq;
      this.write('fill', fill, m.data, m.seq <= fill.liveFrom, () => this.fillParsed(fill, m.seq));
      if (fill.pending > FLOOD_LIMIT) this.attach(); // give up the scrollback: the screen goes on
      return;
    }
    this.seq = m.seq;
    const seq = m.seq;
    this.write('shown', this.shown, m.data, seq <= this.liveFrom, () => this.parsed(seq));
    if (this.shown.pending > FLOOD_LIMIT && this.state === 'attached') {
      this.deps.send({ type: 'session.detach', sessionId: this.sessionId });
      this.state = 'paused';
      this.deps.flowChanged(true);
    }
  }

  /** Ends the stream for good: nothing is sent or written after. */
  close(): void {
    this.closed = true;
    this.cancelAck?.();
    this.cancelAck = null;
    this.dropFill();
  }

  private write(screen: Screen, tally: Tally, data: string, replayed: boolean, parsed: () => void): void {
    const n = data.length;
    tally.pending += n;
    this.deps.write(screen, data, replayed, () => {
      tally.pending -= n;
      parsed();
    });
  }

  private ack(seq: number, pace = true): void {
    this.cancelAck?.();
    this.cancelAck = null;
    if (this.deps.send({ type: 'terminal.ack', sessionId: this.sessionId, seq, pace })) this.ackedSeq = seq;
  }

  /** Output up to seq is parsed: acknowledge it while pacing (see ACK_BYTES). */
  private consumed(seq: number): void {
    this.parsedSeq = seq;
    if (!this.pacing || this.state !== 'attached') return;
    if (this.ackedSeq === null || seq - this.ackedSeq >= ACK_BYTES) {
      this.ack(seq);
    } else if (seq > this.ackedSeq && this.cancelAck === null) {
      this.cancelAck = this.deps.after(ACK_TRAIL_MS, () => {
        this.cancelAck = null;
        if (this.pacing && this.state === 'attached' && this.parsedSeq !== null) this.ack(this.parsedSeq);
      });
    }
  }

  /** The shown terminal parsed its output up to seq. */
  private parsed(seq: number): void {
    if (this.closed) return;
    if (!this.fill) this.consumed(seq);
    if (this.shown.pending === 0 && this.state === 'paused') this.attach();
    if (this.fillPending && this.shown.pending === 0 && seq === this.seq && !this.cancelFillStart) {
      // After the screen just parsed is drawn: building the fill's terminal
      // and parsing its first pieces in this task held that frame back by
      // tens of milliseconds on a reload.
      this.cancelFillStart = this.deps.afterPaint(() => {
        this.cancelFillStart = null;
        this.startFill();
      });
    }
  }

  /**
   * The screen is shown; now the scrollback the first replay left out: a
   * new terminal takes a whole replay, while the shown one stays as it is,
   * and replaces it once it has caught up (a few hundred milliseconds).
   */
  private startFill(): void {
    this.fillPending = false;
    if (this.closed || this.state !== 'attached' || this.seq === null) return;
    this.deps.openFill();
    this.fill = { pending: 0, seq: null, liveFrom: 0, target: this.seq };
    if (!this.sendAttach({ type: 'session.attach', sessionId: this.sessionId, lines: SCROLLBACK_LINES + this.deps.rows() })) {
      this.dropFill();
    }
  }

  /** The fill's terminal parsed up to seq. */
  private fillParsed(fill: Fill, seq: number): void {
    if (this.fill !== fill || this.closed) return;
    this.consumed(seq);
    if (seq < fill.target || fill.pending > 0 || fill.seq === null) return;
    // Caught up: it shows what the shown one shows, and its scrollback.
    this.fill = null;
    this.shown = fill;
    this.seq = fill.seq;
    this.liveFrom = fill.liveFrom;
    this.deps.showFill();
  }

  private dropFill(): void {
    this.fillPending = false;
    this.cancelFillStart?.();
    this.cancelFillStart = null;
    if (this.fill) this.deps.closeFill();
    this.fill = null;
  }
}
