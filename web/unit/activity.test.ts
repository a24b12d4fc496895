// The activity feed's lines (src/models/activity.ts): file.recent, sent
// on every connection, restores a reloaded page's lines and adds a
// reconnected page's missed ones, never a line twice; agent.call lines sit
// among them by their time.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ActivityLog, MAX_ACTIVITY_ITEMS, agentCallSession, answeredText, isAgentCall, isPort, type FeedItem } from '../src/models/activity';
import type { AgentCallMessage, RecentFile } from '../src/shared/types';

const ev = (path: string, event: RecentFile['event'], second: number): RecentFile =>
  ({ path, event, timestamp: `2026-11-21T22:40:${String(second).padStart(2, '0')}.123456789Z` });
const line = (it: FeedItem) => (isPort(it) ? `port ${it.port}` : isAgentCall(it) ? `agent ${it.text}` : `${it.event} ${it.abs}`);
const lines = (log: ActivityLog) => log.items.map(line);
const call = (text: string, second: number, more: Partial<AgentCallMessage> = {}): AgentCallMessage => ({
  type: 'agent.call',
  sessionId: 'planner-id',
  tool: 'start_session',
  text,
  timestamp: `2026-11-21T22:40:${String(second).padStart(2, '0')}.5Z`,
  ...more,
});

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

test('agent calls are lines of their own, with what a click shows: the session the call was about, else the caller', () => {
  const log = new ActivityLog();
  log.add(ev('/w/a', 'add', 1));
  log.addAgentCall(call("planner started 'helper'", 2, { targetId: 'helper-id' }));
  log.addAgentCall(call('planner listed the sessions', 3, { tool: 'list_sessions' }));
  log.addAgentCall(call("planner could not stop 'other'", 4, { tool: 'stop_session', targetId: 'other-id', error: 'you did not start other' }));
  assert.deepEqual(lines(log), ["agent planner could not stop 'other'", 'agent planner listed the sessions', "agent planner started 'helper'", 'add /w/a']);
  const [refused, listed, started] = log.items.filter(isAgentCall);
  assert.equal(refused?.error, 'you did not start other');
  assert.equal(started?.error, undefined, 'a call done has no error');
  assert.equal(started?.time, Date.parse('2026-11-21T22:40:02.5Z'), "the server's time");
  assert.equal(agentCallSession(started!), 'helper-id');
  assert.equal(agentCallSession(listed!), 'planner-id', 'a call about no session shows the caller');
  assert.equal(log.history().length, 1, 'only file events are replayed into other views');
});

test('file.recent on a reconnection keeps the agent calls, ordered by time among the files', () => {
  const log = new ActivityLog();
  log.add(ev('/w/a', 'add', 1));
  log.addAgentCall(call("planner started 'helper'", 3, { targetId: 'helper-id' }));
  assert.equal(log.merge([ev('/w/a', 'add', 1), ev('/w/b', 'change', 2), ev('/w/c', 'add', 4)]), true);
  assert.deepEqual(lines(log), ['add /w/c', "agent planner started 'helper'", 'change /w/b', 'add /w/a']);
  assert.equal(log.merge([ev('/w/a', 'add', 1), ev('/w/b', 'change', 2), ev('/w/c', 'add', 4)]), false, 'an agent call is no file the server could list');
});

test('a timestamp the page cannot read takes the time of arrival; agent calls stay bounded with the rest', () => {
  const log = new ActivityLog();
  log.addAgentCall({ ...call('planner queued a prompt', 0), timestamp: 'soon' }, 1234);
  assert.equal(log.items[0]?.time, 1234);
  for (let i = 0; i < MAX_ACTIVITY_ITEMS + 10; i++) log.addAgentCall(call(`call ${i}`, i % 60));
  assert.equal(log.items.length, MAX_ACTIVITY_ITEMS);
  assert.equal(line(log.items[0]!), `agent call ${MAX_ACTIVITY_ITEMS + 9}`, 'the newest kept');
});

test('an answer given without the terminal reads as who did what in which session', () => {
  const at = '2026-11-30T02:00:00Z';
  const perm = { tool: 'Write', summary: 'docs/plan.md' };
  assert.equal(answeredText({ type: 'session.answered', sessionId: 's', answer: 'allow', by: 'alice (hub)', permission: perm, timestamp: at }, 'build'), "alice (hub) allowed Write on docs/plan.md in 'build'");
  assert.equal(answeredText({ type: 'session.answered', sessionId: 's', answer: 'deny', by: 'api', permission: { tool: 'Bash' }, timestamp: at }, 'build'), "api denied Bash in 'build'");
  assert.equal(answeredText({ type: 'session.answered', sessionId: 's', answer: 'reply', by: 'bob (hub)', text: 'yes', timestamp: at }, 'tests'), 'bob (hub) replied "yes" to \'tests\'');
});
