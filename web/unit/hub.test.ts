// The hub's inbox (src/hub/inbox.ts), without a browser: the order a
// person deals with sessions in, the filters and their counts, what a
// waiting session asks in words, why a workspace is out of reach, and
// which waits are news for a notification.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Inbox, WaitTracker, compareSessions, matches, parseFilter, problemOf, sessionKey, statusLabel, waitOf,
} from '../src/hub/inbox';
import type { InboxSession, InboxWorkspace } from '../src/hub/types';

const A = 'http://10.0.0.1:8080';
const B = 'http://10.0.0.2:8080';
const C = 'http://10.0.0.3:8080';

const T = Date.UTC(2026, 4, 1, 12, 0, 0);
const at = (s: number) => new Date(T + s * 1000).toISOString();

function session(over: Partial<InboxSession> & { id: string }): InboxSession {
  const workspace = over.workspace ?? A;
  return {
    workspace,
    workspaceName: workspace === A ? 'alice' : workspace === B ? 'bob' : 'carol',
    name: over.id,
    agent: 'shell',
    status: 'active',
    needsInput: false,
    lastActivityAt: at(0),
    openUrl: `${workspace}/?session=${over.id}`,
    ...over,
  };
}

const workspaces: InboxWorkspace[] = [
  { url: B, name: 'bob', openUrl: B, reachable: true, sessions: 2 },
  { url: A, name: 'alice', openUrl: A, reachable: true, sessions: 3 },
  { url: C, name: 'carol', openUrl: C, reachable: false, error: 'refused', sessions: 0 },
];

const sessions = [
  session({ id: 'idle-old', status: 'idle', lastActivityAt: at(-600) }),
  session({ id: 'busy', workspace: B, lastActivityAt: at(-5) }),
  session({ id: 'asks-late', workspace: B, status: 'waiting', needsInput: true, reason: 'the agent asks: Proceed?', waitingSince: at(-10), lastActivityAt: at(-10) }),
  session({ id: 'asks-early', status: 'waiting', needsInput: true, agent: 'claude', permission: { tool: 'Write', summary: 'docs/plan.md' }, waitingSince: at(-300), lastActivityAt: at(-1) }),
  session({ id: 'stopped', status: 'stopped', lastActivityAt: at(-60) }),
];

test('those that need a person come first, the oldest wait first; then the latest active first', () => {
  const order = [...sessions].sort(compareSessions).map((s) => s.id);
  assert.deepEqual(order, ['asks-early', 'asks-late', 'busy', 'stopped', 'idle-old']);
});

test('a wait without its start (an older workspace) counts from its last activity', () => {
  const old = session({ id: 'old', status: 'waiting', needsInput: true, lastActivityAt: at(-1000) });
  const order = [sessions[2]!, old].sort(compareSessions).map((s) => s.id);
  assert.deepEqual(order, ['old', 'asks-late']);
});

test('the inbox keeps the order, counts every workspace\'s waiting sessions and filters', () => {
  const inbox = new Inbox();
  let told = 0;
  inbox.subscribe(() => told++);
  assert.equal(inbox.loaded, false);
  inbox.apply({ workspaces, sessions }, T);
  assert.equal(told, 1);
  assert.equal(inbox.loaded, true);
  assert.equal(inbox.updatedAt, T);
  assert.deepEqual(inbox.workspaces.map((w) => w.name), ['alice', 'bob', 'carol']);
  assert.equal(inbox.waitingCount(), 2);
  assert.deepEqual(inbox.visible({ workspace: '', status: 'all' }).map((s) => s.id), ['asks-early', 'asks-late', 'busy', 'stopped', 'idle-old']);
  assert.deepEqual(inbox.visible({ workspace: A, status: 'all' }).map((s) => s.id), ['asks-early', 'stopped', 'idle-old']);
  assert.deepEqual(inbox.visible({ workspace: '', status: 'waiting' }).map((s) => s.id), ['asks-early', 'asks-late']);
  assert.deepEqual(inbox.visible({ workspace: B, status: 'waiting' }).map((s) => s.id), ['asks-late']);
  assert.deepEqual(inbox.visible({ workspace: '', status: 'stopped' }).map((s) => s.id), ['stopped']);
  assert.deepEqual(inbox.visible({ workspace: C, status: 'all' }), []);
  assert.equal(inbox.get(sessionKey({ workspace: B, id: 'busy' }))?.name, 'busy');
  assert.equal(inbox.get(sessionKey({ workspace: A, id: 'busy' })), undefined, 'a session is its workspace\'s: the same id elsewhere is another');
  assert.equal(inbox.summary(), '2 need you · 5 sessions · 3 workspaces, 1 unreachable');
});

test('each filter\'s choice counts what it would show', () => {
  const inbox = new Inbox();
  inbox.apply({ workspaces, sessions }, T);
  const all = inbox.counts({ workspace: '', status: 'all' });
  assert.deepEqual(Object.fromEntries(all.workspaces), {
    '': { sessions: 5, waiting: 2 },
    [A]: { sessions: 3, waiting: 1 },
    [B]: { sessions: 2, waiting: 1 },
    [C]: { sessions: 0, waiting: 0 },
  });
  assert.deepEqual(Object.fromEntries(all.statuses), { all: 5, waiting: 2, active: 1, idle: 1, limited: 0, error: 0, stopped: 1 });
  // The statuses count within the workspace chosen.
  const bob = inbox.counts({ workspace: B, status: 'waiting' });
  assert.deepEqual(Object.fromEntries(bob.statuses), { all: 2, waiting: 1, active: 1, idle: 0, limited: 0, error: 0, stopped: 0 });
});

