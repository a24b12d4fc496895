// The activity feed's lines (src/models/activity.ts): file.recent, sent
// on every connection, restores a reloaded page's lines and adds a
// reconnected page's missed ones, never a line twice.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActivityLog, MAX_ACTIVITY_ITEMS, isPort } from '../src/models/activity';
import type { RecentFile } from '../src/shared/types';

const ev = (path: string, event: RecentFile['event'], second: number): RecentFile =>
  ({ path, event, timestamp: `2026-11-21T22:40:${String(second).padStart(2, '0')}.123456789Z` });
const lines = (log: ActivityLog) => log.items.map((it) => (isPort(it) ? `port ${it.port}` : `${it.event} ${it.abs}`));

test('file.recent on a fresh page: its events, newest first', () => {
  const log = new ActivityLog();
  assert.equal(log.merge([ev('/w/a', 'add', 1), ev('/w/b', 'add', 2), ev('/w/a', 'change', 3)]), true);
  assert.deepEqual(lines(log), ['change /w/a', 'add /w/b', 'add /w/a']);
  assert.deepEqual(log.history().map((it) => it.abs), ['/w/a', '/w/b', '/w/a'], 'history is oldest first');
});

test('file.recent on a reconnection adds only what was missed, in time order, beside the ports', () => {
  const log = new ActivityLog();
  log.add(ev('/w/a', 'add', 1));
  log.addPort({ port: 5173 }, Date.parse('2026-11-21T22:40:02Z'));
  log.add(ev('/w/b', 'add', 3));
  assert.equal(log.merge([ev('/w/a', 'add', 1), ev('/w/b', 'add', 3)]), false, 'nothing new');
  assert.equal(log.merge([ev('/w/a', 'add', 1), ev('/w/b', 'add', 3), ev('/w/c', 'add', 4), ev('/w/b', 'unlink', 5)]), true);
  assert.deepEqual(lines(log), ['unlink /w/b', 'add /w/c', 'add /w/b', 'port 5173', 'add /w/a']);
});

test('the same path and event at another time is another line; the lines stay bounded', () => {
  const log = new ActivityLog();
  log.merge([ev('/w/a', 'change', 1), ev('/w/a', 'change', 2)]);
  assert.equal(log.items.length, 2);
  const many = Array.from({ length: MAX_ACTIVITY_ITEMS + 30 }, (_, i) => ({ path: `/w/f${i}`, event: 'add' as const, timestamp: new Date(Date.UTC(2026, 10, 22, 0, 0, i)).toISOString() }));
  log.merge(many);
  assert.equal(log.items.length, MAX_ACTIVITY_ITEMS);
  assert.equal(lines(log)[0], `add /w/f${MAX_ACTIVITY_ITEMS + 29}`, 'the newest kept');
});
