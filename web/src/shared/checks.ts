// How the check at the end of a turn is told (docs/protocol.md, "Checks"):
// a mark, a few words and the line of its output that says most, the same
// on the tab, in the checkpoint timeline and in a notification.

import type { CheckResult, CheckStatus } from './types';

/** The mark for a check's status: what a glance at a tab reads. */
export function checkMark(status: CheckStatus): string {
  switch (status) {
    case 'passed': return '✓';
    case 'failed': return '✗';
    case 'timeout': return '⏱';
    case 'running': return '…';
    case 'superseded': return '–';
  }
}

/** A check's status in words: "check failed (exit 4)". */
export function checkWords(c: CheckResult): string {
  switch (c.status) {
    case 'passed': return `check passed in ${seconds(c.durationMs)}`;
    case 'failed': return c.exitCode >= 0 ? `check failed (exit ${c.exitCode})` : 'check failed';
    case 'timeout': return `check timed out after ${seconds(c.durationMs)}`;
    case 'running': return 'checking…';
    case 'superseded': return 'check stopped: the agent went on';
  }
}

/**
 * A test runner's count of what failed: node's "# fail 1", Jest's "Tests:
 * 1 failed, 2 passed", mocha's "1 failing", pytest's "1 failed, 2 passed".
 */
const FAILED_COUNT = /\b\d+\s+(failed|failing|failures?|errors?)\b|\b(fail|failed|failures|errors?)\b\s*[:=]?\s*[1-9]\d*\b/i;

/** Lines a test run ends with that say nothing of it: npm's notices, timings. */
const NOISE = /^(npm (notice|warn)|# duration_ms|# (cancelled|skipped|todo) 0$|Done in |Time:|Ran all test suites)/i;

/**
 * The line of a check's output that says most: the last that counts
 * failures, where test runners put their summary, else the last that is
 * not noise; empty when it printed nothing.
 */
export function checkSummary(output: string): string {
  const lines = output.split('\n').map((l) => l.trim()).filter(Boolean);
  for (let i = lines.length - 1; i >= 0; i--) if (FAILED_COUNT.test(lines[i]!)) return lines[i]!;
  return lines.filter((l) => !NOISE.test(l)).at(-1) ?? '';
}

/** A check ended badly: failed, or ran out of time. */
export function checkFailed(status: CheckStatus): boolean {
  return status === 'failed' || status === 'timeout';
}

function seconds(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}
