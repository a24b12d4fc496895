// What the agents report they spend, in words (src/models/usage.ts): a
// tab's figure and tooltip, the account's windows from the newest report,
// their levels and countdowns; and the store keeping each session's usage.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  countdown,
  formatCost,
  limitDetails,
  nextLimitChange,
  spentFigure,
  statusShown,
  formatTokens,
  newestWindows,
  nextChange,
  usageDetails,
  usageFigure,
  usageLevel,
  usageSummary,
  windowDetails,
  windowShown,
} from '../src/models/usage';
import { SessionStore } from '../src/models/store';
import type { Session, Usage } from '../src/shared/types';

const AT = '2026-11-29T21:20:00.5Z';
const REPORT: Usage = {
  model: 'Sonnet 4.5', costUsd: 0.42, inputTokens: 18230, outputTokens: 2101, contextPercent: 12, contextSize: 200000,
  windows: [{ name: 'five_hour', usedPercent: 81, resetsAt: '2026-11-29T23:00:00Z' }, { name: 'seven_day', usedPercent: 4 }],
  source: 'claude-statusline', updatedAt: AT,
};
const MIN = 60_000;

test("a tab's figure: the context used and the cost, else the tokens; nothing the agent did not report", () => {
  assert.deepEqual(usageFigure(REPORT), { context: 'ctx 12%', spend: '$0.42' });
  assert.deepEqual(usageFigure({ ...REPORT, costUsd: undefined, contextPercent: 39.6 }), { context: 'ctx 40%', spend: '20.3k tok' });
  assert.deepEqual(usageFigure({ source: 's', updatedAt: AT, outputTokens: 950 }), { context: '', spend: '950 tok' });
  assert.deepEqual(usageFigure({ source: 's', updatedAt: AT, costUsd: 0 }), { context: '', spend: '$0.00' }, 'a cost of nothing is a cost');
  assert.deepEqual(usageFigure({ source: 's', updatedAt: AT, model: 'Opus' }), { context: '', spend: '' });
  assert.deepEqual(
    [0.004, 0.9, 12.3, 99.994, 123.4].map(formatCost),
    ['$0.00', '$0.90', '$12.30', '$99.99', '$123'],
  );
  assert.deepEqual(
    [0, 950, 1000, 20_331, 99_960, 204_400, 1_234_567, 250_000_000].map(formatTokens),
    ['0', '950', '1k', '20.3k', '100k', '204k', '1.2M', '250M'],
  );
});

test('the tooltip says every figure reported, and when', () => {
  const clock = (d: Date) => d.toISOString().slice(11, 19);
  assert.equal(usageDetails(REPORT, clock), [
    'Model: Sonnet 4.5',
    "Cost: $0.42 so far (the agent's estimate)",
    'Tokens: 18,230 in, 2,101 out',
    'Context: 12% of 200k tokens used',
    'Updated 21:20:00',
  ].join('\n'));
  assert.equal(usageDetails({ source: 's', updatedAt: AT, contextPercent: 5 }, clock), 'Context: 5% used\nUpdated 21:20:00');
  assert.equal(usageSummary(REPORT), 'Sonnet 4.5 · $0.42 · context 12%');
});

test('a share used is amber from 75 % and red from 90 %', () => {
  assert.deepEqual([0, 74.9, 75, 89.9, 90, 100].map(usageLevel), ['ok', 'ok', 'warning', 'warning', 'critical', 'critical']);
});

test('a countdown in whole minutes, rounded down', () => {
  assert.equal(countdown(89 * MIN + 59_000), '1h29m');
  assert.equal(countdown(60 * MIN), '1h0m');
  assert.equal(countdown(26 * MIN + 1), '26m');
  assert.equal(countdown(59_999), '<1m');
  assert.equal(countdown(-5), '<1m');
  assert.equal(countdown((3 * 24 + 4) * 60 * MIN + 30 * MIN), '3d4h');
});

test('a window as the status bar shows it, before and after its reset', () => {
  const resets = Date.parse('2026-11-29T23:00:00Z');
  const five = REPORT.windows![0]!;
  assert.deepEqual(windowShown(five, resets - 89.5 * MIN), { figure: '5h 81%', resets: 'resets in 1h29m', level: 'warning', reset: false });
  assert.deepEqual(windowShown(REPORT.windows![1]!, resets), { figure: '7d 4%', resets: '', level: 'ok', reset: false });
  assert.deepEqual(windowShown({ ...five, usedPercent: 93 }, resets - MIN).level, 'critical');
  // Past its reset the share reported is from before: it is not shown as if it held.
  assert.deepEqual(windowShown(five, resets), { figure: '5h', resets: 'reset', level: 'ok', reset: true });
  const clock = (d: Date) => d.toISOString().slice(11, 16);
  assert.equal(windowDetails(five, resets - 89.5 * MIN, clock), '5-hour window: 81% used, resets at 23:00 (in 1h29m)');
  assert.equal(windowDetails(five, resets + MIN, clock), '5-hour window: started afresh at 23:00 (81% was used before)');
  assert.equal(windowDetails(REPORT.windows![1]!, resets, clock), '7-day window: 4% used');
});

