// Agent awareness: a silent session goes idle while its agent still runs
// (no Resume, Stop and input still work, it still counts toward the
// session limit), is warned, then warned as an error; output ends both.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, waitFor, waitForLine, typeCommand } from './harness.mjs';

// Silent after "hi" until a line is typed; then output every 200 ms, well
// within --idle-after, so it stays active.
const SILENT = ['sh', '-c', 'echo hi; read x; echo "said $x"; while :; do echo tick; sleep 0.2; done'];

uiTest(
  'idle but running, then warned, then active again on output',
  { flags: ['--idle-after', '500ms', '--warn-after', '1s', '--warn-error-after', '2s', '--max-sessions', '1'] },
  async ({ page, server, frames, screenshot }) => {
    const s = await server.createSession({ name: 'quiet', command: SILENT });
    const tab = tabById(page, s.id);
    await tab.waitFor({ state: 'visible' });
    await waitForLine(page, s.id, 'hi');

    await waitFor(async () => (await tab.getAttribute('data-status')) === 'idle', { message: 'data-status idle after 500 ms of silence' });
    const [listed] = await server.sessions();
    assert.deepEqual([listed.status, listed.running], ['idle', true], 'GET /api/sessions: idle and running');
    const resume = page.locator(sel('resume'));
    const stop = page.locator(sel('stop'));
    assert.equal(await resume.isVisible(), false, 'no resume for a running idle session');
    assert.ok((await stop.isVisible()) && (await stop.isEnabled()), 'stop shown and enabled for a running idle session');
    const newSession = page.locator(sel('new-session'));
    await waitFor(() => newSession.isDisabled(), { message: 'new-session disabled: the idle session counts toward --max-sessions 1' });

    await waitFor(async () => (await tab.getAttribute('data-warning')) === 'warning', { message: 'data-warning warning after 1 s' });
    assert.equal(await tab.getAttribute('data-status'), 'idle', 'still idle while warned');
    await waitFor(async () => (await page.locator(`${sel('toast')}[data-kind="warning"]`).count()) > 0, { message: 'a warning toast' });
    await waitFor(async () => (await tab.getAttribute('data-warning')) === 'error', { message: 'data-warning error after 2 s' });
    await waitFor(async () => (await page.locator(`${sel('toast')}[data-kind="error"]`).count()) > 0, { message: 'an error toast' });
    assert.match((await tab.getAttribute('title')) ?? '', /stuck/i, 'the tab\'s tooltip gives the warning');
    await screenshot('idle-warning');

    await typeCommand(page, 'ok');
    await waitForLine(page, s.id, 'said ok');
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { message: 'data-status active after output' });
    await waitFor(async () => !(await tab.getAttribute('data-warning')), { message: 'data-warning gone after output' });

    const warnings = frames.filter((f) => f.type === 'session.warning' && f.sessionId === s.id).map((f) => f.severity);
    assert.deepEqual(warnings, ['warning', 'error'], 'one session.warning of each severity');
    const idle = frames.find((f) => f.type === 'session.status' && f.sessionId === s.id && f.status === 'idle');
    assert.equal(idle?.running, true, `session.status idle says running: ${JSON.stringify(idle)}`);
  },
);
