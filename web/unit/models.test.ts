// The models that were DOM-free before they had a folder: the prompt
// queues, the review drafts, the diff summaries and the participants
// (src/models/), driven by the messages the server sends.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PromptQueues, agentAuthorSession, type QueueChange } from '../src/models/queues';
import { ReviewDrafts } from '../src/models/drafts';
import { DiffSummaries, ownsDiff } from '../src/models/diffs';
import { Participants } from '../src/models/participants';
import { SessionStore, runsShell, startedByTitle } from '../src/models/store';
import type { Participant, QueuedPrompt, ReviewComment, Session, SessionDiffMessage } from '../src/shared/types';

const ID = 'session-1';

const prompt = (id: string): QueuedPrompt => ({ id, author: 'ann', authorId: 'a1', text: `do ${id}`, queuedAt: '2026-01-01T00:00:00Z' });

test('a prompt queue: events before the list are applied again on top of it; old news is dropped', () => {
  const q = new PromptQueues();
  const changes: QueueChange[] = [];
  q.subscribe((c) => changes.push(c));
  // After an attach the events may come before the list they follow.
  q.apply({ type: 'prompt.queued', sessionId: ID, prompt: prompt('p3'), rev: 3 });
  q.apply({ type: 'prompt.list', sessionId: ID, prompts: [prompt('p1'), prompt('p2')], rev: 2 });
  assert.deepEqual(q.get(ID).map((p) => p.id), ['p1', 'p2', 'p3']);
  q.apply({ type: 'prompt.delivered', sessionId: ID, promptId: 'p1', rev: 4 });
  assert.deepEqual(q.get(ID).map((p) => p.id), ['p2', 'p3']);
  assert.deepEqual(changes.at(-1), { sessionId: ID, gone: { prompt: prompt('p1'), delivered: true } });
  // Known and newer already: a repeated event or an older list changes nothing.
  q.apply({ type: 'prompt.dequeued', sessionId: ID, promptId: 'p2', rev: 4 });
  q.apply({ type: 'prompt.list', sessionId: ID, prompts: [], rev: 3 });
  assert.deepEqual(q.get(ID).map((p) => p.id), ['p2', 'p3']);
  // A reconnection: the next list is the base whatever its rev (a restarted server counts from 0).
  q.stale();
  q.apply({ type: 'prompt.list', sessionId: ID, prompts: [prompt('p9')], rev: 1 });
  assert.deepEqual(q.get(ID).map((p) => p.id), ['p9']);
  q.forget(ID);
  assert.deepEqual(q.get(ID), []);
});

const comment = (id: string): ReviewComment => ({ id, path: 'a.go', line: 3, endLine: 3, text: 'why?', author: { id: 'a1', name: 'ann' }, at: '2026-01-01T00:00:00Z' });

test('a review draft: the newest rev wins until a reconnection, after which any is taken', () => {
  const d = new ReviewDrafts();
  const seen: string[] = [];
  d.subscribe((id) => seen.push(id));
  d.apply({ type: 'review.draft', sessionId: ID, comments: [comment('c1'), comment('c2')], rev: 5 });
  d.apply({ type: 'review.draft', sessionId: ID, comments: [comment('c1')], rev: 4 });
  assert.deepEqual(d.get(ID).map((c) => c.id), ['c1', 'c2']);
  assert.deepEqual(seen, [ID]);
  d.stale();
  d.apply({ type: 'review.draft', sessionId: ID, comments: [], rev: 0 });
  assert.deepEqual(d.get(ID), []);
  d.apply({ type: 'review.draft', sessionId: ID, comments: [comment('c3')], rev: 0 });
  assert.deepEqual(d.get(ID), [], 'known again: the same rev is old news');
});

const diff = (sessionId: string, additions: number): SessionDiffMessage => ({ type: 'session.diff', sessionId, base: 'HEAD', files: [], additions, deletions: 0 });

test('diff summaries: the latest per session, the newest last, pruned with the sessions', () => {
  const s = new DiffSummaries();
  s.set(diff('a', 1));
  s.set(diff('b', 2));
  s.set(diff('a', 3));
  assert.equal(s.get('a')?.additions, 3);
  assert.equal(s.latest(() => true)?.sessionId, 'a', 'a reported last');
  assert.equal(s.latest((id) => id === 'b')?.additions, 2);
  s.prune((id) => id !== 'a');
  assert.equal(s.get('a'), undefined);
  assert.equal(s.latest(() => true)?.sessionId, 'b');
  assert.equal(ownsDiff({ worktree: { path: '/w/.worktrees/x', branch: 'x' } } as Parameters<typeof ownsDiff>[0]), true);
  assert.equal(ownsDiff({} as Parameters<typeof ownsDiff>[0]), false);
});