test('the countdown is redrawn when its minute changes, and at the reset; not without one', () => {
  const resets = Date.parse('2026-11-29T23:00:00Z');
  const five = REPORT.windows![0]!;
  assert.equal(nextChange([five], resets - 89 * MIN - 20_000), 20_000);
  assert.equal(nextChange([five], resets - 89 * MIN), MIN, 'on a whole minute: the next one');
  assert.equal(nextChange([five], resets - 1_500), 1_500, 'the reset itself');
  assert.equal(nextChange([five], resets + 1), null, 'nothing counts down once reset');
  assert.equal(nextChange([REPORT.windows![1]!], resets), null);
  const later = { name: 'seven_day', usedPercent: 4, resetsAt: new Date(resets + 10 * MIN + 5_000).toISOString() };
  assert.equal(nextChange([five, later], resets - 89 * MIN - 20_000), 20_000, 'the soonest of them');
  assert.equal(nextChange([five, later], resets - 89 * MIN - 3_000), 3_000);
});

test("the account's windows: each from the newest report that has it, the 5-hour window first", () => {
  const older = { ...REPORT, updatedAt: '2026-11-29T21:19:59.999999999Z', windows: [{ name: 'seven_day', usedPercent: 3 }, { name: 'five_hour', usedPercent: 50 }] };
  const newer = { ...REPORT, updatedAt: '2026-11-29T21:20:00.000000001Z', windows: [{ name: 'five_hour', usedPercent: 82 }] };
  const w = newestWindows([
    { id: 'a', usage: older },
    { id: 'b', usage: newer },
    { id: 'c' },
    { id: 'd', usage: { ...REPORT, windows: undefined } },
  ]);
  assert.deepEqual(w, [
    { name: 'five_hour', usedPercent: 82, sessionId: 'b', updatedAt: newer.updatedAt },
    { name: 'seven_day', usedPercent: 3, sessionId: 'a', updatedAt: older.updatedAt },
  ], "nanoseconds count; a window only an older report has is kept");
  assert.deepEqual(newestWindows([{ id: 'b', usage: newer }, { id: 'a', usage: older }]).map((x) => x.sessionId), ['b', 'a'], 'whatever the order of the sessions');
  assert.deepEqual(newestWindows([{ id: 'c' }]), [], 'none reported: nothing to show');
});

const session = (id: string, more: Partial<Session> = {}): Session => ({
  id, name: id, status: 'active', agent: 'claude', command: ['claude'], cwd: '/w', createdAt: '', lastActivityAt: '', cols: 80, rows: 24, sendFailures: false, ...more,
});

test("the store keeps each session's usage: from its Session JSON, then from usage.updated", () => {
  const store = new SessionStore();
  let changes = 0;
  store.subscribe(() => changes++);
  store.replaceAll([session('a', { usage: REPORT }), session('b')]);
  assert.equal(store.get('a')?.session.usage?.costUsd, 0.42);
  const before = changes;
  store.setUsage('b', { ...REPORT, costUsd: 0.9 });
  assert.equal(store.get('b')?.session.usage?.costUsd, 0.9);
  assert.equal(changes, before + 1, 'the views hear of it');
  store.setUsage('gone', REPORT);
  assert.equal(store.has('gone'), false, 'a session not listed is not made up');
  // A status change keeps the figures.
  store.setStatus('b', 'waiting', 'asks');
  assert.equal(store.get('b')?.session.usage?.costUsd, 0.9);
});

test('a limited session shows its countdown to the reset, and says what happens then', () => {
  const now = Date.parse('2026-11-30T01:00:30Z');
  const limit = { since: '2026-11-30T00:58:00Z', resetsAt: '2026-11-30T02:30:00Z', message: "You've hit your session limit · resets 2:30am (UTC)", continue: true };
  assert.equal(statusShown({ status: 'limited', limit }, now), 'limited · 1h29m');
  assert.equal(statusShown({ status: 'limited', limit }, Date.parse('2026-11-30T02:31:00Z')), 'limited · reset');
  assert.equal(statusShown({ status: 'limited', limit: { ...limit, resetsAt: undefined } }, now), 'limited');
  assert.equal(statusShown({ status: 'waiting' }, now), 'waiting');
  const words = limitDetails(limit, now, () => '02:30');
  assert.match(words, /resets 2:30am/);
  assert.match(words, /Resets at 02:30 \(in 1h29m\)/);
  assert.match(words, /agentmux sends it on once the limit resets/);
  assert.match(limitDetails({ ...limit, continue: false }, now), /continuing at the reset is off/);
  // The countdown's minute changes 30 s on (plus the millisecond that makes it change).
  assert.equal(nextLimitChange([{ status: 'limited', limit }, { status: 'waiting' }], now), 30_001);
  assert.equal(nextLimitChange([{ status: 'waiting' }], now), null);
});

test("a checkpoint's turns in short: tokens, and the cost when reported", () => {
  assert.equal(spentFigure({ turns: 2, inputTokens: 1200, outputTokens: 345, costUsd: 0.052 }), '1.5k tok · $0.05');
  assert.equal(spentFigure({ turns: 1, inputTokens: 54, outputTokens: 12 }), '66 tok');
  assert.equal(spentFigure({ turns: 1 }), '');
});
