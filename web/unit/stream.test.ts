// TerminalStream (src/terminal/stream.ts) driven by the sequences of
// messages the server sends (docs/protocol.md, section 4): what it writes
// to which terminal, what it resets, and what it sends back.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ACK_BYTES,
  ACK_TRAIL_MS,
  FIRST_SCREENS,
  FLOOD_LIMIT,
  SCROLLBACK_LINES,
  TerminalStream,
  type Screen,
} from '../src/terminal/stream';
import type { ClientMessage, SessionAttachedMessage, TerminalOutputMessage } from '../src/shared/types';

const ID = 'session-1';
const ROWS = 24;

interface Written {
  screen: Screen;
  data: string;
  replayed: boolean;
  parsed: () => void;
}

/**
 * The terminals and the connection, recorded: writes wait in parse order
 * until parse() says the terminal parsed them, as xterm.js's callbacks
 * come; timers and frames wait until run.
 */
class Rig {
  sent: ClientMessage[] = [];
  written: Written[] = [];
  /** What the terminals hold once parsed, by screen, and what cleared them. */
  screens: Record<Screen, string[]> = { shown: [], fill: [] };
  events: string[] = [];
  connected = true;
  private unparsed: Written[] = [];
  timers: { ms: number; fn: () => void; live: boolean }[] = [];
  paints: { fn: () => void; live: boolean }[] = [];
  readonly stream: TerminalStream;

  constructor() {
    this.stream = new TerminalStream(ID, {
      send: (msg) => {
        if (!this.connected) return false;
        this.sent.push(msg);
        return true;
      },
      write: (screen, data, replayed, parsed) => {
        const w = { screen, data, replayed, parsed };
        this.written.push(w);
        this.unparsed.push(w);
      },
      reset: (screen, queued) => {
        this.events.push(`reset ${screen}${queued ? ' queued' : ''}`);
        this.screens[screen] = [];
      },
      rows: () => ROWS,
      openFill: () => this.events.push('openFill'),
      closeFill: () => {
        this.events.push('closeFill');
        this.screens.fill = [];
      },
      showFill: () => {
        this.events.push('showFill');
        this.screens.shown = this.screens.fill;
        this.screens.fill = [];
      },
      attaching: () => this.events.push('attaching'),
      attachSent: () => this.events.push('attachSent'),
      flowChanged: (paused) => this.events.push(paused ? 'paused' : 'resumed'),
      afterPaint: (fn) => {
        const p = { fn, live: true };
        this.paints.push(p);
        return () => (p.live = false);
      },
      after: (ms, fn) => {
        const t = { ms, fn, live: true };
        this.timers.push(t);
        return () => (t.live = false);
      },
    });
  }

  /** The terminals parse what they were given, oldest first (all of it, or n writes). */
  parse(n = Infinity): void {
    while (n-- > 0 && this.unparsed.length > 0) {
      const w = this.unparsed.shift()!;
      this.screens[w.screen].push(w.data);
      w.parsed();
    }
  }

  /** The next frame is drawn. */
  paint(): void {
    const due = this.paints.splice(0);
    for (const p of due) if (p.live) p.fn();
  }

  /** The timers due fire. */
  tick(): void {
    const due = this.timers.splice(0);
    for (const t of due) if (t.live) t.fn();
  }

  liveTimers(): number {
    return this.timers.filter((t) => t.live).length;
  }

  /** A first attach whose replay left lines out: its screen (seq 10 to 20) is parsed, the fill's start due. */
  partialScreen(): void {
    this.stream.attach();
    this.stream.attached(attached(10, { reset: true, partial: true }));
    this.stream.output(output(20, 'screen'));
    this.parse();
  }

  /** The connection drops and a new one opens: the attach it sends, if any. */
  reconnect(): ClientMessage | undefined {
    this.stream.connectionLost();
    this.stream.attachIfDetached();
    return this.take().at(-1);
  }

  /** Takes what was sent since the last call. */
  take(): ClientMessage[] {
    return this.sent.splice(0);
  }
}