test("participants: who typed last, a colour by name, and nothing once the connection is gone", () => {
  const p = new Participants();
  const seen: string[] = [];
  p.subscribe((id) => seen.push(id));
  // Keystrokes long ago: nobody is typing now (and no timer is left to run out).
  const people: Participant[] = [
    { id: 'c1', name: 'ann', color: '#f00', viewing: true, lastInputAt: 1_000 },
    { id: 'c2', name: 'bob', color: '#0f0', viewing: false, lastInputAt: 2_000 },
    { id: 'c3', name: 'cy', color: '#00f', viewing: true },
  ];
  p.set({ type: 'session.participants', sessionId: ID, participants: people });
  assert.equal(p.lastTypist(ID)?.name, 'bob');
  assert.equal(p.isTyping(ID, 'c2'), false);
  assert.equal(p.typedAt(ID, people[1]!), 2_000, 'not seen arrive: the server\'s time');
  assert.equal(p.colorOfName('cy'), '#00f');
  assert.equal(p.colorOfName('nobody'), undefined);
  p.set({ type: 'session.participants', sessionId: 'other', participants: [{ id: 'c9', name: 'ann', color: '#abc', viewing: true }] });
  assert.equal(p.colorOfName('ann', 'other'), '#abc', 'the session asked about first');
  p.clear();
  assert.deepEqual(p.get(ID), []);
  assert.deepEqual(seen, [ID, 'other', ID, 'other']);
});

test('a plain shell: the shell profile, or a shell\'s name with options alone; scripts, agents and other commands are not', () => {
  assert.equal(runsShell({ agent: 'shell', command: ['/usr/bin/zsh', '-l'] }), true);
  assert.equal(runsShell({ agent: 'custom', command: ['/bin/bash', '--norc', '-i'] }), true);
  assert.equal(runsShell({ agent: 'custom', command: ['fish'] }), true);
  assert.equal(runsShell({ agent: 'custom', command: ['sh', '-c', 'while read l; do echo "got:$l"; done'] }), false, 'a script\'s wrapper');
  assert.equal(runsShell({ agent: 'custom', command: ['bash', 'run.sh'] }), false, 'a script');
  assert.equal(runsShell({ agent: 'custom', command: ['python3', '-i'] }), false);
  assert.equal(runsShell({ agent: 'custom', command: ['/opt/bashful'] }), false);
  assert.equal(runsShell({ agent: 'claude', command: ['claude'] }), false);
});

const session = (id: string, name: string, more: Partial<Session> = {}): Session => ({
  id, name, status: 'active', agent: 'shell', command: ['sh'], cwd: '/w', createdAt: '', lastActivityAt: '', cols: 80, rows: 24, sendFailures: false, ...more,
});

test("a session an agent started names its starter while it is listed, and says so once it was deleted", () => {
  const store = new SessionStore();
  store.upsert(session('p', 'planner'));
  store.upsert(session('h', 'helper', { startedBy: 'p' }));
  assert.equal(store.starterOf(store.get('p')!.session), null, 'a person started it');
  const st = store.starterOf(store.get('h')!.session);
  assert.deepEqual(st, { id: 'p', name: 'planner' });
  assert.equal(startedByTitle(st!), "Started by planner's agent");
  store.upsert(session('p', 'architect'));
  assert.equal(store.starterOf(store.get('h')!.session)?.name, 'architect', 'a rename shows');
  store.remove('p');
  const gone = store.starterOf(store.get('h')!.session);
  assert.deepEqual(gone, { id: 'p', name: null });
  assert.equal(startedByTitle(gone!), 'Started by an agent in a deleted session');
});

test("a prompt an agent queued: its author id is agent:<the caller's session>", () => {
  assert.equal(agentAuthorSession('agent:5b0c7c1e'), '5b0c7c1e');
  assert.equal(agentAuthorSession('9f86d081884c7d65'), null, "a person's key");
  assert.equal(agentAuthorSession('agent:'), null);
});
