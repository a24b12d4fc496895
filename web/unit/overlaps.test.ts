// Overlaps (src/models/overlaps.ts): the overlaps seen from one session,
// the words that say them, the lines of a diff they mark, and the merge
// dialog's warning.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Overlaps, anyLines, isMarked, mergeWarning, overlapText } from '../src/models/overlaps';
import type { Overlap } from '../src/shared/types';

const list: Overlap[] = [
  { sessions: ['a', 'b'], path: 'src/x.go', lines: true, hunks: [
    { sessionId: 'a', oldStart: 3, oldLines: 1, newStart: 3, newLines: 2 },
    { sessionId: 'b', oldStart: 4, oldLines: 0, newStart: 5, newLines: 1 },
  ] },
  { sessions: ['a', 'b'], path: 'README.md', lines: false },
  { sessions: ['a', 'c'], path: 'go.mod', lines: false, basesDiffer: true },
  { sessions: ['b', 'c'], path: 'go.mod', lines: false },
];
const names: Record<string, string> = { a: 'alpha', b: 'beta', c: 'gamma' };
const nameOf = (id: string) => names[id] ?? id;

test('of: the other sessions, each with its files in order, from either side of a pair', () => {
  const o = new Overlaps();
  let told = 0;
  o.subscribe(() => told++);
  o.set(list);
  assert.equal(told, 1);
  assert.deepEqual(o.of('a'), [
    { other: 'b', files: [{ path: 'README.md', lines: false, basesDiffer: false }, { path: 'src/x.go', lines: true, basesDiffer: false }] },
    { other: 'c', files: [{ path: 'go.mod', lines: false, basesDiffer: true }] },
  ]);
  assert.deepEqual(o.of('c').map((w) => w.other), ['a', 'b']);
  assert.deepEqual(o.of('nobody'), []);
  assert.ok(anyLines(o.of('b')));
  assert.ok(!anyLines(o.of('c')));
});

test('overlapText names the other session and its files, the same lines first, and cuts long lists', () => {
  const o = new Overlaps();
  o.set(list);
  assert.deepEqual(overlapText(o.of('b'), nameOf), [
    "Also changed by 'alpha': src/x.go (same lines), README.md",
    "Also changed by 'gamma': go.mod",
  ]);
  const many = Array.from({ length: 8 }, (_, i): Overlap => ({ sessions: ['a', 'b'], path: `f${i}`, lines: false }));
  assert.deepEqual(overlapText(new Overlaps().of('a'), nameOf), []);
  const o2 = new Overlaps();
  o2.set(many);
  assert.deepEqual(overlapText(o2.of('a'), nameOf), ["Also changed by 'beta': f0, f1, f2, f3, f4, and 3 more"]);
});

test('marks are the session\'s own hunks of the file, and isMarked places diff lines in them', () => {
  const o = new Overlaps();
  o.set(list);
  const a = o.marks('a', 'src/x.go');
  assert.deepEqual(a, [{ sessionId: 'a', oldStart: 3, oldLines: 1, newStart: 3, newLines: 2 }]);
  assert.deepEqual(o.marks('a', 'README.md'), []);
  assert.ok(isMarked({ kind: 'add', new: 3 }, a));
  assert.ok(isMarked({ kind: 'add', new: 4 }, a));
  assert.ok(!isMarked({ kind: 'add', new: 5 }, a));
  assert.ok(isMarked({ kind: 'del', old: 3 }, a));
  assert.ok(!isMarked({ kind: 'del', old: 4 }, a));
  assert.ok(!isMarked({ kind: 'ctx', old: 3, new: 3 }, a), 'context lines are never marked');
  // An insertion has no old lines to mark, a deletion no new ones.
  const b = o.marks('b', 'src/x.go');
  assert.ok(isMarked({ kind: 'add', new: 5 }, b));
  assert.ok(!isMarked({ kind: 'del', old: 4 }, b));
});

test('mergeWarning: the merge\'s own conflicts first; then the predicted sessions; then uncommitted lines that meet', () => {
  const o = new Overlaps();
  o.set(list);
  assert.deepEqual(mergeWarning({ base: 'main', conflicts: ['x'], others: [] }, o.of('a'), nameOf),
    { state: 'conflicts', title: 'This merge conflicts with main in: x.', items: [] });
  assert.deepEqual(mergeWarning({ base: 'main', conflicts: [], others: [{ sessionId: 'c', files: ['go.mod'] }] }, o.of('a'), nameOf), {
    state: 'conflicts',
    title: 'Once this is merged, merging these into main will conflict:',
    items: ["'gamma' will conflict in go.mod", "'beta' changes the same lines, not yet committed: src/x.go"],
  });
  assert.deepEqual(mergeWarning({ base: 'main', conflicts: [], others: [] }, o.of('a'), nameOf).state, 'overlaps');
  assert.deepEqual(mergeWarning({ base: 'main', conflicts: [], others: [] }, o.of('c'), nameOf),
    { state: 'clear', title: "No other session's branch will conflict with main after this merge.", items: [] });
});