function attached(seq: number, more: Partial<SessionAttachedMessage> = {}): SessionAttachedMessage {
  return { type: 'session.attached', sessionId: ID, seq, cols: 80, rows: ROWS, status: 'active', reset: false, live: seq, ...more };
}

function output(seq: number, data: string): TerminalOutputMessage {
  return { type: 'terminal.output', sessionId: ID, seq, data };
}

test('a first attach asks for a screen or two; the replay is written unanswered, live output answered', () => {
  const r = new Rig();
  r.stream.attach();
  assert.deepEqual(r.take(), [{ type: 'session.attach', sessionId: ID, lines: FIRST_SCREENS * ROWS }]);
  assert.deepEqual(r.events, ['attaching', 'attachSent']);
  assert.equal(r.stream.status, 'attaching');

  // Output from before the attachment is the attach's since's: skipped.
  r.stream.output(output(5, 'old'));
  assert.equal(r.written.length, 0);

  assert.equal(r.stream.attached(attached(0, { reset: true, live: 9 })), true);
  assert.equal(r.stream.status, 'attached');
  r.stream.output(output(9, 'replayed!'));
  r.stream.output(output(14, 'live!'));
  assert.deepEqual(
    r.written.map((w) => [w.screen, w.data, w.replayed]),
    [
      ['shown', 'replayed!', true],
      ['shown', 'live!', false],
    ],
  );
  assert.ok(r.events.includes('reset shown'), 'a replay clears the terminal first');
  r.parse();
  assert.deepEqual(r.screens.shown, ['replayed!', 'live!']);
  assert.equal(r.stream.pending, 0);
  // Not pacing: nothing acknowledged.
  assert.deepEqual(r.take(), []);
});

test('a new connection attaches with since = the last seq taken, and continues without a reset', () => {
  const r = new Rig();
  r.stream.attach();
  r.stream.attached(attached(0, { reset: true, live: 0 }));
  r.stream.output(output(40, 'a'.repeat(40)));
  r.parse();
  r.take();

  r.stream.connectionLost();
  assert.equal(r.stream.status, 'detached');
  r.stream.output(output(50, 'lost'));
  assert.equal(r.written.length, 1, 'output of a lost attachment is not written');

  r.stream.attachIfDetached();
  assert.deepEqual(r.take(), [{ type: 'session.attach', sessionId: ID, since: 40, lines: SCROLLBACK_LINES + ROWS }]);
  r.stream.attachIfDetached();
  assert.deepEqual(r.take(), [], 'already attaching: no second attach');
  r.events = [];
  r.stream.attached(attached(40, { live: 40 }));
  r.stream.output(output(50, 'b'.repeat(10)));
  r.parse();
  assert.deepEqual(r.events, [], 'reset:false keeps the screen');
  assert.deepEqual(r.screens.shown, ['a'.repeat(40), 'b'.repeat(10)]);
});

test('a send that fails leaves the stream detached, to attach again on the next connection', () => {
  const r = new Rig();
  r.connected = false;
  r.stream.attach();
  assert.equal(r.stream.status, 'detached');
  assert.deepEqual(r.events, ['attaching'], 'no size is reported for an attach that did not go out');
  r.connected = true;
  r.stream.attachIfDetached();
  assert.equal(r.stream.status, 'attaching');
  assert.equal(r.take().length, 1);
});

test('a resync: the server falls back to a replay mid-stream, after what was written is parsed', () => {
  const r = new Rig();
  r.stream.attach();
  r.stream.attached(attached(0, { reset: true, live: 0 }));
  r.stream.output(output(100, 'before'));
  // The client fell behind the ring: a new session.attached, reset, with
  // live at the end of the stream then.
  r.stream.attached(attached(5000, { reset: true, live: 6000 }));
  assert.deepEqual(r.events.slice(-1), ['reset shown queued'], 'the reset waits for the write still being parsed');
  r.stream.output(output(6000, 'ring'));
  r.stream.output(output(6010, 'live'));
  assert.deepEqual(
    r.written.slice(1).map((w) => [w.data, w.replayed]),
    [
      ['ring', true],
      ['live', false],
    ],
  );
  r.parse();
  // The next attach continues from the resync's stream, not the old one.
  assert.deepEqual(r.reconnect(), { type: 'session.attach', sessionId: ID, since: 6010, lines: SCROLLBACK_LINES + ROWS });
});

