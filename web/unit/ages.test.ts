// How a relative-time label reads (src/shared/ages.ts): the words each
// style says as a moment grows older, which the page's ticker redraws.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agoText } from '../src/shared/ages';

const T = Date.UTC(2026, 10, 29, 12, 0, 0);

test('a label says "just now", then seconds, minutes, hours and days ago', () => {
  const at = (ms: number) => agoText(T, T + ms);
  assert.equal(at(0), 'just now');
  assert.equal(at(4_000), 'just now');
  assert.equal(at(8_000), '8s ago');
  assert.equal(at(65_000), '1m ago');
  assert.equal(at(2 * 3600_000 + 5_000), '2h ago');
  assert.equal(at(3 * 86400_000), '3d ago');
});

test('the short style, for the narrow activity feed, says "now" and "8s"', () => {
  assert.equal(agoText(T, T + 1_000, 'short'), 'now');
  assert.equal(agoText(T, T + 8_000, 'short'), '8s');
  assert.equal(agoText(T, T + 65_000, 'short'), '1m');
});

test('a moment a little ahead of the clock is now, not "-2s ago"', () => {
  assert.equal(agoText(T + 2_000, T), 'just now');
});
