// The state main.ts kept in module globals, now models: the server's
// limits and health (src/models/server.ts), the session list's refresh
// (src/models/listsync.ts) and the workflow shown (src/models/workflows.ts).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_KEEP_SESSIONS, DEFAULT_MAX_SESSIONS, ServerState } from '../src/models/server';
import { SessionListSync } from '../src/models/listsync';
import { Workflows } from '../src/models/workflows';
import type { Session, Workflow } from '../src/shared/types';

test('"+" is refused while shutting down, disconnected, short of memory or at the limit, in that order', () => {
  const s = new ServerState();
  assert.equal(s.maxSessions, DEFAULT_MAX_SESSIONS);
  assert.deepEqual(s.newSession(true, 0, 0), { reason: null, note: null });
  assert.match(s.newSession(true, DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SESSIONS).reason ?? '', /^Session limit reached: 4 of 4 sessions are running/);
  s.memory(93.25, 'warning', false);
  assert.equal(s.newSession(true, 0, 0).reason, 'Memory is critical (93.3%): new sessions are blocked');
  assert.match(s.newSession(false, 0, 0).reason ?? '', /^Not connected/);
  s.shuttingDown = true;
  assert.equal(s.newSession(false, 0, 0).reason, 'The server is shutting down');
  s.connected();
  assert.deepEqual(s.newSession(true, 0, 0), { reason: null, note: null }, 'a connection clears shutdown and memory');
  s.memory(97, 'critical', true);
  assert.match(s.newSession(true, 0, 0).reason ?? '', /^Memory is critical/);
  s.memory(50, 'ok', true);
  assert.equal(s.newSession(true, 0, 0).reason, null);
});

test('GET /api/config sets the limits; at the kept bound "+" stays enabled with a note', () => {
  const s = new ServerState();
  s.limits(0, undefined);
  assert.equal(s.maxSessions, DEFAULT_MAX_SESSIONS, 'zero or absent keeps what is known');
  assert.equal(s.keepSessions, DEFAULT_KEEP_SESSIONS);
  s.limits(8, 3);
  assert.equal(s.maxSessions, 8);
  const v = s.newSession(true, 1, 3);
  assert.equal(v.reason, null);
  assert.equal(v.note, 'The server keeps at most 3 sessions, running or ended, and keeps 3: delete ended sessions first (the dialog offers to delete the 2 ended).');
  assert.equal(s.newSession(true, 3, 3).note, 'The server keeps at most 3 sessions, running or ended, and keeps 3: close one first.');
});

test('session events during a GET /api/sessions are applied on top of its answer; an older answer is stale', () => {
  const sync = new SessionListSync<string>();
  sync.log('before any request'); // logged nowhere
  const first = sync.begin();
  sync.log('created a');
  const second = sync.begin();
  sync.log('destroyed b');
  // The first answer comes first: applied with both events.
  assert.deepEqual(sync.answered(first), ['created a', 'destroyed b']);
  sync.log('status c');
  assert.deepEqual(sync.answered(second), ['destroyed b', 'status c']);
  // Answers out of order: the older one, after a newer, is stale.
  const third = sync.begin();
  const fourth = sync.begin();
  sync.log('created d');
  assert.deepEqual(sync.answered(fourth), ['created d']);
  assert.equal(sync.answered(third), null);
  // A failed request logs no more.
  const fifth = sync.begin();
  sync.failed(fifth);
  sync.log('x');
  assert.deepEqual(sync.answered(fifth), []);
});

const wf = (currentStep: string): Workflow => ({ currentStep, completedSteps: [], steps: [] });
const session = (id: string, name: string, branch?: string): Session => ({
  id,
  name,
  status: 'active',
  agent: 'shell',
  command: ['sh'],
  cwd: '/w',
  createdAt: '2026-01-01T00:00:00Z',
  lastActivityAt: '2026-01-01T00:00:00Z',
  cols: 80,
  rows: 24,
  sendFailures: false,
  worktree: branch ? { path: `/w/.worktrees/${id}`, branch } : undefined,
});

test("the workflow panel shows the active session's own workflow, else the workspace's, and says when nothing changed", () => {
  const w = new Workflows();
  const a = session('a', 'alpha', 'feature/a');
  assert.deepEqual(w.show(undefined), { wf: null, sessionId: null, label: '' });
  assert.equal(w.show(undefined), null, 'shown already');
  const ws = wf('workspace');
  w.setWorkspace(ws);
  assert.deepEqual(w.show(a), { wf: ws, sessionId: null, label: 'feature/a' });
  const own = wf('a');
  w.setSession('a', own);
  assert.deepEqual(w.show(a), { wf: own, sessionId: 'a', label: 'feature/a' });
  assert.deepEqual(w.show(session('b', 'bravo')), { wf: ws, sessionId: null, label: 'bravo' });
  w.prune((id) => id !== 'a');
  assert.deepEqual(w.show(a), { wf: ws, sessionId: null, label: 'feature/a' }, "a session gone takes its workflow with it");
});