test('flood control: detaches past FLOOD_LIMIT unparsed, and attaches again from its seq once drained', () => {
  const r = new Rig();
  r.stream.attach();
  r.stream.attached(attached(0, { reset: true }));
  r.take();
  const big = 'x'.repeat(FLOOD_LIMIT / 2);
  r.stream.output(output(FLOOD_LIMIT / 2, big));
  assert.equal(r.stream.isPaused, false);
  r.stream.output(output(FLOOD_LIMIT, big));
  r.stream.output(output(FLOOD_LIMIT + 1, 'y'));
  assert.equal(r.stream.isPaused, true);
  assert.deepEqual(r.take(), [{ type: 'session.detach', sessionId: ID }]);
  assert.deepEqual(r.events.slice(-1), ['paused']);

  // Paused: output on its way is dropped, a resync that crossed the detach too.
  r.stream.output(output(FLOOD_LIMIT + 2, 'z'));
  assert.equal(r.stream.attached(attached(0, { reset: true })), false);
  assert.equal(r.written.length, 3);
  // A reconnection meanwhile waits for the drain too.
  assert.equal(r.reconnect(), undefined);

  r.parse(2);
  assert.deepEqual(r.take(), [], 'not drained yet');
  r.parse();
  assert.deepEqual(r.take(), [{ type: 'session.attach', sessionId: ID, since: FLOOD_LIMIT + 1, lines: SCROLLBACK_LINES + ROWS }]);
  assert.equal(r.stream.isPaused, false);
  assert.deepEqual(r.events.slice(-3), ['attaching', 'resumed', 'attachSent']);
});

test('pacing: acks at attach, every ACK_BYTES parsed, and the rest within ACK_TRAIL_MS', () => {
  const r = new Rig();
  r.stream.setPacing(true);
  assert.deepEqual(r.take(), [], 'nothing to acknowledge before an attachment');
  r.stream.attach();
  r.take();
  r.stream.attached(attached(1000, { live: 1000 }));
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 1000, pace: true }]);

  r.stream.output(output(1100, 'a'));
  r.parse();
  assert.deepEqual(r.take(), [], 'a little: left to the trailing ack');
  assert.equal(r.liveTimers(), 1);
  assert.equal(r.timers[0]!.ms, ACK_TRAIL_MS);
  r.stream.output(output(1200, 'b'));
  r.parse();
  assert.equal(r.liveTimers(), 1, 'one trailing ack at a time');
  r.tick();
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 1200, pace: true }]);

  r.stream.output(output(1200 + ACK_BYTES, 'c'));
  r.parse();
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 1200 + ACK_BYTES, pace: true }]);
  assert.equal(r.liveTimers(), 0);

  // Hidden: it says it stops pacing, and acknowledges no more.
  r.stream.setPacing(false);
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 1200 + ACK_BYTES, pace: false }]);
  r.stream.output(output(1300 + ACK_BYTES * 2, 'd'));
  r.parse();
  r.tick();
  assert.deepEqual(r.take(), []);
});

test('a trailing ack is cancelled when the stream closes', () => {
  const r = new Rig();
  r.stream.setPacing(true);
  r.stream.attach();
  r.stream.attached(attached(0));
  r.stream.output(output(10, 'a'));
  r.parse();
  r.take();
  assert.equal(r.liveTimers(), 1);
  r.stream.close();
  r.tick();
  assert.deepEqual(r.take(), []);
  r.stream.attach();
  assert.deepEqual(r.take(), [], 'a closed stream never attaches');
});