test('a filter naming a workspace the hub no longer follows is stale', () => {
  const inbox = new Inbox();
  assert.equal(inbox.isStale({ workspace: A, status: 'all' }), false, 'not before the first snapshot');
  inbox.apply({ workspaces, sessions }, T);
  assert.equal(inbox.isStale({ workspace: A, status: 'all' }), false);
  assert.equal(inbox.isStale({ workspace: 'http://gone:1', status: 'all' }), true);
  assert.equal(inbox.isStale({ workspace: '', status: 'all' }), false);
});

test('a remembered filter is read back, and a broken one is no filter', () => {
  assert.deepEqual(parseFilter(JSON.stringify({ workspace: A, status: 'waiting' })), { workspace: A, status: 'waiting' });
  assert.deepEqual(parseFilter(JSON.stringify({ workspace: 3, status: 'bogus' })), { workspace: '', status: 'all' });
  assert.deepEqual(parseFilter('{'), { workspace: '', status: 'all' });
  assert.deepEqual(parseFilter(null), { workspace: '', status: 'all' });
  assert.equal(statusLabel('waiting'), 'Needs you');
  assert.equal(statusLabel('stopped'), 'Stopped');
});

test('a waiting status counts as needing you even before the detector says needsInput', () => {
  const s = session({ id: 'w', status: 'waiting' });
  assert.equal(matches(s, { workspace: '', status: 'waiting' }), true);
  assert.equal(matches(s, { workspace: B, status: 'waiting' }), false);
});

test('what a session waits for, in words, and whether Allow and Deny can answer it', () => {
  assert.deepEqual(waitOf(sessions[3]!), { kind: 'permission', text: 'Claude wants to use Write on docs/plan.md', canAllow: true });
  assert.deepEqual(waitOf(sessions[2]!), { kind: 'question', text: 'Proceed?', canAllow: false });
  // A permission of an agent whose dialog agentmux does not know: answered in its own UI.
  const codex = session({ id: 'c', agent: 'codex', needsInput: true, permission: { tool: 'shell', summary: 'rm -rf build' } });
  assert.deepEqual(waitOf(codex), { kind: 'permission', text: 'Codex wants to use shell: rm -rf build', canAllow: false });
  const bell = session({ id: 'b', needsInput: true, reason: 'the terminal rang its bell' });
  assert.deepEqual(waitOf(bell), { kind: 'input', text: 'The terminal rang its bell', canAllow: false });
  assert.deepEqual(waitOf(session({ id: 'q', agent: 'claude', needsInput: true })), { kind: 'input', text: 'Claude is waiting for you.', canAllow: false });
  assert.equal(waitOf(sessions[1]!), null);
});

test('why a workspace is out of reach, in the hub\'s word, with its detail and what to do', () => {
  const w = (error: string): InboxWorkspace => ({ url: C, name: 'carol', openUrl: C, reachable: false, error, sessions: 0 });
  const refused = problemOf(w('refused: nothing listens there (dial tcp 10.0.0.3:8080: connect: connection refused)'));
  assert.equal(refused.kind, 'refused');
  assert.equal(refused.detail, 'nothing listens there (dial tcp 10.0.0.3:8080: connect: connection refused)');
  assert.match(refused.advice, /running at http:\/\/10\.0\.0\.3:8080/);
  const token = problemOf(w('token rejected: the workspace refused the hub\'s token for it (HTTP 401: bad token)'));
  assert.equal(token.kind, 'token rejected');
  assert.match(token.detail, /^the workspace refused/);
  assert.match(token.advice, /token file/);
  assert.deepEqual({ ...problemOf(w('timeout')), advice: '' }, { kind: 'timeout', detail: '', advice: '' });
  assert.deepEqual({ ...problemOf(w('tls: bad certificate')), advice: '' }, { kind: 'unreachable', detail: 'tls: bad certificate', advice: '' });
  assert.equal(problemOf({ ...w(''), error: undefined }).kind, 'unreachable');
});

test('each waiting period is news once; what waited on the first look is not', () => {
  const tracker = new WaitTracker();
  const first = tracker.update(sessions);
  assert.deepEqual(first, { started: [], ended: [] }, 'on screen already when the page opened');
  assert.deepEqual(tracker.update(sessions), { started: [], ended: [] }, 'the same again is nothing new');

  const q = session({ id: 'new', workspace: B, status: 'waiting', needsInput: true, reason: 'the agent asks: Go?', waitingSince: at(5) });
  const withNew = [...sessions, q];
  const second = tracker.update(withNew);
  assert.deepEqual(second.started.map((s) => s.id), ['new']);
  assert.deepEqual(second.ended, []);

  // The permission answered and the next question asked between two pushes: one ends, one starts.
  const next = withNew.map((s) => (s.id === 'asks-early' ? { ...s, permission: undefined, reason: 'the agent asks: Which database?', waitingSince: at(20) } : s));
  const third = tracker.update(next);
  assert.deepEqual(third.started.map((s) => s.id), ['asks-early']);
  assert.deepEqual(third.ended, [sessionKey({ workspace: A, id: 'asks-early' })]);

  // Answered, and a session gone with its workspace: both end.
  const fourth = tracker.update(next.filter((s) => s.id !== 'new').map((s) => (s.id === 'asks-late' ? { ...s, status: 'active', needsInput: false } : s)));
  assert.deepEqual(fourth.started, []);
  assert.deepEqual(fourth.ended.sort(), [sessionKey({ workspace: B, id: 'asks-late' }), sessionKey({ workspace: B, id: 'new' })].sort());
});
