// How a check's run is told (src/shared/checks.ts): the line of a test
// runner's report that counts the failures, whichever runner printed it.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkFailed, checkSummary, checkWords } from '../src/shared/checks';

test("the summary is the runner's count of failures, not its last line", () => {
  const node = '> summer@1.0.0 test\n> node --test\n\nnot ok 1 - adds\n1..1\n# tests 1\n# pass 0\n# fail 1\n# cancelled 0\n# skipped 0\n# todo 0\n# duration_ms 162.09\n';
  assert.equal(checkSummary(node), '# fail 1');
  assert.equal(checkSummary('FAIL ./sum.test.js\nTests:       1 failed, 2 passed, 3 total\nSnapshots:   0 total\nTime:        0.5 s\nRan all test suites.\n'), 'Tests:       1 failed, 2 passed, 3 total');
  assert.equal(checkSummary('  2 passing (5ms)\n  1 failing\n\n  1) adds:\n     AssertionError\n'), '1 failing');
  assert.equal(checkSummary('===== 1 failed, 2 passed in 0.12s =====\n'), '===== 1 failed, 2 passed in 0.12s =====');
});

test('without a count, the last line that is not noise; nothing for no output', () => {
  assert.equal(checkSummary('--- FAIL: TestSum (0.00s)\nFAIL\nnpm notice New version\n'), 'FAIL');
  assert.equal(checkSummary('# pass 3\n# fail 0\n# duration_ms 12\n'), '# fail 0');
  assert.equal(checkSummary('\n\n'), '');
});

test("a check's words say how it ended", () => {
  const r = { exitCode: 4, durationMs: 2140, output: '' };
  assert.equal(checkWords({ ...r, status: 'failed' }), 'check failed (exit 4)');
  assert.equal(checkWords({ ...r, status: 'passed', exitCode: 0 }), 'check passed in 2.1 s');
  assert.equal(checkWords({ ...r, status: 'timeout', exitCode: -1, durationMs: 600_000 }), 'check timed out after 600 s');
  assert.equal(checkWords({ ...r, status: 'failed', exitCode: -1 }), 'check failed');
  assert.deepEqual(['passed', 'failed', 'timeout', 'running', 'superseded'].filter((s) => checkFailed(s as never)), ['failed', 'timeout']);
});