test('a partial replay shows the screen, then fills the scrollback behind it and swaps once caught up', () => {
  const r = new Rig();
  r.stream.setPacing(true);
  r.stream.attach();
  r.stream.attached(attached(800, { reset: true, live: 1000, partial: true }));
  r.stream.output(output(1000, 'screen'));
  r.take();
  assert.equal(r.paints.length, 0, 'the fill waits for the screen to be parsed');
  r.parse();
  assert.equal(r.paints.length, 1, '...and drawn');
  r.paint();
  assert.ok(r.stream.isFilling);
  assert.equal(r.events.at(-2), 'openFill');
  assert.equal(r.events.at(-1), 'attachSent');
  // The fill's attach: the whole scrollback, no since (a replay from the ring's start).
  assert.deepEqual(r.take(), [{ type: 'session.attach', sessionId: ID, lines: SCROLLBACK_LINES + ROWS }]);

  r.stream.attached(attached(0, { reset: true, live: 1000 }));
  assert.equal(r.events.at(-1), 'reset fill');
  r.stream.output(output(800, 'history'));
  r.stream.output(output(1000, 'screen'));
  r.stream.output(output(1010, 'live'));
  assert.deepEqual(
    r.written.slice(1).map((w) => [w.screen, w.data, w.replayed]),
    [
      ['fill', 'history', true],
      ['fill', 'screen', true],
      ['fill', 'live', false],
    ],
  );
  r.parse(2);
  assert.ok(r.stream.isFilling, 'not past the shown seq yet');
  assert.equal(r.screens.shown.join(''), 'screen', 'the shown terminal is left as it is meanwhile');
  r.parse();
  assert.equal(r.stream.isFilling, false);
  assert.equal(r.events.at(-1), 'showFill');
  assert.deepEqual(r.screens.shown, ['history', 'screen', 'live']);
  // The fill's attachment paces as the screen's did: acknowledged at once,
  // then what it parsed within ACK_TRAIL_MS.
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 0, pace: true }]);
  r.tick();
  assert.deepEqual(r.take(), [{ type: 'terminal.ack', sessionId: ID, seq: 1010, pace: true }]);
  // Output goes to the new shown terminal, and attaches continue from the fill's seq.
  r.stream.output(output(1020, 'more'));
  assert.equal(r.written.at(-1)!.screen, 'shown');
  assert.deepEqual(r.reconnect(), { type: 'session.attach', sessionId: ID, since: 1020, lines: SCROLLBACK_LINES + ROWS });
});

test('a fill is dropped when the connection goes, and its pending start cancelled', () => {
  const r = new Rig();
  r.partialScreen();
  assert.equal(r.paints.length, 1);
  r.stream.connectionLost();
  r.paint();
  assert.equal(r.stream.isFilling, false);
  assert.ok(!r.events.includes('openFill'), 'a cancelled start builds nothing');

  // Started, then lost: the fill's terminal is thrown away.
  r.stream.attachIfDetached();
  r.stream.attached(attached(20, { partial: true }));
  r.stream.output(output(30, 'x'));
  r.parse();
  r.paint();
  assert.ok(r.stream.isFilling);
  r.stream.connectionLost();
  assert.equal(r.events.at(-1), 'closeFill');
  assert.equal(r.stream.isFilling, false);
});

test('a fill that floods gives up the scrollback and attaches the screen again', () => {
  const r = new Rig();
  r.partialScreen();
  r.paint();
  r.stream.attached(attached(0, { reset: true }));
  r.take();
  r.stream.output(output(FLOOD_LIMIT + 1, 'h'.repeat(FLOOD_LIMIT + 1)));
  assert.equal(r.stream.isFilling, false);
  assert.ok(r.events.includes('closeFill'));
  assert.deepEqual(r.take(), [{ type: 'session.attach', sessionId: ID, since: 20, lines: SCROLLBACK_LINES + ROWS }]);
  // The abandoned fill's parse changes nothing.
  r.parse();
  assert.equal(r.stream.isFilling, false);
  assert.deepEqual(r.screens.shown, ['screen']);
});
