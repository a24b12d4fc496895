// Flow control in the browser (issue 12): only a terminal the user is
// looking at paces its program. A terminal in a tab that is not shown
// sends terminal.ack with pace false at once, and paces again from its
// seq when shown. (A page in the background does the same on
// visibilitychange; headless Chromium never hides a page, so that path is
// not driven here.)
import assert from 'node:assert/strict';
import { uiTest, createSession, tabById, waitFor, waitForPrompt } from './harness.mjs';

/** Records the terminal.ack messages the page sends, from now on. */
function recordAcks(page) {
  const acks = [];
  page.on('websocket', (sock) => {
    sock.on('framesent', ({ payload }) => {
      const p = String(payload);
      if (p.includes('"terminal.ack"')) acks.push(JSON.parse(p));
    });
  });
  return acks;
}

uiTest('a terminal paces only while its tab is shown, and again from its seq when shown', async ({ page }) => {
  const acks = recordAcks(page);
  await page.reload(); // the recorder sees the socket from its start
  const first = await createSession(page, 'first');
  await waitForPrompt(page, first);
  await waitFor(() => acks.some((a) => a.sessionId === first && a.pace === true), { message: 'the shown terminal paces (terminal.ack, pace true)' });

  const second = await createSession(page, 'second');
  await waitForPrompt(page, second);
  const stopped = await waitFor(() => acks.find((a) => a.sessionId === first && a.pace === false), {
    message: 'the terminal of the tab no longer shown stops pacing (pace false)',
  });
  const mark = acks.length;
  await tabById(page, first).click();
  const resumed = await waitFor(() => acks.slice(mark).find((a) => a.sessionId === first && a.pace === true), {
    message: 'the terminal shown again paces again',
  });
  assert.ok(resumed.seq >= stopped.seq, `it resumes from its seq (${resumed.seq}), not before where it stopped (${stopped.seq})`);
});
