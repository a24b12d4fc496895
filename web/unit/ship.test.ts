// ShipState (src/models/ship.ts): a session's branch from GET /branch and
// session.branch in the orders they can cross in, pushes, and the request
// in flight.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShipState, safeURL } from '../src/models/ship';
import type { SessionBranchMessage, Worktree } from '../src/shared/types';

const ID = 'session-1';

function branchMsg(more: Partial<SessionBranchMessage>): SessionBranchMessage {
  return { type: 'session.branch', sessionId: ID, action: 'commit', branch: 'feature/x', base: 'main', ahead: 1, behind: 0, ...more };
}

const worktree: Worktree = { branch: 'feature/x', base: 'main', path: '/w/.worktrees/x' };

function recorded(s: ShipState): (string | null)[] {
  const seen: (string | null)[] = [];
  s.subscribe((id) => seen.push(id));
  return seen;
}

test('a GET /branch sets where the branch stands, and clears the error of an earlier one', () => {
  const s = new ShipState();
  const seen = recorded(s);
  const v1 = s.startLoad(ID);
  assert.equal(v1, 0);
  assert.equal(s.startLoad(ID), null, 'one GET /branch at a time');
  s.loadFailed(ID, '409 NOT_A_WORKTREE');
  assert.equal(s.error(ID), '409 NOT_A_WORKTREE');
  assert.equal(s.branch(ID), undefined);

  const v2 = s.startLoad(ID);
  assert.equal(v2, 0);
  s.loaded(ID, v2!, { branch: 'feature/x', base: 'main', ahead: 2, behind: 1 }, false);
  assert.deepEqual(s.branch(ID), { branch: 'feature/x', base: 'main', ahead: 2, behind: 1, archived: false });
  assert.equal(s.error(ID), undefined);
  assert.deepEqual(seen, [ID, ID]);
});

test('a GET /branch sent before a session.branch is older than it: its answer is dropped', () => {
  const s = new ShipState();
  const v = s.startLoad(ID);
  s.apply(branchMsg({ action: 'merge', ahead: 0, behind: 0, merged: 'abc1234' }));
  s.loaded(ID, v!, { branch: 'feature/x', base: 'main', ahead: 3, behind: 0 }, false);
  assert.deepEqual(s.branch(ID), { branch: 'feature/x', base: 'main', ahead: 0, behind: 0, merged: 'abc1234', archived: undefined });
  // ...and the next one, sent after, is taken.
  const next = s.startLoad(ID);
  assert.equal(next, 1);
  s.loaded(ID, next!, { branch: 'feature/x', base: 'main', ahead: 0, behind: 2, merged: 'abc1234' }, false);
  assert.equal(s.branch(ID)?.behind, 2);
});

test('a session.branch without a base (the shared workspace) changes no branch, but still orders GET /branch', () => {
  const s = new ShipState();
  const v = s.startLoad(ID);
  s.apply(branchMsg({ base: undefined, action: 'commit' }));
  assert.equal(s.branch(ID), undefined);
  s.loaded(ID, v!, { branch: 'main', base: 'main', ahead: 0, behind: 0 }, undefined);
  assert.equal(s.branch(ID), undefined, 'older than the session.branch');
});

test('merged or archived, by the worktree the store has or the branch, and the base to name', () => {
  const s = new ShipState();
  assert.deepEqual(s.standing(ID, undefined), { merged: false, archived: false });
  assert.deepEqual(s.standing(ID, { ...worktree, merged: 'abc' }), { merged: true, archived: false });
  assert.equal(s.base(ID, undefined, 'its base'), 'its base');
  assert.equal(s.base(ID, worktree, 'its base'), 'main');
  s.apply(branchMsg({ base: 'develop', action: 'archive', merged: 'def', archived: true }));
  assert.deepEqual(s.standing(ID, worktree), { merged: true, archived: true });
  assert.equal(s.base(ID, worktree, 'its base'), 'develop', "the branch's base, the server's latest word, first");
});

test('merged only while nothing new is on the branch: commits after the merge make it a branch to merge again', () => {
  const s = new ShipState();
  s.apply(branchMsg({ base: 'main', action: 'merge', merged: 'abc', ahead: 0, behind: 0 }));
  assert.deepEqual(s.standing(ID, { ...worktree, merged: 'abc' }), { merged: true, archived: false });
  s.apply(branchMsg({ base: 'main', action: 'commit', merged: 'abc', ahead: 2, behind: 0 }));
  assert.deepEqual(s.standing(ID, { ...worktree, merged: 'abc' }), { merged: false, archived: false });
});

test("pushes: anyone's through session.branch, this page's own, and only an http(s) pull request page", () => {
  const s = new ShipState();
  s.apply(branchMsg({ action: 'push', remote: 'origin', pullRequestUrl: 'https://github.com/o/r/pull/new/feature/x' }));
  assert.deepEqual(s.push(ID), { remote: 'origin', url: 'https://github.com/o/r/pull/new/feature/x' });
  s.apply(branchMsg({ action: 'commit', remote: 'elsewhere' }));
  assert.equal(s.push(ID)?.remote, 'origin', 'only a push changes where it was pushed');
  assert.deepEqual(s.pushed(ID, 'fork', 'javascript:alert(1)'), { remote: 'fork', url: '' });
  assert.deepEqual(s.push(ID), { remote: 'fork', url: '' });
  assert.equal(safeURL('http://gitea.local/o/r/compare/x'), 'http://gitea.local/o/r/compare/x');
  assert.equal(safeURL('not a url'), '');
  assert.equal(safeURL(undefined), '');
});

test('the request in flight is one for every session, announced as null', () => {
  const s = new ShipState();
  const seen = recorded(s);
  assert.equal(s.busy, null);
  s.setBusy('merge');
  assert.equal(s.busy, 'merge');
  s.setBusy(null);
  assert.equal(s.busy, null);
  assert.deepEqual(seen, [null, null]);
});

test('a forgotten session keeps nothing, and its next GET /branch starts over', () => {
  const s = new ShipState();
  s.apply(branchMsg({ action: 'push', remote: 'origin' }));
  s.loadFailed(ID, 'gone');
  s.forget(ID);
  assert.equal(s.branch(ID), undefined);
  assert.equal(s.push(ID), undefined);
  assert.equal(s.error(ID), undefined);
  assert.equal(s.startLoad(ID), 0);
});
